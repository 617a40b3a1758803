-- Scenario: supabash_fork(workspace_id, revision => head, label => null, actor => null,
--                         cause => null), supabash_list_workspaces(cursor => null,
--           page_size => null), supabash_delete_workspace(workspace_id)
--
-- A fork is a new workspace of the same owner whose first revision's tree is the source's at
-- the fork point. It copies no entries and no bodies (it reads its source's); each side's
-- later commits stay its own. Deleting a source its fork reads from hides it and keeps only
-- what the fork reads.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"f0f0a11c-0000-4000-8000-00000000000f","aud":"authenticated"}'
\set bob '{"role":"authenticated","sub":"f0f0b0b0-0000-4000-8000-00000000000f","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('ws', supabash_create_workspace(label => 'main'), 'workspaceId') IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "alpha"}, {"op": "upsert", "path": "/b.md", "text": "beta"}]'),
  'receipt', 'revision') IS NOT NULL AS r1;
COMMIT;

SELECT count(*) AS entries_before FROM supabash.entries e JOIN supabash.workspaces w ON w.id = e.workspace_id
 WHERE w.store_id = pgt.id('ws')::uuid;
SELECT count(*) AS bodies_before FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;

-- Fork at the head.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('fork', supabash_fork(workspace_id => pgt.id('ws'), label => 'attempt',
  actor => 'alice', cause => 'try another way'), 'workspaceId'));
COMMIT;

-- No entry and no body was copied.
SELECT count(*) AS entries_after FROM supabash.entries e JOIN supabash.workspaces w ON w.id = e.workspace_id
 WHERE w.store_id = pgt.id('ws')::uuid;
SELECT count(*) AS bodies_after FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- The fork's tree is the source's; its history starts with the fork.
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('fork'))::jsonb -> 'files');
SELECT pgt.show(supabash_history(workspace_id => pgt.id('fork'))::jsonb -> 'records');
-- Each side commits; neither sees the other.
SELECT pgt.keep('f2', supabash_commit(workspace_id => pgt.id('fork'), actor => 'alice',
  base_revision => supabash_load_manifest(workspace_id => pgt.id('fork'))::jsonb ->> 'revision',
  changes => '[{"op": "delete", "path": "/a.md"}, {"op": "upsert", "path": "/c.md", "text": "gamma"}]'),
  'receipt', 'revision') IS NOT NULL AS fork_committed;
SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/b.md", "text": "beta 2"}]') -> 'receipt' ->> 'position' AS source_committed;
SELECT string_agg(f ->> 'path', ', ' ORDER BY f ->> 'path') AS fork_files
  FROM jsonb_array_elements(supabash_load_snapshot(workspace_id => pgt.id('fork'))::jsonb -> 'files') f;
SELECT string_agg((f ->> 'path') || '=' || (f ->> 'text'), ', ' ORDER BY f ->> 'path') AS source_files
  FROM jsonb_array_elements(supabash_load_snapshot(workspace_id => pgt.id('ws'))::jsonb -> 'files') f;
-- The caller's workspaces, a page of one at a time.
SELECT pgt.show(supabash_list_workspaces(page_size => 1)::jsonb #- '{workspaces,0,storeBytes}');
SELECT jsonb_array_length(supabash_list_workspaces(cursor => pgt.id('ws'))::jsonb -> 'workspaces') AS after_the_first;
COMMIT;

-- Bob: forks, deletes and lists nothing of Alice's.
BEGIN;
SET LOCAL request.jwt.claims = :'bob';
SET LOCAL ROLE authenticated;
SELECT pgt.try(format($$SELECT supabash_fork(workspace_id => %L, actor => 'bob')$$, pgt.id('ws'))) AS bob_forks;
SELECT pgt.try(format($$SELECT supabash_delete_workspace(workspace_id => %L)$$, pgt.id('ws'))) AS bob_deletes;
SELECT pgt.show(supabash_list_workspaces()::jsonb) AS bob_lists;
COMMIT;
-- Anon may not call them at all.
BEGIN;
SET LOCAL ROLE anon;
SELECT pgt.try($$SELECT supabash_list_workspaces()$$) AS anon_lists;
COMMIT;

-- Bad input.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try(format($$SELECT supabash_fork(workspace_id => %L)$$, pgt.id('ws'))) AS no_actor;
SELECT pgt.try(format($$SELECT supabash_fork(workspace_id => %L, actor => 'a', revision => 'r1')$$, pgt.id('ws'))) AS bad_revision;
SELECT pgt.try(format($$SELECT supabash_fork(workspace_id => %L, actor => 'a', label => '')$$, pgt.id('ws'))) AS empty_label;
SELECT pgt.try($$SELECT supabash_list_workspaces(page_size => 5000)$$) AS page_too_large;
COMMIT;

-- Deleting the source: hidden, the fork reads on; deleting the fork takes both.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_delete_workspace(workspace_id => pgt.id('ws')) - 'bodies' - 'bytes');
SELECT pgt.try(format($$SELECT supabash_load_manifest(workspace_id => %L)$$, pgt.id('ws'))) AS source_is_gone;
SELECT string_agg(f ->> 'path', ', ' ORDER BY f ->> 'path') AS fork_still_reads
  FROM jsonb_array_elements(supabash_load_snapshot(workspace_id => pgt.id('fork'))::jsonb -> 'files') f;
SELECT pgt.show(supabash_delete_workspace(workspace_id => pgt.id('fork')) - 'bodies' - 'bytes');
COMMIT;
SELECT count(*) AS workspaces_left FROM supabash.workspaces WHERE store_id = pgt.id('ws')::uuid;
SELECT count(*) AS bodies_left FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;
