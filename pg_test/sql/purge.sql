-- Scenario: supabash_purge(workspace_id, keep_revisions => null, max_age_seconds => null,
--                          floor_revision => null, dry_run => false)
--
-- A revision is purged when it is beyond the keep_revisions newest OR older than
-- max_age_seconds (with neither given, keep_revisions defaults to 50), AND it is not the head,
-- not checkpointed, and older than the floor revision. File versions no retained revision can
-- see go with them, then bodies nothing references any more. A dry run reports the same and
-- writes nothing. Retained revisions stay fully readable.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

-- Six revisions: r1..r6 each rewrite /f.md; r1 also writes /big.txt, which r2 deletes.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => json_build_array(
    json_build_object('op', 'upsert', 'path', '/f.md', 'text', 'f1'),
    json_build_object('op', 'upsert', 'path', '/big.txt', 'text', repeat('B', 10000)))),
  'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/f.md", "text": "f2"}, {"op": "delete", "path": "/big.txt"}]'),
  'receipt', 'revision') IS NOT NULL AS r2;
SELECT pgt.keep('r3', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r2'),
  changes => '[{"op": "upsert", "path": "/f.md", "text": "f3"}]'), 'receipt', 'revision') IS NOT NULL AS r3;
SELECT pgt.keep('r4', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r3'),
  changes => '[{"op": "upsert", "path": "/f.md", "text": "f4"}]'), 'receipt', 'revision') IS NOT NULL AS r4;
SELECT pgt.keep('r5', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r4'),
  changes => '[{"op": "upsert", "path": "/f.md", "text": "f5"}]'), 'receipt', 'revision') IS NOT NULL AS r5;
SELECT pgt.keep('r6', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r5'),
  changes => '[{"op": "upsert", "path": "/f.md", "text": "f6"}]'), 'receipt', 'revision') IS NOT NULL AS r6;
-- r3 is checkpointed.
SELECT pgt.keep('cp', supabash_checkpoint(workspace_id => pgt.id('ws'), revision => pgt.id('r3')), 'checkpointId') IS NOT NULL AS cp;
COMMIT;

-- What the database holds for the workspace (as the superuser, outside any RPC).
SELECT count(*) AS revisions FROM supabash.revisions WHERE workspace_id = pgt.id('ws')::uuid;
SELECT count(*) AS bodies, sum(size) AS body_bytes FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;

-- Dry run, keeping the 2 newest: r1, r2 and r4 would go (r3 is checkpointed, r5 and r6 are the
-- newest two); nothing is written.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 2, dry_run => true));
COMMIT;
SELECT count(*) AS revisions FROM supabash.revisions WHERE workspace_id = pgt.id('ws')::uuid;
SELECT count(*) AS bodies, sum(size) AS body_bytes FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;

-- The same for real: the 10000-byte body only r1 could see is reclaimed, with f1, f2 and f4.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 2));
COMMIT;
SELECT count(*) AS revisions FROM supabash.revisions WHERE workspace_id = pgt.id('ws')::uuid;
SELECT count(*) AS bodies, sum(size) AS body_bytes FROM supabash.bodies WHERE workspace_id = pgt.id('ws')::uuid;

-- Retained revisions read as before; purged ones are gone; history skips the gap.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/f.md', revision => pgt.id('r3'))::jsonb -> 'text') AS r3_text;
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/f.md', revision => pgt.id('r5'))::jsonb -> 'text') AS r5_text;
SELECT pgt.try($$SELECT supabash_load_revision(workspace_id => pgt.id('ws'), revision => pgt.id('r1'))$$) AS r1_purged;
SELECT pgt.show(jsonb_path_query_array(supabash_history(workspace_id => pgt.id('ws'))::jsonb, '$.records[*].revision'));
-- A cursor that was purged: error, or restart from the oldest retained revision.
SELECT pgt.try($$SELECT supabash_history(workspace_id => pgt.id('ws'), cursor => pgt.id('r2'))$$) AS purged_cursor;
SELECT pgt.try($$SELECT jsonb_path_query_array(supabash_history(workspace_id => pgt.id('ws'), cursor => pgt.id('r2'),
  restart_if_missing => true)::jsonb, '$.records[*].revision')$$) AS restarted;
ROLLBACK;

-- A floor keeps every revision from the floor on: with the floor at r5 nothing is left to
-- purge, with the floor at r6 only r5 is. keep_revisions => 0 still never removes the head (r6)
-- or a checkpointed revision (r3).
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 0, floor_revision => pgt.id('r5'), dry_run => true));
SELECT pgt.show(supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 0, floor_revision => pgt.id('r6'), dry_run => true));
SELECT pgt.show(supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 0));
SELECT pgt.show(jsonb_path_query_array(supabash_history(workspace_id => pgt.id('ws'))::jsonb, '$.records[*].revision'));
ROLLBACK;

-- Max age: three more revisions, r7 and r8 backdated by two days (as the superuser, to stand in
-- for time passing). max_age_seconds => 86400 alone purges exactly those two.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('r7', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r6'),
  changes => '[{"op": "upsert", "path": "/g.md", "text": "g7"}]'), 'receipt', 'revision') IS NOT NULL AS r7;
SELECT pgt.keep('r8', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r7'),
  changes => '[{"op": "upsert", "path": "/g.md", "text": "g8"}]'), 'receipt', 'revision') IS NOT NULL AS r8;
SELECT pgt.keep('r9', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r8'),
  changes => '[{"op": "upsert", "path": "/g.md", "text": "g9"}]'), 'receipt', 'revision') IS NOT NULL AS r9;
COMMIT;
UPDATE supabash.revisions SET committed_at = committed_at - interval '2 days'
 WHERE workspace_id = pgt.id('ws')::uuid AND revision_id IN (pgt.id('r7')::uuid, pgt.id('r8')::uuid);
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_purge(workspace_id => pgt.id('ws'), max_age_seconds => 86400));
SELECT pgt.show(jsonb_path_query_array(supabash_history(workspace_id => pgt.id('ws'))::jsonb, '$.records[*].revision'));
-- Refused purges.
SELECT label, pgt.try(call) FROM (VALUES
  ('negative keep',      $$SELECT supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => -1)$$),
  ('negative max age',   $$SELECT supabash_purge(workspace_id => pgt.id('ws'), max_age_seconds => -1)$$),
  ('unknown floor',      $$SELECT supabash_purge(workspace_id => pgt.id('ws'), floor_revision => '11111111-1111-4111-8111-111111111111')$$),
  ('purged floor',       $$SELECT supabash_purge(workspace_id => pgt.id('ws'), floor_revision => pgt.id('r1'))$$),
  ('floor not a uuid',   $$SELECT supabash_purge(workspace_id => pgt.id('ws'), floor_revision => 'r5')$$)
) AS t(label, call);
COMMIT;
