#!/usr/bin/env bash
# The pinned snapshot of 1,000 files of 4 KiB (`supabash_load_snapshot` with a revision)
# against a plain-table JSON aggregate of the same bodies, per build, side by side.
#
#   bench/snapshot-vs-aggregate.sh NAME=PG_CONFIG[@REV] ...     (run as root)
#
# For each build: a throwaway cluster (stock settings), sql/bootstrap.sql of REV (default: the
# working tree), a workspace of 1,000 distinct 4 KiB text files committed at once, and a plain
# table public.plain_files (path, body text) holding the same paths and texts. Then $SNAP_ROUNDS
# rounds, builds in alternating order, each running $SNAP_CALLS calls of each query as
# PostgREST would (pgbench, one client, -M prepared): the snapshot at the pinned revision, and
# `SELECT json_agg(json_build_object('path', path, 'text', body) ORDER BY path)` over the plain
# table. Prints per build the median over rounds of each query's average latency, and their ratio.
set -euo pipefail
ROUNDS=${SNAP_ROUNDS:-5}
CALLS=${SNAP_CALLS:-20}
PSQL=/usr/lib/postgresql/15/bin/psql
PGBENCH=/usr/lib/postgresql/15/bin/pgbench
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
TMP=$(mktemp -d /tmp/snapshot-vs-aggregate.XXXXXX)
chmod 755 "$TMP"
USER_ID=11111111-1111-4111-8111-111111111111
CLAIMS="{\"sub\":\"$USER_ID\",\"role\":\"authenticated\"}"
DATAS=()
cleanup() {
  for d in "${DATAS[@]}"; do
    runuser -u postgres -- "$(cat "$d/bindir")/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1 || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
sql() { local port=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" "$@"; }
content="(SELECT string_agg(md5(i || '-' || j), '' ORDER BY j) FROM generate_series(1, 128) j)"
NAMES=(); PORTS=(); WS=(); REVS=()
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}; pgc=${rest%%@*}; rev=; [[ $rest == *@* ]] && rev=${rest#*@}
  d=$TMP/build${#NAMES[@]}; mkdir -p "$d"; chown postgres "$d"
  bindir=$("$pgc" --bindir); echo "$bindir" >"$d/bindir"
  runuser -u postgres -- "$bindir/initdb" -D "$d/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  DATAS+=("$d")
  runuser -u postgres -- "$bindir/pg_ctl" -D "$d/data" -l "$d/server.log" -w -o "-p $port -c listen_addresses=127.0.0.1 -k $d" start >/dev/null
  if [ -n "$rev" ]; then git -C "$REPO" show "$rev:sql/bootstrap.sql" >"$d/bootstrap.sql"; else cp "$REPO/sql/bootstrap.sql" "$d/bootstrap.sql"; fi
  sql "$port" -U postgres -d postgres -f "$d/bootstrap.sql" >/dev/null
  sql "$port" -U postgres -d postgres -c "CREATE EXTENSION supabash" \
    -c "CREATE TABLE public.plain_files (path text COLLATE \"C\" PRIMARY KEY, body text NOT NULL)" \
    -c "INSERT INTO public.plain_files SELECT format('/f%s.txt', lpad(i::text, 4, '0')), $content FROM generate_series(1, 1000) i" \
    -c "GRANT SELECT ON public.plain_files TO authenticated" -c "VACUUM ANALYZE public.plain_files" >/dev/null 2>&1
  read -r ws rev_id < <(sql "$port" -U authenticator -d postgres -At -F ' ' <<EOF
BEGIN; SELECT set_config('request.jwt.claims', '$CLAIMS', true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT supabash_create_workspace()->>'workspaceId' AS ws \\gset
SELECT :'ws', supabash_commit(workspace_id => :'ws', actor => 'seed',
  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', format('/f%s.txt', lpad(i::text, 4, '0')), 'text', $content) ORDER BY i) FROM generate_series(1, 1000) i))->'receipt'->>'revision';
COMMIT;
EOF
)
  sql "$port" -U postgres -d postgres -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
  NAMES+=("$name"); PORTS+=("$port"); WS+=("$ws"); REVS+=("$rev_id")
done
PREAMBLE="BEGIN;
SELECT set_config('request.jwt.claims', :claims, true);
SET LOCAL ROLE authenticated;"
printf '%s\nSELECT length(supabash_load_snapshot(workspace_id => :ws, revision => :rev)::text);\nCOMMIT;\n' "$PREAMBLE" >"$TMP/snapshot.sql"
printf '%s\nSELECT length(json_agg(json_build_object('"'"'path'"'"', path, '"'"'text'"'"', body) ORDER BY path)::text) FROM public.plain_files;\nCOMMIT;\n' "$PREAMBLE" >"$TMP/aggregate.sql"
: >"$TMP/results.tsv"
for ((r = 1; r <= ROUNDS; r++)); do
  order=$(seq 0 $((${#NAMES[@]} - 1))); (( r % 2 )) || order=$(echo "$order" | tac)
  for x in $order; do
    for q in snapshot aggregate; do
      "$PGBENCH" -n -M prepared -c 1 -j 1 -t "$CALLS" -h 127.0.0.1 -p "${PORTS[$x]}" -U authenticator -d postgres \
        -f "$TMP/$q.sql" -D "claims=$CLAIMS" -D "ws=${WS[$x]}" -D "rev=${REVS[$x]}" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; exit 1; }
      printf '%s\t%s\t%s\n' "$x" "$q" "$(grep -o 'latency average = [0-9.]*' "$TMP/out" | grep -o '[0-9.]*$')" >>"$TMP/results.tsv"
    done
  done
done
echo "| build | snapshot of 1,000 × 4 KiB, pinned (ms) | plain-table JSON aggregate (ms) | snapshot / aggregate |"
echo "|---|---|---|---|"
for x in "${!NAMES[@]}"; do
  python3 - "$TMP/results.tsv" "$x" "${NAMES[$x]}" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
x = sys.argv[2]
s = statistics.median(float(r[2]) for r in rows if r[0] == x and r[1] == "snapshot")
a = statistics.median(float(r[2]) for r in rows if r[0] == x and r[1] == "aggregate")
print(f"| {sys.argv[3]} | {s:.1f} | {a:.1f} | **{s / a:.2f}** |")
EOF
done
