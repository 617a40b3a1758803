#!/usr/bin/env bash
# The time and the locks of `ALTER EXTENSION supabash UPDATE` from one version to the current
# one on a database holding many entries, and what a reader sees meanwhile.
#
#   bench/upgrade-time.sh [FROM_VERSION]     (default 0.6.0)
#
# Starts a throwaway cluster (PostgreSQL of PG_CONFIG, with the current build installed by
# `just install`, which also installs the frozen scripts), installs FROM_VERSION, and seeds
# UP_WORKSPACES workspaces of UP_FILES files each (64-byte bodies, commits of 1,000 files),
# with UP_REVISIONS single-file commits in every workspace, then VACUUM ANALYZE. Then, while a
# reader calls supabash_load_document of one file every 20 ms on its own connection, it runs the
# update, samples pg_locks of the updating backend every 100 ms, and reports: the update's
# wall time, the locks it held (relation, mode) at the last sample, and the reader's longest
# wait and how many of its calls failed. Run as root (the cluster runs as the postgres user).
#
# Knobs: PG_CONFIG, UP_DIR=/tmp/upgrade-time, UP_PORT=54988, UP_WORKSPACES=100,
# UP_FILES=10000, UP_REVISIONS=10.
set -euo pipefail

FROM=${1:-0.6.0}
PGC=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
BIN=$("$PGC" --bindir)
DIR=${UP_DIR:-/tmp/upgrade-time}
PORT=${UP_PORT:-54988}
WORKSPACES=${UP_WORKSPACES:-100}
FILES=${UP_FILES:-10000}
REVISIONS=${UP_REVISIONS:-10}
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
USER_ID=22222222-2222-4222-8222-222222222222
CLAIMS="{\"sub\":\"$USER_ID\",\"role\":\"authenticated\"}"

[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
sql() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -d up "$@"; }
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
rm -rf "$DIR"; mkdir -p "$DIR"; chown postgres "$DIR"
runuser -u postgres -- "$BIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
  -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DIR -c max_wal_size=4GB -c shared_buffers=512MB" start >/dev/null
trap 'runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null' EXIT
"$BIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE up" >/dev/null
sql -U postgres -f "$REPO/sql/bootstrap.sql" >/dev/null
sql -U postgres -c "CREATE EXTENSION supabash VERSION '$FROM'" >/dev/null

log "seeding $WORKSPACES workspaces × $FILES files, $REVISIONS revisions each, on $FROM"
{
  echo "\\set claims '$CLAIMS'"
  for ((w = 0; w < WORKSPACES; w++)); do
    echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "SELECT supabash_create_workspace()->>'workspaceId' AS ws \\gset"
    echo "COMMIT;"
    base=""
    for ((lo = 0; lo < FILES; lo += 1000)); do
      echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
      echo "SET LOCAL ROLE authenticated;"
      echo "SELECT supabash_commit(workspace_id => :'ws', actor => 'seed', $base changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', format('/d%s/f%s.txt', i / 1000, i), 'text', md5(:'ws' || i) || md5(i::text))) FROM generate_series($lo, $((lo + 999))) i))->'receipt'->>'revision' AS head \\gset"
      echo "COMMIT;"
      base="base_revision => :'head',"
    done
    for ((r = 0; r < REVISIONS; r++)); do
      echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
      echo "SET LOCAL ROLE authenticated;"
      echo "SELECT supabash_commit(workspace_id => :'ws', actor => 'seed', $base changes => json_build_array(json_build_object('op', 'upsert', 'path', '/d0/f1.txt', 'text', 'edit $r')))->'receipt'->>'revision' AS head \\gset"
      echo "COMMIT;"
    done
  done
} >"$DIR/seed.sql"
sql -U authenticator -f "$DIR/seed.sql" >/dev/null
sql -U postgres -c "VACUUM ANALYZE" >/dev/null
read -r entries bodies revisions size < <(sql -U postgres -At -F ' ' -c "SELECT (SELECT count(*) FROM supabash.entries), (SELECT count(*) FROM supabash.bodies), (SELECT count(*) FROM supabash.revisions), pg_size_pretty(pg_database_size('up'))")
log "seeded: $entries entries, $bodies bodies, $revisions revisions, database $size"
WS=$(sql -U postgres -At -c "SELECT id FROM supabash.workspaces ORDER BY created_at LIMIT 1")

# The reader: one call every 20 ms, each call's wall time in ms (or FAIL) on a line.
cat >"$DIR/reader.sql" <<SQL
BEGIN;
SELECT set_config('request.jwt.claims', '$CLAIMS', true) \gset
SET LOCAL ROLE authenticated;
SELECT supabash_load_document('$WS', '/d0/f2.txt') IS NOT NULL AS ok \gset
COMMIT;
SQL
"$BIN/pgbench" -n -h 127.0.0.1 -p "$PORT" -U authenticator -d up -f "$DIR/reader.sql" -R 50 -T 36000 \
  -l --log-prefix="$DIR/reader" >"$DIR/reader.out" 2>&1 &
READER=$!
sleep 2

log "updating to the installed version"
start=$(date +%s%N)
sql -U postgres -c "SELECT pg_backend_pid()" -At >"$DIR/pid" &
( sql -U postgres -c "ALTER EXTENSION supabash UPDATE" >"$DIR/update.out" 2>&1; echo $? >"$DIR/update.rc" ) &
UPD=$!
while kill -0 $UPD 2>/dev/null; do
  sql -U postgres -At -c "SELECT string_agg(DISTINCT coalesce(l.relation::regclass::text, l.locktype) || ' ' || l.mode, ', ' ORDER BY coalesce(l.relation::regclass::text, l.locktype) || ' ' || l.mode)
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE a.query LIKE 'ALTER EXTENSION%' AND l.granted AND (l.relation IS NULL OR l.relation::regclass::text LIKE 'supabash.%')" \
    >"$DIR/locks.tmp" 2>/dev/null && [ -s "$DIR/locks.tmp" ] && [ "$(cat "$DIR/locks.tmp")" != "" ] && cp "$DIR/locks.tmp" "$DIR/locks"
  sleep 0.1
done
wall=$(( ($(date +%s%N) - start) / 1000000 ))
sleep 2
kill $READER 2>/dev/null || true; wait $READER 2>/dev/null || true
[ "$(cat "$DIR/update.rc")" = 0 ] || { cat "$DIR/update.out" >&2; exit 1; }
version=$(sql -U postgres -At -c "SELECT extversion FROM pg_extension WHERE extname = 'supabash'")
after=$(sql -U postgres -At -c "SELECT pg_size_pretty(pg_database_size('up'))")
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg): $FROM → $version"
echo "- data: $entries entries, $bodies bodies, $revisions revisions ($WORKSPACES workspaces); database $size before, $after after"
echo "- ALTER EXTENSION supabash UPDATE: $wall ms"
echo "- locks held by the update (last sample, supabash relations): $(cat "$DIR/locks" 2>/dev/null || echo none seen)"
cat "$DIR"/reader.* 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {n++; if ($3 == "failed") f++; else if ($3 + 0 > m) m = $3} END {printf "- reader (load_document every 20 ms): %d calls, longest %.0f ms, %d failed\n", n, m / 1000, f}'
grep -h "aborted\|error" "$DIR/reader.out" | head -3 || true
