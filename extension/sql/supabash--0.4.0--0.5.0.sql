-- supabash 0.4.0 -> 0.5.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.5.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.5.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.5.0 makes workspaces livable for programs and operators. Each section below names the
-- change it carries.

-- Audit trail (issue 13; extension/src/audit.rs).

-- Integrity: supabash_verify and garbage findings (issue 14; extension/src/verify.rs).

-- Lazy directories and text answers (issue 14; extension/src/listing.rs, read.rs).
-- Reads answer json, built once as text by the new native supabash._read, instead of jsonb
-- (supabash._call, which 0.4.0's functions call until they are replaced here, keeps serving
-- every operation). A return type cannot change in place: each read is dropped and created
-- again (supabash._assert_privileges() below grants it again).
CREATE FUNCTION supabash."_read"(
	"op" TEXT, /* & str */
	"args" json /* Json */
) RETURNS json /* crate::json_text::JsonText */
STRICT 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'read_wrapper';

DROP FUNCTION public.supabash_list_workspaces(text, integer);
CREATE FUNCTION public.supabash_list_workspaces(cursor text DEFAULT NULL, page_size integer DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('list_workspaces', json_build_object('cursor', cursor, 'page_size', page_size))
$$;

DROP FUNCTION public.supabash_load_manifest(text, text, text);
CREATE FUNCTION public.supabash_load_manifest(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_manifest', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_load_document(text, text, text, text);
CREATE FUNCTION public.supabash_load_document(workspace_id text, path text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_document',
    json_build_object('workspace_id', workspace_id, 'path', path, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_load_snapshot(text, text, text);
CREATE FUNCTION public.supabash_load_snapshot(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_snapshot', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_load_revision(text, text, text);
CREATE FUNCTION public.supabash_load_revision(workspace_id text, revision text, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_revision', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_history(text, text, integer, boolean, text);
CREATE FUNCTION public.supabash_history(
  workspace_id text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  restart_if_missing boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('history', json_build_object('workspace_id', workspace_id, 'cursor', cursor,
    'page_size', page_size, 'restart_if_missing', restart_if_missing, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_diff(text, jsonb, jsonb, text[], integer, json, text);
CREATE FUNCTION public.supabash_diff(
  workspace_id text, from_ref jsonb, to_ref jsonb, paths text[] DEFAULT NULL,
  preview_bytes integer DEFAULT NULL, staged json DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('diff', json_build_object('workspace_id', workspace_id, 'from_ref', from_ref,
    'to_ref', to_ref, 'paths', to_json(paths), 'preview_bytes', preview_bytes, 'staged', staged, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_checkpoints(text, text);
CREATE FUNCTION public.supabash_checkpoints(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('checkpoints', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_lease(text, text);
CREATE FUNCTION public.supabash_lease(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('lease', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

-- A directory listing walks the path index the entries already have (a loose index scan),
-- so it needs no new index.
CREATE FUNCTION public.supabash_list_directory(
  workspace_id text, path text, revision text DEFAULT NULL, cursor text DEFAULT NULL,
  page_size integer DEFAULT NULL, totals boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('list_directory', json_build_object('workspace_id', workspace_id, 'path', path,
    'revision', revision, 'cursor', cursor, 'page_size', page_size, 'totals', totals, 'delegated_grant', delegated_grant))
$$;

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
