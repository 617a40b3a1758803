#!/usr/bin/env bash
# Backend CPU and latency of a single-file commit, several builds side by side in ONE cluster
# (one database per build), next to the plain-table INSERT of the same body, rounds interleaved.
#
#   bench/commit-cpu.sh start                 start (or reuse) the cluster
#   bench/commit-cpu.sh add LABEL [SQL_FILE]  snapshot the build now installed in PG_CONFIG as LABEL
#   bench/commit-cpu.sh run LABEL...          interleaved rounds over the labels (and `plain`)
#   bench/commit-cpu.sh writers LABEL...      W_CLIENTS concurrent writers per label (writers())
#   bench/commit-cpu.sh stop                  stop the cluster (the data stays in $CPU_DIR)
#
# `add` copies the installed supabash.so to supabash_LABEL.so, creates database LABEL,
# installs the extension from the installed scripts, points its C functions at the copy (so
# later installs leave LABEL as it was built), applies SQL_FILE if given (say, a wrapper as
# it would be), and seeds one workspace of $CPU_FILES files of 4 KiB (commits of 1,000),
# VACUUM ANALYZE. Each backend connects to one database, so it loads one build's library.
#
# `run`: per round and label, pgbench (one client, -M prepared, TCP) runs $CPU_CALLS
# PostgREST-shaped transactions (set_config of the claims, SET LOCAL ROLE authenticated, the
# call, COMMIT) per workload: `overwrite` (a 4 KiB file edited in its first 12 bytes), `new`
# (a new 4 KiB file), each with synchronous_commit = off (the server's work, without the WAL
# flush wait of this machine's slow disk), and `plain` (the same body INSERTed as one row into
# a plain table, the issue's reference). The backend's own CPU is read from
# /proc/self/schedstat by the backend (pg_read_file) after $CPU_WARM warm-up transactions
# and after the last one. The order of labels flips every round. Per workload and label: the
# median over rounds of CPU ms per call and of the round's median latency, and per round the
# ratio to the first label (median, min-max).
#
# CPU_PARALLEL=1 runs the labels of a workload at the same time (one client each) instead of
# one after the other, so that every label sees the same load from the rest of the machine.
#
# Knobs: PG_CONFIG (default /opt/pg-perf/...), CPU_DIR=/tmp/commit-cpu, CPU_PORT=54987,
# CPU_FILES=10000, CPU_ROUNDS=8, CPU_CALLS=300, CPU_WARM=30, CPU_WORKLOADS="overwrite new plain",
# CPU_SYNC=off (on: every transaction waits for its WAL flush, as with stock settings),
# W_CLIENTS=16, W_SECS=10.
# Run as root (the cluster runs as the postgres OS user).
set -euo pipefail

PGC=${PG_CONFIG:-/opt/pg-perf/lib/postgresql/15/bin/pg_config}
BIN=$("$PGC" --bindir)
LIB=$("$PGC" --pkglibdir)
DIR=${CPU_DIR:-/tmp/commit-cpu}
PORT=${CPU_PORT:-54987}
FILES=${CPU_FILES:-10000}
ROUNDS=${CPU_ROUNDS:-8}
CALLS=${CPU_CALLS:-300}
WARM=${CPU_WARM:-30}
WORKLOADS=${CPU_WORKLOADS:-overwrite new plain}
SYNC=${CPU_SYNC:-off}
W_CLIENTS=${W_CLIENTS:-16}
W_SECS=${W_SECS:-10}
BATCH=1000
USER_ID=11111111-1111-4111-8111-111111111111
CLAIMS="{\"sub\":\"$USER_ID\",\"role\":\"authenticated\"}"
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)

