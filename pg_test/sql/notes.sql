-- Scenario: notes on a revision after the fact and who may watch a workspace (issue 25), as
-- another language calls them.
--   supabash_add_note(workspace_id, revision, key, value jsonb, actor => null)
--   supabash_notes(workspace_id, revision, key => null)
--   supabash_may_watch(workspace_id)
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-0000000000b1","aud":"authenticated"}'
\set bob '{"role":"authenticated","sub":"b0b00000-0000-4000-8000-0000000000b2","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('nws', supabash_create_workspace(), 'workspaceId') IS NOT NULL AS created;
SELECT pgt.keep('n1', supabash_commit(workspace_id => pgt.id('nws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/report.md", "text": "draft"}]'), 'receipt', 'revision') IS NOT NULL AS n1;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- Two versions under one key, one under another; no new revision.
SELECT (supabash_add_note(workspace_id => pgt.id('nws'), revision => pgt.id('n1'), key => 'eval',
  value => '{"score": 0.5}', actor => 'grader') - 'revision' - 'notedAt')::text;
SELECT (supabash_add_note(workspace_id => pgt.id('nws'), revision => pgt.id('n1'), key => 'eval',
  value => '{"score": 0.9}', actor => 'grader') - 'revision' - 'notedAt')::text;
SELECT (supabash_add_note(workspace_id => pgt.id('nws'), revision => pgt.id('n1'), key => 'review',
  value => '"approved"', actor => 'reviewer') - 'revision' - 'notedAt')::text;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT n->>'key', n->>'version', n->>'value', n->>'actor'
  FROM json_array_elements(supabash_notes(workspace_id => pgt.id('nws'), revision => pgt.id('n1'))) AS n;
SELECT count(*) AS eval_versions
  FROM json_array_elements(supabash_notes(workspace_id => pgt.id('nws'), revision => pgt.id('n1'), key => 'eval'));
-- History carries them; the workspace still has one revision.
SELECT json_array_length(h->'records') AS revisions, json_array_length(h->'notes') AS notes
  FROM (SELECT supabash_history(workspace_id => pgt.id('nws')) AS h) AS t;
SELECT supabash_may_watch(workspace_id => pgt.id('nws'));
ROLLBACK;

-- Bob may not watch, read or add.
BEGIN;
SET LOCAL request.jwt.claims = :'bob';
SET LOCAL ROLE authenticated;
SELECT supabash_may_watch(workspace_id => pgt.id('nws'));
\set VERBOSITY terse
SELECT supabash_notes(workspace_id => pgt.id('nws'), revision => pgt.id('n1'));
ROLLBACK;

-- A null value and an oversized one.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT supabash_add_note(workspace_id => pgt.id('nws'), revision => pgt.id('n1'), key => 'eval',
  value => 'null', actor => 'grader');
ROLLBACK;
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT supabash_add_note(workspace_id => pgt.id('nws'), revision => pgt.id('n1'), key => 'eval',
  value => to_jsonb(repeat('x', 5000)), actor => 'grader');
ROLLBACK;
