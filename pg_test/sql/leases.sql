-- Scenario: single-writer leases.
--
--   supabash_acquire_lease(workspace_id, holder, ttl_seconds)   -> the lease, with its token
--   supabash_renew_lease(workspace_id, token, ttl_seconds)      -> the lease
--   supabash_release_lease(workspace_id, token)                 -> {"released": bool}
--   supabash_lease(workspace_id)                                -> holder and times, or null
--   supabash_commit(..., lease => token)
--
-- A lease names one holder (a host id) until it expires (the database's clock). While it lives
-- another holder's acquire is PT423 SUPABASH_LEASE_HELD, and so is a commit that presents no
-- token; a token that is not the live one (expired, released, taken over) is PT412
-- SUPABASH_LEASE_LOST. Both are retryable. Without a lease, commits work as before.
\pset tuples_only on
\pset format unaligned
-- Its own users (carol owns, dave is another user), so no other scenario sees its workspace.
\set carol '{"role":"authenticated","sub":"ca401000-0000-4000-8000-00000000000c","aud":"authenticated"}'
\set dave '{"role":"authenticated","sub":"da7e0000-0000-4000-8000-00000000000d","aud":"authenticated"}'

BEGIN;
SET LOCAL request.jwt.claims = :'carol';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId')) IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'carol',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "one"}]'), 'receipt', 'revision') IS NOT NULL AS r1;
-- No lease yet.
SELECT pgt.show(supabash_lease(workspace_id => pgt.id('ws'))::jsonb) AS no_lease;
-- Host A takes it for 30 s.
SELECT pgt.show(pgt.keep('tok_a', supabash_acquire_lease(workspace_id => pgt.id('ws'),
  holder => 'host-a', ttl_seconds => 30), 'token'));
-- Anyone who may read the workspace sees the holder, never the token.
SELECT pgt.show(supabash_lease(workspace_id => pgt.id('ws'))::jsonb);
COMMIT;

BEGIN;
SET LOCAL request.jwt.claims = :'carol';
SET LOCAL ROLE authenticated;
-- Host B is refused while A's lease lives.
SELECT pgt.try($$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => 'host-b', ttl_seconds => 30)$$) AS held;
-- A commit without the token is refused, one with a wrong token too.
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'b', base_revision => pgt.id('r1'),
  changes => '[{"op": "upsert", "path": "/a.md", "text": "b"}]')$$) AS commit_without_token;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'b', base_revision => pgt.id('r1'),
  lease => '00000000-0000-4000-8000-000000000000',
  changes => '[{"op": "upsert", "path": "/a.md", "text": "b"}]')$$) AS commit_with_wrong_token;
-- A's commit presents its token.
SELECT pgt.keep('r2', supabash_commit(workspace_id => pgt.id('ws'), actor => 'a', base_revision => pgt.id('r1'),
  lease => pgt.id('tok_a'), changes => '[{"op": "upsert", "path": "/a.md", "text": "two"}]'), 'receipt', 'revision') IS NOT NULL AS committed_with_lease;
-- Renewing extends it. The holder name alone does not re-acquire a live lease (it is public);
-- A presenting its token gets a fresh one and the old one is dead.
SELECT pgt.show(supabash_renew_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_a'), ttl_seconds => 60));
SELECT pgt.try($$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => 'host-a', ttl_seconds => 30)$$) AS same_name_without_token;
SELECT pgt.show(pgt.keep('tok_a2', supabash_acquire_lease(workspace_id => pgt.id('ws'),
  holder => 'host-a', ttl_seconds => 1, token => pgt.id('tok_a')), 'token'));
SELECT pgt.try($$SELECT supabash_renew_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_a'), ttl_seconds => 30)$$) AS old_token;
COMMIT;

-- The 1 s lease lapses. Its token can no longer commit, even though nobody took over.
SELECT pg_sleep(1.2) IS NOT NULL AS waited;
BEGIN;
SET LOCAL request.jwt.claims = :'carol';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_lease(workspace_id => pgt.id('ws'))::jsonb) AS expired;
SELECT pgt.try($$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'a', base_revision => pgt.id('r2'),
  lease => pgt.id('tok_a2'), changes => '[{"op": "upsert", "path": "/a.md", "text": "late"}]')$$) AS commit_after_expiry;
SELECT pgt.try($$SELECT supabash_renew_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_a2'), ttl_seconds => 30)$$) AS renew_after_expiry;
-- Host B takes the expired lease over, then releases it.
SELECT pgt.show(pgt.keep('tok_b', supabash_acquire_lease(workspace_id => pgt.id('ws'),
  holder => 'host-b', ttl_seconds => 30), 'token'));
SELECT pgt.show(supabash_release_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_b')));
SELECT pgt.show(supabash_release_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_b'))) AS again;
SELECT pgt.show(supabash_lease(workspace_id => pgt.id('ws'))::jsonb) AS released;
-- Malformed input.
SELECT rpc, pgt.try(call) FROM (VALUES
  ('ttl 0',        $$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => 'h', ttl_seconds => 0)$$),
  ('ttl 3601',     $$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => 'h', ttl_seconds => 3601)$$),
  ('empty holder', $$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => '', ttl_seconds => 30)$$),
  ('long holder',  $$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => repeat('h', 257), ttl_seconds => 30)$$),
  ('bad token',    $$SELECT supabash_renew_lease(workspace_id => pgt.id('ws'), token => 'nope', ttl_seconds => 30)$$)
) AS t(rpc, call);
COMMIT;

-- Another user reaches none of it.
BEGIN;
SET LOCAL request.jwt.claims = :'dave';
SET LOCAL ROLE authenticated;
SELECT rpc, pgt.try(call) FROM (VALUES
  ('acquire', $$SELECT supabash_acquire_lease(workspace_id => pgt.id('ws'), holder => 'dave', ttl_seconds => 30)$$),
  ('renew',   $$SELECT supabash_renew_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_b'), ttl_seconds => 30)$$),
  ('release', $$SELECT supabash_release_lease(workspace_id => pgt.id('ws'), token => pgt.id('tok_b'))$$),
  ('lease',   $$SELECT supabash_lease(workspace_id => pgt.id('ws'))$$)
) AS t(rpc, call);
COMMIT;

-- anon may not even call them.
BEGIN;
SET LOCAL ROLE anon;
SELECT pgt.try($$SELECT supabash_lease(workspace_id => pgt.id('ws'))$$) AS anon;
COMMIT;
