#!/usr/bin/env bash
# A/B benchmark of two builds of the extension, side by side in one run.
#
#   scripts/ab-bench.sh BASE_REV [HEAD_REV]      (run as root; a few minutes per build)
#
# BASE_REV defaults to f82ef62 (the build before the issue-21 refactor), HEAD_REV to `main`.
# For each revision: a detached `git worktree` in a temp dir, its extension's release build
# installed into a private relocatable copy of PostgreSQL 15 under /opt/ab-<rev> (never into
# /usr/lib/postgresql/15), one throwaway cluster per build (run by the postgres OS user, stock
# settings: fsync on), sql/bootstrap.sql of that checkout, CREATE EXTENSION supabash, the same
# seed in both. Then every workload runs as pgbench custom scripts shaped like PostgREST's calls
# (one transaction: set_config of request.jwt.claims, SET LOCAL ROLE authenticated, the RPC),
# interleaved round by round, A B / B A / A B ..., a fixed number of calls per round, so both
# builds see the same data at every round. Per round: the median latency per call (pgbench's
# per-transaction log); per workload: the median of the round medians, min/max of rounds, B/A.
#
# Knobs (environment):
#   AB_ROUNDS=10           rounds per workload (each round: A and B once, order flipped)
#   AB_SCALE=1             multiplies every workload's calls per round (ALL_WORKLOADS below; 0.1 for a quick try)
#   AB_WORKLOADS=...       comma-separated subset of the workload names
#   AB_TARGET_DIR=/work/ab-target   CARGO_TARGET_DIR shared by both builds
#   AB_PREFIX_ROOT=/opt    private PostgreSQL copies go to $AB_PREFIX_ROOT/ab-<rev>
#   AB_REBUILD=1           rebuild and reinstall even if /opt/ab-<rev> holds that revision's build
#   AB_OUT=/tmp/ab-bench-<time>     where results.md, rounds.tsv and the server logs are kept
#   AB_FILES=10000         files in the large workspace (4 KiB each, commits of 1,000)
set -euo pipefail

COMMAND="AB_ROUNDS=${AB_ROUNDS:-10} AB_SCALE=${AB_SCALE:-1}${AB_WORKLOADS:+ AB_WORKLOADS=$AB_WORKLOADS} $0 $*"
BASE_REV=${1:-f82ef62}
HEAD_REV=${2:-main}
ROUNDS=${AB_ROUNDS:-10}
SCALE=${AB_SCALE:-1}
TARGET_DIR=${AB_TARGET_DIR:-/work/ab-target}
PREFIX_ROOT=${AB_PREFIX_ROOT:-/opt}
FILES=${AB_FILES:-10000}
OUT=${AB_OUT:-/tmp/ab-bench-$(date -u +%Y%m%d-%H%M%S)}
PGBIN_CLIENT=/usr/lib/postgresql/15/bin
PGBENCH=$PGBIN_CLIENT/pgbench
PSQL=$PGBIN_CLIENT/psql
BATCH=1000

# name:calls-per-round. Reads first, then the commits, so the reads see exactly $FILES files.
# Calls per round give rounds of roughly 3 to 6 s on the 2-core machine (AB_SCALE scales them).
# Many short rounds rather than a few long ones: each A/B pair is close in time, so the load of
# other work on the machine shifts both builds alike.
# The *_nosync commits are the same calls with `SET LOCAL synchronous_commit = off` in their
# transaction: the server does the same work but does not wait for the WAL flush, which on a
# slow virtual disk puts a floor under the commit latency that hides CPU differences.
# large_read and large_commit read and commit a 16.5 MB text file (hex digits: it compresses
# to about half), in a workspace of its own: the cost of compressing and decoding large bodies.
ALL_WORKLOADS="manifest:200 document:5000 history:4000 list_root:5000 list_root_totals:1500 commit_overwrite:1000 commit_new:1000 commit_overwrite_nosync:1000 commit_new_nosync:1000 large_read:20 large_commit:10"
WORKLOADS=${AB_WORKLOADS:-}

