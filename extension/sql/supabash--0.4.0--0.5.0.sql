-- supabash 0.4.0 -> 0.5.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.5.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.5.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.5.0 makes workspaces livable for programs and operators. Each section below names the
-- change it carries.

-- Audit trail (issue 13; extension/src/audit.rs).
-- The audit trail (extension/src/audit.rs): one row per agent action, written in the
-- transaction of the commit it led to (revision_id) or, for a discarded session, by
-- supabash_record_discarded (revision_id NULL, discarded). Append-only: supabash_owner may
-- insert and read, update only what a redaction scrubs, and delete only what a purge removes
-- with its revisions (sql/privileges.sql); no API role holds any privilege on it. No foreign key
-- to revisions: purge removes a revision's records itself.
CREATE TABLE supabash.audit_records (
  workspace_id  uuid NOT NULL REFERENCES supabash.workspaces ON DELETE CASCADE,
  record_id     uuid NOT NULL,
  revision_id   uuid,
  session_id    uuid NOT NULL,
  sequence      bigint NOT NULL CHECK (sequence >= 0),
  started_at    timestamptz NOT NULL,
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  actor         text NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('mcp_tool', 'bash', 'apply_patch', 'file_tool', 'mount_session', 'run_session')),
  tool          text NOT NULL CHECK (octet_length(tool) BETWEEN 1 AND 1024),
  arguments     jsonb,
  outcome       text NOT NULL CHECK (outcome IN ('ok', 'error', 'denied')),
  code          text CHECK (octet_length(code) <= 1024),
  reason        text CHECK (octet_length(reason) <= 1024),
  duration_ms   bigint NOT NULL CHECK (duration_ms >= 0),
  paths         text[] NOT NULL,
  bytes_changed bigint NOT NULL CHECK (bytes_changed >= 0),
  discarded     boolean NOT NULL,
  scrubbed      boolean NOT NULL DEFAULT false,
  PRIMARY KEY (workspace_id, record_id),
  CHECK (discarded = (revision_id IS NULL)),
  CHECK ((outcome = 'error') = (code IS NOT NULL) AND (outcome = 'denied') = (reason IS NOT NULL))
);
CREATE INDEX audit_records_order_idx ON supabash.audit_records (workspace_id, recorded_at, session_id, sequence, record_id);
CREATE INDEX audit_records_revision_idx ON supabash.audit_records (workspace_id, revision_id);

-- The audit trail: visible exactly when its workspace is (like workspace contents).
ALTER TABLE supabash.audit_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.audit_records FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.audit_records TO supabash_owner
  USING (workspace_id IN (SELECT id FROM supabash.workspaces))
  WITH CHECK (workspace_id IN (SELECT id FROM supabash.workspaces));

-- supabash_commit gains its last argument, audit: the old 14-argument function goes.
DROP FUNCTION public.supabash_commit(text, json, text, text, text, text, text, text, jsonb, text,
  boolean, text, text, bigint);
CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text DEFAULT NULL,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL,
  rebase boolean DEFAULT false, delegated_grant text DEFAULT NULL,
  lease text DEFAULT NULL, redaction_epoch bigint DEFAULT NULL, audit json DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision,
    'rebase', rebase, 'delegated_grant', delegated_grant,
    'lease', lease, 'redaction_epoch', redaction_epoch, 'audit', audit))
$$;

