#!/usr/bin/env bash
# Signs the capability tokens of pg_test/sql/capabilities.sql outside the database (the
# database holds no private key, so SQL cannot sign): takes one argument of rows separated by
# `;` (psql passes no newlines to a shell command), each
#   name <TAB> private key (32-byte Ed25519 seed, unpadded base64url) <TAB> signing input
# and prints them as SQL rows ('name', 'signing input.signature'), ... (EdDSA, by openssl).
set -euo pipefail
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
b64url_decode() {
  local s
  s="$(printf '%s' "$1" | tr -- '-_' '+/')"
  while [ $(( ${#s} % 4 )) -ne 0 ]; do s="$s="; done
  printf '%s' "$s" | base64 -d
}
sep=""
while IFS=$'\t' read -r name seed input; do
  # PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410).
  { printf '\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20'; b64url_decode "$seed"; } > "$dir/key.der"
  printf '%s' "$input" > "$dir/input"
  signature="$(openssl pkeyutl -sign -inkey "$dir/key.der" -keyform DER -rawin -in "$dir/input" \
    | base64 -w0 | tr -- '+/' '-_' | tr -d '=')"
  printf "%s('%s', '%s.%s')" "$sep" "${name//\'/\'\'}" "$input" "$signature"
  sep=", "
done < <(printf '%s\n' "$1" | tr ';' '\n')