[ "$(id -u)" = 0 ] || { echo "run as root (clusters run as the postgres OS user)" >&2; exit 2; }
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
BASE=$(git -C "$REPO" rev-parse --verify "$BASE_REV^{commit}")
HEAD=$(git -C "$REPO" rev-parse --verify "$HEAD_REV^{commit}")
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/ab-bench.XXXXXX)
chmod 755 "$TMP"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

CLUSTERS=()
WORKTREES=()
cleanup() {
  local rc=$?
  set +e
  for d in "${CLUSTERS[@]}"; do
    cp "$d/server.log" "$OUT/$(basename "$d").server.log" 2>/dev/null
    runuser -u postgres -- "$(cat "$d/bindir")/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1
  done
  for w in "${WORKTREES[@]}"; do
    git -C "$REPO" worktree remove --force "$w" >/dev/null 2>&1
  done
  git -C "$REPO" worktree prune
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- builds -------------------------------------------------------------------------------

# checkout REV: sets SRC_DIR to a detached worktree of REV in the temp dir (removed on exit).
checkout() {
  local rev=$1
  SRC_DIR=$TMP/src-${rev:0:12}
  if [ ! -d "$SRC_DIR" ]; then
    git -C "$REPO" worktree add --detach "$SRC_DIR" "$rev" >/dev/null 2>&1
    WORKTREES+=("$SRC_DIR")
  fi
}

# install_build REV: sets PGC to the pg_config of $PREFIX_ROOT/ab-<rev>, which holds REV's
# release build (built and installed unless it already holds exactly that revision's).
install_build() {
  local rev=$1 short=${1:0:12}
  local P=$PREFIX_ROOT/ab-$short
  PGC=$P/lib/postgresql/15/bin/pg_config
  if [ -z "${AB_REBUILD:-}" ] && [ -f "$P/.ab-installed" ] && [ "$(cat "$P/.ab-installed")" = "$rev" ]; then
    log "build $short: already installed in $P (AB_REBUILD=1 to rebuild)"
    return
  fi
  checkout "$rev"
  rm -rf "$P"
  mkdir -p "$P/lib/postgresql" "$P/share/postgresql"
  cp -a /usr/lib/postgresql/15 "$P/lib/postgresql/"
  cp -a /usr/share/postgresql/15 "$P/share/postgresql/"
  [ "$("$PGC" --pkglibdir)" = "$P/lib/postgresql/15/lib" ] || { echo "the copy of PostgreSQL under $P is not relocatable" >&2; exit 1; }
  log "build $short: cargo pgrx install --release --pg-config $PGC (CARGO_TARGET_DIR=$TARGET_DIR), log in $OUT/build-$short.log"
  (cd "$SRC_DIR/extension" && CARGO_TARGET_DIR=$TARGET_DIR cargo pgrx install --release --pg-config "$PGC") \
    >"$OUT/build-$short.log" 2>&1 || { tail -30 "$OUT/build-$short.log" >&2; exit 1; }
  echo "$rev" >"$P/.ab-installed"
}

# --- clusters -----------------------------------------------------------------------------

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_cluster NAME PG_CONFIG: sets PORT
start_cluster() {
  local name=$1 pgc=$2
  local d=$TMP/$name bindir
  bindir=$("$pgc" --bindir)
  mkdir -p "$d"
  echo "$bindir" >"$d/bindir"
  chown postgres "$d"
  runuser -u postgres -- "$bindir/initdb" -D "$d/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$d/initdb.log" 2>&1
  PORT=$(free_port)
  CLUSTERS+=("$d")
  runuser -u postgres -- "$bindir/pg_ctl" -D "$d/data" -l "$d/server.log" -w \
    -o "-p $PORT -c listen_addresses=127.0.0.1 -k $d" start >/dev/null
}

sql() { local port=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" "$@"; }

BIG_USER=11111111-1111-4111-8111-111111111111
SMALL_USER=22222222-2222-4222-8222-222222222222
claims() { printf '{"sub":"%s","role":"authenticated"}' "$1"; }

# The text of seeded file I: 128 hex MD5s, 4,096 bytes, distinct per file (no dedup, little
# compression).
content_sql() { echo "(SELECT string_agg(md5($1 || '-' || j), '' ORDER BY j) FROM generate_series(1, 128) j)"; }

# seed PORT -> prints "big_ws small_ws"
seed() {
  local port=$1 f=$TMP/seed-$1.sql
  {
    echo "\\set claims '$(claims $BIG_USER)'"
    echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "SELECT supabash_create_workspace(label => 'big')->>'workspaceId' AS ws \\gset big_"
    echo "COMMIT;"
    local first=1 lo hi
    for ((lo = 0; lo < FILES; lo += BATCH)); do
      hi=$((lo + BATCH - 1)); [ $hi -lt "$FILES" ] || hi=$((FILES - 1))
      echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
      echo "SET LOCAL ROLE authenticated;"
      echo "SELECT supabash_commit(workspace_id => :'big_ws', actor => 'seed',"
      [ $first = 1 ] || echo "  base_revision => :'head',"
      echo "  changes => (SELECT json_agg(json_build_object('op', 'upsert',"
      echo "    'path', format('/dir%s/f%s.txt', lpad((i / $BATCH)::text, 2, '0'), lpad(i::text, 5, '0')),"
      echo "    'text', $(content_sql i)) ORDER BY i) FROM generate_series($lo, $hi) i))->'receipt'->>'revision' AS head \\gset"
      echo "COMMIT;"
      first=0
    done
    # The small workspace: 100 files in 100 one-file commits (so it has 100 revisions, the history page).
    echo "\\set claims '$(claims $SMALL_USER)'"
    echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "SELECT supabash_create_workspace(label => 'small')->>'workspaceId' AS ws \\gset small_"
    echo "COMMIT;"
    for ((i = 0; i < 100; i++)); do
      echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
      echo "SET LOCAL ROLE authenticated;"
      echo "SELECT supabash_commit(workspace_id => :'small_ws', actor => 'seed',"
      [ $i = 0 ] || echo "  base_revision => :'head',"
      echo "  changes => json_build_array(json_build_object('op', 'upsert', 'path', '/s/f$i.txt', 'text', $(content_sql $((100000 + i))))))->'receipt'->>'revision' AS head \\gset"
      echo "COMMIT;"
    done
    # The large workspace: one 16.5 MB file, its text kept in public.ab_large for large_commit.
    echo "RESET ROLE;"
    echo "CREATE TABLE IF NOT EXISTS public.ab_large AS SELECT string_agg(md5(j::text), ' ' ORDER BY j) AS t FROM generate_series(1, 500000) j;"
    echo "GRANT SELECT ON public.ab_large TO authenticated;"
    echo "\\set claims '$(claims $BIG_USER)'"
    echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "SELECT supabash_create_workspace(label => 'large')->>'workspaceId' AS ws \\gset large_"
    echo "SELECT supabash_commit(workspace_id => :'large_ws', actor => 'seed', changes => json_build_array(json_build_object('op', 'upsert', 'path', '/large.txt', 'text', (SELECT t FROM public.ab_large)))) \\g /dev/null"
    echo "COMMIT;"
    echo "\\echo :big_ws :small_ws :large_ws"
  } >"$f"
  sql "$port" -U postgres -d postgres -c "GRANT CREATE ON SCHEMA public TO authenticator" >/dev/null
  sql "$port" -U authenticator -d postgres -f "$f"
}

# --- workloads ----------------------------------------------------------------------------

# Every script: the transaction PostgREST runs for an RPC (claims, role, the call), as
# authenticator over TCP, extended protocol with prepared statements (-M prepared).
PREAMBLE="BEGIN;
SELECT set_config('request.jwt.claims', :claims, true);
SET LOCAL ROLE authenticated;"

write_scripts() {
  local d=$TMP/scripts
  mkdir -p "$d"
  cat >"$d/manifest.sql" <<EOF
$PREAMBLE
SELECT supabash_load_manifest(workspace_id => :ws);
COMMIT;
EOF
  cat >"$d/document.sql" <<EOF
\\set i random(0, $((FILES - 1)))
$PREAMBLE
SELECT supabash_load_document(workspace_id => :ws, path => format('/dir%s/f%s.txt', lpad((:i / $BATCH)::text, 2, '0'), lpad(:i::text, 5, '0')));
COMMIT;
EOF
  cat >"$d/history.sql" <<EOF
$PREAMBLE
SELECT supabash_history(workspace_id => :ws, page_size => 100);
COMMIT;
EOF
  cat >"$d/list_root.sql" <<EOF
$PREAMBLE
SELECT supabash_list_directory(workspace_id => :ws, path => '/');
COMMIT;
EOF
  cat >"$d/list_root_totals.sql" <<EOF
$PREAMBLE
SELECT supabash_list_directory(workspace_id => :ws, path => '/', totals => true);
COMMIT;
EOF
  # A 4 KiB file edited in its first 12 bytes (a small edit of an existing file); the head and
  # position chain from call to call through \gset, starting from -D head=... pos=...
  cat >"$d/commit_overwrite.sql" <<EOF
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', :path::text, 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \\gset
COMMIT;
EOF
  cat >"$d/commit_new.sql" <<EOF
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/new/f' || :pos::text || '.txt', 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \\gset
COMMIT;
EOF
  cat >"$d/large_read.sql" <<EOF
$PREAMBLE
SELECT length(supabash_load_document(workspace_id => :ws, path => '/large.txt')->>'text');
COMMIT;
EOF
  cat >"$d/large_commit.sql" <<EOF
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/large.txt', 'text', lpad(:pos::text, 12, '0') || (SELECT t FROM public.ab_large)))) AS c) s \\gset
COMMIT;
EOF
  for w in commit_overwrite commit_new; do
    sed 's/^SET LOCAL ROLE authenticated;$/SET LOCAL ROLE authenticated;\nSET LOCAL synchronous_commit = off;/' "$d/$w.sql" >"$d/${w}_nosync.sql"
    grep -q synchronous_commit "$d/${w}_nosync.sql"
  done
}

# Arguments of workload W on build X (0 = A, 1 = B) as pgbench -D options, one per line.
workload_vars() {
  local w=$1 x=$2 port=${PORTS[$2]}
  case $w in
    history) echo "claims=$(claims $SMALL_USER)"; echo "ws=${SMALL_WS[$x]}" ;;
    large_*) echo "claims=$(claims $BIG_USER)"; echo "ws=${LARGE_WS[$x]}" ;;
    *) echo "claims=$(claims $BIG_USER)"; echo "ws=${BIG_WS[$x]}" ;;
  esac
  local ws=${BIG_WS[$x]}
  [[ $w != large_* ]] || ws=${LARGE_WS[$x]}
  case $w in
    commit_*|large_commit)
      local h
      h=$(sql "$port" -U authenticator -d postgres -At <<EOF
BEGIN;
SELECT set_config('request.jwt.claims', '$(claims $BIG_USER)', true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT m->>'revision', m->>'position' FROM (SELECT supabash_load_manifest(workspace_id => '$ws')::jsonb m) s;
COMMIT;
EOF
)
      [[ $h == *-*\|[0-9]* ]] || { echo "no head for $w on ${NAMES[$x]}: '$h'" >&2; exit 1; }
      echo "head=${h%%|*}"; echo "pos=${h##*|}"
      echo "path=/dir04/f04242.txt"
      echo "rest=$REST"
      ;;
  esac
}

