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
