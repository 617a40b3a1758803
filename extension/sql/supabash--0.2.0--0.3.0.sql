-- supabash 0.2.0 -> 0.3.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.3.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.3.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.3.0 hardens the extension (reads that take no transaction id and see one snapshot, a
-- memory ceiling per call, a commit lock only authorised callers can take, the capability
-- lifecycle, secrets no SQL role can read). Each section below names the change it carries.

-- Positions count each workspace's own commits (they came from one sequence for all tenants,
-- which let a tenant infer the others' commit rates). Existing positions are renumbered per
-- workspace by one order-preserving map, f(p) = 1 + the number of the workspace's retained
-- revisions before p, which keeps every interval's visibility: a revision at p sees an entry
-- [from, until) exactly when it did before. Both steps shift through a far negative offset so
-- no unique key or CHECK (valid_until > valid_from) sees a transient clash.
CREATE TABLE supabash._position_map (
  workspace_id uuid NOT NULL,
  old          bigint NOT NULL,
  new          bigint NOT NULL,
  PRIMARY KEY (workspace_id, old)
);
INSERT INTO supabash._position_map (workspace_id, old, new)
SELECT workspace_id, p,
       1 + coalesce(sum(revs) OVER (PARTITION BY workspace_id ORDER BY p
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
  FROM (SELECT workspace_id, p, sum(is_rev) AS revs
          FROM (SELECT workspace_id, position AS p, 1 AS is_rev FROM supabash.revisions
                UNION ALL SELECT workspace_id, valid_from, 0 FROM supabash.entries
                UNION ALL SELECT workspace_id, valid_until, 0 FROM supabash.entries
                           WHERE valid_until IS NOT NULL) marks
         GROUP BY workspace_id, p) points;
UPDATE supabash.revisions r SET position = m.new - 4611686018427387904
  FROM supabash._position_map m WHERE m.workspace_id = r.workspace_id AND m.old = r.position;
UPDATE supabash.revisions SET position = position + 4611686018427387904;
UPDATE supabash.entries e SET valid_from = m.new - 4611686018427387904
  FROM supabash._position_map m WHERE m.workspace_id = e.workspace_id AND m.old = e.valid_from;
UPDATE supabash.entries e SET valid_until = m.new - 4611686018427387904
  FROM supabash._position_map m WHERE m.workspace_id = e.workspace_id AND m.old = e.valid_until;
UPDATE supabash.entries SET valid_from = valid_from + 4611686018427387904,
                            valid_until = valid_until + 4611686018427387904;
UPDATE supabash.workspaces w SET head_position = m.new
  FROM supabash._position_map m WHERE m.workspace_id = w.id AND m.old = w.head_position;
DROP TABLE supabash._position_map;
DROP SEQUENCE supabash.positions;

-- Commits whose revisions purge removed keep their transaction id and idempotency key spent
-- (as in extension/sql/schema.sql and policies.sql).
CREATE TABLE supabash.purged_commits (
  workspace_id    uuid NOT NULL REFERENCES supabash.workspaces ON DELETE CASCADE,
  transaction_id  uuid NOT NULL,
  idempotency_key text,
  revision_id     uuid NOT NULL,
  purged_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, transaction_id)
);
CREATE UNIQUE INDEX purged_commits_idempotency_idx ON supabash.purged_commits (workspace_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
ALTER TABLE supabash.purged_commits ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.purged_commits FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.purged_commits TO supabash_owner
  USING (workspace_id IN (SELECT id FROM supabash.workspaces))
  WITH CHECK (workspace_id IN (SELECT id FROM supabash.workspaces));

-- Per-owner quotas: what each workspace stores (as in extension/sql/schema.sql and
-- policies.sql), filled from the bodies already stored.
CREATE TABLE supabash.usage (
  workspace_id uuid PRIMARY KEY REFERENCES supabash.workspaces ON DELETE CASCADE,
  owner_id     uuid NOT NULL,
  body_bytes   bigint NOT NULL DEFAULT 0 CHECK (body_bytes >= 0)
);
CREATE INDEX usage_owner_idx ON supabash.usage (owner_id);
ALTER TABLE supabash.usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.usage FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.usage TO supabash_owner
  USING (owner_id = (SELECT supabash.request_owner())
         OR owner_id = (SELECT supabash._scope_owner())::uuid)
  WITH CHECK (workspace_id IN (SELECT id FROM supabash.workspaces));
INSERT INTO supabash.usage (workspace_id, owner_id, body_bytes)
SELECT w.id, w.owner_id, coalesce((SELECT sum(b.size) FROM supabash.bodies b WHERE b.workspace_id = w.id), 0)
  FROM supabash.workspaces w;

-- The native dispatcher runs SQL, so it pins its search_path like every SQL function does.
ALTER FUNCTION supabash._call(text, json) SET search_path TO pg_catalog, pg_temp;

-- Capabilities (issue 11 items 4-9)
-- Ed25519 verifiers: the database keeps public keys only. The HS256 secrets are destroyed; a
-- verifier registered before keeps its settings but exchanges nothing until it is registered
-- again (supabash_register_capability_verifier with the same key id), and its grants still
-- work until they expire. Grants record their verifier's generation (rotation and revocation
-- end them), commits their grant's key id; nonces are kept past the last second a token
-- verifies.
DROP FUNCTION supabash._signature_valid(text, bytea, bytea);
DROP FUNCTION supabash._hmac_sha256_equal(bytea, bytea, bytea);
DROP FUNCTION supabash._random_secret();
DROP TABLE supabash.capability_secrets;
ALTER TABLE supabash.capability_verifiers
  ADD COLUMN public_key bytea CHECK (octet_length(public_key) = 32),
  ADD COLUMN generation uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE supabash.grants ADD COLUMN generation uuid;
UPDATE supabash.grants g SET generation = v.generation
  FROM supabash.capability_verifiers v WHERE v.key_id = g.key_id;
DELETE FROM supabash.grants WHERE generation IS NULL;
ALTER TABLE supabash.grants ALTER COLUMN generation SET NOT NULL;
UPDATE supabash.capability_nonces SET expires_at = expires_at + interval '61 seconds';
ALTER TABLE supabash.revisions ADD COLUMN delegation_key_id text;

CREATE FUNCTION supabash._ed25519_key_pair() RETURNS bytea
LANGUAGE c VOLATILE PARALLEL SAFE STRICT AS 'MODULE_PATHNAME', 'ed25519_key_pair_wrapper';
CREATE FUNCTION supabash._ed25519_public_key_valid(public_key bytea) RETURNS boolean
LANGUAGE c IMMUTABLE PARALLEL SAFE STRICT AS 'MODULE_PATHNAME', 'ed25519_public_key_valid_wrapper';

CREATE OR REPLACE FUNCTION public.supabash_exchange_capability(capability text) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('exchange_capability', json_build_object('capability', capability))
$$;

DROP FUNCTION public.supabash_register_capability_verifier(text, text, text, text, integer, integer);
CREATE FUNCTION public.supabash_register_capability_verifier(
  key_id text, issuer text, audience text, origin text,
  clock_skew_seconds integer DEFAULT 60, max_lifetime_seconds integer DEFAULT 900,
  public_key text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
DECLARE
  pair bytea;
  pub_key bytea;
BEGIN
  IF public_key IS NULL THEN
    pair := supabash._ed25519_key_pair();
    pub_key := substring(pair FROM 33 FOR 32);
  ELSE
    pub_key := CASE WHEN public_key ~ '^[A-Za-z0-9_-]{43}$'
                   THEN decode(translate(public_key, '-_', '+/') || '=', 'base64') END;
    IF pub_key IS NULL OR NOT supabash._ed25519_public_key_valid(pub_key) THEN
      RAISE EXCEPTION 'SUPABASH_INVALID_ARGUMENT: public_key must be an Ed25519 public key: 32 bytes, unpadded base64url';
    END IF;
  END IF;
  INSERT INTO supabash.capability_verifiers AS v
         (key_id, issuer, audience, origin, clock_skew_seconds, max_lifetime_seconds, public_key)
  VALUES ($1, $2, $3, $4, $5, $6, pub_key)
  ON CONFLICT ON CONSTRAINT capability_verifiers_pkey DO UPDATE
     SET issuer = EXCLUDED.issuer, audience = EXCLUDED.audience, origin = EXCLUDED.origin,
         clock_skew_seconds = EXCLUDED.clock_skew_seconds,
         max_lifetime_seconds = EXCLUDED.max_lifetime_seconds, created_at = now(),
         public_key = EXCLUDED.public_key, generation = gen_random_uuid();
  DELETE FROM supabash.grants g WHERE g.key_id = $1;
  RETURN rtrim(translate(encode(substring(pair FROM 1 FOR 32), 'base64'), '+/', '-_'), '=');
END
$$;

-- For the database owner only: removes a verifier and the grants minted with it (a grant whose
-- exchange commits after the revocation is dead too: its generation is gone).
CREATE OR REPLACE FUNCTION public.supabash_revoke_capability_verifier(key_id text) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  WITH g AS (DELETE FROM supabash.grants x WHERE x.key_id = $1),
       v AS (DELETE FROM supabash.capability_verifiers x WHERE x.key_id = $1 RETURNING 1)
  SELECT count(*) > 0 FROM v
$$;

CREATE OR REPLACE FUNCTION supabash._check_install() RETURNS void
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
    RAISE WARNING 'supabash: roles besides superusers that can read every workspace or mint: %', leaks
      USING HINT = 'See docs/capabilities.md, "Trust model". No role can obtain a capability private key: the database stores none.';
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
-- could come to mint (CREATEROLE: it can grant itself supabash_keeper and register a key). On
-- Supabase that is `postgres` (the project owner) and `supabase_read_only_user`; neither can
-- obtain a private key, since the database holds none (docs/capabilities.md, "Trust model").
CREATE FUNCTION supabash._trust_report() RETURNS TABLE (role text, why text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT r.rolname::text,
         concat_ws(', ',
           CASE WHEN r.rolbypassrls AND pg_has_role(r.oid, 'pg_read_all_data', 'USAGE')
                THEN 'reads every workspace (BYPASSRLS, pg_read_all_data)'
                WHEN r.rolbypassrls THEN 'BYPASSRLS' END,
           CASE WHEN r.rolcreaterole THEN 'CREATEROLE: can grant itself supabash_keeper and register a key' END)
    FROM pg_catalog.pg_roles r
   WHERE NOT r.rolsuper AND r.rolname NOT LIKE 'pg\_%'
     AND r.rolname NOT IN ('supabash_owner', 'supabash_keeper', 'service_role')
     AND (r.rolbypassrls OR r.rolcreaterole)
   ORDER BY 1
$$;

-- The privilege block as extension/sql/privileges.sql has it in 0.3.0 (the positions sequence
-- is gone). Kept last among the sections so it is the version every object above gets.

CREATE OR REPLACE FUNCTION supabash._assert_privileges() RETURNS void
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

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
