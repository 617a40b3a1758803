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

-- POSIX fidelity (issue 24).

-- Database answers (issue 25).

-- Agent surface: HS256 capabilities (issue 26).
