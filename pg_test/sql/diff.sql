-- Scenario: supabash_diff(workspace_id, from_ref, to_ref, paths => null, preview_bytes => 8192,
--                         staged => null)
--
-- Each side is one of {"revision": uuid}, {"checkpoint": uuid}, {"head": true} or
-- {"staged": true}; a staged side is the list of documents passed as `staged`
-- ([{"path", "text" | "base64", "metadata"?}], the full tree the caller has staged).
-- Entry kinds: added, deleted, modified, moved (a deleted and an added path with the same
-- content). Text previews are cut on a UTF-8 boundary and end with "\n[truncated]\n"; binary
-- entries say "binary": true instead. `paths` keeps entries at or below the given paths.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/keep.md", "text": "unchanged"},
               {"op": "upsert", "path": "/old.md", "text": "to be deleted"},
               {"op": "upsert", "path": "/mod.md", "text": "v1"},
               {"op": "upsert", "path": "/mv/a.md", "text": "moving content"},
               {"op": "upsert", "path": "/bin.dat", "base64": "AAEC"}]'), 'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('cp1', supabash_checkpoint(workspace_id => pgt.id('ws'), label => 'before edits'),
  'checkpointId') IS NOT NULL AS cp1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "delete", "path": "/old.md"},
               {"op": "upsert", "path": "/mod.md", "text": "v2"},
               {"op": "move", "from": "/mv/a.md", "path": "/mv/b.md"},
               {"op": "upsert", "path": "/new.md", "text": "aéééé"},
               {"op": "upsert", "path": "/bin.dat", "base64": "AAED"}]'), 'receipt', 'revision') IS NOT NULL AS r2;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- Every kind between two revisions, with default previews.
SELECT pgt.show(supabash_diff(workspace_id => pgt.id('ws'),
  from_ref => jsonb_build_object('revision', pgt.id('r1')), to_ref => jsonb_build_object('revision', pgt.id('r2')))::jsonb);
-- Previews of 4 bytes: "aéééé" is cut after "aé" (3 bytes), never inside a character.
SELECT pgt.show(jsonb_path_query_array(supabash_diff(workspace_id => pgt.id('ws'),
  from_ref => jsonb_build_object('revision', pgt.id('r1')), to_ref => '{"head": true}',
  paths => '{/new.md,/mod.md}', preview_bytes => 4)::jsonb, '$.entries[*].preview'));
-- Previews off.
SELECT pgt.show(supabash_diff(workspace_id => pgt.id('ws'),
  from_ref => jsonb_build_object('revision', pgt.id('r1')), to_ref => '{"head": true}',
  paths => '{/mod.md}', preview_bytes => 0)::jsonb);
-- A checkpoint as a side (cp1 pins r1), filtered to the /mv directory: only the move.
SELECT pgt.show(supabash_diff(workspace_id => pgt.id('ws'),
  from_ref => jsonb_build_object('checkpoint', pgt.id('cp1')), to_ref => '{"head": true}',
  paths => '{/mv}')::jsonb);
-- The head against a staged tree: a 4-byte emoji is never split either.
SELECT pgt.show(supabash_diff(workspace_id => pgt.id('ws'),
  from_ref => '{"head": true}', to_ref => '{"staged": true}', preview_bytes => 5,
  staged => '[{"path": "/keep.md", "text": "unchanged"},
              {"path": "/mod.md", "text": "v2"},
              {"path": "/mv/b.md", "text": "moving content"},
              {"path": "/new.md", "text": "aéééé"},
              {"path": "/bin.dat", "base64": "AAED"},
              {"path": "/emoji.md", "text": "😀😀"}]')::jsonb);
-- Identical sides: no entries.
SELECT pgt.show(supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}',
  to_ref => jsonb_build_object('revision', pgt.id('r2')))::jsonb);
ROLLBACK;

-- Refused diffs.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT label, pgt.try(call) FROM (VALUES
  ('side not an object',  $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '"head"', to_ref => '{"head": true}')$$),
  ('two keys in a side',  $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true, "staged": true}', to_ref => '{"head": true}')$$),
  ('head false',          $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": false}', to_ref => '{"head": true}')$$),
  ('unknown revision',    $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"revision": "11111111-1111-4111-8111-111111111111"}', to_ref => '{"head": true}')$$),
  ('unknown checkpoint',  $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"checkpoint": "11111111-1111-4111-8111-111111111111"}', to_ref => '{"head": true}')$$),
  ('staged missing',      $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"staged": true}')$$),
  ('staged twice a path', $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"staged": true}',
                              staged => '[{"path": "/a", "text": "1"}, {"path": "/a", "text": "2"}]')$$),
  ('staged bad path',     $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"staged": true}',
                              staged => '[{"path": "/tmp/scratch", "text": "1"}]')$$),
  ('paths filter bad',    $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"head": true}', paths => '{../etc}')$$),
  ('preview too large',   $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"head": true}', preview_bytes => 65537)$$),
  ('preview negative',    $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"head": true}', preview_bytes => -1)$$)
) AS t(label, call);
ROLLBACK;
