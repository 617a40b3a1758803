#!/usr/bin/env bash
# One commit of 1,000 × 4 KiB files next to a plain-table COPY of the same bodies, with a C
# client (psql) so that the client's own encoding does not bound either side.
#
#   bench/bulk-vs-copy.sh LABEL...        (run as root, after bench/commit-cpu.sh add LABEL)
#
# In the cluster of bench/commit-cpu.sh, per run and label: 1,000 distinct ASCII texts of
# 4,096 bytes (words, little repetition), written once as the JSON `changes` of one
# `supabash_commit` (upserts into a fresh workspace, PostgREST-shaped: claims, SET LOCAL ROLE
# authenticated, the call, COMMIT) and as a binary COPY file of `(id bigint, body bytea)`. psql
# sends each over TCP: the commit, and `COPY plain_bodies (id, body) FROM STDIN (FORMAT
# binary)` into a table without indexes (autocommit), in alternating order. Stock settings
# (fsync and synchronous_commit on): both pay their WAL flush. MiB/s = 3.91 MiB / the
# statement's time as psql reports it (the commit's with its COMMIT); the backend's CPU per statement from
# /proc/self/schedstat. Prints per label the medians and commit / COPY.
set -euo pipefail
PGC=${PG_CONFIG:-/opt/pg-perf/lib/postgresql/15/bin/pg_config}
BIN=$("$PGC" --bindir)
DIR=${CPU_DIR:-/tmp/commit-cpu}
PORT=${CPU_PORT:-54987}
RUNS=${BULK_RUNS:-9}
USER_ID=11111111-1111-4111-8111-111111111111
CLAIMS="{\"sub\":\"$USER_ID\",\"role\":\"authenticated\"}"
W=$DIR/bulk
mkdir -p "$W"; chmod 755 "$W"
sql() { local db=$1; shift; "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -d "$db" "$@"; }
TSV=$W/runs-$(date -u +%Y%m%d-%H%M%S).tsv
printf 'run\tlabel\tvariant\tms\tcpu_ms\n' >"$TSV"

for label in "$@"; do
  sql "$label" -U postgres -c "CREATE TABLE IF NOT EXISTS public.plain_bodies (id bigint, body bytea)" \
    -c "GRANT SELECT, INSERT ON public.plain_bodies TO authenticator" >/dev/null
done

for ((run = 0; run <= RUNS; run++)); do
  python3 - "$W" "$run" <<'EOF'
import json, random, struct, sys
w, run = sys.argv[1], int(sys.argv[2])
words = ("the workspace commit file revision agent shell path body history returns when with a "
         "an of to in is for on that this by from at as be are or it not which can each").split()
bodies = []
for i in range(1000):
    rnd = random.Random(run * 100_000 + i)
    parts, n = [], 0
    while n < 4096:
        t = rnd.choice(words) + (str(rnd.randrange(1000)) if rnd.random() < 0.2 else "")
        parts.append(t); n += len(t) + 1
    bodies.append((" ".join(parts))[:4096])
changes = [{"op": "upsert", "path": f"/bulk/f{i:04}.md", "text": b} for i, b in enumerate(bodies)]
open(f"{w}/changes.json", "w").write(json.dumps(changes))
with open(f"{w}/copy.bin", "wb") as f:
    f.write(b"PGCOPY\n\xff\r\n\0" + struct.pack("!ii", 0, 0))
    for i, b in enumerate(bodies):
        data = b.encode()
        f.write(struct.pack("!hiqi", 2, 8, run * 1000 + i, len(data)) + data)
    f.write(struct.pack("!h", -1))
EOF
  chmod 644 "$W"/changes.json "$W"/copy.bin
  labels=("$@"); variants=(commit copy)
  (( run % 2 )) && variants=(copy commit)
  for label in "${labels[@]}"; do
    for v in "${variants[@]}"; do
      if [ "$v" = commit ]; then
        out=$(sql "$label" -U authenticator -At <<EOF
\\set claims '$CLAIMS'
\\set changes \`cat $W/changes.json\`
BEGIN;
SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null
SET LOCAL ROLE authenticated;
SELECT supabash_create_workspace()->>'workspaceId' AS ws \\gset
SELECT public.bench_cpu_ns() AS c0 \\gset
\\timing on
SELECT length(supabash_commit(workspace_id => :'ws', actor => 'bulk', changes => :'changes'::json)::text) > 0;
COMMIT;
\\timing off
SELECT public.bench_cpu_ns() - :c0;
EOF
)
      else
        out=$(sql "$label" -U authenticator -At <<EOF
SELECT public.bench_cpu_ns() AS c0 \\gset
\\timing on
\\copy public.plain_bodies (id, body) FROM '$W/copy.bin' WITH (FORMAT binary)
\\timing off
SELECT public.bench_cpu_ns() - :c0;
EOF
)
      fi
      # The statement's time, and for the commit its COMMIT's (the WAL flush COPY pays inside).
      ms=$(grep -o 'Time: [0-9.]* ms' <<<"$out" | grep -o '[0-9.]*' | awk '{s += $1} END {printf "%.3f", s}')
      cpu=$(tail -1 <<<"$out")
      [ "$run" = 0 ] || printf '%d\t%s\t%s\t%s\t%s\n' "$run" "$label" "$v" "$ms" "$(awk -v c="$cpu" 'BEGIN{printf "%.1f", c/1e6}')" >>"$TSV"
      echo "[$(date -u +%T)] run $run $label $v: $ms ms, backend CPU $(awk -v c="$cpu" 'BEGIN{printf "%.1f", c/1e6}') ms" >&2
    done
  done
done

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg); $RUNS runs (one warm-up discarded), psql over TCP, fsync and synchronous_commit on."
echo
echo "| label | commit MiB/s (median) | COPY MiB/s (median) | commit / COPY | commit backend CPU ms | COPY backend CPU ms |"
echo "|---|---|---|---|---|---|"
python3 - "$TSV" "$@" <<'EOF'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
mib = 1000 * 4096 / 1048576
for label in sys.argv[2:]:
    def m(v, k):
        return st.median(float(r[k]) for r in rows if r["label"] == label and r["variant"] == v)
    c, y = mib / m("commit", "ms") * 1000, mib / m("copy", "ms") * 1000
    print(f"| {label} | {c:.1f} | {y:.1f} | **{c / y:.2f}** | {m('commit', 'cpu_ms'):.1f} | {m('copy', 'cpu_ms'):.1f} |")
EOF
