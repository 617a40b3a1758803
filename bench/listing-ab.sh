#!/usr/bin/env bash
# A/B of the root listing of a 100,000-file workspace (100 directories of 1,000 files): two
# builds, each installed in its own PostgreSQL copy, in two throwaway clusters at once; 6
# rounds of 20 listings as PostgREST calls them, alternated build by build; prints medians.
#
#   bench/listing-ab.sh PG_CONFIG_A PG_CONFIG_B     (run as root; the clusters run as postgres)
#
# Three directories are listed, each reported on its own: `/` (100 subdirectories and `/m`),
# `/d5` (1,000 files) and `/m` (one subdirectory, `.a`, sorting before 1,000 files).
set -euo pipefail
PGC_A=${1:?pg_config of build A}
PGC_B=${2:?pg_config of build B}
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
TIMES=$(mktemp /tmp/listing-ab.XXXXXX)
PSQL=/usr/lib/postgresql/15/bin/psql
declare -A PORTS DIRS
for b in A B; do
  case $b in A) PGC=$PGC_A;; B) PGC=$PGC_B;; esac
  bindir=$($PGC --bindir)
  T=$(mktemp -d /tmp/listing-ab.XXXXXX); chmod 755 $T; chown postgres $T
  runuser -u postgres -- $bindir/initdb -D $T/data -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  runuser -u postgres -- $bindir/pg_ctl -D $T/data -l $T/log -w -o "-p $P -c listen_addresses=127.0.0.1 -k $T" start >/dev/null
  PORTS[$b]=$P; DIRS[$b]="$T $bindir"
done
cleanup() { for b in A B; do set -- ${DIRS[$b]}; runuser -u postgres -- $2/pg_ctl -D $1/data -m fast -w stop >/dev/null 2>&1 || true; rm -rf $1; done; rm -f "$TIMES"; }
trap cleanup EXIT
U=11111111-1111-4111-8111-111111111111
rpc() { local p=$1; shift; $PSQL -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $p -d postgres -U authenticator -At "$@"; }
for b in A B; do
  p=${PORTS[$b]}
  $PSQL -X -q -h 127.0.0.1 -p $p -d postgres -U postgres -f $REPO/sql/bootstrap.sql >/dev/null
  $PSQL -X -q -h 127.0.0.1 -p $p -d postgres -U postgres -c "CREATE EXTENSION supabash" >/dev/null
  ws=$(rpc $p <<SQL
BEGIN; SELECT set_config('request.jwt.claims', '{"sub":"$U","role":"authenticated"}', true) \g /dev/null
SET LOCAL ROLE authenticated;
SELECT supabash_create_workspace()->>'workspaceId';
COMMIT;
SQL
)
  head=NULL
  for ((lo = 0; lo < 100000; lo += 25000)); do
    h=$(rpc $p <<SQL
BEGIN; SELECT set_config('request.jwt.claims', '{"sub":"$U","role":"authenticated"}', true) \g /dev/null
SET LOCAL ROLE authenticated;
SET LOCAL statement_timeout = 0;
SELECT supabash_commit(workspace_id => '$ws', actor => 'seed', base_revision => $head,
  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', format('/d%s/f%s.txt', i / 1000, i), 'text', 'x' || i)) FROM generate_series($lo, $lo + 24999) i))->'receipt'->>'revision';
COMMIT;
SQL
)
    head="'$h'"
  done
  rpc $p >/dev/null <<SQL
BEGIN; SELECT set_config('request.jwt.claims', '{"sub":"$U","role":"authenticated"}', true) \g /dev/null
SET LOCAL ROLE authenticated;
SELECT supabash_commit(workspace_id => '$ws', actor => 'seed', base_revision => $head,
  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', p, 'text', 'x'))
              FROM (SELECT '/m/.a/x.txt' p UNION ALL SELECT format('/m/f%s.txt', i) FROM generate_series(1, 1000) i) s));
COMMIT;
SQL
  echo "$b seeded $ws" >&2
  eval "WS_$b=$ws"
done
run() { # build path -> prints ms of 20 listings
  local b=$1 p=${PORTS[$1]} ws LIST_PATH=$2; eval "ws=\$WS_$b"
  { echo "BEGIN; SELECT set_config('request.jwt.claims', '{\"sub\":\"$U\",\"role\":\"authenticated\"}', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "\\timing on"
    for i in $(seq 20); do echo "SELECT length(supabash_list_directory(workspace_id => '$ws', path => '$LIST_PATH', page_size => 1000)::text);"; done
    echo "COMMIT;"; } | rpc $p | grep '^Time' | awk '{print $2}'
}
for path in / /d5 /m; do
  for r in 1 2 3 4 5 6; do
    for b in A B; do run $b $path | sed "s/^/$b /"; done
  done > "$TIMES"
  echo "== $path"
  python3 - "$TIMES" <<'PY'
import statistics as s, sys
t={'A':[],'B':[]}
for l in open(sys.argv[1]):
    b,v=l.split(); t[b].append(float(v))
for b in 'AB': print(b, 'n', len(t[b]), 'median %.3f ms' % s.median(t[b]), 'p10 %.3f' % sorted(t[b])[len(t[b])//10])
print('B/A median ratio %.3f' % (s.median(t['B'])/s.median(t['A'])))
PY
done
