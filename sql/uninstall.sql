-- Removing supabash completely. DROP EXTENSION removes every object the extension made in
-- this database (schema supabash with all workspaces, revisions and bodies, and every
-- public.supabash_* function). One thing is cluster-wide and survives it: the NOLOGIN role
-- supabash_owner, shared by every database of the cluster that installs supabash. Drop it once
-- no database uses the extension any more.
DROP EXTENSION IF EXISTS supabash;
DROP ROLE IF EXISTS supabash_owner;
