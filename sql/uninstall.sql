-- Removing supabash completely. DROP EXTENSION removes every object the extension made in
-- this database (schema supabash with all workspaces, revisions and bodies, and every
-- public.supabash_* function). Two things are cluster-wide and survive it: the NOLOGIN roles
-- supabash_owner and supabash_keeper, shared by every database of the cluster that installs
-- supabash. Drop them once no database uses the extension any more.
-- The Realtime policy supabash made on realtime.messages (when Supabase Realtime is there)
-- depends on the extension's supabash_may_watch.
DO $$
BEGIN
  IF to_regclass('realtime.messages') IS NOT NULL THEN
    DROP POLICY IF EXISTS supabash_watch ON realtime.messages;
  END IF;
END
$$;
DROP EXTENSION IF EXISTS supabash;
DROP ROLE IF EXISTS supabash_owner;
DROP ROLE IF EXISTS supabash_keeper;