sql() { local db=$1; shift; "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -d "$db" "$@"; }
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
content_sql() { echo "(SELECT string_agg(md5($1 || '-' || j), '' ORDER BY j) FROM generate_series(1, 128) j)"; }

# The calling backend's CPU time in ns, read by the backend itself (bench databases only).
CPU_FN="CREATE OR REPLACE FUNCTION public.bench_cpu_ns() RETURNS bigint LANGUAGE sql SECURITY DEFINER
  AS \$\$ SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint \$\$;
  GRANT EXECUTE ON FUNCTION public.bench_cpu_ns() TO authenticator"

start() {
  mkdir -p "$DIR"; chown postgres "$DIR"
  if [ ! -d "$DIR/data" ]; then
    runuser -u postgres -- "$BIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  if ! runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
      -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DIR" start >/dev/null
  fi
  if ! sql postgres -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'plain'" | grep -q 1; then
    sql postgres -U postgres -f "$REPO/sql/bootstrap.sql" >/dev/null
    sql postgres -U postgres -c "CREATE DATABASE plain" >/dev/null
    sql plain -U postgres -c "$CPU_FN" -c "CREATE TABLE public.plain_rows (id bigserial PRIMARY KEY, body text NOT NULL)" \
      -c "GRANT SELECT, INSERT ON public.plain_rows TO authenticated" \
      -c "GRANT USAGE ON SEQUENCE public.plain_rows_id_seq TO authenticated" >/dev/null
  fi
}

add() {
  local label=$1 extra=${2:-}
  [[ $label =~ ^[a-z][a-z0-9_]*$ ]] || { echo "label: lower-case letters, digits, _" >&2; exit 2; }
  start
  install -m 755 "$LIB/supabash.so" "$LIB/supabash_$label.so"
  sql postgres -U postgres -c "DROP DATABASE IF EXISTS $label" -c "CREATE DATABASE $label" >/dev/null
  sql "$label" -U postgres -f "$REPO/sql/bootstrap.sql" -c "$CPU_FN" >/dev/null 2>&1
  sql "$label" -U postgres -c "CREATE EXTENSION supabash" \
    -c "UPDATE pg_proc SET probin = '\$libdir/supabash_$label' WHERE probin IN ('\$libdir/supabash', 'supabash')" >/dev/null
  [ -z "$extra" ] || sql "$label" -U postgres -f "$extra" >/dev/null
  local f=$DIR/seed-$label.sql first=1 lo hi
  {
    echo "\\set claims '$CLAIMS'"
    echo "BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null"
    echo "SET LOCAL ROLE authenticated;"
    echo "SELECT supabash_create_workspace()->>'workspaceId' AS ws \\gset"
    echo "COMMIT;"
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
  } >"$f"
  sql "$label" -U authenticator -f "$f" >/dev/null
  sql "$label" -U postgres -c "VACUUM ANALYZE" >/dev/null
  log "added $label: $(sha256sum "$LIB/supabash_$label.so" | cut -c1-12), $FILES files"
}

PREAMBLE="BEGIN;
SELECT set_config('request.jwt.claims', :claims, true);
SET LOCAL ROLE authenticated;
SET LOCAL synchronous_commit = $SYNC;"
# Reads the backend's CPU (ns) after transaction WARM and after the last, and writes both.
CPU_HEAD="\\set n :n + 1"
CPU_TAIL="\\if :n = :warm
SELECT public.bench_cpu_ns() AS cpu0 \\gset
\\endif
\\if :n = :calls
SELECT public.bench_cpu_ns() AS cpu1 \\gset
\\shell echo :cpu0 :cpu1 > :out
\\endif"

scripts() {
  local d=$DIR/scripts
  mkdir -p "$d"
  cat >"$d/overwrite.sql" <<EOF
$CPU_HEAD
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/dir04/f04242.txt', 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \\gset
COMMIT;
$CPU_TAIL
EOF
  cat >"$d/new.sql" <<EOF
$CPU_HEAD
$PREAMBLE
SELECT c->'receipt'->>'revision' AS head, c->'receipt'->>'position' AS pos FROM (SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => :head, changes => json_build_array(json_build_object('op', 'upsert', 'path', '/new/f' || :pos::text || '.txt', 'text', lpad(:pos::text, 12, '0') || :rest::text))) AS c) s \\gset
COMMIT;
$CPU_TAIL
EOF
  cat >"$d/plain.sql" <<EOF
$CPU_HEAD
$PREAMBLE
INSERT INTO public.plain_rows (body) VALUES (lpad(:n::text, 12, '0') || :rest::text) RETURNING id;
COMMIT;
$CPU_TAIL
EOF
}

# once LABEL WORKLOAD TAG -> "cpu_ms_per_call median_latency_ms"
once() {
  local label=$1 w=$2 tag=$3 db=$1
  local prefix=$DIR/pgb/$tag
  mkdir -p "$DIR/pgb"; chmod 777 "$DIR/pgb"; rm -f "$prefix".*
  local -a vars=(-D "claims=$CLAIMS" -D "rest=$REST" -D n=0 -D "warm=$WARM" -D "calls=$CALLS" -D "out=$prefix.cpu")
  if [ "$w" = plain ]; then
    db=plain
  else
    local h
    h=$(sql "$db" -U postgres -At -c "SELECT id, head_revision, head_position FROM supabash.workspaces ORDER BY created_at LIMIT 1")
    IFS='|' read -r ws head pos <<<"$h"
    vars+=(-D "ws=$ws" -D "head=$head" -D "pos=$pos")
  fi
  "$BIN/pgbench" -n -M prepared -c 1 -j 1 -t "$CALLS" -h 127.0.0.1 -p "$PORT" -U authenticator -d "$db" \
    -f "$DIR/scripts/$w.sql" "${vars[@]}" -l --log-prefix="$prefix" >"$prefix.out" 2>&1 \
    || { cat "$prefix.out" >&2; exit 1; }
  grep -q "number of failed transactions: 0" "$prefix.out" || { cat "$prefix.out" >&2; exit 1; }
  read -r c0 c1 <"$prefix.cpu"
  local lat
  lat=$(cat "$prefix".[0-9]* | awk -v w="$WARM" 'NR > w {print $3}' | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]/1000}')
  awk -v a="$c0" -v b="$c1" -v n=$((CALLS - WARM)) -v l="$lat" 'BEGIN { printf "%.4f %s\n", (b - a) / n / 1e6, l }'
}

