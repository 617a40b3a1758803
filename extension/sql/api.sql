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

CREATE FUNCTION public.supabash_create_workspace() RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._write('create_workspace', '{}'::json)
$$;

CREATE FUNCTION public.supabash_load_manifest(workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_manifest', json_build_object('workspace_id', workspace_id))
$$;

CREATE FUNCTION public.supabash_load_document(workspace_id text, path text, revision text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_document',
    json_build_object('workspace_id', workspace_id, 'path', path, 'revision', revision))
$$;

CREATE FUNCTION public.supabash_load_snapshot(workspace_id text, revision text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_snapshot', json_build_object('workspace_id', workspace_id, 'revision', revision))
$$;

CREATE FUNCTION public.supabash_load_revision(workspace_id text, revision text)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('load_revision', json_build_object('workspace_id', workspace_id, 'revision', revision))
$$;

CREATE FUNCTION public.supabash_history(
  workspace_id text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  restart_if_missing boolean DEFAULT false)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('history', json_build_object('workspace_id', workspace_id, 'cursor', cursor,
    'page_size', page_size, 'restart_if_missing', restart_if_missing))
$$;

CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision))
$$;

CREATE FUNCTION public.supabash_diff(
  workspace_id text, from_ref jsonb, to_ref jsonb, paths text[] DEFAULT NULL,
  preview_bytes integer DEFAULT NULL, staged json DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('diff', json_build_object('workspace_id', workspace_id, 'from_ref', from_ref,
    'to_ref', to_ref, 'paths', to_json(paths), 'preview_bytes', preview_bytes, 'staged', staged))
$$;

CREATE FUNCTION public.supabash_checkpoint(
  workspace_id text, label text DEFAULT NULL, retention_class text DEFAULT NULL,
  idempotency_key text DEFAULT NULL, revision text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('checkpoint', json_build_object('workspace_id', workspace_id, 'label', label,
    'retention_class', retention_class, 'idempotency_key', idempotency_key, 'revision', revision))
$$;

CREATE FUNCTION public.supabash_checkpoints(workspace_id text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('checkpoints', json_build_object('workspace_id', workspace_id))
$$;

CREATE FUNCTION public.supabash_delete_checkpoint(workspace_id text, checkpoint_id text) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('delete_checkpoint',
    json_build_object('workspace_id', workspace_id, 'checkpoint_id', checkpoint_id))
$$;

CREATE FUNCTION public.supabash_purge(
  workspace_id text, keep_revisions integer DEFAULT NULL, max_age_seconds bigint DEFAULT NULL,
  floor_revision text DEFAULT NULL, dry_run boolean DEFAULT false)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('purge', json_build_object('workspace_id', workspace_id,
    'keep_revisions', keep_revisions, 'max_age_seconds', max_age_seconds,
    'floor_revision', floor_revision, 'dry_run', dry_run))
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

DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'supabash\_%'
              AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                           WHERE d.objid = p.oid AND d.deptype = 'e'
                             AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'supabash'))
  LOOP
    EXECUTE format('ALTER FUNCTION %s OWNER TO supabash_owner', f);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC, anon', f);
    IF f::text LIKE 'supabash_create_workspace(%' THEN
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
END
$$;

NOTIFY pgrst, 'reload schema';
