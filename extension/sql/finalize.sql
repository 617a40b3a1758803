-- supabash: the last step of CREATE EXTENSION (pgrx "finalize": after every other object).
-- Every upgrade script supabash--A--B.sql ends with the same two calls, so an installed and an
-- upgraded database hold the same privileges and pass the same check.
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

-- PostgREST reloads its schema cache on this notice. Under Citus a DDL transaction ends in a
-- two-phase commit, which PostgreSQL refuses after NOTIFY: there the operator reloads
-- PostgREST instead (docs/scale.md).
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
    NOTIFY pgrst, 'reload schema';
  END IF;
END
$$;
