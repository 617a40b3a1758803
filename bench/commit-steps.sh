#!/usr/bin/env bash
# What each step of a single-file commit costs, per build: statements, rows, WAL bytes and
# microseconds, from pg_stat_statements (track = all: every SPI statement the extension runs
# inside the RPC) and the WAL position before and after.
#
#   bench/commit-steps.sh NAME=PG_CONFIG[@REV] ...      (run as root; clusters run as postgres)
#
# For each build: a throwaway cluster of that PostgreSQL copy (stock settings, fsync on, plus
# pg_stat_statements with track = all and track_planning = on), sql/bootstrap.sql of REV
# (default: the working tree), CREATE EXTENSION supabash, one workspace seeded with
# $STEPS_FILES files of 4 KiB (commits of 1,000), VACUUM ANALYZE, CHECKPOINT. Then, per
# workload (a 4 KiB file overwritten in its first 12 bytes; a new 4 KiB file), $STEPS_CALLS
# single-file commits as PostgREST sends them (pgbench, one client, -M prepared), after a
# warm-up; the statistics are reset just before. The builds run one after the other, the
# workloads interleaved: build A overwrite, build B overwrite, build A new, build B new.
# Prints one markdown table per build and workload; rows are per commit. The `plain` workload
# is the reference: the same 4 KiB body INSERTed as one row into a plain table, PostgREST-shaped.
set -euo pipefail

FILES=${STEPS_FILES:-10000}
CALLS=${STEPS_CALLS:-300}
BATCH=1000
PGBIN_CLIENT=/usr/lib/postgresql/15/bin
PSQL=$PGBIN_CLIENT/psql
PGBENCH=$PGBIN_CLIENT/pgbench
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
TMP=$(mktemp -d /tmp/commit-steps.XXXXXX)
chmod 755 "$TMP"
USER_ID=11111111-1111-4111-8111-111111111111
CLAIMS="{\"sub\":\"$USER_ID\",\"role\":\"authenticated\"}"
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }

DATAS=()
cleanup() {
  for d in "${DATAS[@]}"; do
    runuser -u postgres -- "$(cat "$d/bindir")/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1 || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sql() { local port=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" "$@"; }
content_sql() { echo "(SELECT string_agg(md5($1 || '-' || j), '' ORDER BY j) FROM generate_series(1, 128) j)"; }

