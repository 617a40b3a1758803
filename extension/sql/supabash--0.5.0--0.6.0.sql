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
