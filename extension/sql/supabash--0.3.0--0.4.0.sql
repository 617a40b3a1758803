-- supabash 0.3.0 -> 0.4.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.4.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.4.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.4.0 lets several attempts share one history and come back together: zero-copy forks,
-- path-level rebase, single-writer leases and redaction. Each section below names the change
-- it carries.

-- Forks (supabash_fork, supabash_delete_workspace, supabash_list_workspaces; extension/src/
-- lineage.rs and workspaces.rs). Every existing workspace is its own body store (bodies and
-- usage were keyed by workspace id already) and nobody's fork; workspaces get labels.
-- Earlier steps of one ALTER EXTENSION UPDATE may leave deferred foreign-key checks queued on
-- workspaces; ALTER TABLE refuses a table with pending trigger events, so run them now.
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE supabash.workspaces
  ADD COLUMN store_id      uuid,
  ADD COLUMN label         text CHECK (octet_length(label) BETWEEN 1 AND 256),
  ADD COLUMN fork_of       uuid REFERENCES supabash.workspaces (id),
  ADD COLUMN fork_revision uuid,
  ADD COLUMN fork_position bigint CHECK (fork_position > 0),
  ADD COLUMN deleted_at    timestamptz;
UPDATE supabash.workspaces SET store_id = id;
ALTER TABLE supabash.workspaces ALTER COLUMN store_id SET NOT NULL;
ALTER TABLE supabash.workspaces
  ADD CHECK ((fork_of IS NULL) = (fork_position IS NULL) AND (fork_of IS NULL) = (fork_revision IS NULL));
CREATE INDEX workspaces_fork_of_idx ON supabash.workspaces (fork_of) WHERE fork_of IS NOT NULL;
CREATE INDEX workspaces_store_idx ON supabash.workspaces (store_id);
ALTER TABLE supabash.revisions
  ADD COLUMN forked_from_workspace uuid,
  ADD COLUMN forked_from_revision  uuid;
ALTER TABLE supabash.usage
  ADD COLUMN workspaces integer NOT NULL DEFAULT 1 CHECK (workspaces >= 0);

CREATE FUNCTION supabash._scope_store() RETURNS text
LANGUAGE c STABLE PARALLEL UNSAFE STRICT AS 'MODULE_PATHNAME', 'scope_store_wrapper';

