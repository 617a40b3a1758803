-- Scenario: supabash_commit with rebase.
--
-- By default a commit whose base_revision is not the head fails with PT409 (strict
-- compare-and-swap). With rebase => true it applies on top of the head instead, when the base
-- is a retained revision of the workspace and no path the commit touches (each change's path,
-- and a move's from) changed after it; its receipt then names the base (rebasedFrom) and the
-- head it landed on (parentRevision). Otherwise PT409 SUPABASH_COMMIT_CONFLICT, the detail
-- naming the conflicting paths.
\pset tuples_only on
\pset format unaligned
-- Its own user (not the other scenarios' alice), so their workspace listings stay theirs.
\set alice '{"role":"authenticated","sub":"4ebace00-0000-4000-8000-00000000000e","aud":"authenticated"}'

-- A workspace with three files (r1), then another writer edits /a.md (r2).
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('ws', supabash_create_workspace(), 'workspaceId') IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "a"},
               {"op": "upsert", "path": "/b.md", "text": "b"},
               {"op": "upsert", "path": "/c.md", "text": "c"}]'), 'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'other',
  base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/a.md", "text": "a by other"}]'), 'receipt', 'revision') IS NOT NULL AS r2;
COMMIT;

-- 1. Without rebase (rebase => false is the default), the stale base r1 conflicts even on a
--    path the other writer did not touch.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => pgt.id('r1'), changes => '[{"op": "upsert", "path": "/b.md", "text": "b2"}]')$$) AS strict;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => pgt.id('r1'), rebase => false,
  changes => '[{"op": "upsert", "path": "/b.md", "text": "b2"}]')$$) AS strict_explicit;
ROLLBACK;

-- 2. With rebase, paths that overlap the other writer's conflict: an edit, a delete, a move
--    from or onto the changed path.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT label, pgt.try(format('SELECT supabash_commit(workspace_id => %L, actor => %L, base_revision => %L, rebase => true, changes => %L)',
                             pgt.id('ws'), 'alice', pgt.id('r1'), changes))
  FROM (VALUES
  ('edit',       '[{"op": "upsert", "path": "/a.md", "text": "mine"}, {"op": "upsert", "path": "/b.md", "text": "b2"}]'),
  ('delete',     '[{"op": "delete", "path": "/a.md"}]'),
  ('move from',  '[{"op": "move", "from": "/a.md", "path": "/d.md"}]'),
  ('move onto',  '[{"op": "move", "from": "/c.md", "path": "/a.md"}]')
) AS t(label, changes);
ROLLBACK;

-- 3. Disjoint paths apply on top of r2: the receipt says rebasedFrom r1, parentRevision r2,
--    and the head holds both writers' changes.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('r3', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => pgt.id('r1'), rebase => true,
  changes => '[{"op": "upsert", "path": "/b.md", "text": "b by alice"},
               {"op": "move", "from": "/c.md", "path": "/e.md"}]'), 'receipt', 'revision'));
SELECT pgt.show(jsonb_object_agg(f ->> 'path', f ->> 'text'))
  FROM (SELECT supabash_load_snapshot(workspace_id => pgt.id('ws'))::jsonb) AS _s(s), jsonb_array_elements(s -> 'files') AS f;
-- History rebuilds the same receipt.
SELECT h -> 'records' -> 2 ->> 'rebasedFrom' = pgt.id('r1') AS history_names_the_base
  FROM (SELECT supabash_history(workspace_id => pgt.id('ws'))::jsonb) AS _h(h);
COMMIT;

-- 4. A base that is not a retained revision of this workspace is unknown: no rebase.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  base_revision => '11111111-1111-4111-8111-111111111111', rebase => true,
  changes => '[{"op": "upsert", "path": "/z.md", "text": "z"}]')$$) AS unknown_base;
ROLLBACK;
