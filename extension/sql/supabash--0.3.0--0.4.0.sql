-- supabash 0.3.0 -> 0.4.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.4.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.4.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.4.0 lets several attempts share one history and come back together: zero-copy forks,
-- path-level rebase, single-writer leases and redaction. Each section below names the change
-- it carries.

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

DROP FUNCTION public.supabash_commit(text, json, text, text, text, text, text, text, jsonb, text, text);
CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text DEFAULT NULL,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL, delegated_grant text DEFAULT NULL,
  lease text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision, 'delegated_grant', delegated_grant,
    'lease', lease))
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

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
