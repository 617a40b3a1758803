-- supabash: who may reach what. Every GRANT, REVOKE and owner change of the extension is in
-- supabash._assert_privileges(), which the install runs last (sql/finalize.sql) and every
-- upgrade script runs again at its end, so an upgrade that adds or replaces an object cannot
-- leave it reachable. The rules:
--   - PUBLIC gets nothing in schema supabash; supabash_owner (the role every RPC runs as)
--     reaches the private tables and the private functions;
--   - capability verifiers (public keys): written only by supabash_keeper, read by
--     supabash_owner; no private key and no HS256 secret is stored anywhere, and only
--     supabash_keeper may derive an HS256 secret, at registration (docs/capabilities.md);
--   - the PostgREST roles get EXECUTE on the RPCs meant for them and nothing else:
--     authenticated every workspace RPC, service_role every workspace RPC but
--     supabash_create_workspace plus supabash_exchange_capability and
--     supabash_spend_storage_nonce (those two are service_role's alone), anon nothing;
--   - supabash_register/revoke_capability_verifier: owned by supabash_keeper, executable only by
--     the role that installs (or upgrades) the extension;
--   - the audit trail is append-only: no role but supabash_owner may write it, and that one
--     only as purge and redaction need; authenticated reads its own through a view.
-- Supabase grants every new function in schema public to anon, authenticated and service_role
-- through default privileges (sql/bootstrap.sql does the same on plain PostgreSQL); the loop
-- below takes those grants back.
--
-- This function and supabash._check_install() run as the caller (a superuser installing or
-- upgrading), are owned by the extension's owner, and no other role may execute them.
CREATE FUNCTION supabash._assert_privileges() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  r record;
BEGIN
  -- Owners first: a grant made while creating or updating the extension is recorded, with
  -- the owner it names, as the object's initial privileges (pg_init_privs, what pg_dump
  -- compares against), and ALTER ... OWNER does not update that record.
  REVOKE ALL ON SCHEMA supabash FROM PUBLIC;
  REVOKE ALL ON ALL TABLES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL SEQUENCES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL FUNCTIONS IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  GRANT USAGE ON SCHEMA supabash TO supabash_owner;
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA supabash TO supabash_owner;
  GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA supabash TO supabash_owner;
  -- The install's own helpers are for the installing superuser only.
  REVOKE ALL ON FUNCTION supabash._assert_privileges(), supabash._check_install(), supabash._trust_report()
    FROM supabash_owner;
  -- Redactions are an append-only audit trail.
  REVOKE UPDATE, DELETE ON supabash.redactions FROM supabash_owner;
  -- The audit trail: supabash_owner inserts and reads it, updates only what a redaction scrubs
  -- and deletes only what a purge removes with its revisions (extension/src/audit.rs).
  REVOKE UPDATE ON supabash.audit_records FROM supabash_owner;
  GRANT UPDATE (arguments, scrubbed) ON supabash.audit_records TO supabash_owner;
  -- Its view for SQL users (sql/rpc.sql): authenticated reads it, nobody writes through it.
  REVOKE ALL ON public.supabash_audit_log FROM PUBLIC, anon, authenticated, service_role;
  GRANT SELECT ON public.supabash_audit_log TO authenticated;
  -- Capability verifiers: written only by supabash_keeper (through the register and revoke
  -- functions); supabash_owner reads them. Row locks need UPDATE privilege, so the exchange's
  -- cleanup (FOR UPDATE SKIP LOCKED) gets it on one column of nonces and grants.
  REVOKE UPDATE ON supabash.capability_verifiers, supabash.capability_nonces, supabash.grants FROM supabash_owner;
  REVOKE INSERT, DELETE ON supabash.capability_verifiers FROM supabash_owner;
  GRANT UPDATE (expires_at) ON supabash.capability_nonces, supabash.grants TO supabash_owner;
  GRANT USAGE ON SCHEMA supabash TO supabash_keeper;
  GRANT SELECT, INSERT, UPDATE, DELETE ON supabash.capability_verifiers TO supabash_keeper;
  GRANT SELECT, DELETE ON supabash.grants TO supabash_keeper;
  GRANT EXECUTE ON FUNCTION supabash._ed25519_key_pair(), supabash._ed25519_public_key_valid(bytea),
    supabash.request_claims(), supabash.request_role() TO supabash_keeper;
  -- HS256 secrets leave the server only through registration: the derivation that answers one
  -- is the keeper's alone (docs/capabilities.md, "HS256").
  REVOKE ALL ON FUNCTION supabash._hs256_rotate(text) FROM supabash_owner;
  GRANT EXECUTE ON FUNCTION supabash._hs256_rotate(text) TO supabash_keeper;

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
    IF r.name IN ('supabash_exchange_capability', 'supabash_spend_storage_nonce') THEN
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
