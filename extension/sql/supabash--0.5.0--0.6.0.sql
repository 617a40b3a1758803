-- supabash 0.5.0 -> 0.6.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.6.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.6.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.6.0 makes the core paths cheap and plan-stable, hardens the new surfaces, keeps what
-- programs write (kinds, modes, times), and answers questions only a database can. Each
-- section below names the issue and the change it carries; sections are independent and run
-- in this order.

-- Core paths (issue 22).

-- Hardening (issue 23).

-- POSIX fidelity (issue 24).

-- Many files of one revision with their bodies in one call (a mount or a lazy tree reads a
-- directory's small files at once); owned and granted like every public RPC.
CREATE FUNCTION public.supabash_load_documents(workspace_id text, paths text[], revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_documents',
    json_build_object('workspace_id', workspace_id, 'paths', paths, 'revision', revision, 'delegated_grant', delegated_grant))
$$;
REVOKE ALL ON FUNCTION public.supabash_load_documents(text, text[], text, text) FROM PUBLIC, anon;
ALTER FUNCTION public.supabash_load_documents(text, text[], text, text) OWNER TO supabash_owner;
GRANT EXECUTE ON FUNCTION public.supabash_load_documents(text, text[], text, text) TO authenticated, service_role;

-- Database answers (issue 25).

-- Agent surface: HS256 capabilities (issue 26).
