-- A bench variant (bench/commit-cpu.sh add LABEL bench/no-rls.sql): row-level security off on
-- every supabash table, to measure what the policies cost. Never on a real database.
DO $$
DECLARE t regclass;
BEGIN
  FOR t IN SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'supabash'::regnamespace AND c.relkind = 'r' LOOP
    EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY', t);
  END LOOP;
END
$$;
