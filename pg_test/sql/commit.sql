-- Scenario: supabash_commit.
--
-- A commit is a list of changes applied atomically on top of a base revision:
--   {"op": "upsert", "path": "/a", "text": "..." | "base64": "...", "metadata": {...}?}
--   {"op": "delete", "path": "/a"}
--   {"op": "move", "from": "/a", "path": "/b"}   (optionally with new text/base64)
-- base_revision must equal the current head (omit it for the first commit), else the commit
-- fails with PT409 SUPABASH_COMMIT_CONFLICT (PostgREST answers HTTP 409). The server hashes
-- every body itself. A repeated transaction_id or idempotency_key replays the stored receipt
-- when the request is the same and fails with 23505 SUPABASH_IDEMPOTENCY_CONFLICT otherwise.
-- A refused commit changes nothing.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
COMMIT;

-- The transaction id the first commit uses, named for readable output.
SELECT pgt.keep('tx1', '{"id": "c0ffee00-0000-4000-8000-000000000001"}', 'id') IS NOT NULL AS named;

-- 1. First commit (no base): a text file with metadata and a binary file, with every optional
--    context field. The receipt lists each change with before/after content hashes and sizes.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('r1', supabash_commit(
  workspace_id => pgt.id('ws'),
  actor => 'alice',
  changes => '[{"op": "upsert", "path": "/notes/hello.md", "text": "hello\n", "metadata": {"title": "Hello"}},
               {"op": "upsert", "path": "/img/dot.bin", "base64": "AAEC/w=="}]',
  transaction_id => 'c0ffee00-0000-4000-8000-000000000001',
  correlation_id => 'session-42',
  idempotency_key => 'first-commit',
  cause => 'initial import',
  metadata => '{"tool": "psql"}'), 'receipt', 'revision'));
COMMIT;

-- The metadata is rendered as frontmatter; the binary body comes back as base64.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/notes/hello.md')::jsonb);
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/img/dot.bin')::jsonb);
ROLLBACK;

-- 2. Delete, move, and a new file, on base r1.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('r2', supabash_commit(
  workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "delete", "path": "/img/dot.bin"},
               {"op": "move", "from": "/notes/hello.md", "path": "/notes/renamed.md"},
               {"op": "upsert", "path": "/a.txt", "text": "from a"}]'), 'receipt', 'revision'));
COMMIT;

-- 3. A move onto an existing file replaces it (overwrite-move); a move may carry new content.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('r3', supabash_commit(
  workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r2'),
  changes => '[{"op": "upsert", "path": "/b.txt", "text": "old b"}]'), 'receipt', 'revision')) IS NOT NULL AS committed;
SELECT pgt.show(pgt.keep('r4', supabash_commit(
  workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  changes => '[{"op": "move", "from": "/a.txt", "path": "/b.txt"},
               {"op": "move", "from": "/notes/renamed.md", "path": "/notes/final.md", "text": "final\n"}]'),
  'receipt', 'revision'));
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb);
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/b.txt')::jsonb) ~ '"text": "from a"' AS b_holds_a;
COMMIT;

-- 4. Replays. The same request again (by transaction id) returns the stored receipt of r1,
--    marked replayed, even though the head has moved on since.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT jsonb_build_object('replayed', r -> 'replayed', 'revision', r -> 'receipt' -> 'revision')
  FROM supabash_commit(
  workspace_id => pgt.id('ws'),
  actor => 'alice',
  changes => '[{"op": "upsert", "path": "/notes/hello.md", "text": "hello\n", "metadata": {"title": "Hello"}},
               {"op": "upsert", "path": "/img/dot.bin", "base64": "AAEC/w=="}]',
  transaction_id => 'c0ffee00-0000-4000-8000-000000000001',
  correlation_id => 'session-42',
  idempotency_key => 'first-commit',
  cause => 'initial import',
  metadata => '{"tool": "psql"}') AS r$$) AS replay_by_transaction_id;
-- The same request under its idempotency key, without the transaction id, replays too.
SELECT pgt.try($$SELECT jsonb_build_object('replayed', r -> 'replayed', 'revision', r -> 'receipt' -> 'revision')
  FROM supabash_commit(
  workspace_id => pgt.id('ws'),
  actor => 'alice',
  changes => '[{"op": "upsert", "path": "/notes/hello.md", "text": "hello\n", "metadata": {"title": "Hello"}},
               {"op": "upsert", "path": "/img/dot.bin", "base64": "AAEC/w=="}]',
  correlation_id => 'session-42',
  idempotency_key => 'first-commit',
  cause => 'initial import',
  metadata => '{"tool": "psql"}') AS r$$) AS replay_by_idempotency_key;
