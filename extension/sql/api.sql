-- supabash: the public RPC contract (PostgREST exposes schema public). Runs last in
-- CREATE EXTENSION (pgrx "finalize"). Every RPC is SECURITY DEFINER, owned by the NOLOGIN,
-- NOBYPASSRLS role supabash_owner, so its body runs under forced row-level security.
-- Optional parameters have SQL defaults: callers omit them rather than send null.
-- The argument reference is docs/sql-contract.md.

-- Writes go through one wrapper that shapes coordination and conflict errors for PostgREST:
-- lock timeouts, deadlocks and serialization failures become 55P03 SUPABASH_COMMIT_COORDINATION
-- (retryable); SUPABASH_COMMIT_CONFLICT becomes PT409, which PostgREST answers with HTTP 409.
-- (A custom SQLSTATE raised from Rust would arrive as XX000, hence this PL/pgSQL layer.)
CREATE FUNCTION supabash._write(op text, args json) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  msg text;
  det text;
BEGIN
  RETURN supabash._call(op, args);
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  IF SQLSTATE IN ('55P03', '40P01', '40001') THEN
    RAISE EXCEPTION USING ERRCODE = '55P03', DETAIL = msg,
      MESSAGE = 'SUPABASH_COMMIT_COORDINATION: the workspace is busy (lock not granted within 1 s); retry';
  ELSIF msg LIKE 'SUPABASH\_COMMIT\_CONFLICT%' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT409', MESSAGE = msg, DETAIL = coalesce(det, '{}');
  END IF;
  RAISE;
END
$$;

-- The workspaces policy: the caller's own workspaces, or the one workspace a delegated grant
-- scoped the running native call to (supabash._scope_*: set only by the extension's Rust code,
-- for one call; see extension/src/access.rs). Child tables' policies defer to this one.
CREATE POLICY owner ON supabash.workspaces TO supabash_owner
  USING (owner_id = (SELECT supabash.request_owner())
         OR (id = (SELECT supabash._scope_workspace())::uuid
             AND owner_id = coalesce((SELECT supabash._scope_owner())::uuid, owner_id)))
  WITH CHECK (owner_id = (SELECT supabash.request_owner())
         OR (id = (SELECT supabash._scope_workspace())::uuid
             AND owner_id = (SELECT supabash._scope_owner())::uuid));

-- Exchanging a capability (service_role only) consumes nonces and mints grants.
CREATE POLICY exchange ON supabash.capability_nonces TO supabash_owner
  USING ((SELECT supabash.request_role()) = 'service_role')
  WITH CHECK ((SELECT supabash.request_role()) = 'service_role');
CREATE POLICY exchange ON supabash.grants TO supabash_owner
  USING ((SELECT supabash.request_role()) = 'service_role')
  WITH CHECK ((SELECT supabash.request_role()) = 'service_role');

CREATE FUNCTION public.supabash_create_workspace() RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._write('create_workspace', '{}'::json)
$$;