run() {
  start; scripts
  REST=$(python3 -c '
import hashlib
print("".join(hashlib.md5(f"4242-{j}".encode()).hexdigest() for j in range(1, 129))[12:])')
  local labels=("$@") tsv=$DIR/rounds-$(date -u +%Y%m%d-%H%M%S).tsv
  printf 'workload\tround\tlabel\tcpu_ms\tlat_ms\n' >"$tsv"
  log "rounds in $tsv; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for ((r = 1; r <= ROUNDS; r++)); do
    for w in $WORKLOADS; do
      local order=("${labels[@]}")
      [ "$w" != plain ] || order=(plain)
      (( r % 2 )) || order=($(printf '%s\n' "${order[@]}" | tac))
      if [ -n "${CPU_PARALLEL:-}" ]; then
        # All labels at once: each sees the same load from the rest of the machine.
        for l in "${order[@]}"; do once "$l" "$w" "$w.$l.$r" >"$DIR/pgb/res.$l" & done
        wait
        for l in "${order[@]}"; do
          read -r cpu lat <"$DIR/pgb/res.$l"
          printf '%s\t%d\t%s\t%s\t%s\n' "$w" "$r" "$l" "$cpu" "$lat" >>"$tsv"
          log "round $r $w $l: cpu $cpu ms/call, median latency $lat ms"
        done
        continue
      fi
      for l in "${order[@]}"; do
        read -r cpu lat < <(once "$l" "$w" "$w.$l.$r")
        printf '%s\t%d\t%s\t%s\t%s\n' "$w" "$r" "$l" "$cpu" "$lat" >>"$tsv"
        log "round $r $w $l: cpu $cpu ms/call, median latency $lat ms"
      done
    done
  done
  report "$tsv" "${labels[@]}"
}

report() {
  local tsv=$1; shift
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), load average at the end $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds × $CALLS calls ($WARM warm-up), $FILES files, synchronous_commit = $SYNC; labels: $*."
  echo
  echo "| workload | label | CPU ms/call (median of rounds; min–max) | latency ms (median of round medians) | CPU / first label, per round: median (min–max) | CPU / plain INSERT (medians) |"
  echo "|---|---|---|---|---|---|"
  python3 - "$tsv" "$@" <<'EOF'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
labels = sys.argv[2:]
def series(w, l, k):
    return {int(r["round"]): float(r[k]) for r in rows if r["workload"] == w and r["label"] == l}
plain = series("plain", "plain", "cpu_ms")
pm = st.median(plain.values()) if plain else None
for w in dict.fromkeys(r["workload"] for r in rows):
    for l in (["plain"] if w == "plain" else labels):
        c, t = series(w, l, "cpu_ms"), series(w, l, "lat_ms")
        if not c:
            continue
        first = series(w, labels[0], "cpu_ms")
        ratio = "—"
        if w != "plain" and l != labels[0]:
            pr = [c[k] / first[k] for k in c if k in first]
            ratio = f"{st.median(pr):.3f} ({min(pr):.3f}–{max(pr):.3f})"
        vs = f"{st.median(c.values()) / pm:.2f}" if pm and w != "plain" else "—"
        print(f"| {w} | {l} | {st.median(c.values()):.3f} ({min(c.values()):.3f}–{max(c.values()):.3f}) "
              f"| {st.median(t.values()):.2f} | {ratio} | {vs} |")
EOF
}

