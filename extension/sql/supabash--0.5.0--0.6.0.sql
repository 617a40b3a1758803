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

-- Database answers (issue 25).

-- Agent surface: HS256 capabilities (issue 26).