-- The audit trail (extension/src/audit.rs). Records of a commit travel with it (the audit
-- argument of supabash_commit); a discarded session's are written here. The read works on a
-- hot standby.
CREATE FUNCTION public.supabash_record_discarded(
  workspace_id text, actions json, actor text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('record_discarded', json_build_object('workspace_id', workspace_id,
    'actions', actions, 'actor', actor, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_audit(
  workspace_id text, revision text DEFAULT NULL, cursor text DEFAULT NULL,
  page_size integer DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('audit', json_build_object('workspace_id', workspace_id, 'revision', revision,
    'cursor', cursor, 'page_size', page_size, 'delegated_grant', delegated_grant))
$$;

-- For SQL users: the caller's audit records as a table, under the same row-level security as
-- the RPCs (the function runs as supabash_owner, whose policies ask the caller's claims). The
-- view is security_invoker, so it grants nothing of its own: reading it takes EXECUTE on the
-- function, and only authenticated may select from it (sql/privileges.sql).
CREATE FUNCTION public.supabash_audit_rows()
RETURNS TABLE (workspace_id uuid, record_id uuid, revision_id uuid, session_id uuid,
  sequence bigint, started_at timestamptz, recorded_at timestamptz, actor text, kind text,
  tool text, arguments jsonb, outcome text, code text, reason text, duration_ms bigint,
  paths text[], bytes_changed bigint, discarded boolean, scrubbed boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT a.workspace_id, a.record_id, a.revision_id, a.session_id, a.sequence, a.started_at,
         a.recorded_at, a.actor, a.kind, a.tool, a.arguments, a.outcome, a.code, a.reason,
         a.duration_ms, a.paths, a.bytes_changed, a.discarded, a.scrubbed
    FROM supabash.audit_records a
$$;

CREATE VIEW public.supabash_audit_log WITH (security_invoker = true) AS
  SELECT * FROM public.supabash_audit_rows();

-- The privileges and the install check know the audit trail (sql/privileges.sql,
-- sql/install_check.sql).
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

-- Integrity: supabash_verify and garbage findings (issue 14; extension/src/verify.rs).
CREATE FUNCTION public.supabash_verify(workspace_id text, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._call('verify', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_garbage(idle_days integer DEFAULT 30, apply boolean DEFAULT false)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('garbage', json_build_object('idle_days', idle_days, 'apply', apply))
$$;

-- Lazy directories and text answers (issue 14; extension/src/listing.rs, read.rs).
-- Reads answer json, built once as text by the new native supabash._read, instead of jsonb
-- (supabash._call, which 0.4.0's functions call until they are replaced here, keeps serving
-- every operation). A return type cannot change in place: each read is dropped and created
-- again (supabash._assert_privileges() below grants it again).
CREATE FUNCTION supabash."_read"(
	"op" TEXT, /* & str */
	"args" json /* Json */
) RETURNS json /* crate::json_text::JsonText */
STRICT 
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'read_wrapper';

DROP FUNCTION public.supabash_list_workspaces(text, integer);
CREATE FUNCTION public.supabash_list_workspaces(cursor text DEFAULT NULL, page_size integer DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('list_workspaces', json_build_object('cursor', cursor, 'page_size', page_size))
$$;

DROP FUNCTION public.supabash_load_manifest(text, text, text);
CREATE FUNCTION public.supabash_load_manifest(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_manifest', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_load_document(text, text, text, text);
CREATE FUNCTION public.supabash_load_document(workspace_id text, path text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_document',
    json_build_object('workspace_id', workspace_id, 'path', path, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_load_snapshot(text, text, text);
CREATE FUNCTION public.supabash_load_snapshot(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_snapshot', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_load_revision(text, text, text);
CREATE FUNCTION public.supabash_load_revision(workspace_id text, revision text, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_revision', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_history(text, text, integer, boolean, text);
CREATE FUNCTION public.supabash_history(
  workspace_id text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  restart_if_missing boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('history', json_build_object('workspace_id', workspace_id, 'cursor', cursor,
    'page_size', page_size, 'restart_if_missing', restart_if_missing, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_diff(text, jsonb, jsonb, text[], integer, json, text);
CREATE FUNCTION public.supabash_diff(
  workspace_id text, from_ref jsonb, to_ref jsonb, paths text[] DEFAULT NULL,
  preview_bytes integer DEFAULT NULL, staged json DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('diff', json_build_object('workspace_id', workspace_id, 'from_ref', from_ref,
    'to_ref', to_ref, 'paths', to_json(paths), 'preview_bytes', preview_bytes, 'staged', staged, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_checkpoints(text, text);
CREATE FUNCTION public.supabash_checkpoints(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('checkpoints', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

DROP FUNCTION public.supabash_lease(text, text);
CREATE FUNCTION public.supabash_lease(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('lease', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

-- A directory listing walks the path index the entries already have (a loose index scan),
-- so it needs no new index.
CREATE FUNCTION public.supabash_list_directory(
  workspace_id text, path text, revision text DEFAULT NULL, cursor text DEFAULT NULL,
  page_size integer DEFAULT NULL, totals boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('list_directory', json_build_object('workspace_id', workspace_id, 'path', path,
    'revision', revision, 'cursor', cursor, 'page_size', page_size, 'totals', totals, 'delegated_grant', delegated_grant))
$$;

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';