# Seeds (once per label) $W_CLIENTS users, each with its own empty workspace, in table
# public.bench_writers (n = pgbench's client_id, the user's claims, the workspace), and
# public.bench_head(ws), which a writer asks for the head it commits on (as the owner would
# know it from its last receipt; the same extra lookup for every label).
seed_writers() {
  local label=$1 i ws claims
  sql "$label" -U postgres -At -c "SELECT to_regclass('public.bench_writers') IS NOT NULL" | grep -q t && return
  sql "$label" -U postgres -c "CREATE TABLE public.bench_writers (n int PRIMARY KEY, claims text NOT NULL, ws uuid)" \
    -c "INSERT INTO public.bench_writers (n, claims) SELECT i, json_build_object('sub', gen_random_uuid(), 'role', 'authenticated')::text FROM generate_series(0, $W_CLIENTS - 1) i" \
    -c "GRANT SELECT ON public.bench_writers TO authenticator" \
    -c "CREATE FUNCTION public.bench_head(ws uuid) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER AS \$\$ SELECT head_revision::text FROM supabash.workspaces WHERE id = ws \$\$" \
    -c "GRANT EXECUTE ON FUNCTION public.bench_head(uuid) TO authenticator" >/dev/null
  for ((i = 0; i < W_CLIENTS; i++)); do
    claims=$(sql "$label" -U postgres -At -c "SELECT claims FROM public.bench_writers WHERE n = $i")
    ws=$(printf '%s\n' "BEGIN;" "SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null" \
      "SET LOCAL ROLE authenticated;" "SELECT supabash_create_workspace()->>'workspaceId';" "COMMIT;" \
      | sql "$label" -U authenticator -At -v claims="$claims" | grep -E '^[0-9a-f-]{36}$')
    sql "$label" -U postgres -c "UPDATE public.bench_writers SET ws = '$ws' WHERE n = $i" >/dev/null
  done
}

# writers LABEL...: $W_CLIENTS concurrent writers (pgbench clients), each a user committing
# single-file edits (512 B) to its own workspace for $W_SECS s, per label, rounds interleaved
# (order flipped every round); commits/s per label and per round its ratio to the first label.
writers() {
  start
  local labels=("$@") tsv=$DIR/writers-$(date -u +%Y%m%d-%H%M%S).tsv r l out tps
  for l in "${labels[@]}"; do seed_writers "$l"; done
  cat >"$DIR/writers.sql" <<SQL
BEGIN;
SELECT set_config('request.jwt.claims', claims, true) AS claims_set, ws, public.bench_head(ws) AS head FROM public.bench_writers WHERE n = :client_id \gset
SET LOCAL ROLE authenticated;
SET LOCAL synchronous_commit = $SYNC;
SELECT supabash_commit(workspace_id => :ws, actor => 'bench', base_revision => nullif(:head, ''), changes => json_build_array(json_build_object('op', 'upsert', 'path', '/notes.md', 'text', repeat(md5(random()::text), 16)))) IS NOT NULL AS committed \gset
COMMIT;
SQL
  printf 'round\tlabel\ttps\n' >"$tsv"
  log "writers: $W_CLIENTS clients, $W_SECS s per run, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for ((r = 1; r <= ROUNDS; r++)); do
    local order=("${labels[@]}")
    (( r % 2 )) || order=($(printf '%s\n' "${order[@]}" | tac))
    for l in "${order[@]}"; do
      out=$("$BIN/pgbench" -n -M prepared -c "$W_CLIENTS" -j 2 -T "$W_SECS" -h 127.0.0.1 -p "$PORT" \
        -U authenticator -d "$l" -f "$DIR/writers.sql" 2>&1) || { echo "$out" >&2; exit 1; }
      grep -q "number of failed transactions: 0" <<<"$out" || { echo "$out" >&2; exit 1; }
      tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out" | head -1)
      printf '%d\t%s\t%s\n' "$r" "$l" "$tps" >>"$tsv"
      log "round $r $l: $tps commits/s"
    done
  done
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), load average at the end $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds of $W_SECS s, $W_CLIENTS writers, synchronous_commit = $SYNC."
  echo
  echo "| label | commits/s (median of rounds; min–max) | / first label, per round: median (min–max) |"
  echo "|---|---|---|"
  python3 - "$tsv" "${labels[@]}" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
labels = sys.argv[2:]
tps = {l: {int(r["round"]): float(r["tps"]) for r in rows if r["label"] == l} for l in labels}
for l in labels:
    v = tps[l]
    ratio = "—"
    if l != labels[0]:
        pr = [v[k] / tps[labels[0]][k] for k in v]
        ratio = f"{st.median(pr):.3f} ({min(pr):.3f}–{max(pr):.3f})"
    print(f"| {l} | {st.median(v.values()):.1f} ({min(v.values()):.1f}–{max(v.values()):.1f}) | {ratio} |")
PY
}

stop() { runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop; }

[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
cmd=${1:-}; shift || true
case $cmd in
  start) start ;;
  add) add "$@" ;;
  run) run "$@" ;;
  writers) writers "$@" ;;
  report) report "$@" ;;
  stop) stop ;;
  *) sed -n '2,30p' "$0"; exit 2 ;;
esac
