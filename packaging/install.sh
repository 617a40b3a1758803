#!/usr/bin/env bash
# Installs the supabash extension from this release archive into a PostgreSQL server: no Rust
# toolchain, no build. Run it from the unpacked archive, as a user who may write the server's
# library and extension directories (usually root).
#
#   ./install.sh --pg-config /usr/lib/postgresql/15/bin/pg_config
#   ./install.sh --pkglibdir DIR --sharedir DIR --bindir DIR   # images without pg_config
#   ./install.sh --pg-config PATH --uninstall                   # removes supabash's files
#
# Before it changes anything it checks: every file of the archive against SHA256SUMS, the
# server's major version and architecture against the archive's, the C library's version, the
# target directories (they exist and are writable), and the version already installed there:
# the same version (same files) is a no-op, a newer one is refused (--force overrides that and
# the C library check, nothing else). Files are written next to their target and renamed into
# place. Afterwards it prints the SQL to run. Exit status 0 on success or no-op, 1 on a refusal
# (nothing changed), 2 on a usage error.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
prog=install.sh

die() { echo "$prog: error: $*" >&2; exit 1; }
usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit "${1:-2}"
}

pg_config="" pkglibdir="" sharedir="" bindir="" uninstall=0 force=0 quiet=0
while [ $# -gt 0 ]; do
  case "$1" in
    --pg-config) pg_config="${2:?--pg-config needs a path}"; shift 2 ;;
    --pkglibdir) pkglibdir="${2:?--pkglibdir needs a directory}"; shift 2 ;;
    --sharedir) sharedir="${2:?--sharedir needs a directory}"; shift 2 ;;
    --bindir) bindir="${2:?--bindir needs a directory}"; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    --force) force=1; shift ;;
    --quiet) quiet=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "$prog: unknown argument: $1" >&2; usage 2 >&2 ;;
  esac
done
say() { [ "$quiet" = 1 ] || echo "$@"; }

# What this archive holds (written by scripts/package.sh).
[ -f "$here/package.info" ] || die "package.info is missing next to $prog: run it from the unpacked archive"
info() { sed -n "s/^$1=//p" "$here/package.info"; }
name=$(info name) version=$(info version) pg_major=$(info pg_major) arch=$(info arch) glibc=$(info glibc)
[ -n "$name" ] && [ -n "$version" ] && [ -n "$pg_major" ] || die "package.info is incomplete"

# 1. The archive is whole: every file against SHA256SUMS, and no file it does not list.
command -v sha256sum >/dev/null || die "sha256sum is needed (coreutils)"
(cd "$here" && sha256sum --check --quiet --strict SHA256SUMS >/dev/null 2>&1) || {
  bad=$(cd "$here" && sha256sum --check --strict SHA256SUMS 2>/dev/null | grep -v ': OK$' || true)
  die "the archive is corrupted (checksum mismatch, SHA256SUMS): ${bad:-SHA256SUMS unreadable}; download it again"
}
extra=$(cd "$here" && find lib extension -type f | sort | comm -23 - <(sed 's/^[0-9a-f]*  //' SHA256SUMS | sort))
[ -z "$extra" ] || die "the archive holds files SHA256SUMS does not list: $extra"

# 2. The target server: its directories and its major version.
if [ -n "$pg_config" ]; then
  [ -z "$pkglibdir$sharedir$bindir" ] || die "give either --pg-config or --pkglibdir/--sharedir/--bindir, not both"
  [ -x "$pg_config" ] || die "pg_config not found or not executable: $pg_config"
  pkglibdir=$("$pg_config" --pkglibdir) || die "$pg_config --pkglibdir failed"
  sharedir=$("$pg_config" --sharedir) || die "$pg_config --sharedir failed"
  server_version=$("$pg_config" --version) || die "$pg_config --version failed"
else
  [ -n "$pkglibdir" ] && [ -n "$sharedir" ] && [ -n "$bindir" ] ||
    die "give --pg-config PATH, or all three of --pkglibdir DIR --sharedir DIR --bindir DIR"
  [ -x "$bindir/postgres" ] || die "no postgres binary in --bindir $bindir (its version is checked)"
  server_version=$("$bindir/postgres" --version) || die "$bindir/postgres --version failed"
fi
server_major=$(echo "$server_version" | sed -n 's/.*PostgreSQL) *\([0-9][0-9]*\).*/\1/p; s/^PostgreSQL \([0-9][0-9]*\).*/\1/p' | head -1)
[ -n "$server_major" ] || die "cannot read a PostgreSQL version from: $server_version"
[ "$server_major" = "$pg_major" ] ||
  die "this archive is for PostgreSQL $pg_major, the server is PostgreSQL $server_major ($server_version): use the pg$server_major archive"
