-- Scenario: who may call what.
--
-- PostgREST serves every request in one transaction: it sets the JWT claims for the
-- transaction, switches to the role the JWT names, then calls the function with named
-- arguments. This file plays that transaction for the owner (alice), another signed-in user
-- (bob), anon (no JWT) and service_role (a service key), and shows that only the owner
-- reaches her workspace. Identity comes only from the claims together with the matching role.
--
-- Conventions of every scenario: results print as pretty JSON with generated values masked
-- (see pg_test/fixture.sql); pgt.try(sql) prints a refused call as "SQLSTATE: message".
\pset tuples_only on
\pset format unaligned
\set alice '{"role":"authenticated","sub":"a11ce000-0000-4000-8000-00000000000a","aud":"authenticated"}'
\set bob '{"role":"authenticated","sub":"b0b00000-0000-4000-8000-00000000000b","aud":"authenticated"}'
\set anon '{"role":"anon"}'
\set service '{"role":"service_role"}'

-- The exact statements PostgREST sends for POST /rpc/supabash_create_workspace as alice.
BEGIN;
SELECT set_config('request.jwt.claims', :'alice', true) IS NOT NULL AS claims_set;
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('ws', supabash_create_workspace(), 'workspaceId'));
COMMIT;

-- Alice writes one file so there is something to protect.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(pgt.keep('r1', supabash_commit(
  workspace_id => pgt.id('ws'), actor => 'alice',
  changes => '[{"op": "upsert", "path": "/secret.md", "text": "alice only"}]'), 'receipt', 'revision')) IS NOT NULL AS committed;
SELECT pgt.show(pgt.keep('cp', supabash_checkpoint(workspace_id => pgt.id('ws'), label => 'mine'), 'checkpointId')) IS NOT NULL AS checkpointed;
COMMIT;

-- Every RPC as bob against alice's workspace: the same authorisation error as for a workspace
-- that does not exist, never data. (bob may create workspaces of his own.)
BEGIN;
SET LOCAL request.jwt.claims = :'bob';
SET LOCAL ROLE authenticated;
SELECT rpc, pgt.try(call) FROM (VALUES
  ('load_manifest',     $$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$),
  ('load_document',     $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/secret.md')$$),
  ('load_snapshot',     $$SELECT supabash_load_snapshot(workspace_id => pgt.id('ws'))$$),
  ('load_revision',     $$SELECT supabash_load_revision(workspace_id => pgt.id('ws'), revision => pgt.id('r1'))$$),
  ('history',           $$SELECT supabash_history(workspace_id => pgt.id('ws'))$$),
  ('commit',            $$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'bob', base_revision => pgt.id('r1'),
                            changes => '[{"op": "delete", "path": "/secret.md"}]')$$),
  ('diff',              $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"staged": true}', staged => '[]')$$),
  ('checkpoint',        $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'))$$),
  ('checkpoints',       $$SELECT supabash_checkpoints(workspace_id => pgt.id('ws'))$$),
  ('delete_checkpoint', $$SELECT supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => pgt.id('cp'))$$),
  ('purge',             $$SELECT supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 0)$$),
  ('unknown workspace', $$SELECT supabash_load_manifest(workspace_id => '00000000-0000-4000-8000-000000000000')$$)
) AS t(rpc, call);
SELECT pgt.show(supabash_create_workspace()) IS NOT NULL AS bob_created_his_own;
ROLLBACK;

-- anon (no JWT) holds EXECUTE on none of the RPCs.
BEGIN;
SET LOCAL request.jwt.claims = :'anon';
SET LOCAL ROLE anon;
SELECT rpc, pgt.try(call) FROM (VALUES
  ('create_workspace',  $$SELECT supabash_create_workspace()$$),
  ('load_manifest',     $$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$),
  ('load_document',     $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/secret.md')$$),
  ('load_snapshot',     $$SELECT supabash_load_snapshot(workspace_id => pgt.id('ws'))$$),
  ('load_revision',     $$SELECT supabash_load_revision(workspace_id => pgt.id('ws'), revision => pgt.id('r1'))$$),
  ('history',           $$SELECT supabash_history(workspace_id => pgt.id('ws'))$$),
  ('commit',            $$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'anon', changes => '[]')$$),
  ('diff',              $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"head": true}')$$),
  ('checkpoint',        $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'))$$),
  ('checkpoints',       $$SELECT supabash_checkpoints(workspace_id => pgt.id('ws'))$$),
  ('delete_checkpoint', $$SELECT supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => pgt.id('cp'))$$),
  ('purge',             $$SELECT supabash_purge(workspace_id => pgt.id('ws'))$$)
) AS t(rpc, call);
ROLLBACK;

