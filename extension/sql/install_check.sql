-- supabash: the install check. supabash._check_install() fails loudly (SUPABASH_INSTALL) if any
-- PostgREST role (anon, authenticated, service_role, authenticator) could reach a private
-- object, write through the audit view, or execute the verifier registration functions, anon
-- could execute an RPC or read the audit view, any role but a superuser held supabash_owner or
-- supabash_keeper, or those two the install's own helpers; it warns about the roles (and who
-- can read the HS256 key file) supabash._trust_report() lists. CREATE EXTENSION runs it last (sql/finalize.sql) and every
-- upgrade script runs it at its end, so a leak aborts the install or the upgrade and nothing of
-- it is kept.
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
      UNION ALL
      SELECT 'writes through public.supabash_audit_log'
       WHERE has_table_privilege(r.oid, 'public.supabash_audit_log', 'INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER')
      UNION ALL
      SELECT 'public.supabash_audit_log' WHERE r.rolname = 'anon'
         AND has_table_privilege(r.oid, 'public.supabash_audit_log', 'SELECT')
    ) o
   WHERE r.rolname IN ('anon', 'authenticated', 'service_role', 'authenticator');
  IF leaks IS NOT NULL THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: a PostgREST role can reach private objects: %', leaks;
  END IF;
  -- Nobody but a superuser may hold the extension's roles: a member of supabash_keeper can
  -- register a key and so mint, a member of supabash_owner can write every workspace.
  SELECT string_agg(format('%s in %s', m.rolname, g.rolname), ', ') INTO leaks
    FROM pg_catalog.pg_auth_members a
    JOIN pg_catalog.pg_roles g ON g.oid = a.roleid
    JOIN pg_catalog.pg_roles m ON m.oid = a.member
   WHERE g.rolname IN ('supabash_owner', 'supabash_keeper') AND NOT m.rolsuper;
  IF leaks IS NOT NULL THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: roles hold the extension''s own roles: %', leaks
      USING HINT = 'REVOKE supabash_owner, supabash_keeper FROM each of them; only the extension may hold them.';
  END IF;
  -- What cannot be refused (the roles Supabase itself defines) is reported.
  SELECT string_agg(format('%s (%s)', t.role, t.why), '; ') INTO leaks FROM supabash._trust_report() t;
  IF leaks IS NOT NULL THEN
    RAISE WARNING 'supabash: who besides the extension can read every workspace, mint, or read the HS256 key file: %', leaks
      USING HINT = 'See docs/capabilities.md, "Trust model". No role can obtain a capability private key or an HS256 secret from a table: the database stores none.';
  END IF;
  IF has_function_privilege('supabash_owner', 'supabash._assert_privileges()', 'EXECUTE')
     OR has_function_privilege('supabash_owner', 'supabash._check_install()', 'EXECUTE')
     OR has_function_privilege('supabash_keeper', 'supabash._assert_privileges()', 'EXECUTE')
     OR has_function_privilege('supabash_keeper', 'supabash._check_install()', 'EXECUTE')
     OR has_function_privilege('supabash_owner', 'supabash._trust_report()', 'EXECUTE')
     OR has_function_privilege('supabash_keeper', 'supabash._trust_report()', 'EXECUTE') THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: supabash_owner or supabash_keeper can run the install helpers';
  END IF;
END
$$;

-- Every role, besides superusers and the extension's own, that can read every workspace's
-- contents (BYPASSRLS with read access, or pg_read_all_data together with BYPASSRLS), or
-- could come to mint by granting itself supabash_keeper and registering a key. Who can grant
-- itself that role depends on the server: up to PostgreSQL 15 any CREATEROLE role can; from 16
-- on, CREATEROLE grants only roles it holds with the ADMIN option, which the install gives
-- nobody, so there it is a role with ADMIN on supabash_keeper. On Supabase the roles listed are
-- `postgres` (the project owner; CREATEROLE on 15) and `supabase_read_only_user`; neither can
-- obtain a private key, since the database holds none (docs/capabilities.md, "Trust model").
-- When an HS256 key file is configured (supabash.capability_key_file), also who can read it
-- and so derive every HS256 secret: the server's OS user, every superuser (pg_read_file,
-- COPY FROM), and every role that can read server files or run server programs
-- (pg_read_server_files, pg_execute_server_program).
CREATE FUNCTION supabash._trust_report() RETURNS TABLE (role text, why text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  WITH v AS (SELECT current_setting('server_version_num')::int >= 160000 AS admin_rule,
                    nullif(current_setting('supabash.capability_key_file', true), '') AS key_file),
  r AS (
    SELECT r.rolname, r.rolbypassrls, pg_has_role(r.oid, 'pg_read_all_data', 'USAGE') AS reads_all,
           CASE WHEN v.admin_rule
                THEN pg_has_role(r.oid, 'supabash_keeper', 'MEMBER WITH ADMIN OPTION')
                ELSE r.rolcreaterole END AS takes_keeper,
           v.admin_rule,
           v.key_file IS NOT NULL AND (pg_has_role(r.oid, 'pg_read_server_files', 'USAGE')
                                       OR pg_has_role(r.oid, 'pg_execute_server_program', 'USAGE')) AS reads_key,
           v.key_file
      FROM pg_catalog.pg_roles r, v
     WHERE NOT r.rolsuper AND r.rolname NOT LIKE 'pg\_%'
       AND r.rolname NOT IN ('supabash_owner', 'supabash_keeper', 'service_role'))
  SELECT * FROM (
    SELECT r.rolname::text,
           concat_ws(', ',
             CASE WHEN r.rolbypassrls AND r.reads_all
                  THEN 'reads every workspace (BYPASSRLS, pg_read_all_data)'
                  WHEN r.rolbypassrls THEN 'BYPASSRLS' END,
             CASE WHEN r.takes_keeper AND r.admin_rule
                  THEN 'ADMIN option on supabash_keeper: can grant itself supabash_keeper and register a key'
                  WHEN r.takes_keeper
                  THEN 'CREATEROLE (PostgreSQL 15 and older): can grant itself supabash_keeper and register a key' END,
             CASE WHEN r.reads_key
                  THEN format('reads the HS256 key file %s (pg_read_server_files or pg_execute_server_program): can derive every HS256 secret and mint', r.key_file) END)
      FROM r
     WHERE r.rolbypassrls OR r.takes_keeper OR r.reads_key
    UNION ALL
    SELECT s.rolname::text,
           format('superuser: reads the HS256 key file %s (pg_read_file, COPY FROM): can derive every HS256 secret and mint', v.key_file)
      FROM pg_catalog.pg_roles s, v
     WHERE s.rolsuper AND v.key_file IS NOT NULL
    UNION ALL
    SELECT 'the server''s OS user',
           format('owns and reads the HS256 key file %s: whoever acts as that user (or root) on the server can derive every HS256 secret and mint', v.key_file)
      FROM v WHERE v.key_file IS NOT NULL
  ) t ORDER BY 1
$$;
