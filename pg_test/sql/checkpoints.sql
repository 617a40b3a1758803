-- Scenario: checkpoints.
--
--   supabash_checkpoint(workspace_id, label => null, retention_class => null,
--                       idempotency_key => null, revision => default head)
--   supabash_checkpoints(workspace_id)                  oldest first
--   supabash_delete_checkpoint(workspace_id, checkpoint_id)
--
-- A checkpoint pins a revision: purge never removes it. Creating one again with the same
-- idempotency key and the same request returns the first one marked replayed; the same key
-- with a different request is 23505 SUPABASH_IDEMPOTENCY_CONFLICT.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
-- Nothing to pin yet.
SELECT pgt.try($$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), label => 'too early')$$) AS empty_workspace;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "one"}]'), 'receipt', 'revision') IS NOT NULL AS r1;
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/a.md", "text": "two"}]'), 'receipt', 'revision') IS NOT NULL AS r2;
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
-- A checkpoint of the head, with a key.
SELECT pgt.show(pgt.keep('cp1', supabash_checkpoint(workspace_id => pgt.id('ws'), label => 'release 1',
  retention_class => 'keep-forever', idempotency_key => 'release-1'), 'checkpointId'));
-- The same request again: the same checkpoint, replayed.
SELECT pgt.show(supabash_checkpoint(workspace_id => pgt.id('ws'), label => 'release 1',
  retention_class => 'keep-forever', idempotency_key => 'release-1'));
-- The same key for something else: refused.
SELECT pgt.try($$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), label => 'release 2',
  idempotency_key => 'release-1')$$) AS key_reused;
-- A checkpoint of an older revision, without a key (each call makes a new one).
SELECT pgt.show(pgt.keep('cp2', supabash_checkpoint(workspace_id => pgt.id('ws'), revision => pgt.id('r1')), 'checkpointId'));
SELECT pgt.show(supabash_checkpoints(workspace_id => pgt.id('ws'))::jsonb);
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => pgt.id('cp2')));
SELECT pgt.try($$SELECT supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => pgt.id('cp2'))$$) AS deleted_twice;
SELECT pgt.show(jsonb_path_query_array(supabash_checkpoints(workspace_id => pgt.id('ws'))::jsonb, '$[*].checkpointId'));
-- Refused checkpoint requests.
SELECT label, pgt.try(call) FROM (VALUES
  ('unknown revision',      $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), revision => '11111111-1111-4111-8111-111111111111')$$),
  ('revision not a uuid',   $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), revision => 'latest')$$),
  ('empty label',           $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), label => '')$$),
  ('oversized label',       $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), label => repeat('l', 4097))$$),
  ('oversized key',         $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'), idempotency_key => repeat('k', 1025))$$),
  ('delete: not a uuid',    $$SELECT supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => 'cp1')$$),
  ('delete: unknown',       $$SELECT supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => '11111111-1111-4111-8111-111111111111')$$)
) AS t(label, call);
COMMIT;
