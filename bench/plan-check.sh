#!/usr/bin/env bash
# The plans of every statement a commit and the main reads run, as they actually run (kept
# generic plans included), on a table of 100,000 workspaces and on a workspace bulk-loaded
# right after the last ANALYZE (its statistics do not know it exists).
#
#   bench/plan-check.sh PG_CONFIG        (run as root; the cluster runs as postgres)
#
# A throwaway cluster of that PostgreSQL copy (stock settings) with autovacuum off, so the
# statistics stay as stale as they are made. The fixture, as a superuser in SQL: 100,000
# workspaces of 50,000 owners, 3 files each (entries, bodies, usage rows), 2 revisions each,
# leases, purged commits, redactions and revision notes for some, 100,000 Storage nonces,
# then ANALYZE. Then a workspace of 10,000 files of 4 KiB committed through the RPC in commits
# of 1,000 (not analysed), 20 of them in subdirectories of the root beside `/d`, so the root's
# listing walks (`entries::children_at_head`). Then, with auto_explain logging every nested statement (ANALYZE,
# BUFFERS), past the plan cache's first five custom plans: commits that overwrite a file and
# add a new one (the tree-shape probes) in the big workspace and in a small one, a note on a
# revision and the notes read, Storage nonces spent (service_role), then manifest, document,
# snapshot of the small one, history (with its notes), the directory listing with totals (the
# per-revision totals), the manifest changes since an older revision (its receipt range).
# Prints every plan node that reads a supabash table and how, and fails when one is a
# sequential scan, an index scan whose condition leaves out the workspace key of a
# multi-tenant table, a scan that removes more than 100 rows by filter, or one that reads
# more than 1,000 rows of a table outside the whole-tree reads (a scan of a whole workspace).
set -euo pipefail
PGC=${1:?pg_config}
REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
PSQL=/usr/lib/postgresql/15/bin/psql
TMP=$(mktemp -d /tmp/plan-check.XXXXXX)
chmod 755 "$TMP"
bindir=$("$PGC" --bindir)
cleanup() { runuser -u postgres -- "$bindir/pg_ctl" -D "$TMP/data" -m fast -w stop >/dev/null 2>&1 || true; cp "$TMP/server.log" /tmp/plan-check.server.log 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
chown postgres "$TMP"
runuser -u postgres -- "$bindir/initdb" -D "$TMP/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$bindir/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w -o "-p $PORT -c listen_addresses=127.0.0.1 -k $TMP -c autovacuum=off" start >/dev/null
sql() { "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -d postgres "$@"; }
sql -U postgres -f "$REPO/sql/bootstrap.sql" >/dev/null
sql -U postgres -c "CREATE EXTENSION supabash" >/dev/null 2>&1
echo "[$(date -u +%T)] fixture: 100,000 workspaces" >&2
sql -U postgres <<'EOF'
SET session_replication_role = replica; -- no FK checks for the fixture rows
INSERT INTO supabash.workspaces (id, owner_id, store_id)
SELECT id, ('00000000-0000-4000-8000-' || lpad((i % 50000)::text, 12, '0'))::uuid, id
  FROM (SELECT gen_random_uuid() id, i FROM generate_series(1, 100000) i) w;
INSERT INTO supabash.usage (workspace_id, owner_id, body_bytes)
SELECT id, owner_id, 3 FROM supabash.workspaces;
INSERT INTO supabash.bodies (workspace_id, hash, size, body)
SELECT w.id, sha256(convert_to(w.id::text || f, 'UTF8')), 1, '\x0078'::bytea
  FROM supabash.workspaces w, generate_series(1, 3) f;
INSERT INTO supabash.entries (workspace_id, path, valid_from, body_hash, body_size, mtime_ns)
SELECT w.id, '/f' || f, 1, sha256(convert_to(w.id::text || f, 'UTF8')), 1, 0
  FROM supabash.workspaces w, generate_series(1, 3) f;
INSERT INTO supabash.revisions (workspace_id, revision_id, position, transaction_id,
                                request_hash, committed_at, actor, metadata, lines)
SELECT w.id, gen_random_uuid(), p, gen_random_uuid(), '\x00', now(), 'fixture', '{}', '\x00'
  FROM supabash.workspaces w, generate_series(1, 2) p;
UPDATE supabash.workspaces w SET head_revision = r.revision_id, head_position = 2
  FROM supabash.revisions r WHERE r.workspace_id = w.id AND r.position = 2;
INSERT INTO supabash.purged_commits (workspace_id, transaction_id, revision_id)
SELECT id, gen_random_uuid(), gen_random_uuid() FROM supabash.workspaces TABLESAMPLE BERNOULLI (20);
INSERT INTO supabash.leases (workspace_id, holder, token, acquired_at, renewed_at, expires_at)
SELECT id, 'h', gen_random_uuid(), now(), now(), now() + interval '1 hour'
  FROM supabash.workspaces TABLESAMPLE BERNOULLI (20);
INSERT INTO supabash.redactions (workspace_id, redaction_id, boundary_position, boundary_revision,
                                 paths, hash_count, actor)
SELECT id, gen_random_uuid(), 1, gen_random_uuid(), '{/f1}', 0, 'fixture'
  FROM supabash.workspaces TABLESAMPLE BERNOULLI (10);
INSERT INTO supabash.revision_notes (workspace_id, revision_id, key, version, value, actor, noted_at)
SELECT r.workspace_id, r.revision_id, 'k', 1, '{}', 'fixture', now()
  FROM supabash.revisions r TABLESAMPLE BERNOULLI (20);
INSERT INTO supabash.storage_nonces (nonce_hash, expires_at)
SELECT sha256(convert_to('n' || i, 'UTF8')), now() + (i % 100 - 10) * interval '1 minute'
  FROM generate_series(1, 100000) i;
RESET session_replication_role;
ANALYZE;
EOF
BIG=11111111-1111-4111-8111-111111111111
SMALL=22222222-2222-4222-8222-222222222222
claims() { printf '{"sub":"%s","role":"authenticated"}' "$1"; }
content() { echo "(SELECT string_agg(md5($1 || '-' || j), '' ORDER BY j) FROM generate_series(1, 128) j)"; }
rpc() { # user sql...
  local who=$1; shift
  sql -U authenticator -At -v claims="$(claims "$who")" "$@" <<EOF
BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null
SET LOCAL ROLE authenticated;
$(cat)
COMMIT;
EOF
}
echo "[$(date -u +%T)] a workspace of 10,000 files of 4 KiB, not analysed" >&2
big=$(echo "SELECT supabash_create_workspace()->>'workspaceId';" | rpc $BIG)
small=$(echo "SELECT supabash_create_workspace()->>'workspaceId';" | rpc $SMALL)
head=
for ((lo = 0; lo < 10000; lo += 1000)); do
  base=NULL; [ -z "$head" ] || base="'$head'"
  head=$(rpc $BIG <<EOF
SELECT supabash_commit(workspace_id => '$big', actor => 'seed', base_revision => $base,
  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', CASE WHEN i < 20 THEN format('/s%s/f%s.txt', i, i) ELSE format('/d/f%s.txt', i) END, 'text', $(content i))) FROM generate_series($lo, $lo + 999) i))->'receipt'->>'revision';
EOF
)
done
since=$head
shead=$(rpc $SMALL <<EOF
SELECT supabash_commit(workspace_id => '$small', actor => 'seed',
  changes => (SELECT json_agg(json_build_object('op', 'upsert', 'path', format('/f%s.txt', i), 'text', $(content i))) FROM generate_series(1, 20) i))->'receipt'->>'revision';
EOF
)
sql -U postgres -c "ALTER ROLE authenticator SET session_preload_libraries = 'auto_explain'" \
  -c "ALTER ROLE authenticator SET auto_explain.log_min_duration = 0" \
  -c "ALTER ROLE authenticator SET auto_explain.log_analyze = on" \
  -c "ALTER ROLE authenticator SET auto_explain.log_buffers = on" \
  -c "ALTER ROLE authenticator SET auto_explain.log_nested_statements = on" \
  -c "ALTER ROLE authenticator SET auto_explain.log_format = json" >/dev/null
: >"$TMP/server.log.mark"; mark=$(stat -c %s "$TMP/server.log")
echo "[$(date -u +%T)] the calls, explained" >&2
for i in 1 2 3 4 5 6 7; do # past the plan cache's first five custom plans
  head=$(rpc $BIG <<EOF
SELECT supabash_commit(workspace_id => '$big', actor => 'b', base_revision => '$head',
  changes => json_build_array(json_build_object('op', 'upsert', 'path', '/d/f4242.txt', 'text', $i || $(content 4242)),
                              json_build_object('op', 'upsert', 'path', '/new/f$i.txt', 'text', 'new $i')))->'receipt'->>'revision';
EOF
)
  shead=$(rpc $SMALL <<EOF
SELECT supabash_commit(workspace_id => '$small', actor => 'b', base_revision => '$shead',
  changes => json_build_array(json_build_object('op', 'upsert', 'path', '/f3.txt', 'text', $i || $(content 3)),
                              json_build_object('op', 'upsert', 'path', '/n$i/f.txt', 'text', 'new $i')))->'receipt'->>'revision';
EOF
)
  rpc $BIG >/dev/null <<EOF
SELECT supabash_add_note(workspace_id => '$big', revision => '$head', key => 'review', value => '{"ok": $i}', actor => 'b') IS NOT NULL;
SELECT supabash_notes(workspace_id => '$big', revision => '$head') IS NOT NULL;
EOF
  sql -U authenticator -At -v claims='{"role":"service_role"}' >/dev/null <<EOF
BEGIN; SELECT set_config('request.jwt.claims', :'claims', true) \\g /dev/null
SET LOCAL ROLE service_role;
SELECT supabash_spend_storage_nonce(nonce => 'plan-check-nonce-$i', keep_until => extract(epoch FROM now())::bigint + 600) IS NOT NULL;
COMMIT;
EOF
done
rpc $SMALL >/dev/null <<EOF
SELECT supabash_load_manifest(workspace_id => '$small') IS NOT NULL;
SELECT supabash_load_document(workspace_id => '$small', path => '/f3.txt') IS NOT NULL;
SELECT supabash_load_snapshot(workspace_id => '$small') IS NOT NULL;
SELECT supabash_history(workspace_id => '$small', page_size => 100) IS NOT NULL;
EOF
rpc $BIG >/dev/null <<EOF
SELECT supabash_load_manifest(workspace_id => '$big') IS NOT NULL;
SELECT supabash_load_document(workspace_id => '$big', path => '/d/f4242.txt') IS NOT NULL;
SELECT supabash_history(workspace_id => '$big', page_size => 5) IS NOT NULL;
SELECT supabash_list_directory(workspace_id => '$big', path => '/', totals => true) IS NOT NULL;
SELECT supabash_manifest_changes(workspace_id => '$big', since => '$since') IS NOT NULL;
EOF
tail -c +$((mark + 1)) "$TMP/server.log" >"$TMP/explained.log"
cp "$TMP/explained.log" /tmp/plan-check.explained.log
python3 - "$TMP/explained.log" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
# auto_explain JSON blocks: "duration: ... ms  plan:\n{ ... }" up to the next log line.
blocks = re.findall(r"plan:\n\t(\{.*?\n\t\})", text, re.S)
tenant = {"bodies", "entries", "revisions", "usage", "leases", "purged_commits", "audit_records",
          "redactions", "checkpoints", "revision_notes"}
shared = {"workspaces", "storage_nonces"}
# The reads that answer a whole tree (manifest, snapshot, listing, the commits' seed) may read
# every row of a workspace; nothing else may read more than 1,000 rows of a table.
WHOLE_TREE = re.compile(r"ORDER BY 1|supabash_load_manifest|supabash_load_snapshot|supabash_list_directory|json_agg")
# The Storage nonce bound counts the live nonces up to its cap (100,000) on every spend: it reads
# that many rows whatever the plan (listed, not failed).
LIVE_COUNT = re.compile(r"SELECT count\(\*\) FROM \(SELECT 1 FROM supabash.storage_nonces")
bad, seen = [], {}
def walk(node, query):
    rel = node.get("Relation Name")
    kind = node["Node Type"]
    if rel:
        cond = node.get("Index Cond") or (node.get("Plans") or [{}])[0].get("Index Cond") or ""
        key = (query[:80], rel, kind, node.get("Index Name", ""))
        seen.setdefault(key, [0, 0, cond])
        seen[key][0] += 1
        seen[key][1] = max(seen[key][1], node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0))
        if rel in tenant | {"workspaces"} and node.get("Rows Removed by Filter", 0) > 100:
            bad.append((query[:80], rel, kind + f" removing {node['Rows Removed by Filter']} rows by filter"))
        if kind == "Seq Scan" and rel in tenant | shared and not LIVE_COUNT.search(query):
            bad.append((query[:80], rel, kind))
        read = node.get("Actual Rows", 0) * node.get("Actual Loops", 1) + node.get("Rows Removed by Filter", 0)
        if rel in tenant and read > 1000 and not WHOLE_TREE.search(query):
            bad.append((query[:80], rel, kind + f" reading {read} rows (a whole workspace)"))
        if rel in tenant and kind in ("Index Scan", "Index Only Scan", "Bitmap Heap Scan") and "workspace_id" not in cond and "owner_id" not in cond:
            bad.append((query[:80], rel, kind + " on " + cond))
    for c in node.get("Plans", []):
        walk(c, query)
for b in blocks:
    try:
        j = json.loads(b)
    except Exception:
        continue
    q = re.sub(r"\s+", " ", j.get("Query Text", ""))
    walk(j["Plan"], q)
print("| statement | table | scan | index | times | most rows read | condition |")
print("|---|---|---|---|---|---|---|")
for (q, rel, kind, idx), (n, rows, cond) in sorted(seen.items()):
    print(f"| {q.replace('|', '/')} | {rel} | {kind} | {idx} | {n} | {rows} | {cond[:70].replace('|', '/')} |")
if bad:
    print("\nPLANS THAT DEPEND ON STATISTICS:")
    for b in sorted(set(bad)):
        print("  ", b)
    sys.exit(1)
print("\nevery read of a supabash table is an index lookup by its workspace (or owner) key")
EOF