# run_once W X ROUND CALLS -> prints "median_ms p90_ms calls"
run_once() {
  local w=$1 x=$2 round=$3 calls=$4
  local prefix=$TMP/pgb/$w.$x.$round
  mkdir -p "$TMP/pgb"
  local -a dargs=()
  rm -f "$prefix".*
  workload_vars "$w" "$x" >"$prefix.vars"
  while IFS= read -r v; do dargs+=(-D "$v"); done <"$prefix.vars"
  if ! "$PGBENCH" -n -M prepared -c 1 -j 1 -t "$calls" --random-seed=1 -h 127.0.0.1 -p "${PORTS[$x]}" \
      -U authenticator -d postgres -f "$TMP/scripts/$w.sql" "${dargs[@]}" -l --log-prefix="$prefix" \
      >"$prefix.out" 2>&1; then
    cat "$prefix.out" >&2; exit 1
  fi
  grep -q "number of failed transactions: 0" "$prefix.out" || { cat "$prefix.out" >&2; exit 1; }
  # per-transaction log: client_id transaction_no latency_us script_no epoch epoch_us
  cat "$prefix".[0-9]* | awk '{print $3}' | sort -n | awk -v n="$calls" '
    { a[NR] = $1 }
    END {
      if (NR != n) { print "expected " n " transactions, logged " NR > "/dev/stderr"; exit 1 }
      m = a[int((NR + 1) / 2)]; p = a[int(NR * 0.9 + 0.999999)]
      printf "%.3f %.3f %d\n", m / 1000, p / 1000, NR
    }'
}

