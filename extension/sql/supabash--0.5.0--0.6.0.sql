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

-- A live lease is re-acquired only with its token: the holder name is public.
DROP FUNCTION public.supabash_acquire_lease(text, text, integer, text);
CREATE FUNCTION public.supabash_acquire_lease(
  workspace_id text, holder text, ttl_seconds integer, delegated_grant text DEFAULT NULL,
  token text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('acquire_lease', json_build_object('workspace_id', workspace_id,
    'holder', holder, 'ttl_seconds', ttl_seconds, 'delegated_grant', delegated_grant,
    'token', token))
$$;

-- POSIX fidelity (issue 24).

-- Database answers (issue 25).

-- Agent surface: HS256 capabilities (issue 26).
