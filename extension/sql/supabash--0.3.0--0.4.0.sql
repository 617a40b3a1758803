-- supabash 0.3.0 -> 0.4.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.4.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.4.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.4.0 lets several attempts share one history and come back together: zero-copy forks,
-- path-level rebase, single-writer leases and redaction. Each section below names the change
-- it carries.

-- Path-level rebase: supabash_commit takes rebase (before delegated_grant), and a rebased
-- commit's revision records the base it was made on.
ALTER TABLE supabash.revisions ADD COLUMN rebased_from uuid;
DROP FUNCTION public.supabash_commit(text, json, text, text, text, text, text, text, jsonb, text, text);
CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text DEFAULT NULL,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL,
  rebase boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision,
    'rebase', rebase, 'delegated_grant', delegated_grant))
$$;

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
