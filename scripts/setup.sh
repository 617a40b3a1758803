#!/usr/bin/env bash
# Installs, idempotently, what building and testing supabash needs on a fresh Debian 12 machine
# with PostgreSQL 15 server binaries: server headers, libclang, sudo, fuse3 and rsync (mount
# tests and `supabash mount`), git, binutils (objdump and strip: the release archives), openssl
# (the SQL scenarios in pg_test/ sign capability tokens with it), cargo-pgrx 0.18.1 (about 10 minutes the first time), pgrx's config for the
# system PostgreSQL, just, and (with --postrust) the PostgREST stand-in used by end-to-end
# tests, and (with --more-pg) PostgreSQL 16 and 17 for the extension's tests on each and the
# end-to-end suite on 17 (scripts/more-pg.sh), and (with --examples) the
# Python and JavaScript clients the examples in docs/examples use (a venv in .venv-examples,
# node_modules in docs/examples/js). Each step is skipped when done.
set -euo pipefail
PG_MAJOR=${PG_MAJOR:-15}
PGRX_VERSION=0.18.1
pg_config=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
want_postrust=0
want_more_pg=0
want_examples=0
for a in "$@"; do
  case $a in
    --postrust) want_postrust=1 ;;
    --more-pg) want_more_pg=1 ;;
    --examples) want_examples=1 ;;
    *) echo "setup: unknown option $a" >&2; exit 2 ;;
  esac
done
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then sudo_cmd=sudo; fi

need_apt=()
# chromium and chromium-driver: the headless browser of `supabash ui`'s tests
# (client/cli/tests/ui_browser.rs, over WebDriver).
for pkg in postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR libclang-dev clang sudo openssl fuse3 rsync git binutils chromium chromium-driver; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION\$"; then
  echo "setup: cargo install cargo-pgrx $PGRX_VERSION (about 10 minutes)"
  cargo install cargo-pgrx --version "$PGRX_VERSION" --locked --quiet
fi
if [ $want_more_pg = 1 ]; then
  "$(dirname "$0")/more-pg.sh" "$pg_config"
elif ! grep -qs "pg$PG_MAJOR = \"$pg_config\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
  echo "setup: cargo pgrx init --pg$PG_MAJOR $pg_config"
  cargo pgrx init --pg$PG_MAJOR "$pg_config" >/dev/null
fi
if ! command -v just >/dev/null 2>&1; then
  echo "setup: cargo install just"
  cargo install just --locked --quiet
fi
if [ $want_postrust = 1 ] && ! command -v postrust >/dev/null 2>&1; then
  echo "setup: cargo install postrust-server 3.1.0 (about 5 minutes)"
  cargo install postrust-server --version 3.1.0 --quiet
fi
if [ $want_examples = 1 ]; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  req=$root/docs/examples/python/requirements.txt
  if ! cmp -s "$req" "$root/.venv-examples/requirements.txt"; then
    echo "setup: Python example client (venv .venv-examples: $(tr '\n' ' ' <"$req"))"
    python3 -m venv "$root/.venv-examples"
    "$root/.venv-examples/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$root/.venv-examples/requirements.txt"
  fi
  js=$root/docs/examples/js
  if ! cmp -s "$js/package-lock.json" "$js/node_modules/.installed-lock.json"; then
    echo "setup: JavaScript example client (npm ci in docs/examples/js)"
    (cd "$js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$js/package-lock.json" "$js/node_modules/.installed-lock.json"
  fi
fi
echo "setup: ready ($(cargo pgrx --version), $("$pg_config" --version))"
