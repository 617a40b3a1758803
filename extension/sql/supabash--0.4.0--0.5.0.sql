-- supabash 0.4.0 -> 0.5.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.5.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.5.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.5.0 makes workspaces livable for programs and operators. Each section below names the
-- change it carries.

-- Audit trail (issue 13; extension/src/audit.rs).

-- Integrity: supabash_verify and garbage findings (issue 14; extension/src/verify.rs).
CREATE FUNCTION public.supabash_verify(workspace_id text, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('verify', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_garbage(idle_days integer DEFAULT 30, apply boolean DEFAULT false)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('garbage', json_build_object('idle_days', idle_days, 'apply', apply))
$$;

-- Lazy directories and text answers (issue 14; extension/src/listing.rs, read.rs).

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