CREATE FUNCTION public.supabash_load_manifest(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_manifest', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_load_document(workspace_id text, path text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_document',
    json_build_object('workspace_id', workspace_id, 'path', path, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_load_snapshot(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_snapshot', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_load_revision(workspace_id text, revision text, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_revision', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_history(
  workspace_id text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  restart_if_missing boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('history', json_build_object('workspace_id', workspace_id, 'cursor', cursor,
    'page_size', page_size, 'restart_if_missing', restart_if_missing, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text DEFAULT NULL,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_diff(
  workspace_id text, from_ref jsonb, to_ref jsonb, paths text[] DEFAULT NULL,
  preview_bytes integer DEFAULT NULL, staged json DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('diff', json_build_object('workspace_id', workspace_id, 'from_ref', from_ref,
    'to_ref', to_ref, 'paths', to_json(paths), 'preview_bytes', preview_bytes, 'staged', staged, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_checkpoint(
  workspace_id text, label text DEFAULT NULL, retention_class text DEFAULT NULL,
  idempotency_key text DEFAULT NULL, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('checkpoint', json_build_object('workspace_id', workspace_id, 'label', label,
    'retention_class', retention_class, 'idempotency_key', idempotency_key, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_checkpoints(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('checkpoints', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_delete_checkpoint(workspace_id text, checkpoint_id text, delegated_grant text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('delete_checkpoint',
    json_build_object('workspace_id', workspace_id, 'checkpoint_id', checkpoint_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_purge(
  workspace_id text, keep_revisions integer DEFAULT NULL, max_age_seconds bigint DEFAULT NULL,
  floor_revision text DEFAULT NULL, dry_run boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('purge', json_build_object('workspace_id', workspace_id,
    'keep_revisions', keep_revisions, 'max_age_seconds', max_age_seconds,
    'floor_revision', floor_revision, 'dry_run', dry_run, 'delegated_grant', delegated_grant))
$$;

-- Delegated capabilities (docs/capabilities.md). The exchange is for service_role only.
CREATE FUNCTION public.supabash_exchange_capability(capability text) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._write('exchange_capability', json_build_object('capability', capability))
$$;

-- The only reader of capability secrets: owned by supabash_keeper, returns a boolean.
CREATE FUNCTION supabash._signature_valid(key_id text, signing_input bytea, signature bytea)
RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT coalesce((SELECT supabash._hmac_sha256_equal(s.secret, $2, $3)
                     FROM supabash.capability_secrets s WHERE s.key_id = $1), false)
$$;

-- For the database owner only (a migration or psql): registers or rotates a verifier and
-- returns its new 32-byte secret, unpadded base64url, exactly once. A second key id gives an
-- overlap window during rotation.
CREATE FUNCTION public.supabash_register_capability_verifier(
  key_id text, issuer text, audience text, origin text,
  clock_skew_seconds integer DEFAULT 60, max_lifetime_seconds integer DEFAULT 900)
RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
DECLARE
  secret bytea := supabash._random_secret();
BEGIN
  INSERT INTO supabash.capability_verifiers AS v
         (key_id, issuer, audience, origin, clock_skew_seconds, max_lifetime_seconds)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT ON CONSTRAINT capability_verifiers_pkey DO UPDATE
     SET issuer = EXCLUDED.issuer, audience = EXCLUDED.audience, origin = EXCLUDED.origin,
         clock_skew_seconds = EXCLUDED.clock_skew_seconds,
         max_lifetime_seconds = EXCLUDED.max_lifetime_seconds, created_at = now();
  INSERT INTO supabash.capability_secrets AS s (key_id, secret) VALUES ($1, secret)
  ON CONFLICT ON CONSTRAINT capability_secrets_pkey DO UPDATE
     SET secret = EXCLUDED.secret, created_at = now();
  RETURN rtrim(translate(encode(secret, 'base64'), '+/', '-_'), '=');
END
$$;

-- For the database owner only: removes a verifier, its secret and the grants minted with it.
CREATE FUNCTION public.supabash_revoke_capability_verifier(key_id text) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  WITH g AS (DELETE FROM supabash.grants x WHERE x.key_id = $1),
       v AS (DELETE FROM supabash.capability_verifiers x WHERE x.key_id = $1 RETURNING 1)
  SELECT count(*) > 0 FROM v
$$;

-- Privileges: nothing for PUBLIC; supabash_owner reaches the private objects; the PostgREST
-- roles get EXECUTE on the RPCs meant for them and nothing else.
REVOKE ALL ON SCHEMA supabash FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA supabash FROM PUBLIC, anon, authenticated, service_role;
GRANT USAGE ON SCHEMA supabash TO supabash_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA supabash TO supabash_owner;
GRANT USAGE ON SEQUENCE supabash.positions TO supabash_owner;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA supabash TO supabash_owner;
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
ALTER FUNCTION supabash._signature_valid(text, bytea, bytea) OWNER TO supabash_keeper;

DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\_%'
              AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                           WHERE d.objid = p.oid AND d.deptype = 'e'
                             AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'supabash'))
  LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC, anon', f);
    IF f::text ~ '^supabash_(register|revoke)_capability_verifier\(' THEN
      -- The database owner's: owned by supabash_keeper, executable by whoever installed.
      EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_keeper', f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM authenticated, service_role', f);
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f, session_user);
      CONTINUE;
    END IF;
    EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_owner', f);
    IF f::text LIKE 'supabash_exchange_capability(%' THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO service_role', f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM authenticated', f);
    ELSIF f::text LIKE 'supabash_create_workspace(%' THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated', f);
      EXECUTE format('REVOKE ALL ON FUNCTION %s FROM service_role', f);
    ELSE
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated, service_role', f);
    END IF;
  END LOOP;
END
$$;

-- The install fails loudly if any PostgREST role could reach a private object, or anon an RPC.
DO $$
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
END
$$;

NOTIFY pgrst, 'reload schema';
