#!/usr/bin/env bash
# Prints the newest glibc symbol version (GLIBC_x.y) an ELF file needs, read from its dynamic
# symbol table (objdump -T: the undefined symbols' version references). With --max X.Y, fails
# when the file needs a newer glibc than X.Y and names the symbols that do.
#
#   scripts/glibc-needed.sh target/package/.../lib/supabash.so          -> 2.34
#   scripts/glibc-needed.sh --max 2.34 FILE                              -> 2.34, status 0
set -euo pipefail

max=""
if [ "${1:-}" = --max ]; then
  max="${2:?--max needs a version like 2.34}"
  shift 2
fi
[ $# -eq 1 ] || { echo "usage: $0 [--max X.Y] ELF-FILE" >&2; exit 2; }
file=$1
[ -f "$file" ] || { echo "glibc-needed: no such file: $file" >&2; exit 2; }
command -v objdump >/dev/null || { echo "glibc-needed: objdump is needed (binutils)" >&2; exit 2; }

# objdump -T lines of undefined symbols look like:
#   0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) pthread_key_create
syms=$(objdump -T "$file" | sed -n 's/.*[( ]GLIBC_\([0-9][0-9.]*\)[) ].* \([^ ]*\)$/\1 \2/p')
[ -n "$syms" ] || { echo "glibc-needed: $file references no GLIBC_ symbol versions" >&2; exit 1; }
needed=$(echo "$syms" | awk '{print $1}' | sort -uV | tail -1)
echo "$needed"
if [ -n "$max" ] && [ "$(printf '%s\n%s\n' "$needed" "$max" | sort -V | tail -1)" != "$max" ]; then
  echo "glibc-needed: $file needs glibc $needed, newer than the floor $max, for:" >&2
  echo "$syms" | sort -V | while read -r v s; do
    [ "$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -1)" = "$max" ] || echo "  $s (GLIBC_$v)" >&2
  done
  exit 1
fi
