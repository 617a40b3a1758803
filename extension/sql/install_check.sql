-- supabash: the install check. supabash._check_install() fails loudly (SUPABASH_INSTALL) if any
-- PostgREST role (anon, authenticated, service_role, authenticator) could reach a private
-- object, anon could execute an RPC, any of them the verifier registration functions, or
-- supabash_owner the capability secrets or the install's own helpers. CREATE EXTENSION runs it
-- last (sql/finalize.sql) and every upgrade script runs it at its end, so a leak aborts the
-- install or the upgrade and nothing of it is kept.
CREATE FUNCTION supabash._check_install() RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE leaks text;
BEGIN
  SELECT string_agg(format('%s on %s', r.rolname, o.what), ', ') INTO leaks
    FROM pg_catalog.pg_roles r
    CROSS JOIN LATERAL (
      SELECT 'schema supabash' AS what WHERE has_schema_privilege(r.oid, 'supabash', 'USAGE,CREATE')
      UNION ALL
      SELECT 'membership in supabash_owner' WHERE pg_has_role(r.oid, 'supabash_owner', 'MEMBER')
      UNION ALL
      SELECT 'membership in supabash_keeper' WHERE pg_has_role(r.oid, 'supabash_keeper', 'MEMBER')
      UNION ALL
      SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
       WHERE p.pronamespace = 'public'::regnamespace
         AND p.proname IN ('supabash_register_capability_verifier', 'supabash_revoke_capability_verifier')
         AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
      UNION ALL
      SELECT c.oid::regclass::text FROM pg_catalog.pg_class c
       WHERE c.relnamespace = 'supabash'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
         AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(r.oid, c.oid, 'USAGE,SELECT,UPDATE')
                  ELSE has_table_privilege(r.oid, c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER') END
      UNION ALL
      SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
       WHERE p.pronamespace = 'supabash'::regnamespace AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
      UNION ALL
      SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p
       WHERE r.rolname = 'anon' AND p.pronamespace = 'public'::regnamespace
         AND p.proname LIKE 'supabash\_%' AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
    ) o
   WHERE r.rolname IN ('anon', 'authenticated', 'service_role', 'authenticator');
  IF leaks IS NOT NULL THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: a PostgREST role can reach private objects: %', leaks;
  END IF;
  IF has_table_privilege('supabash_owner', 'supabash.capability_secrets', 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER') THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: supabash_owner can reach capability secrets'
      USING HINT = 'The capability secret must be reachable only through supabash._signature_valid.';
  END IF;
  IF has_function_privilege('supabash_owner', 'supabash._assert_privileges()', 'EXECUTE')
     OR has_function_privilege('supabash_owner', 'supabash._check_install()', 'EXECUTE')
     OR has_function_privilege('supabash_keeper', 'supabash._assert_privileges()', 'EXECUTE')
     OR has_function_privilege('supabash_keeper', 'supabash._check_install()', 'EXECUTE') THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: supabash_owner or supabash_keeper can run the install helpers';
  END IF;
END
$$;
