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
  ALTER FUNCTION supabash._signature_valid(text, bytea, bytea) OWNER TO supabash_keeper;
  REVOKE ALL ON SCHEMA supabash FROM PUBLIC;
  REVOKE ALL ON ALL TABLES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL SEQUENCES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  REVOKE ALL ON ALL FUNCTIONS IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
  GRANT USAGE ON SCHEMA supabash TO supabash_owner;
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA supabash TO supabash_owner;
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

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
