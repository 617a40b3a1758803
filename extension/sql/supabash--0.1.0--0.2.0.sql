-- supabash 0.1.0 -> 0.2.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.2.0--<next>.sql.
-- tests/tests/upgrade.rs installs 0.1.0 with data, runs this, and compares the catalog with a
-- fresh install of 0.2.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.2.0 splits the SQL layer by concern (extension/sql/). The catalog is unchanged but for the
-- two helpers below: the privilege block and the install check, which 0.1.0 ran as anonymous
-- DO blocks, become functions, so every upgrade can assert and check again at its end.

-- As in extension/sql/privileges.sql:
CREATE FUNCTION supabash._assert_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
BEGIN
  -- Owners first: a grant made while creating or updating the extension is recorded, with
  -- the owner it names, as the object's initial privileges (pg_init_privs, what pg_dump
  -- compares against), and ALTER ... OWNER does not update that record.
  ALTER FUNCTION supabash._signature_valid(text, bytea, bytea) OWNER TO supabash_keeper;
  REVOKE ALL ON SCHEMA supabash FROM PUBLIC;
  REVOKE ALL ON ALL TABLES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL SEQUENCES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL FUNCTIONS IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  GRANT USAGE ON SCHEMA supabash TO supabash_owner;
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA supabash TO supabash_owner;
  GRANT USAGE ON SEQUENCE supabash.positions TO supabash_owner;
  GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA supabash TO supabash_owner;
  -- The install's own helpers are for the installing superuser only.
  REVOKE ALL ON FUNCTION supabash._assert_privileges(), supabash._check_install() FROM supabash_owner;
  -- Capability secrets: supabash_keeper only (supabash_owner reaches them through
  -- supabash._signature_valid, which returns a boolean).
  REVOKE ALL ON supabash.capability_secrets FROM supabash_owner;
  REVOKE UPDATE ON supabash.capability_verifiers, supabash.capability_nonces, supabash.grants FROM supabash_owner;
  REVOKE INSERT, DELETE ON supabash.capability_verifiers FROM supabash_owner;
  GRANT USAGE ON SCHEMA supabash TO supabash_keeper;
  GRANT SELECT, INSERT, UPDATE, DELETE ON supabash.capability_secrets, supabash.capability_verifiers TO supabash_keeper;
  GRANT SELECT, DELETE ON supabash.grants TO supabash_keeper;
  GRANT EXECUTE ON FUNCTION supabash._hmac_sha256_equal(bytea, bytea, bytea), supabash._random_secret(),
    supabash.request_claims(), supabash.request_role() TO supabash_keeper;

  -- The public RPCs: every public.supabash_* function that belongs to the extension.
  FOR r IN SELECT p.oid::regprocedure AS f, p.proname::text AS name FROM pg_catalog.pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\_%'
              AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                           WHERE d.classid = 'pg_catalog.pg_proc'::regclass
                             AND d.objid = p.oid AND d.deptype = 'e'
                             AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'supabash'))
  LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC, anon', r.f);
    IF r.name IN ('supabash_register_capability_verifier', 'supabash_revoke_capability_verifier') THEN
      -- The database owner's: owned by supabash_keeper, executable by whoever installed.
      EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_keeper', r.f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM authenticated, service_role', r.f);
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.f, session_user);
      CONTINUE;
    END IF;
    EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_owner', r.f);
    IF r.name = 'supabash_exchange_capability' THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO service_role', r.f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM authenticated', r.f);
    ELSIF r.name = 'supabash_create_workspace' THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated', r.f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM service_role', r.f);
    ELSE
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated, service_role', r.f);
    END IF;
  END LOOP;
END
$$;

-- As in extension/sql/install_check.sql:
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

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