# --- main ---------------------------------------------------------------------------------

log "A = $BASE, B = $HEAD; results in $OUT"
NAMES=(A B)
REVS=("$BASE" "$HEAD")
PGCS=()
SRCS=()
for x in 0 1; do
  install_build "${REVS[$x]}"; PGCS[$x]=$PGC
  checkout "${REVS[$x]}"; SRCS[$x]=$SRC_DIR
done
PORTS=()
BIG_WS=()
SMALL_WS=()
LARGE_WS=()
REST=$(python3 -c '
import hashlib
s = "".join(hashlib.md5(f"4242-{j}".encode()).hexdigest() for j in range(1, 129))
print(s[12:])')

for x in 0 1; do
  start_cluster "${NAMES[$x]}" "${PGCS[$x]}"; PORTS[$x]=$PORT
  log "cluster ${NAMES[$x]} (${REVS[$x]:0:12}) on port ${PORTS[$x]}"
  sql "${PORTS[$x]}" -U postgres -d postgres -f "${SRCS[$x]}/sql/bootstrap.sql" >/dev/null
  sql "${PORTS[$x]}" -U postgres -d postgres -c "CREATE EXTENSION supabash" >/dev/null 2>"$OUT/create-extension-${NAMES[$x]}.log"
done
for x in 0 1; do
  log "seeding ${NAMES[$x]}: $FILES files of 4 KiB in commits of $BATCH, and 100 files in 100 commits"
  read -r BIG_WS[$x] SMALL_WS[$x] LARGE_WS[$x] < <(seed "${PORTS[$x]}" | tail -1)
  sql "${PORTS[$x]}" -U postgres -d postgres -c "VACUUM ANALYZE" -c "CHECKPOINT"
  check=$(sql "${PORTS[$x]}" -U authenticator -d postgres -At <<EOF
BEGIN;
SELECT set_config('request.jwt.claims', '$(claims $BIG_USER)', true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT json_array_length(supabash_load_manifest(workspace_id => '${BIG_WS[$x]}')->'files')
  || ' ' || json_array_length(supabash_list_directory(workspace_id => '${BIG_WS[$x]}', path => '/')->'directories')
  || ' ' || length(supabash_load_document(workspace_id => '${BIG_WS[$x]}', path => '/dir04/f04242.txt')->>'text')
  || ' ' || (right(supabash_load_document(workspace_id => '${BIG_WS[$x]}', path => '/dir04/f04242.txt')->>'text', -12) = '$REST');
COMMIT;
BEGIN;
SELECT set_config('request.jwt.claims', '$(claims $SMALL_USER)', true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT json_array_length(supabash_history(workspace_id => '${SMALL_WS[$x]}', page_size => 100)->'records');
COMMIT;
EOF
)
  check=$(echo $check)
  log "seeded ${NAMES[$x]}: manifest files, root directories, document bytes, rest matches, history records = $check"
done
write_scripts

SETTINGS=$(sql "${PORTS[0]}" -U postgres -d postgres -At -F ' = ' -c "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_level', 'shared_buffers', 'work_mem', 'jit', 'max_wal_size', 'checkpoint_timeout', 'autovacuum') ORDER BY name")
VERSION=$(sql "${PORTS[0]}" -U postgres -d postgres -At -c "SELECT version()")
EXTV=()
for x in 0 1; do
  EXTV[$x]=$(sql "${PORTS[$x]}" -U postgres -d postgres -At -c "SELECT extversion FROM pg_extension WHERE extname = 'supabash'")
done

ROUNDS_TSV=$OUT/rounds.tsv
printf 'workload\tround\tbuild\tcalls\tmedian_ms\tp90_ms\n' >"$ROUNDS_TSV"
for spec in $ALL_WORKLOADS; do
  w=${spec%%:*}; calls=$(awk -v c="${spec##*:}" -v s="$SCALE" 'BEGIN { n = int(c * s + 0.5); print (n < 1 ? 1 : n) }')
  if [ -n "$WORKLOADS" ] && [[ ",$WORKLOADS," != *",$w,"* ]]; then continue; fi
  warm=$(( calls / 10 )); [ $warm -ge 3 ] || warm=3
  for x in 0 1; do run_once "$w" "$x" warm "$warm" >/dev/null; done
  for ((r = 1; r <= ROUNDS; r++)); do
    if (( r % 2 )); then order="0 1"; else order="1 0"; fi
    for x in $order; do
      read -r med p90 n < <(run_once "$w" "$x" "$r" "$calls")
      printf '%s\t%d\t%s\t%d\t%s\t%s\n' "$w" "$r" "${NAMES[$x]}" "$n" "$med" "$p90" >>"$ROUNDS_TSV"
      log "$w round $r ${NAMES[$x]}: median $med ms, p90 $p90 ms ($n calls)"
    done
  done
done

# --- report -------------------------------------------------------------------------------

{
  echo "A = \`${BASE:0:12}\` (extension ${EXTV[0]}), B = \`${HEAD:0:12}\` (extension ${EXTV[1]}); $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "$VERSION; settings (stock, both clusters): $(echo "$SETTINGS" | paste -sd ';' | sed 's/;/; /g')."
  echo "$ROUNDS rounds per workload, order A B / B A alternating; one pgbench client (\`-M prepared\`) over TCP on loopback. Command: \`$COMMAND\`."
  echo
  echo "| workload | calls/round | A median ms (min–max of rounds) | B median ms (min–max) | B/A of medians | B/A per round: median (min–max) | rounds B faster |"
  echo "|---|---|---|---|---|---|---|"
  python3 - "$ROUNDS_TSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
order = []
for r in rows:
    if r["workload"] not in order:
        order.append(r["workload"])
for w in order:
    a = {int(r["round"]): float(r["median_ms"]) for r in rows if r["workload"] == w and r["build"] == "A"}
    b = {int(r["round"]): float(r["median_ms"]) for r in rows if r["workload"] == w and r["build"] == "B"}
    calls = next(r["calls"] for r in rows if r["workload"] == w)
    ma, mb = statistics.median(a.values()), statistics.median(b.values())
    # A round whose median rounds to 0 ms (too few calls) has no ratio.
    pr = [b[k] / a[k] for k in a if k in b and a[k] > 0]
    faster = sum(1 for x in pr if x < 1)
    ratio = f"**{mb / ma:.3f}**" if ma > 0 else "n/a"
    per_round = f"{statistics.median(pr):.3f} ({min(pr):.3f}–{max(pr):.3f})" if pr else "n/a"
    print(f"| {w} | {calls} | {ma:.2f} ({min(a.values()):.2f}–{max(a.values()):.2f}) "
          f"| {mb:.2f} ({min(b.values()):.2f}–{max(b.values()):.2f}) | {ratio} "
          f"| {per_round} | {faster}/{len(pr)} |")
EOF
} | tee "$OUT/results.md"
log "done: $OUT/results.md, $OUT/rounds.tsv"