extdir="$sharedir/extension"
lib="$pkglibdir/$name.so"
control="$extdir/$name.control"

installed_version() {
  [ -f "$control" ] || return 0
  sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$control" | head -1
}

# Fails unless `dir` exists and a file can be created in it (a read-only mount or a directory
# the user may not write is caught here, before anything changes).
writable_dir() {
  local dir=$1 what=$2 probe
  [ -d "$dir" ] || die "$what does not exist: $dir"
  probe="$dir/.$name-install-probe.$$"
  ( : >"$probe" ) 2>/dev/null || die "$what is not writable by $(id -un): $dir (run as its owner or root)"
  rm -f "$probe"
}
writable_dir "$pkglibdir" "the library directory (pkglibdir)"
writable_dir "$extdir" "the extension directory (sharedir/extension)"

if [ "$uninstall" = 1 ]; then
  current=$(installed_version)
  files=("$lib" "$control")
  for f in "$extdir/$name"--*.sql; do [ -e "$f" ] && files+=("$f"); done
  present=()
  for f in "${files[@]}"; do [ -e "$f" ] && present+=("$f"); done
  if [ ${#present[@]} -eq 0 ]; then
    say "$name is not installed in $pkglibdir / $extdir: nothing to remove"
    exit 0
  fi
  rm -f -- "${present[@]}"
  say "removed $name ${current:-(unknown version)}: ${#present[@]} files from $pkglibdir and $extdir"
  say "Databases that still have the extension fail to call it: run DROP EXTENSION $name; in each"
  say "before uninstalling (sql/uninstall.sql in the source also drops its cluster-wide roles)."
  exit 0
fi

# 3. The machine: architecture and C library.
machine=$(uname -m)
[ -z "$arch" ] || [ "$machine" = "$arch" ] || die "this archive is for $arch, this machine is $machine"
if [ -n "$glibc" ] && [ "$force" = 0 ] && command -v getconf >/dev/null; then
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$glibc" "$have" | sort -V | head -1)" != "$glibc" ]; then
    die "the library needs glibc $glibc or newer, this system has $have (--force installs anyway)"
  fi
fi

# 4. What is installed already.
current=$(installed_version)
if [ -n "$current" ]; then
  if [ "$current" = "$version" ]; then
    if [ -f "$lib" ] && cmp -s "$lib" "$here/lib/$name.so" && cmp -s "$control" "$here/extension/$name.control"; then
      say "$name $version is already installed in $pkglibdir (same files): nothing to do"
      exit 0
    fi
    [ "$force" = 1 ] || die "$name $version is installed but its files differ from this archive's (another build?): --force replaces them"
  else
    newest=$(printf '%s\n%s\n' "$current" "$version" | sort -V | tail -1)
    if [ "$newest" = "$current" ] && [ "$force" = 0 ]; then
      die "$name $current is installed, newer than this archive's $version: refusing to downgrade (--force overrides; databases on $current cannot go back to $version)"
    fi
  fi
fi

# 5. Copy: each file to a temporary name next to its target, then renamed into place, the
# library last but one and the control file last (it names the default version).
tmpfiles=()
cleanup() { [ ${#tmpfiles[@]} -eq 0 ] || rm -f -- "${tmpfiles[@]}"; }
trap cleanup EXIT
stage() { # src dest mode
  local tmp="$2.new.$$"
  tmpfiles+=("$tmp")
  cp "$1" "$tmp"
  chmod "$3" "$tmp"
}
scripts=()
for f in "$here/extension/$name"--*.sql; do scripts+=("$f"); done
for f in "${scripts[@]}"; do stage "$f" "$extdir/$(basename "$f")" 644; done
stage "$here/lib/$name.so" "$lib" 755
stage "$here/extension/$name.control" "$control" 644
for f in "${scripts[@]}"; do mv -f "$extdir/$(basename "$f").new.$$" "$extdir/$(basename "$f")"; done
mv -f "$lib.new.$$" "$lib"
mv -f "$control.new.$$" "$control"
tmpfiles=()

if [ -n "$current" ] && [ "$current" != "$version" ]; then
  say "upgraded $name $current -> $version in $pkglibdir and $extdir (PostgreSQL $server_major)"
  say "Next, in each database that has the extension (as its owner or a superuser):"
  say "  ALTER EXTENSION $name UPDATE;"
else
  say "installed $name $version in $pkglibdir and $extdir (PostgreSQL $server_major)"
  say "Next, in each database that should have it (as a superuser; plain PostgreSQL needs the"
  say "Supabase roles first, sql/bootstrap.sql):"
  say "  CREATE EXTENSION $name;"
  say "A database already on an older version: ALTER EXTENSION $name UPDATE;"
fi
say "Check the installation with: supabash doctor"
