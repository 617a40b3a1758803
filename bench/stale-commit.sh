#!/usr/bin/env bash
# Single-file commits on statistics taken when the workspace had one revision, per build, side
# by side: backend CPU and latency per commit as the history grows.
#
#   bench/stale-commit.sh NAME=PG_CONFIG ...        (run as root)
#
# For each build: a throwaway cluster (stock settings), sql/bootstrap.sql of the working tree,
# a workspace of 1,000 files of 4 KiB committed at once, VACUUM ANALYZE (so the statistics
# show one revision), then autovacuum off, as in a large multi-tenant table whose statistics do
# not move for one workspace. Then $STALE_ROUNDS rounds, builds in alternating order, each
# running $STALE_CALLS single-file overwrite commits (pgbench, one client, -M prepared,
# synchronous_commit off: the server's work without the WAL flush) on the same file. Prints
# per round and build the backend CPU per commit (/proc/<backend pid>/schedstat) and pgbench's
# average latency; the history grows by $STALE_CALLS revisions per round. STALE_ANALYZE=1 runs
# ANALYZE before every run instead (fresh statistics: the plans every build is meant to have).
set -euo pipefail
ROUNDS=${STALE_ROUNDS:-6}
CALLS=${STALE_CALLS:-400}
PSQL=/usr/lib/postgresql/15/bin/psql
PGBENCH=/usr/lib/postgresql/15/bin/pgbench
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
TMP=$(mktemp -d /tmp/stale-commit.XXXXXX)
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
NAMES=(); PORTS=(); WS=()
for spec in "$@"; do
  name=${spec%%=*}; pgc=${spec#*=}
  d=$TMP/build${#NAMES[@]}; mkdir -p "$d"; chown postgres "$d"
  bindir=$("$pgc" --bindir); echo "$bindir" >"$d/bindir"
  runuser -u postgres -- "$bindir/initdb" -D "$d/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  DATAS+=("$d")
  runuser -u postgres -- "$bindir/pg_ctl" -D "$d/data" -l "$d/server.log" -w -o "-p $port -c listen_addresses=127.0.0.1 -k $d" start >/dev/null
  sql "$port" -U postgres -d postgres -f "$REPO/sql/bootstrap.sql" >/dev/null
  sql "$port" -U postgres -d postgres -c "CREATE EXTENSION supabash" >/dev/null
  ws=$(sql "$port" -U authenticator -d postgres -At <<EOF2
BEGIN; SELECT set_config('request.jwt.claims', '$CLAIMS', true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT supabash_create_workspace()->>'workspaceId' AS ws \\gset
SELECT supabash_commit(workspace_id => :'ws', actor => 'seed',
  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', format('/f%s.txt', lpad(i::text, 4, '0')), 'text', $content) ORDER BY i) FROM generate_series(1, 1000) i)) \\g /dev/null
SELECT :'ws';
COMMIT;
EOF2
)
  sql "$port" -U postgres -d postgres -c "VACUUM ANALYZE" -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" -c "CHECKPOINT" >/dev/null
  NAMES+=("$name"); PORTS+=("$port"); WS+=("$ws")
done
cat >"$TMP/commit.sql" <<'EOF2'
BEGIN;
SELECT set_config('request.jwt.claims', :claims, true);
SET LOCAL ROLE authenticated;
SET LOCAL synchronous_commit = off;
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/f0007.txt', 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \gset
COMMIT;
EOF2
REST=$(printf 'x%.0s' $(seq 1 4084))
echo "| round | revisions before | $(printf '%s: backend CPU ms per commit | ' "${NAMES[@]}")$(printf '%s: latency ms | ' "${NAMES[@]}" | sed 's/ | $//') |"
run() { # build index -> "cpu_ms_per_commit latency_ms"
  local x=$1 port=${PORTS[$1]} ws=${WS[$1]} head pos pid c0 last
  [ -z "${STALE_ANALYZE:-}" ] || sql "$port" -U postgres -d postgres -c "ANALYZE" >/dev/null
  read -r head pos < <(sql "$port" -U postgres -d postgres -At -F ' ' -c "SELECT head_revision, head_position FROM supabash.workspaces WHERE id = '$ws'")
  "$PGBENCH" -n -M prepared -c 1 -j 1 -t "$CALLS" -h 127.0.0.1 -p "$port" -U authenticator -d postgres \
    -f "$TMP/commit.sql" -D "claims=$CLAIMS" -D "ws=$ws" -D "head=$head" -D "pos=$pos" -D "rest=$REST" >"$TMP/out" 2>&1 &
  local bench=$!
  pid=
  while [ -z "$pid" ]; do
    pid=$(sql "$port" -U postgres -d postgres -At -c "SELECT pid FROM pg_stat_activity WHERE usename = 'authenticator' AND backend_type = 'client backend'")
  done
  c0=$(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null) || { wait "$bench"; cat "$TMP/out" >&2; exit 1; }
  last=$c0
  while [ -e "/proc/$pid" ]; do last=$(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null || echo "$last"); sleep 0.02; done
  wait "$bench" || { cat "$TMP/out" >&2; exit 1; }
  echo "$(( (last - c0) / CALLS / 1000 ))" "$(grep -o 'latency average = [0-9.]*' "$TMP/out" | grep -o '[0-9.]*$')"
}
for ((r = 1; r <= ROUNDS; r++)); do
  order=$(seq 0 $((${#NAMES[@]} - 1))); (( r % 2 )) || order=$(echo "$order" | tac)
  declare -A CPU=() LAT=()
  for x in $order; do read -r c l < <(run "$x"); CPU[$x]=$c; LAT[$x]=$l; done
  line="| $r | $(( (r - 1) * CALLS + 2 ))"
  for x in "${!NAMES[@]}"; do line+=" | $(awk -v c="${CPU[$x]}" 'BEGIN { printf "%.3f", c / 1000 }')"; done
  for x in "${!NAMES[@]}"; do line+=" | ${LAT[$x]}"; done
  echo "$line |"
done
