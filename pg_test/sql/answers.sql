-- Scenario: what the database answers (issue 25) as another language calls it.
--   supabash_path_history(workspace_id, path, cursor => null, page_size => 100,
--                         follow_moves => false, oldest_first => false)
--   reads as of a time: a revision argument may be an RFC 3339 time
--   supabash_grep(workspace_id, pattern, revision => null, paths => null, ignore_case => false,
--                 fixed_strings => false, max_matches => 100, context_lines => 0, cursor => null)
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

-- Three commits: write /a.md, change it, move it to /b.md.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('ws', supabash_create_workspace(), 'workspaceId') IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "one\nTODO: two\n"}]'), 'receipt', 'revision') IS NOT NULL AS r1;
COMMIT;
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/a.md", "text": "one\ntwo\n"}]'), 'receipt', 'revision') IS NOT NULL AS r2;
COMMIT;
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('r3', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r2'),
  changes => '[{"op": "move", "from": "/a.md", "path": "/b.md"}]'), 'receipt', 'revision') IS NOT NULL AS r3;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- /b.md's versions, following the move back to /a.md, newest first.
SELECT pgt.show(supabash_path_history(workspace_id => pgt.id('ws'), path => '/b.md',
  follow_moves => true)::jsonb);
-- Oldest first, one revision a page: the cursor is a position.
SELECT pgt.show(supabash_path_history(workspace_id => pgt.id('ws'), path => '/a.md',
  oldest_first => true, page_size => 1)::jsonb -> 'nextCursor');
-- A path that never existed.
SELECT supabash_path_history(workspace_id => pgt.id('ws'), path => '/never.md');
ROLLBACK;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- As of the first revision's time: the first revision's text.
SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/a.md',
  revision => (SELECT committed_at_text FROM (SELECT supabash_history(workspace_id => pgt.id('ws'))::jsonb
    #>> '{records,0,committedAt}' AS committed_at_text) AS t))::jsonb ->> 'text' AS first_text;
-- Before the first revision, in the future, malformed (the details name ids and the clock).
\set VERBOSITY terse
SELECT supabash_load_manifest(workspace_id => pgt.id('ws'), revision => '2001-01-01T00:00:00Z');
ROLLBACK;
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT supabash_load_manifest(workspace_id => pgt.id('ws'), revision => '2999-01-01T00:00:00Z');
ROLLBACK;
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT supabash_load_manifest(workspace_id => pgt.id('ws'), revision => '2026-02-30T00:00:00Z');
ROLLBACK;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- Search the first revision, with a line of context.
SELECT pgt.show(supabash_grep(workspace_id => pgt.id('ws'), pattern => 'todo', ignore_case => true,
  revision => pgt.id('r1'), context_lines => 1)::jsonb);
-- A glob that keeps nothing at the head; a pattern that does not compile.
SELECT pgt.show(supabash_grep(workspace_id => pgt.id('ws'), pattern => 'one', paths => ARRAY['*.txt'])::jsonb -> 'matches');
SELECT supabash_grep(workspace_id => pgt.id('ws'), pattern => '(');
ROLLBACK;

-- The compact manifest (compact => true): each file leaves out what holds its default (a body
-- stored whole, no metadata, a plain file, the kind's mode); the rest is as in the full form.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('r4', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  changes => '[{"op": "upsert", "path": "/run.sh", "text": "#!/bin/sh\n", "mode": 493, "metadata": {"title": "Run"}},
               {"op": "upsert", "path": "/link", "text": "b.md", "kind": "symlink"},
               {"op": "upsert", "path": "/empty", "kind": "directory"}]'), 'receipt', 'revision') IS NOT NULL AS r4;
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'), compact => true)::jsonb -> 'files');
ROLLBACK;
\set VERBOSITY default
