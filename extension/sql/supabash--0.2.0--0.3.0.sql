-- supabash 0.2.0 -> 0.3.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.3.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.3.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.3.0 hardens the extension (reads that take no transaction id and see one snapshot, a
-- memory ceiling per call, a commit lock only authorised callers can take, the capability
-- lifecycle, secrets no SQL role can read). Each section below names the change it carries.

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
