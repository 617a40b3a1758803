-- Scenario: reads.
--
--   supabash_load_manifest(workspace_id)              the head tree, no bodies
--   supabash_load_document(workspace_id, path, revision => default head)
--   supabash_load_documents(workspace_id, paths, revision => default head)  many, one call
--   supabash_load_snapshot(workspace_id, revision => default head)   every file with its body
--   supabash_load_revision(workspace_id, revision)    a revision's receipt and its full tree
--
-- A body is returned as "text" when it is UTF-8 and as "base64" otherwise. "size" and
-- "contentHash" describe the rendered document (frontmatter + body), "bodySize" and "bodyHash"
-- the stored body.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

-- An empty workspace: no revision, no files.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb);
SELECT pgt.show(supabash_load_snapshot(workspace_id => pgt.id('ws'))::jsonb);
SELECT pgt.try($$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/a.md')$$) AS missing_document;
COMMIT;

-- Two revisions: r1 has /a.md v1, /b.md and /nul.bin; r2 changes /a.md and deletes /b.md.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "version one"},
               {"op": "upsert", "path": "/b.md", "text": "bee", "metadata": {"draft": true}},
               {"op": "upsert", "path": "/nul.bin", "base64": "AAEC"}]'),
  'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/a.md", "text": "version two"}, {"op": "delete", "path": "/b.md"}]'),
  'receipt', 'revision') IS NOT NULL AS r2;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- The manifest lists the head tree without bodies.
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb);
-- A document at the head, and pinned to r1.
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/a.md')::jsonb);
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/a.md', revision => pgt.id('r1'))::jsonb);
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/b.md', revision => pgt.id('r1'))::jsonb);
-- Bytes 00 01 02 are valid UTF-8, but a NUL cannot travel as JSON text: base64.
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/nul.bin')::jsonb);
-- Many documents of one revision in one call; a path it lacks is answered as missing.
SELECT pgt.show(supabash_load_documents(workspace_id => pgt.id('ws'), paths => ARRAY['/b.md', '/a.md', '/none.md'], revision => pgt.id('r1'))::jsonb);
-- A whole pinned snapshot in one call.
SELECT pgt.show(supabash_load_snapshot(workspace_id => pgt.id('ws'), revision => pgt.id('r1'))::jsonb);
SELECT pgt.show(supabash_load_snapshot(workspace_id => pgt.id('ws'))::jsonb);
-- A revision: its stored receipt and its tree.
SELECT pgt.show(supabash_load_revision(workspace_id => pgt.id('ws'), revision => pgt.id('r2'))::jsonb);
ROLLBACK;

-- Refused reads.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT label, pgt.try(call) FROM (VALUES
  ('deleted at head',       $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/b.md')$$),
  ('unknown revision',      $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/a.md',
                                revision => '11111111-1111-4111-8111-111111111111')$$),
  ('revision not a uuid',   $$SELECT supabash_load_snapshot(workspace_id => pgt.id('ws'), revision => 'head')$$),
  ('invalid path',          $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/a/../b.md')$$),
  ('shell-owned path',      $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/proc/self/environ')$$),
  ('empty path',            $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '')$$),
  ('revision of nothing',   $$SELECT supabash_load_revision(workspace_id => pgt.id('ws'), revision => '11111111-1111-4111-8111-111111111111')$$),
  ('revision is null',      $$SELECT supabash_load_revision(workspace_id => pgt.id('ws'), revision => NULL)$$),
  ('workspace is null',     $$SELECT supabash_load_manifest(workspace_id => NULL)$$)
) AS t(label, call);
ROLLBACK;