-- The same key or transaction id with a different request is an idempotency conflict.
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => pgt.id('r4'), idempotency_key => 'first-commit',
  changes => '[{"op": "upsert", "path": "/x.md", "text": "different"}]')$$) AS key_reused;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => pgt.id('r4'), transaction_id => 'c0ffee00-0000-4000-8000-000000000001',
  changes => '[{"op": "upsert", "path": "/x.md", "text": "different"}]')$$) AS transaction_id_reused;
ROLLBACK;

-- 5. Compare-and-swap: a stale base, or no base on a workspace that has a head, is a conflict
--    (PT409, HTTP 409 through PostgREST); the detail names both revisions.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => pgt.id('r2'), changes => '[{"op": "upsert", "path": "/x.md", "text": "late"}]')$$) AS stale_base;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/x.md", "text": "late"}]')$$) AS missing_base;
ROLLBACK;

-- 6. Refused requests: each gets a SQLSTATE and a SUPABASH_* marker and changes nothing.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT label, pgt.try(format('SELECT supabash_commit(workspace_id => %L, actor => %L, base_revision => %L, changes => %L)',
                             pgt.id('ws'), actor, pgt.id('r4'), changes))
  FROM (VALUES
  ('delete of a missing path', 'alice', '[{"op": "delete", "path": "/nope.md"}]'),
  ('move of a missing path',   'alice', '[{"op": "move", "from": "/nope.md", "path": "/b.md"}]'),
  ('move onto itself',         'alice', '[{"op": "move", "from": "/b.txt", "path": "/b.txt"}]'),
  ('dot-dot segment',          'alice', '[{"op": "upsert", "path": "/a/../etc/passwd", "text": "x"}]'),
  ('relative path',            'alice', '[{"op": "upsert", "path": "../x", "text": "x"}]'),
  ('percent-encoded dots',     'alice', '[{"op": "upsert", "path": "/a/%2e%2e/b", "text": "x"}]'),
  ('percent-encoded slash',    'alice', '[{"op": "upsert", "path": "/a%2Fb", "text": "x"}]'),
  ('control character',        'alice', '[{"op": "upsert", "path": "/a\u0007b", "text": "x"}]'),
  ('shell-owned /tmp',         'alice', '[{"op": "upsert", "path": "/tmp/x", "text": "x"}]'),
  ('reserved .supabash',       'alice', '[{"op": "upsert", "path": "/.supabash/state", "text": "x"}]'),
  ('trailing slash',           'alice', '[{"op": "upsert", "path": "/dir/", "text": "x"}]'),
  ('empty segment',            'alice', '[{"op": "upsert", "path": "/a//b", "text": "x"}]'),
  ('backslash',                'alice', '[{"op": "upsert", "path": "/a\\b", "text": "x"}]'),
  ('changes not an array',     'alice', '{"op": "upsert", "path": "/a", "text": "x"}'),
  ('unknown op',               'alice', '[{"op": "rename", "path": "/a"}]'),
  ('unknown field',            'alice', '[{"op": "upsert", "path": "/a", "text": "x", "owner": 0}]'),
  ('mode out of range',        'alice', '[{"op": "upsert", "path": "/a", "text": "x", "mode": 4096}]'),
  ('absolute link target',     'alice', '[{"op": "upsert", "path": "/a", "text": "/etc/passwd", "kind": "symlink"}]'),
  ('link above the root',      'alice', '[{"op": "upsert", "path": "/a", "text": "../x", "kind": "symlink"}]'),
  ('text and base64',          'alice', '[{"op": "upsert", "path": "/a", "text": "x", "base64": "eA=="}]'),
  ('invalid base64',           'alice', '[{"op": "upsert", "path": "/a", "base64": "***"}]'),
  ('text not a string',        'alice', '[{"op": "upsert", "path": "/a", "text": 42}]'),
  ('metadata not scalar',      'alice', '[{"op": "upsert", "path": "/a", "text": "x", "metadata": {"k": [1]}}]'),
  ('empty actor',              '',      '[]'),
  ('oversized actor',          repeat('x', 1025), '[]')
) AS t(label, actor, changes);
SELECT pgt.try($$SELECT supabash_commit(workspace_id => 'not-a-uuid', actor => 'alice', changes => '[]')$$) AS bad_workspace_id;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => 'r4', changes => '[]')$$) AS bad_base_revision;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r4'),
  metadata => '[1, 2]', changes => '[]')$$) AS metadata_not_object;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r4'),
  source_revision => '11111111-1111-4111-8111-111111111111', changes => '[]')$$) AS unknown_source_revision;
-- Nothing of the above was written: the head is still r4 with the same two files.
SELECT pgt.show(jsonb_build_object('revision', m -> 'revision', 'paths', jsonb_path_query_array(m, '$.files[*].path')))
  FROM (SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb) AS _m(m);
SELECT pgt.show(jsonb_build_object('revisions', jsonb_array_length(h -> 'records')))
  FROM (SELECT supabash_history(workspace_id => pgt.id('ws'))::jsonb) AS _h(h);
ROLLBACK;
