#!/usr/bin/env bash
# Runs the pg_test/ SQL scenarios (pg_regress, expected-output style) against the supabash
# extension installed in the PostgreSQL of $PG_BIN, else of $PG_CONFIG's directory, else the
# system's PostgreSQL 15 (`just install` first; `just pg-test` sets both from PG_CONFIG).
#
# It starts a throwaway cluster as the `postgres` OS user on a free loopback port, creates the
# database `supabash_regress`, applies sql/bootstrap.sql, CREATE EXTENSION supabash, loads the
# test-only helpers in pg_test/fixture.sql (schema `pgt`), runs the scenarios listed in
# pg_test/schedule with `pg_regress --use-existing`, and stops the cluster. Exits non-zero on
# any difference (pg_test/results/regression.diffs shows it).
#
#   pg_test/run.sh            run every scenario
#   pg_test/run.sh commit     run only the named scenarios (pg_test/sql/<name>.sql)
#   pg_test/run.sh --accept   run, then copy the outputs over pg_test/expected (review the diff!)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
if [ -n "${PG_BIN:-}" ]; then
  bin="$PG_BIN"
elif [ -n "${PG_CONFIG:-}" ]; then
  bin="$(dirname "$PG_CONFIG")"
else
  bin=/usr/lib/postgresql/15/bin
fi
if [ -n "${PG_REGRESS:-}" ]; then
  regress="$PG_REGRESS"
else
  # pg_config --pgxs names <pgxs>/src/makefiles/pgxs.mk; pg_regress is <pgxs>/src/test/regress.
  regress="$(dirname "$(dirname "$("$bin/pg_config" --pgxs)")")/test/regress/pg_regress"
fi

accept=0
tests=()
for a in "$@"; do
  case "$a" in
    --accept) accept=1 ;;
    *) tests+=("$a") ;;
  esac
done

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 30000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

tmp="$(mktemp -d /tmp/supabash-pg-test.XXXXXX)"
chmod 755 "$tmp"
[ "$(id -u)" = 0 ] && chown postgres "$tmp"
data="$tmp/data"
port="$(free_port)"

cleanup() {
  as_pg "$bin/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
as_pg "$bin/pg_ctl" -D "$data" -l "$tmp/server.log" -w start \
  -o "-p $port -k $tmp -c listen_addresses=127.0.0.1 -c fsync=off -c TimeZone=UTC" >/dev/null

db=supabash_regress
psql_admin() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }
psql_admin -d postgres -f "$root/sql/bootstrap.sql" >/dev/null
psql_admin -d postgres -c "CREATE DATABASE $db"
psql_admin -d "$db" -f "$root/sql/bootstrap.sql" >/dev/null
psql_admin -d "$db" -c "CREATE EXTENSION supabash"
psql_admin -d "$db" -f "$here/fixture.sql" >/dev/null

out="$here/results"
rm -rf "$out"
mkdir -p "$out"
if [ "${#tests[@]}" -eq 0 ]; then
  sched=(--schedule="$here/schedule")
else
  sched=("${tests[@]}")
fi

if [ "$accept" = 1 ]; then
  # pg_regress stops at a scenario without an expected file; give new ones an empty one.
  for f in "$here"/sql/*.sql; do
    n="$(basename "$f" .sql)"
    [ -f "$here/expected/$n.out" ] || : > "$here/expected/$n.out"
  done
fi

status=0
# pg_test/sql/capabilities.sql signs its tokens with pg_test/sign.sh (openssl).
export SUPABASH_PG_TEST="$here"
"$regress" --use-existing --host=127.0.0.1 --port="$port" --user=postgres --dbname="$db" \
  --bindir="$bin" --inputdir="$here" --outputdir="$out" "${sched[@]}" || status=$?

if [ "$accept" = 1 ]; then
  cp "$out"/results/*.out "$here/expected/"
  echo "copied $(ls "$out"/results/*.out | wc -l) outputs to pg_test/expected/"
fi
if [ "$status" -ne 0 ]; then
  [ -f "$out/regression.diffs" ] && head -200 "$out/regression.diffs"
  echo "pg_test: FAILED (full diff: $out/regression.diffs)" >&2
  exit "$status"
fi
rm -rf "$out"
echo "pg_test: all scenarios match"
