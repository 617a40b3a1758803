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
-- The workspace row (the head) and the usage row are rewritten by every commit: room left on
-- each page keeps those HOT updates (no new index entries). Existing pages fill as they are
-- rewritten.
ALTER TABLE supabash.workspaces SET (fillfactor = 70);
ALTER TABLE supabash.usage SET (fillfactor = 70);

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

-- Audit bounds: a record's bytes are kept with it and count in the owner's byte quota.
ALTER TABLE supabash.audit_records
  ADD COLUMN stored_bytes integer NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0);

-- Purge keeps denied, discarded and delegated actors' records unless the owner asks
-- (purge_audit).
DROP FUNCTION public.supabash_purge(text, integer, bigint, text, boolean, text);
CREATE FUNCTION public.supabash_purge(
  workspace_id text, keep_revisions integer DEFAULT NULL, max_age_seconds bigint DEFAULT NULL,
  floor_revision text DEFAULT NULL, dry_run boolean DEFAULT false, delegated_grant text DEFAULT NULL,
  purge_audit boolean DEFAULT false)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('purge', json_build_object('workspace_id', workspace_id,
    'keep_revisions', keep_revisions, 'max_age_seconds', max_age_seconds,
    'floor_revision', floor_revision, 'dry_run', dry_run, 'delegated_grant', delegated_grant,
    'purge_audit', purge_audit))
$$;

-- A deleted workspace's audit records go with its revisions, also when it is kept hidden for
-- its forks: those 0.5.0 kept are removed now.
DELETE FROM supabash.audit_records a USING supabash.workspaces w
 WHERE w.id = a.workspace_id AND w.deleted_at IS NOT NULL;

-- The trust report says what is true per server version: from PostgreSQL 16 on, CREATEROLE
-- alone does not let a role grant itself supabash_keeper (it needs the ADMIN option).
CREATE OR REPLACE FUNCTION supabash._trust_report() RETURNS TABLE (role text, why text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  WITH v AS (SELECT current_setting('server_version_num')::int >= 160000 AS admin_rule),
  r AS (
    SELECT r.rolname, r.rolbypassrls, pg_has_role(r.oid, 'pg_read_all_data', 'USAGE') AS reads_all,
           CASE WHEN v.admin_rule
                THEN pg_has_role(r.oid, 'supabash_keeper', 'MEMBER WITH ADMIN OPTION')
                ELSE r.rolcreaterole END AS takes_keeper,
           v.admin_rule
      FROM pg_catalog.pg_roles r, v
     WHERE NOT r.rolsuper AND r.rolname NOT LIKE 'pg\_%'
       AND r.rolname NOT IN ('supabash_owner', 'supabash_keeper', 'service_role'))
  SELECT r.rolname::text,
         concat_ws(', ',
           CASE WHEN r.rolbypassrls AND r.reads_all
                THEN 'reads every workspace (BYPASSRLS, pg_read_all_data)'
                WHEN r.rolbypassrls THEN 'BYPASSRLS' END,
           CASE WHEN r.takes_keeper AND r.admin_rule
                THEN 'ADMIN option on supabash_keeper: can grant itself supabash_keeper and register a key'
                WHEN r.takes_keeper
                THEN 'CREATEROLE (PostgreSQL 15 and older): can grant itself supabash_keeper and register a key' END)
    FROM r
   WHERE r.rolbypassrls OR r.takes_keeper
   ORDER BY 1
$$;

-- POSIX fidelity (issue 24).

-- Each entry version records its kind, permission bits and modification time (see
-- supabash.entries in schema.sql). Existing rows are regular files, 0o644, at the time of the
-- commit that wrote them (the nearest retained one when purge removed it; a version older
-- than every retained revision takes the oldest's time).
ALTER TABLE supabash.entries
  ADD COLUMN kind text NOT NULL DEFAULT 'file' CHECK (kind IN ('file', 'symlink', 'directory')),
  ADD COLUMN mode integer NOT NULL DEFAULT 420 CHECK (mode BETWEEN 0 AND 4095),
  ADD COLUMN mtime_ns bigint;
UPDATE supabash.entries e
   SET mtime_ns = (extract(epoch FROM coalesce(
         (SELECT r.committed_at FROM supabash.revisions r
           WHERE r.workspace_id = e.workspace_id AND r.position <= e.valid_from
           ORDER BY r.position DESC LIMIT 1),
         (SELECT r.committed_at FROM supabash.revisions r
           WHERE r.workspace_id = e.workspace_id
           ORDER BY r.position LIMIT 1),
         now())) * 1000000000)::bigint;
ALTER TABLE supabash.entries
  ALTER COLUMN mtime_ns SET NOT NULL,
  ADD CONSTRAINT entries_kind_content_check CHECK (kind = 'file' OR (metadata IS NULL
    AND (kind <> 'directory' OR body_size = 0)));

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

-- One path's versions (extension/src/rpc/path_history.rs): the entries' primary key is by
-- workspace and path, so it needs no new index.
CREATE FUNCTION public.supabash_path_history(
  workspace_id text, path text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  follow_moves boolean DEFAULT false, oldest_first boolean DEFAULT false,
  delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('path_history', json_build_object('workspace_id', workspace_id, 'path', path,
    'cursor', cursor, 'page_size', page_size, 'follow_moves', follow_moves,
    'oldest_first', oldest_first, 'delegated_grant', delegated_grant))
$$;

-- Reads as of a time find the last revision committed at or before it (extension/src/store/
-- revisions.rs resolve_time) by this index, whatever the workspace's length.
CREATE INDEX revisions_committed_idx ON supabash.revisions (workspace_id, committed_at);

-- Search on the server (extension/src/rpc/grep.rs): a linear-time regex over the bodies of
-- one revision, within the call's decode budget, a page of matching lines at a time.
CREATE FUNCTION public.supabash_grep(
  workspace_id text, pattern text, revision text DEFAULT NULL, paths text[] DEFAULT NULL,
  ignore_case boolean DEFAULT false, fixed_strings boolean DEFAULT false,
  max_matches integer DEFAULT NULL, context_lines integer DEFAULT NULL, cursor text DEFAULT NULL,
  delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('grep', json_build_object('workspace_id', workspace_id, 'pattern', pattern,
    'revision', revision, 'paths', to_json(paths), 'ignore_case', ignore_case,
    'fixed_strings', fixed_strings, 'max_matches', max_matches, 'context_lines', context_lines,
    'cursor', cursor, 'delegated_grant', delegated_grant))
$$;

-- The grants of what this section adds (idempotent: the install's last step, run again).
SELECT supabash._assert_privileges();

-- Agent surface: HS256 capabilities (issue 26).

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
