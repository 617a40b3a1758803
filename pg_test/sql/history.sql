-- Scenario: supabash_history(workspace_id, cursor => null, page_size => 100,
--                            restart_if_missing => false)
--
-- Receipts oldest first, one page at a time. "nextCursor" is the revision id of the last
-- record of the page when more follow, null on the last page; pass it back as cursor. A cursor
-- naming no retained revision (e.g. purged) is an error unless restart_if_missing => true,
-- which restarts from the oldest retained revision.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

-- Five commits, r1..r5, each writing /log.md.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', cause => 'one',
  changes => '[{"op": "upsert", "path": "/log.md", "text": "1"}]'), 'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', cause => 'two', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/log.md", "text": "2"}]'), 'receipt', 'revision') IS NOT NULL AS r2;
SELECT pgt.keep('r3', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', cause => 'three', base_revision => pgt.id('r2'),
  changes => '[{"op": "upsert", "path": "/log.md", "text": "3"}]'), 'receipt', 'revision') IS NOT NULL AS r3;
SELECT pgt.keep('r4', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', cause => 'four', base_revision => pgt.id('r3'),
  changes => '[{"op": "upsert", "path": "/log.md", "text": "4"}]'), 'receipt', 'revision') IS NOT NULL AS r4;
SELECT pgt.keep('r5', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', cause => 'five', base_revision => pgt.id('r4'),
  changes => '[{"op": "upsert", "path": "/log.md", "text": "5"}]'), 'receipt', 'revision') IS NOT NULL AS r5;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- The first page in full.
SELECT pgt.show(supabash_history(workspace_id => pgt.id('ws'), page_size => 2)::jsonb);
-- The pages after it, shown as (revision, cause) pairs and the next cursor.
SELECT pgt.show(jsonb_build_object(
         'records', jsonb_path_query_array(h, '$.records[*].revision'),
         'causes', jsonb_path_query_array(h, '$.records[*].cause'),
         'nextCursor', h -> 'nextCursor'))
  FROM (SELECT supabash_history(workspace_id => pgt.id('ws'), cursor => pgt.id('r2'), page_size => 2)::jsonb) AS _h(h);
SELECT pgt.show(jsonb_build_object(
         'records', jsonb_path_query_array(h, '$.records[*].revision'),
         'nextCursor', h -> 'nextCursor'))
  FROM (SELECT supabash_history(workspace_id => pgt.id('ws'), cursor => pgt.id('r4'), page_size => 2)::jsonb) AS _h(h);
-- After the newest record: an empty page.
SELECT pgt.show(supabash_history(workspace_id => pgt.id('ws'), cursor => pgt.id('r5'))::jsonb);
-- The default page holds all five.
SELECT pgt.show(jsonb_build_object(
         'records', jsonb_path_query_array(h, '$.records[*].revision'),
         'nextCursor', h -> 'nextCursor'))
  FROM (SELECT supabash_history(workspace_id => pgt.id('ws'))::jsonb) AS _h(h);
-- An unknown cursor is an error ...
SELECT pgt.try($$SELECT supabash_history(workspace_id => pgt.id('ws'),
  cursor => '11111111-1111-4111-8111-111111111111', page_size => 2)$$) AS unknown_cursor;
-- ... unless the caller asks to restart from the oldest.
SELECT pgt.try($$SELECT jsonb_build_object(
         'records', jsonb_path_query_array(h::jsonb, '$.records[*].revision'), 'nextCursor', h -> 'nextCursor')
  FROM supabash_history(workspace_id => pgt.id('ws'), cursor => '11111111-1111-4111-8111-111111111111',
                        page_size => 2, restart_if_missing => true) AS h$$) AS restarted;
-- Page sizes are 1..1000; the cursor must be a UUID.
SELECT pgt.try($$SELECT supabash_history(workspace_id => pgt.id('ws'), page_size => 0)$$) AS page_size_0;
SELECT pgt.try($$SELECT supabash_history(workspace_id => pgt.id('ws'), page_size => 1001)$$) AS page_size_1001;
SELECT pgt.try($$SELECT supabash_history(workspace_id => pgt.id('ws'), cursor => 'r2')$$) AS cursor_not_uuid;
ROLLBACK;