NAMES=(); PORTS=(); WS=()
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; pgc=${rest%%@*}; rev=; [[ $rest == *@* ]] && rev=${rest#*@}
  d=$TMP/build${#NAMES[@]}; mkdir -p "$d"; chown postgres "$d"
  bindir=$("$pgc" --bindir); echo "$bindir" >"$d/bindir"
  runuser -u postgres -- "$bindir/initdb" -D "$d/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  port=$(free_port); DATAS+=("$d")
  runuser -u postgres -- "$bindir/pg_ctl" -D "$d/data" -l "$d/server.log" -w -o "-p $port -c listen_addresses=127.0.0.1 -k $d \
    -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all \
    -c pg_stat_statements.track_planning=on -c pg_stat_statements.max=10000" start >/dev/null
  if [ -n "$rev" ]; then git -C "$REPO" show "$rev:sql/bootstrap.sql" >"$d/bootstrap.sql"; else cp "$REPO/sql/bootstrap.sql" "$d/bootstrap.sql"; fi
  sql "$port" -U postgres -d postgres -f "$d/bootstrap.sql" >/dev/null
  sql "$port" -U postgres -d postgres -c "CREATE EXTENSION supabash" -c "CREATE EXTENSION pg_stat_statements" \
    -c "CREATE TABLE public.plain_bodies (id bigserial PRIMARY KEY, body bytea NOT NULL)" \
    -c "GRANT SELECT, INSERT ON public.plain_bodies TO authenticated" \
    -c "GRANT USAGE ON SEQUENCE public.plain_bodies_id_seq TO authenticated" >/dev/null
  {
    echo "\\set claims '$CLAIMS'"
    echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "SELECT supabash_create_workspace()->>'workspaceId' AS ws \\gset"
    echo "COMMIT;"
    first=1
    for ((lo = 0; lo < FILES; lo += BATCH)); do
      hi=$((lo + BATCH - 1)); [ $hi -lt "$FILES" ] || hi=$((FILES - 1))
      echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
      echo "SET LOCAL ROLE authenticated;"
      echo "SELECT supabash_commit(workspace_id => :'ws', actor => 'seed',"
      [ $first = 1 ] || echo "  base_revision => :'head',"
      echo "  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', format('/dir%s/f%s.txt', lpad((i / $BATCH)::text, 2, '0'), lpad(i::text, 5, '0')), 'text', $(content_sql i)) ORDER BY i) FROM generate_series($lo, $hi) i))->'receipt'->>'revision' AS head \\gset"
      echo "COMMIT;"
      first=0
    done
    echo "\\echo :ws"
  } >"$d/seed.sql"
  ws=$(sql "$port" -U authenticator -d postgres -f "$d/seed.sql" | tail -1)
  sql "$port" -U postgres -d postgres -c "VACUUM ANALYZE" -c "CHECKPOINT"
  NAMES+=("$name"); PORTS+=("$port"); WS+=("$ws")
  echo "[$(date -u +%T)] $name: $("$pgc" --pkglibdir)/supabash.so, workspace $ws, $FILES files" >&2
done

REST=$(python3 -c '
import hashlib
print("".join(hashlib.md5(f"4242-{j}".encode()).hexdigest() for j in range(1, 129))[12:])')
PREAMBLE="BEGIN;
SELECT set_config('request.jwt.claims', :claims, true);
SET LOCAL ROLE authenticated;"
cat >"$TMP/overwrite.sql" <<EOF
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/dir04/f04242.txt', 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \\gset
COMMIT;
EOF
cat >"$TMP/new.sql" <<EOF
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/new/f' || :pos::text || '.txt', 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \\gset
COMMIT;
EOF

# The plain-table reference: the same 4 KiB body INSERTed as one row, PostgREST-shaped.
cat >"$TMP/plain.sql" <<EOF
$PREAMBLE
INSERT INTO public.plain_bodies (body) VALUES (convert_to(lpad(:pos::text, 12, '0') || :rest::text, 'UTF8'));
COMMIT;
EOF

run() { # x workload calls
  local x=$1 w=$2 n=$3 port=${PORTS[$1]} h
  h=$(sql "$port" -U postgres -d postgres -At -c "SELECT head_revision, head_position FROM supabash.workspaces WHERE id = '${WS[$x]}'")
  "$PGBENCH" -n -M prepared -c 1 -j 1 -t "$n" -h 127.0.0.1 -p "$port" -U authenticator -d postgres \
    -f "$TMP/$w.sql" -D "claims=$CLAIMS" -D "ws=${WS[$x]}" -D "head=${h%%|*}" -D "pos=${h##*|}" -D "rest=$REST" \
    >"$TMP/pgbench.out" 2>&1 || { cat "$TMP/pgbench.out" >&2; exit 1; }
  grep -q "number of failed transactions: 0" "$TMP/pgbench.out" || { cat "$TMP/pgbench.out" >&2; exit 1; }
}

for w in ${STEPS_WORKLOADS:-overwrite new plain}; do
  for x in "${!NAMES[@]}"; do
    port=${PORTS[$x]}
    run "$x" "$w" 30
    lsn=$(sql "$port" -U postgres -d postgres -At -c "SELECT pg_stat_statements_reset()" -c "SELECT pg_current_wal_lsn()" | tail -1)
    start=$(date +%s%N)
    run "$x" "$w" "$CALLS"
    took=$(( ($(date +%s%N) - start) / 1000 ))
    echo
    echo "**${NAMES[$x]}, $([ "$w" = plain ] && echo "plain-table INSERT of the same 4 KiB body" || echo "single-file commit ($w)") at $FILES files**: $CALLS commits, $(grep -o 'latency average = [0-9.]* ms' "$TMP/pgbench.out" | grep -o '[0-9.]* ms') average latency, WAL $(sql "$port" -U postgres -d postgres -At -c "SELECT round((pg_current_wal_lsn() - '$lsn'::pg_lsn) / $CALLS)") bytes per commit (all of it, commit records included)."
    echo
    echo "| statement (nested: what the RPC runs) | calls | rows | exec µs | plan µs | WAL bytes |"
    echo "|---|---|---|---|---|---|"
    sql "$port" -U postgres -d postgres -At -F '|' <<EOF
SELECT '| ' || CASE WHEN toplevel THEN '**' ELSE '' END
       || replace(left(regexp_replace(query, '\s+', ' ', 'g'), 90), '|', '\|')
       || CASE WHEN toplevel THEN '**' ELSE '' END,
       round(sum(calls)::numeric / $CALLS, 2), round(sum(rows)::numeric / $CALLS, 2),
       round((sum(total_exec_time) * 1000 / $CALLS)::numeric, 1),
       round((sum(total_plan_time) * 1000 / $CALLS)::numeric, 1),
       round(sum(wal_bytes) / $CALLS) || ' |'
  FROM pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'postgres')
   AND query !~* 'pg_stat_statements|pg_current_wal_lsn|head_revision, head_position FROM supabash.workspaces WHERE id = '''
 GROUP BY toplevel, query
HAVING sum(calls) >= $CALLS / 2
 ORDER BY toplevel DESC, sum(total_exec_time) DESC;
EOF
    sql "$port" -U postgres -d postgres -At -F '|' <<EOF
SELECT '| nested statements per commit, total (without the SQL wrapper''s own call into the extension, which contains them) | ' || round(sum(calls)::numeric / $CALLS, 1) || ' | ' || round(sum(rows)::numeric / $CALLS, 1)
       || ' | ' || round((sum(total_exec_time) * 1000 / $CALLS)::numeric) || ' | ' || round((sum(total_plan_time) * 1000 / $CALLS)::numeric)
       || ' | ' || round(sum(wal_bytes) / $CALLS) || ' |'
  FROM pg_stat_statements
 WHERE NOT toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = 'postgres')
   AND query !~ '^SELECT supabash\._';
EOF
  done
done