-- A delegated call on a fork reads its sources and must see its whole family (purge collects
-- the family's bodies); bodies and usage belong to a store.
DROP POLICY owner ON supabash.workspaces;
CREATE POLICY owner ON supabash.workspaces TO supabash_owner
  USING (owner_id = (SELECT supabash.request_owner())
         OR (id = (SELECT supabash._scope_workspace())::uuid
             AND owner_id = coalesce((SELECT supabash._scope_owner())::uuid, owner_id))
         OR (store_id = (SELECT supabash._scope_store())::uuid
             AND owner_id = (SELECT supabash._scope_owner())::uuid))
  WITH CHECK (owner_id = (SELECT supabash.request_owner())
         OR ((id = (SELECT supabash._scope_workspace())::uuid
              OR store_id = (SELECT supabash._scope_store())::uuid)
             AND owner_id = (SELECT supabash._scope_owner())::uuid));
DROP POLICY owner ON supabash.bodies;
CREATE POLICY owner ON supabash.bodies TO supabash_owner
  USING (workspace_id IN (SELECT store_id FROM supabash.workspaces))
  WITH CHECK (workspace_id IN (SELECT store_id FROM supabash.workspaces));
DROP POLICY owner ON supabash.usage;
CREATE POLICY owner ON supabash.usage TO supabash_owner
  USING (owner_id = (SELECT supabash.request_owner())
         OR owner_id = (SELECT supabash._scope_owner())::uuid)
  WITH CHECK (workspace_id IN (SELECT store_id FROM supabash.workspaces));

-- supabash_create_workspace takes a label.
DROP FUNCTION public.supabash_create_workspace();
CREATE FUNCTION public.supabash_create_workspace(label text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._write('create_workspace', json_build_object('label', label))
$$;

-- supabash_load_manifest reads any retained revision (a merge starts from the fork point).
DROP FUNCTION public.supabash_load_manifest(text, text);
CREATE FUNCTION public.supabash_load_manifest(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_manifest', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_fork(
  workspace_id text, revision text DEFAULT NULL, label text DEFAULT NULL, actor text DEFAULT NULL,
  cause text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('fork', json_build_object('workspace_id', workspace_id, 'revision', revision,
    'label', label, 'actor', actor, 'cause', cause, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_delete_workspace(workspace_id text) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('delete_workspace', json_build_object('workspace_id', workspace_id))
$$;

CREATE FUNCTION public.supabash_list_workspaces(cursor text DEFAULT NULL, page_size integer DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('list_workspaces', json_build_object('cursor', cursor, 'page_size', page_size))
$$;

-- Single-writer leases (issue 12, "Workspace manager"): one lease row per workspace (as in
-- extension/sql/schema.sql and policies.sql), the lease RPCs, lease errors shaped for PostgREST
-- by the write wrapper (PT423, PT412), and a commit that presents its lease token.
CREATE TABLE supabash.leases (
  workspace_id uuid PRIMARY KEY REFERENCES supabash.workspaces ON DELETE CASCADE,
  holder       text NOT NULL CHECK (octet_length(holder) BETWEEN 1 AND 256),
  token        uuid NOT NULL,
  acquired_at  timestamptz NOT NULL,
  renewed_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  CHECK (acquired_at <= renewed_at AND renewed_at < expires_at)
);

ALTER TABLE supabash.leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.leases FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.leases TO supabash_owner
  USING (workspace_id IN (SELECT id FROM supabash.workspaces))
  WITH CHECK (workspace_id IN (SELECT id FROM supabash.workspaces));

CREATE OR REPLACE FUNCTION supabash._write(op text, args json) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  msg text;
  det text;
BEGIN
  RETURN supabash._call(op, args);
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  IF SQLSTATE IN ('55P03', '40P01', '40001') THEN
    RAISE EXCEPTION USING ERRCODE = '55P03', DETAIL = msg,
      MESSAGE = 'SUPABASH_COMMIT_COORDINATION: the workspace is busy (lock not granted within 1 s); retry';
  ELSIF msg LIKE 'SUPABASH\_COMMIT\_CONFLICT%' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT409', MESSAGE = msg, DETAIL = coalesce(det, '{}');
  ELSIF msg LIKE 'SUPABASH\_LEASE\_HELD%' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT423', MESSAGE = msg, DETAIL = coalesce(det, '{}');
  ELSIF msg LIKE 'SUPABASH\_LEASE\_LOST%' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT412', MESSAGE = msg, DETAIL = coalesce(det, '{}');
  END IF;
  RAISE;
END
$$;

-- Redaction (extension/src/redact.rs): a redaction epoch per workspace, tombstones as an
-- explicit flag on entries, the append-only redactions table (audit trail and restore fence),
-- supabash_redact, and supabash_commit's redaction_epoch parameter.
ALTER TABLE supabash.workspaces
  ADD COLUMN redaction_epoch bigint NOT NULL DEFAULT 0 CONSTRAINT workspaces_redaction_epoch_check CHECK (redaction_epoch >= 0);
ALTER TABLE supabash.entries
  ADD COLUMN redacted boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT entries_tombstone_check CHECK (CASE WHEN redacted
    THEN octet_length(body_hash) = 0 AND body_size = 0 AND content_hash IS NULL
    ELSE octet_length(body_hash) = 32 END);

CREATE TABLE supabash.redactions (
  workspace_id      uuid NOT NULL REFERENCES supabash.workspaces ON DELETE CASCADE,
  redaction_id      uuid NOT NULL,
  boundary_position bigint NOT NULL,
  boundary_revision uuid NOT NULL,
  paths             text[] NOT NULL,
  hash_count        integer NOT NULL CHECK (hash_count >= 0),
  reason            text,
  actor             text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, redaction_id)
);
ALTER TABLE supabash.redactions ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.redactions FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.redactions TO supabash_owner
  USING (workspace_id IN (SELECT id FROM supabash.workspaces))
  WITH CHECK (workspace_id IN (SELECT id FROM supabash.workspaces));

-- Path-level rebase: supabash_commit takes rebase (before delegated_grant), and a rebased
-- commit's revision records the base it was made on.
ALTER TABLE supabash.revisions ADD COLUMN rebased_from uuid;
DROP FUNCTION public.supabash_commit(text, json, text, text, text, text, text, text, jsonb, text, text);
CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text DEFAULT NULL,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL,
  rebase boolean DEFAULT false, delegated_grant text DEFAULT NULL,
  lease text DEFAULT NULL, redaction_epoch bigint DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision,
    'rebase', rebase, 'delegated_grant', delegated_grant,
    'lease', lease, 'redaction_epoch', redaction_epoch))
$$;

CREATE FUNCTION public.supabash_acquire_lease(
  workspace_id text, holder text, ttl_seconds integer, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('acquire_lease', json_build_object('workspace_id', workspace_id,
    'holder', holder, 'ttl_seconds', ttl_seconds, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_renew_lease(
  workspace_id text, token text, ttl_seconds integer, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('renew_lease', json_build_object('workspace_id', workspace_id,
    'token', token, 'ttl_seconds', ttl_seconds, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_release_lease(workspace_id text, token text, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('release_lease', json_build_object('workspace_id', workspace_id,
    'token', token, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_lease(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('lease', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_redact(
  workspace_id text, paths text[] DEFAULT NULL, body_hashes text[] DEFAULT NULL,
  before_revision text DEFAULT NULL, dry_run boolean DEFAULT false, reason text DEFAULT NULL,
  metadata_keys text[] DEFAULT NULL, clear_cause boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('redact', json_build_object('workspace_id', workspace_id,
    'paths', to_json(paths), 'body_hashes', to_json(body_hashes), 'before_revision', before_revision,
    'dry_run', dry_run, 'reason', reason, 'metadata_keys', to_json(metadata_keys),
    'clear_cause', clear_cause, 'delegated_grant', delegated_grant))
$$;

-- The privileges gain the redactions table's append-only rule (sql/privileges.sql).
CREATE OR REPLACE FUNCTION supabash._assert_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
BEGIN
  -- Owners first: a grant made while creating or updating the extension is recorded, with
  -- the owner it names, as the object's initial privileges (pg_init_privs, what pg_dump
  -- compares against), and ALTER ... OWNER does not update that record.
  REVOKE ALL ON SCHEMA supabash FROM PUBLIC;
  REVOKE ALL ON ALL TABLES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL SEQUENCES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL FUNCTIONS IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  GRANT USAGE ON SCHEMA supabash TO supabash_owner;
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA supabash TO supabash_owner;
  GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA supabash TO supabash_owner;
  -- The install's own helpers are for the installing superuser only.
  REVOKE ALL ON FUNCTION supabash._assert_privileges(), supabash._check_install(), supabash._trust_report()
    FROM supabash_owner;
  -- Redactions are an append-only audit trail.
  REVOKE UPDATE, DELETE ON supabash.redactions FROM supabash_owner;
  -- Capability verifiers: written only by supabash_keeper (through the register and revoke
  -- functions); supabash_owner reads them. Row locks need UPDATE privilege, so the exchange's
  -- cleanup (FOR UPDATE SKIP LOCKED) gets it on one column of nonces and grants.
  REVOKE UPDATE ON supabash.capability_verifiers, supabash.capability_nonces, supabash.grants FROM supabash_owner;
  REVOKE INSERT, DELETE ON supabash.capability_verifiers FROM supabash_owner;
  GRANT UPDATE (expires_at) ON supabash.capability_nonces, supabash.grants TO supabash_owner;
  GRANT USAGE ON SCHEMA supabash TO supabash_keeper;
  GRANT SELECT, INSERT, UPDATE, DELETE ON supabash.capability_verifiers TO supabash_keeper;
  GRANT SELECT, DELETE ON supabash.grants TO supabash_keeper;
  GRANT EXECUTE ON FUNCTION supabash._ed25519_key_pair(), supabash._ed25519_public_key_valid(bytea),
    supabash.request_claims(), supabash.request_role() TO supabash_keeper;

  -- The public RPCs: every public.supabash_* function that belongs to the extension.
  FOR r IN SELECT p.oid::regprocedure AS f, p.proname::text AS name FROM pg_catalog.pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\_%'
              AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                           WHERE d.classid = 'pg_catalog.pg_proc'::regclass
                             AND d.objid = p.oid AND d.deptype = 'e'
                             AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'supabash'))
  LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC, anon', r.f);
    IF r.name IN ('supabash_register_capability_verifier', 'supabash_revoke_capability_verifier') THEN
      -- The database owner's: owned by supabash_keeper, executable by whoever installed.
      EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_keeper', r.f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM authenticated, service_role', r.f);
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.f, session_user);
      CONTINUE;
    END IF;
    EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_owner', r.f);
    IF r.name = 'supabash_exchange_capability' THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO service_role', r.f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM authenticated', r.f);
    ELSIF r.name = 'supabash_create_workspace' THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated', r.f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM service_role', r.f);
    ELSE
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated, service_role', r.f);
    END IF;
  END LOOP;
END
$$;

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
