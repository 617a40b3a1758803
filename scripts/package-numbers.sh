#!/usr/bin/env bash
# The "Packages" numbers of BENCHMARKS.md, from the archives `just package` built: each
# archive's size, install.sh's wall time into a relocated copy of PostgreSQL 15 (RUNS installs,
# each into a target the previous one was uninstalled from, so every one copies every file),
# and `supabash --version` from the CLI archive (RUNS_VERSION process starts; hyperfine when
# installed, else a loop timing each run; then RUNS starts with the binary dropped from the page
# cache first). Prints Markdown; medians, min and max.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
runs=${RUNS:-11}
runs_version=${RUNS_VERSION:-51}
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
triple="$(uname -m)-linux-gnu"
out="$root/target/package"
tmp=$(mktemp -d /tmp/supabash-package-numbers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# median min max of the numbers on stdin (one a line)
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%s %s %s\n", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
now_us() { echo $(( $(date +%s%N) / 1000 )); }

echo "| archive | bytes | MB |"
echo "|---|---:|---:|"
for f in "$out"/supabash-"$version"-pg*-"$triple".tar.gz "$out/supabash-cli-$version-$triple.tar.gz"; do
  [ -f "$f" ] || continue
  b=$(stat -c %s "$f")
  echo "| \`$(basename "$f")\` | $b | $(awk -v b="$b" 'BEGIN { printf "%.1f", b / 1048576 }') |"
done
echo

mkdir -p "$tmp/p/usr/lib/postgresql" "$tmp/p/usr/share/postgresql"
cp -a /usr/lib/postgresql/15 "$tmp/p/usr/lib/postgresql/"
cp -a /usr/share/postgresql/15 "$tmp/p/usr/share/postgresql/"
find "$tmp/p" \( -name 'supabash.so' -o -name 'supabash.control' -o -name 'supabash--*.sql' \) -delete
tar -xzf "$out/supabash-$version-pg15-$triple.tar.gz" -C "$tmp"
inst="$tmp/supabash-$version-pg15-$triple/install.sh"
cfg="$tmp/p/usr/lib/postgresql/15/bin/pg_config"
for _ in $(seq "$runs"); do
  t0=$(now_us)
  "$inst" --quiet --pg-config "$cfg"
  echo $(( $(now_us) - t0 ))
  "$inst" --quiet --pg-config "$cfg" --uninstall
done | awk '{ printf "%.1f\n", $1 / 1000 }' | stats | {
  read -r med min max
  echo "install.sh (pg15 archive, fresh target, $runs runs): median $med ms (min $min, max $max)"
}

tar -xzf "$out/supabash-cli-$version-$triple.tar.gz" -C "$tmp"
bin="$tmp/supabash-cli-$version-$triple/bin/supabash"
if command -v hyperfine >/dev/null; then
  hyperfine -N --runs "$runs_version" "$bin --version"
else
  # bash's `time` (no extra process per run), in seconds with 3 decimals.
  TIMEFORMAT=%3R
  for _ in $(seq "$runs_version"); do
    { time "$bin" --version >/dev/null; } 2>&1
  done | awk '{ printf "%.1f\n", $1 * 1000 }' | stats | {
    read -r med min max
    echo "supabash --version ($runs_version process starts): median $med ms (min $min, max $max)"
  }
fi
# Page-cache cold: the binary's pages dropped from the cache before each run (posix_fadvise
# DONTNEED), so the start reads what it needs from disk.
TIMEFORMAT=%3R
for _ in $(seq "$runs"); do
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$bin"
  { time "$bin" --version >/dev/null; } 2>&1
done | awk '{ printf "%.1f\n", $1 * 1000 }' | stats | {
  read -r med min max
  echo "supabash --version, binary dropped from the page cache before each run ($runs runs): median $med ms (min $min, max $max)"
}
# A cold start reads the binary from disk a readahead window per page fault: say how large the
# window is, since it decides most of the cold time (Linux's default is 128 KB).
dev=$(df --output=source "$bin" | tail -1 | sed 's|^/dev/||; s|[0-9]*$||')
echo "readahead of the disk holding the binary: $(cat "/sys/block/$dev/queue/read_ahead_kb" 2>/dev/null || echo unknown) KB"
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg)"
