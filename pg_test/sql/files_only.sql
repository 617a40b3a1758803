-- Scenario: supabash_create_workspace(label => null, files_only => null)
--
-- A workspace created with files_only => true stores plain files only (the seed's text-only
-- behaviour): a commit holding a symbolic link, a directory entry or a file mode other than
-- 0o644 (420) is refused whole with SUPABASH_UNSUPPORTED_CONTENT (SQLSTATE 0A000), the detail
-- naming the path and what was refused; times are kept. Forks inherit it; the listing and the
-- manifest show it ("filesOnly").
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"f11e0a1c-0000-4000-8000-00000000000f","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(label => 'plain', files_only => true), 'workspaceId'));
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "alpha"}]'),
  'receipt', 'revision') IS NOT NULL AS r1;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- Each is refused whole: /b.md beside it is not stored either.
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/b.md", "text": "beta"},
               {"op": "upsert", "path": "/link", "text": "a.md", "kind": "symlink"}]')$$) AS symlink;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/b.md", "text": "beta"},
               {"op": "upsert", "path": "/empty", "kind": "directory"}]')$$) AS directory;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "setattr", "path": "/a.md", "mode": 493}]')$$) AS chmod_x;
-- The head is still r1, with /a.md alone.
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb);
ROLLBACK;

-- A fork stores what its source stores; the listing shows both.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('fork', supabash_fork(workspace_id => pgt.id('ws'), label => 'fork', actor => 'alice'),
  'workspaceId') IS NOT NULL AS forked;
SELECT pgt.show(supabash_list_workspaces()::jsonb);
ROLLBACK;