-- service_role may call the RPCs but owns no workspace: without a delegated grant it is
-- refused inside; it may not create workspaces at all.
BEGIN;
SET LOCAL request.jwt.claims = :'service';
SET LOCAL ROLE service_role;
SELECT rpc, pgt.try(call) FROM (VALUES
  ('create_workspace',  $$SELECT supabash_create_workspace()$$),
  ('load_manifest',     $$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$),
  ('load_document',     $$SELECT supabash_load_document(workspace_id => pgt.id('ws'), path => '/secret.md')$$),
  ('load_snapshot',     $$SELECT supabash_load_snapshot(workspace_id => pgt.id('ws'))$$),
  ('load_revision',     $$SELECT supabash_load_revision(workspace_id => pgt.id('ws'), revision => pgt.id('r1'))$$),
  ('history',           $$SELECT supabash_history(workspace_id => pgt.id('ws'))$$),
  ('commit',            $$SELECT supabash_commit(workspace_id => pgt.id('ws'), actor => 'svc', base_revision => pgt.id('r1'),
                            changes => '[{"op": "delete", "path": "/secret.md"}]')$$),
  ('diff',              $$SELECT supabash_diff(workspace_id => pgt.id('ws'), from_ref => '{"head": true}', to_ref => '{"head": true}')$$),
  ('checkpoint',        $$SELECT supabash_checkpoint(workspace_id => pgt.id('ws'))$$),
  ('checkpoints',       $$SELECT supabash_checkpoints(workspace_id => pgt.id('ws'))$$),
  ('delete_checkpoint', $$SELECT supabash_delete_checkpoint(workspace_id => pgt.id('ws'), checkpoint_id => pgt.id('cp'))$$),
  ('purge',             $$SELECT supabash_purge(workspace_id => pgt.id('ws'), keep_revisions => 0)$$)
) AS t(rpc, call);
ROLLBACK;

-- Claims alone identify nobody: the claimed role must be the role the transaction runs as,
-- and the subject must be a UUID.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
-- (no SET ROLE: still the login role)
SELECT pgt.try($$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$) AS claims_without_role;
SET LOCAL request.jwt.claims = '{"role":"service_role","sub":"a11ce000-0000-4000-8000-00000000000a"}';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$) AS role_mismatch;
SET LOCAL request.jwt.claims = '{"role":"authenticated","sub":"alice"}';
SELECT pgt.try($$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$) AS sub_not_a_uuid;
SET LOCAL request.jwt.claims = '{"role":"authenticated"}';
SELECT pgt.try($$SELECT supabash_create_workspace()$$) AS no_sub;
ROLLBACK;

-- The legacy per-claim settings (request.jwt.claim.role / .sub) identify the caller too.
BEGIN;
SET LOCAL "request.jwt.claim.role" = 'authenticated';
SET LOCAL "request.jwt.claim.sub" = 'a11ce000-0000-4000-8000-00000000000a';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT supabash_load_manifest(workspace_id => pgt.id('ws'))$$) AS legacy_claims;
ROLLBACK;

-- No PostgREST role reaches the private schema directly.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.try($$SELECT to_jsonb(count(*)) FROM supabash.workspaces$$) AS select_workspaces;
SELECT pgt.try($$SELECT supabash._call('load_manifest', jsonb_build_object('workspaceId', pgt.id('ws')))$$) AS call_internal;
SET LOCAL ROLE service_role;
SELECT pgt.try($$SELECT to_jsonb(count(*)) FROM supabash.bodies$$) AS service_select_bodies;
SET LOCAL ROLE anon;
SELECT pgt.try($$SELECT to_jsonb(count(*)) FROM supabash.entries$$) AS anon_select_entries;
ROLLBACK;

-- The privilege report every install must keep empty: any privilege a PostgREST role holds on
-- an object of schema supabash, or anon EXECUTE on a public.supabash_* function.
SELECT coalesce(string_agg(r.rolname || ' on ' || o.what, ', '), 'no leaks') AS privilege_report
  FROM pg_roles r
  CROSS JOIN LATERAL (
    SELECT 'schema supabash' AS what WHERE has_schema_privilege(r.oid, 'supabash', 'USAGE,CREATE')
    UNION ALL
    SELECT c.oid::regclass::text FROM pg_class c
     WHERE c.relnamespace = 'supabash'::regnamespace
       AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(r.oid, c.oid, 'USAGE,SELECT,UPDATE')
                ELSE has_table_privilege(r.oid, c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER') END
    UNION ALL
    SELECT p.oid::regprocedure::text FROM pg_proc p
     WHERE p.pronamespace = 'supabash'::regnamespace AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
    UNION ALL
    SELECT p.oid::regprocedure::text FROM pg_proc p
     WHERE r.rolname = 'anon' AND p.pronamespace = 'public'::regnamespace
       AND p.proname LIKE 'supabash\_%' AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
  ) o
 WHERE r.rolname IN ('anon', 'authenticated', 'service_role', 'authenticator');

-- Alice still sees exactly what she wrote.
BEGIN;
SET LOCAL request.jwt.claims = :'alice';
SET LOCAL ROLE authenticated;
SELECT pgt.show(supabash_load_document(workspace_id => pgt.id('ws'), path => '/secret.md')::jsonb);
ROLLBACK;
