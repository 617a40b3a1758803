-- Scenario: delegated capabilities.
--
-- A trusted issuer (a host's job scheduler) signs an EdDSA (Ed25519) token with a private key
-- the database never stores; service_role exchanges it for a short-lived grant bound to one
-- workspace and an exact operation set; every RPC then accepts that grant, and only for what
-- it allows. SQL cannot sign Ed25519 (and the database has no key to sign with), so the tokens
-- are signed outside, by pg_test/sign.sh (openssl), as any language with Ed25519 can.
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'
\set bob '{"role":"authenticated","sub":"b0b00000-0000-4000-8000-00000000000b","aud":"authenticated"}'
\set anon '{"role":"anon"}'
\set service '{"role":"service_role"}'

-- The database owner registers a verifier; the database generates the pair, keeps the public
-- key and returns the private key once (kept, not printed).
INSERT INTO pgt.names VALUES ('secret', supabash_register_capability_verifier(
  key_id => 'jobs-2026', issuer => 'https://jobs.example', audience => 'supabash',
  origin => 'https://project.example'));
SELECT length(pgt.id('secret')) AS secret_chars;
-- Nobody else may register, rotate or revoke, nor read the verifiers.
BEGIN;
SET LOCAL request.jwt.claims = :'service';
SET LOCAL ROLE service_role;
SELECT pgt.try($$SELECT to_jsonb(supabash_register_capability_verifier('evil', 'i', 'a', 'o'))$$);
SELECT pgt.try($$SELECT to_jsonb(supabash_revoke_capability_verifier('jobs-2026'))$$);
SELECT pgt.try($$SELECT to_jsonb(count(*)) FROM supabash.capability_verifiers$$);
ROLLBACK;

-- Alice's workspace with one file; bob's workspace.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('ws', supabash_create_workspace(), 'workspaceId') IS NOT NULL AS created;
SELECT pgt.keep('r1', supabash_commit(workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/report.md", "text": "draft"}]'), 'receipt', 'revision') IS NOT NULL AS committed;
COMMIT;
BEGIN;
SET LOCAL request.jwt.claims = :'bob';
SET LOCAL ROLE authenticated;
SELECT pgt.keep('bobs', supabash_create_workspace(), 'workspaceId') IS NOT NULL AS created;
COMMIT;

-- Tokens: header {alg EdDSA, kid}; claims bind issuer, audience, origin, schema version, the
-- backend and workspace, the actor subject, the operations, a single-use nonce, a correlation
-- id, and a lifetime within the verifier's maximum (900 s) and clock skew (60 s).
CREATE TEMP TABLE tokens (name text PRIMARY KEY, token text);
GRANT SELECT ON tokens TO service_role, authenticated, anon;
CREATE FUNCTION pg_temp.claims(nonce text, extra jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('ver', 1, 'iss', 'https://jobs.example', 'aud', 'supabash',
    'origin', 'https://project.example', 'backend', 'postgres', 'workspace', pgt.id('ws'),
    'sub', 'nightly-report', 'ops', jsonb_build_array('read', 'write', 'commit'), 'cid', 'job-42',
    'nonce', nonce, 'iat', floor(extract(epoch FROM now()))::bigint - 5,
    'exp', floor(extract(epoch FROM now()))::bigint + 300) || extra
$$;
CREATE FUNCTION pg_temp.input(header jsonb, claims jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT pgt.b64url(convert_to(header::text, 'UTF8')) || '.' || pgt.b64url(convert_to(claims::text, 'UTF8'))
$$;
-- What to sign: name, private key, signing input ('forged' uses a key nobody registered).
CREATE TEMP TABLE unsigned AS SELECT name, coalesce(key, pgt.id('secret')) AS key,
  pg_temp.input(header, pg_temp.claims(nonce, extra)) AS input
FROM (VALUES
  ('valid', NULL, '{"alg":"EdDSA","kid":"jobs-2026","typ":"JWT"}'::jsonb, 'nonce-valid-000000001', '{}'::jsonb),
  ('forged', 'QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE', '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-forged-00000001', '{}'),
  ('expired', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-expired-0000001',
     jsonb_build_object('iat', floor(extract(epoch FROM now()))::bigint - 900, 'exp', floor(extract(epoch FROM now()))::bigint - 120)),
  ('future', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-future-00000001',
     jsonb_build_object('iat', floor(extract(epoch FROM now()))::bigint + 600, 'exp', floor(extract(epoch FROM now()))::bigint + 900)),
  ('too long', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-toolong-0000001',
     jsonb_build_object('exp', floor(extract(epoch FROM now()))::bigint + 3600)),
  ('unknown key', NULL, '{"alg":"EdDSA","kid":"jobs-1999"}', 'nonce-unknownkey-0001', '{}'),
  ('HS256 header', NULL, '{"alg":"HS256","kid":"jobs-2026"}', 'nonce-hs256-000000001', '{}'),
  ('schema version 2', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-version-0000001', '{"ver": 2}'),
  ('other backend', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-backend-0000001', '{"backend": "storage"}'),
  ('other origin', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-origin-00000001', '{"origin": "https://other.example"}'),
  ('unknown operation', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-ops-00000000001', '{"ops": ["read", "sudo"]}'),
  ('repeated operation', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-ops-00000000002', '{"ops": ["read", "read"]}'),
  ('unknown workspace', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-workspace-00001', '{"workspace": "00000000-0000-4000-8000-000000000000"}'),
  ('after revocation', NULL, '{"alg":"EdDSA","kid":"jobs-2026"}', 'nonce-after-revoke-01', '{}')
) AS t(name, key, header, nonce, extra);
SELECT string_agg(format(E'%s\t%s\t%s', name, key, input), ';' ORDER BY name) AS batch FROM unsigned \gset
\set signed `bash "$SUPABASH_PG_TEST/sign.sh" :'batch'`
INSERT INTO tokens VALUES :signed;
SELECT count(*) AS signed_tokens FROM tokens;
-- A token whose claims were edited after signing (more operations), and one cut short.
INSERT INTO tokens SELECT 'tampered', split_part(token, '.', 1) || '.'
  || pgt.b64url(convert_to(pg_temp.claims('nonce-valid-000000001', '{"ops": ["read", "write", "commit", "purge"]}')::text, 'UTF8'))
  || '.' || split_part(token, '.', 3) FROM tokens WHERE name = 'valid';
INSERT INTO tokens VALUES ('not a token', 'abc.def');

-- anon and users cannot exchange at all.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_exchange_capability((SELECT token FROM tokens WHERE name = 'valid'))$$);
ROLLBACK;
BEGIN;
SET LOCAL request.jwt.claims = :'anon';
SET LOCAL ROLE anon;
SELECT pgt.try($$SELECT supabash_exchange_capability((SELECT token FROM tokens WHERE name = 'valid'))$$);
ROLLBACK;

-- service_role exchanges: only expiry is told apart; every other refusal says the same.
BEGIN;
SET LOCAL request.jwt.claims = :'service';
SET LOCAL ROLE service_role;
SELECT name, pgt.try(format('SELECT supabash_exchange_capability(%L)', token))
  FROM tokens WHERE name NOT IN ('valid', 'tampered', 'after revocation') ORDER BY name;
SELECT pgt.show(pgt.keep('grant', supabash_exchange_capability((SELECT token FROM tokens WHERE name = 'valid')),
  'delegatedGrant') - 'delegatedGrant');
-- The same token again (replay), and with its claims edited: refused.
SELECT 'replayed', pgt.try($$SELECT supabash_exchange_capability((SELECT token FROM tokens WHERE name = 'valid'))$$);
SELECT 'tampered', pgt.try($$SELECT supabash_exchange_capability((SELECT token FROM tokens WHERE name = 'tampered'))$$);
COMMIT;

-- Delegated calls: the grant opens alice's workspace for read, write and commit only; the
-- commit is recorded under the grant's subject, correlation id and key id, whatever the
-- caller sends.
BEGIN;
SET LOCAL request.jwt.claims = :'service';
SET LOCAL ROLE service_role;
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'), delegated_grant => pgt.id('grant'))::jsonb -> 'files');
SELECT pgt.show(supabash_commit(workspace_id => pgt.id('ws'), delegated_grant => pgt.id('grant'),
  base_revision => pgt.id('r1'), actor => 'claims-to-be-alice', correlation_id => 'forged',
  changes => '[{"op": "upsert", "path": "/report.md", "text": "final"}]') -> 'receipt');
SELECT rpc, pgt.try(call) FROM (VALUES
  ('history (not granted)', format('SELECT supabash_history(workspace_id => %L, delegated_grant => %L)', pgt.id('ws'), pgt.id('grant'))),
  ('purge (not granted)', format('SELECT supabash_purge(workspace_id => %L, delegated_grant => %L)', pgt.id('ws'), pgt.id('grant'))),
  ('checkpoint (not granted)', format('SELECT supabash_checkpoint(workspace_id => %L, delegated_grant => %L)', pgt.id('ws'), pgt.id('grant'))),
  ('another workspace', format('SELECT supabash_load_manifest(workspace_id => %L, delegated_grant => %L)', pgt.id('bobs'), pgt.id('grant'))),
  ('a made-up grant', format('SELECT supabash_load_manifest(workspace_id => %L, delegated_grant => %L)', pgt.id('ws'), 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')),
  ('no grant', format('SELECT supabash_load_manifest(workspace_id => %L)', pgt.id('ws')))
) AS t(rpc, call);
-- Over PostgREST the grant travels in the X-Supabash-Grant header (request.headers), never in
-- a URL: the same read with no grant argument.
SELECT set_config('request.headers', json_build_object('x-supabash-grant', pgt.id('grant'))::text, true) IS NOT NULL AS header_set;
SELECT pgt.show(supabash_load_manifest(workspace_id => pgt.id('ws'))::jsonb -> 'files');
COMMIT;

-- Only the database records delegated actors: a user cannot commit as one.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try(format('SELECT supabash_commit(workspace_id => %L, actor => %L, base_revision => %L, changes => %L)',
  pgt.id('ws'), 'delegated:nightly-report', pgt.id('r1'), '[{"op": "upsert", "path": "/report.md", "text": "forged"}]'));
ROLLBACK;

-- A user session may not present a grant.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try(format('SELECT supabash_load_manifest(workspace_id => %L, delegated_grant => %L)', pgt.id('ws'), pgt.id('grant')));
ROLLBACK;

-- Revocation removes the verifier and the grants minted with it.
SELECT supabash_revoke_capability_verifier('jobs-2026') AS revoked;
BEGIN;
SET LOCAL request.jwt.claims = :'service';
SET LOCAL ROLE service_role;
SELECT pgt.try(format('SELECT supabash_load_manifest(workspace_id => %L, delegated_grant => %L)', pgt.id('ws'), pgt.id('grant')));
SELECT pgt.try(format('SELECT supabash_exchange_capability(%L)', token)) FROM tokens WHERE name = 'after revocation';
ROLLBACK;

-- Storage capabilities are verified by the host; their nonces can be spent here so every host
-- process accepts a capability once: service_role only, the second spend is a replay.
BEGIN;
SET LOCAL request.jwt.claims = :'service';
SET LOCAL ROLE service_role;
SELECT supabash_spend_storage_nonce('pg-test-storage-nonce-1', floor(extract(epoch FROM now()))::bigint + 600) AS first_spend;
SELECT supabash_spend_storage_nonce('pg-test-storage-nonce-1', floor(extract(epoch FROM now()))::bigint + 600) AS replay;
SELECT pgt.try('SELECT supabash_spend_storage_nonce(''short'', 0)') AS malformed;
COMMIT;
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try('SELECT supabash_spend_storage_nonce(''pg-test-storage-nonce-2'', 0)') AS as_a_user;
ROLLBACK;
