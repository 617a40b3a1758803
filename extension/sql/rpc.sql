-- supabash: the public RPC contract (PostgREST exposes schema public), and the private SQL
-- helpers the RPCs call. Every RPC is SECURITY DEFINER, owned by the NOLOGIN, NOBYPASSRLS role
-- supabash_owner (set in sql/privileges.sql), so its body runs under forced row-level security
-- (sql/policies.sql). Optional parameters have SQL defaults: callers omit them rather than
-- send null. The argument reference is docs/sql-contract.md.
--
-- Function bodies are not parsed while CREATE EXTENSION runs (PostgreSQL turns
-- check_function_bodies off for extension scripts), so the native functions they call
-- (supabash._call, ...) may be created after this file.

-- Writes go through one wrapper that shapes coordination and conflict errors for PostgREST:
-- lock timeouts, deadlocks and serialization failures become 55P03 SUPABASH_COMMIT_COORDINATION
-- (retryable); SUPABASH_COMMIT_CONFLICT becomes PT409, which PostgREST answers with HTTP 409;
-- SUPABASH_LEASE_HELD becomes PT423 (423 Locked) and SUPABASH_LEASE_LOST PT412 (412
-- Precondition Failed), both retryable.
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
  ELSIF msg LIKE 'SUPABASH\_LEASE\_HELD%' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT423', MESSAGE = msg, DETAIL = coalesce(det, '{}');
  ELSIF msg LIKE 'SUPABASH\_LEASE\_LOST%' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT412', MESSAGE = msg, DETAIL = coalesce(det, '{}');
  END IF;
  RAISE;
END
$$;

-- Reads answer json through supabash._read: the answer is built once, as text, and reaches the
-- caller unchanged (PostgREST passes json through), never parsed into jsonb and printed back.
-- The whole-tree reads (snapshot, revision) are PL/pgSQL: a SQL function passes its result
-- through a tuplestore, which writes an answer larger than work_mem (a snapshot of 1,000 files
-- of 4 KiB is 4.4 MB) to a temporary file on every call; PL/pgSQL returns the datum as it is.

CREATE FUNCTION public.supabash_create_workspace(label text DEFAULT NULL, files_only boolean DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._write('create_workspace', json_build_object('label', label, 'files_only', files_only))
$$;

CREATE FUNCTION public.supabash_fork(
  workspace_id text, revision text DEFAULT NULL, label text DEFAULT NULL, actor text DEFAULT NULL,
  cause text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('fork', json_build_object('workspace_id', workspace_id, 'revision', revision,
    'label', label, 'actor', actor, 'cause', cause, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_delete_workspace(workspace_id text) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('delete_workspace', json_build_object('workspace_id', workspace_id))
$$;

CREATE FUNCTION public.supabash_list_workspaces(cursor text DEFAULT NULL, page_size integer DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('list_workspaces', json_build_object('cursor', cursor, 'page_size', page_size))
$$;

-- PL/pgSQL like the whole-tree reads below: a SQL function copies its answer through a
-- tuplestore (to a temporary file past work_mem); PL/pgSQL hands the datum back as it is.
CREATE FUNCTION public.supabash_load_manifest(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL,
  compact boolean DEFAULT false)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('load_manifest', json_build_object('workspace_id', workspace_id, 'revision', revision,
    'delegated_grant', delegated_grant, 'compact', compact));
END
$$;

CREATE FUNCTION public.supabash_load_document(workspace_id text, path text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_document',
    json_build_object('workspace_id', workspace_id, 'path', path, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_load_documents(workspace_id text, paths text[], revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_documents',
    json_build_object('workspace_id', workspace_id, 'paths', paths, 'revision', revision, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_load_snapshot(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('load_snapshot', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant));
END
$$;

CREATE FUNCTION public.supabash_load_revision(workspace_id text, revision text, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('load_revision', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant));
END
$$;

CREATE FUNCTION public.supabash_history(
  workspace_id text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  restart_if_missing boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('history', json_build_object('workspace_id', workspace_id, 'cursor', cursor,
    'page_size', page_size, 'restart_if_missing', restart_if_missing, 'delegated_grant', delegated_grant))
$$;

-- A directory's direct children, paged (extension/src/listing.rs).
CREATE FUNCTION public.supabash_list_directory(
  workspace_id text, path text, revision text DEFAULT NULL, cursor text DEFAULT NULL,
  page_size integer DEFAULT NULL, totals boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('list_directory', json_build_object('workspace_id', workspace_id, 'path', path,
    'revision', revision, 'cursor', supabash_list_directory.cursor, 'page_size', page_size,
    'totals', totals, 'delegated_grant', delegated_grant));
END
$$;

-- PL/pgSQL, not SQL: a SQL function (SECURITY DEFINER, never inlined) is parsed and planned
-- again on every call; PL/pgSQL keeps the plan of its expression for the session.
CREATE FUNCTION public.supabash_commit(
  workspace_id text, changes json, actor text DEFAULT NULL,
  base_revision text DEFAULT NULL, transaction_id text DEFAULT NULL,
  correlation_id text DEFAULT NULL, idempotency_key text DEFAULT NULL,
  cause text DEFAULT NULL, metadata jsonb DEFAULT NULL, source_revision text DEFAULT NULL,
  rebase boolean DEFAULT false, delegated_grant text DEFAULT NULL,
  lease text DEFAULT NULL, redaction_epoch bigint DEFAULT NULL, audit json DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
BEGIN
  RETURN supabash._write('commit', json_build_object(
    'workspace_id', workspace_id, 'changes', changes, 'actor', actor,
    'base_revision', base_revision, 'transaction_id', transaction_id,
    'correlation_id', correlation_id, 'idempotency_key', idempotency_key,
    'cause', cause, 'metadata', metadata, 'source_revision', source_revision,
    'rebase', rebase, 'delegated_grant', delegated_grant,
    'lease', lease, 'redaction_epoch', redaction_epoch, 'audit', audit));
END
$$;

CREATE FUNCTION public.supabash_diff(
  workspace_id text, from_ref jsonb, to_ref jsonb, paths text[] DEFAULT NULL,
  preview_bytes integer DEFAULT NULL, staged json DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('diff', json_build_object('workspace_id', workspace_id, 'from_ref', from_ref,
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

CREATE FUNCTION public.supabash_checkpoints(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('checkpoints', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_delete_checkpoint(workspace_id text, checkpoint_id text, delegated_grant text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('delete_checkpoint',
    json_build_object('workspace_id', workspace_id, 'checkpoint_id', checkpoint_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_purge(
  workspace_id text, keep_revisions integer DEFAULT NULL, max_age_seconds bigint DEFAULT NULL,
  floor_revision text DEFAULT NULL, dry_run boolean DEFAULT false, delegated_grant text DEFAULT NULL,
  purge_audit boolean DEFAULT false)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('purge', json_build_object('workspace_id', workspace_id,
    'keep_revisions', keep_revisions, 'max_age_seconds', max_age_seconds,
    'floor_revision', floor_revision, 'dry_run', dry_run, 'delegated_grant', delegated_grant,
    'purge_audit', purge_audit))
$$;

-- Single-writer leases (extension/src/lease.rs). Writes take the workspace lock (bounded like a
-- commit's); the read works on a hot standby and never shows the token.
CREATE FUNCTION public.supabash_acquire_lease(
  workspace_id text, holder text, ttl_seconds integer, delegated_grant text DEFAULT NULL,
  token text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('acquire_lease', json_build_object('workspace_id', workspace_id,
    'holder', holder, 'ttl_seconds', ttl_seconds, 'delegated_grant', delegated_grant,
    'token', token))
$$;

CREATE FUNCTION public.supabash_renew_lease(
  workspace_id text, token text, ttl_seconds integer, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('renew_lease', json_build_object('workspace_id', workspace_id,
    'token', token, 'ttl_seconds', ttl_seconds, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_release_lease(workspace_id text, token text, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('release_lease', json_build_object('workspace_id', workspace_id,
    'token', token, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_lease(workspace_id text, delegated_grant text DEFAULT NULL) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('lease', json_build_object('workspace_id', workspace_id, 'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_redact(
  workspace_id text, paths text[] DEFAULT NULL, body_hashes text[] DEFAULT NULL,
  before_revision text DEFAULT NULL, dry_run boolean DEFAULT false, reason text DEFAULT NULL,
  metadata_keys text[] DEFAULT NULL, clear_cause boolean DEFAULT false, delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('redact', json_build_object('workspace_id', workspace_id,
    'paths', to_json(paths), 'body_hashes', to_json(body_hashes), 'before_revision', before_revision,
    'dry_run', dry_run, 'reason', reason, 'metadata_keys', to_json(metadata_keys),
    'clear_cause', clear_cause, 'delegated_grant', delegated_grant))
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

-- Integrity (extension/src/verify.rs, garbage.rs; docs/operations.md). Verify only reads (it
-- works on a hot standby); garbage deletes orphan bodies when asked to, so it is a write.
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

-- One path's versions (extension/src/rpc/path_history.rs): the entries' primary key is by
-- workspace and path, so it needs no new index.
CREATE FUNCTION public.supabash_path_history(
  workspace_id text, path text, cursor text DEFAULT NULL, page_size integer DEFAULT NULL,
  follow_moves boolean DEFAULT false, oldest_first boolean DEFAULT false,
  delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('path_history', json_build_object('workspace_id', workspace_id, 'path', path,
    'cursor', cursor, 'page_size', page_size, 'follow_moves', follow_moves,
    'oldest_first', oldest_first, 'delegated_grant', delegated_grant))
$$;

-- Search on the server (extension/src/rpc/grep.rs): a linear-time regex over the bodies of
-- one revision, within the call's decode budget, a page of matching lines at a time.
CREATE FUNCTION public.supabash_grep(
  workspace_id text, pattern text, revision text DEFAULT NULL, paths text[] DEFAULT NULL,
  ignore_case boolean DEFAULT false, fixed_strings boolean DEFAULT false,
  max_matches integer DEFAULT NULL, context_lines integer DEFAULT NULL, cursor text DEFAULT NULL,
  delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('grep', json_build_object('workspace_id', workspace_id, 'pattern', pattern,
    'revision', revision, 'paths', to_json(paths), 'ignore_case', ignore_case,
    'fixed_strings', fixed_strings, 'max_matches', max_matches, 'context_lines', context_lines,
    'cursor', cursor, 'delegated_grant', delegated_grant))
$$;

-- Notes on a revision after the fact (extension/src/rpc/notes.rs): adding one needs the grant
-- operation commit, reading them history.
CREATE FUNCTION public.supabash_add_note(
  workspace_id text, revision text, key text, value jsonb, actor text DEFAULT NULL,
  delegated_grant text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('add_note', json_build_object('workspace_id', workspace_id,
    'revision', revision, 'key', key, 'value', value, 'actor', actor,
    'delegated_grant', delegated_grant))
$$;

CREATE FUNCTION public.supabash_notes(
  workspace_id text, revision text, key text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('notes', json_build_object('workspace_id', workspace_id,
    'revision', revision, 'key', key, 'delegated_grant', delegated_grant))
$$;

-- Supabase Realtime (extension/src/store/announce.rs): when the database has the `realtime`
-- schema, every announcement is also broadcast on the private topic supabash:<workspace id>
-- (realtime.send(payload, event, topic, private), Supabase's "Broadcast from the database").
-- It runs as the role that installed the extension (on Supabase `postgres`, which may call
-- realtime.send); only supabash_owner, inside the extension's own writes, executes it.
CREATE FUNCTION supabash._broadcast(topic text, event text, payload jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF to_regprocedure('realtime.send(jsonb,text,text,boolean)') IS NOT NULL THEN
    PERFORM realtime.send(payload, event, topic, true);
  END IF;
END
$$;

-- Whether the caller may receive a workspace's announcements (the owner, or service_role with
-- a delegated grant holding history in the x-supabash-grant header): false, never an error,
-- for anyone else. The Realtime policy asks it.
CREATE FUNCTION public.supabash_may_watch(workspace_id text)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('may_watch', json_build_object('workspace_id', workspace_id))
$$;

-- Supabase Realtime authorization (docs/sql-contract.md, "Change announcements"): when the
-- database has realtime.messages, a client may join the private topic supabash:<workspace id>
-- only if supabash_may_watch says so (the owner, or service_role presenting a grant holding
-- history in the x-supabash-grant header). Realtime reads realtime.topic() as the topic joined.
-- The policy is not a member of the extension: DROP EXTENSION needs it dropped first
-- (sql/uninstall.sql).
DO $$
BEGIN
  IF to_regclass('realtime.messages') IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM pg_catalog.pg_policy
        WHERE polrelid = to_regclass('realtime.messages') AND polname = 'supabash_watch') THEN
    EXECUTE $p$CREATE POLICY supabash_watch ON realtime.messages FOR SELECT
      TO authenticated, service_role
      USING (extension = 'broadcast'
             AND (SELECT realtime.topic()) ~ '^supabash:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
             AND (SELECT public.supabash_may_watch(substr(realtime.topic(), 10)))::text = 'true')$p$;
  END IF;
END
$$;

-- How one revision's manifest became another's (extension/src/rpc/manifest_changes.rs): a host
-- that keeps manifests patches the one it has; the cost follows what changed.
CREATE FUNCTION public.supabash_manifest_changes(
  workspace_id text, since text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('manifest_changes', json_build_object('workspace_id', workspace_id,
    'since', since, 'revision', revision, 'delegated_grant', delegated_grant));
END
$$;

-- Delegated capabilities (docs/capabilities.md). The exchange is for service_role only; its
-- waits are bounded (a timeout is the retryable SUPABASH_COMMIT_COORDINATION).
CREATE FUNCTION public.supabash_exchange_capability(capability text) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('exchange_capability', json_build_object('capability', capability))
$$;

-- Storage capabilities (docs/storage.md): the host's service_role spends a verified
-- capability's nonce here, so every host process sharing the database accepts it once.
CREATE FUNCTION public.supabash_spend_storage_nonce(nonce text, keep_until bigint) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('spend_storage_nonce', json_build_object('nonce', nonce, 'keep_until', keep_until))
$$;

-- For the database owner only (a migration or psql): registers or rotates a verifier.
-- algorithm 'EdDSA' (the default): with public_key (32 bytes, unpadded base64url: an Ed25519
-- key the issuer generated) it stores that key and returns NULL; without, it generates a pair
-- in native code, stores the public half and returns the private key (32-byte seed, unpadded
-- base64url) exactly once. algorithm 'HS256' (the TypeScript supabash-fs package's tokens):
-- no public_key; the shared secret is derived from the server key file
-- (supabash.capability_key_file) and returned exactly once (32 bytes, unpadded base64url);
-- refused when no key file is configured. Either way the database keeps no private key and no
-- secret, and every grant minted under the key id's previous registration stops working. A
-- second key id gives an overlap window during rotation.
CREATE FUNCTION public.supabash_register_capability_verifier(
  key_id text, issuer text, audience text, origin text,
  clock_skew_seconds integer DEFAULT 60, max_lifetime_seconds integer DEFAULT 900,
  public_key text DEFAULT NULL, algorithm text DEFAULT 'EdDSA')
RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
DECLARE
  pair bytea;
  pub_key bytea;
BEGIN
  IF algorithm IS NULL OR algorithm NOT IN ('EdDSA', 'HS256') THEN
    RAISE EXCEPTION 'SUPABASH_INVALID_ARGUMENT: algorithm must be ''EdDSA'' (the default) or ''HS256''';
  ELSIF algorithm = 'HS256' AND public_key IS NOT NULL THEN
    RAISE EXCEPTION 'SUPABASH_INVALID_ARGUMENT: an HS256 verifier takes no public_key: its secret is derived from the server key file and returned once';
  ELSIF algorithm = 'EdDSA' AND public_key IS NULL THEN
    pair := supabash._ed25519_key_pair();
    pub_key := substring(pair FROM 33 FOR 32);
  ELSIF algorithm = 'EdDSA' THEN
    pub_key := CASE WHEN public_key ~ '^[A-Za-z0-9_-]{43}$'
                   THEN decode(translate(public_key, '-_', '+/') || '=', 'base64') END;
    IF pub_key IS NULL OR NOT supabash._ed25519_public_key_valid(pub_key) THEN
      RAISE EXCEPTION 'SUPABASH_INVALID_ARGUMENT: public_key must be an Ed25519 public key: 32 bytes, unpadded base64url';
    END IF;
  END IF;
  INSERT INTO supabash.capability_verifiers AS v
         (key_id, issuer, audience, origin, clock_skew_seconds, max_lifetime_seconds, public_key, algorithm)
  VALUES ($1, $2, $3, $4, $5, $6, pub_key, $8)
  ON CONFLICT ON CONSTRAINT capability_verifiers_pkey DO UPDATE
     SET issuer = EXCLUDED.issuer, audience = EXCLUDED.audience, origin = EXCLUDED.origin,
         clock_skew_seconds = EXCLUDED.clock_skew_seconds,
         max_lifetime_seconds = EXCLUDED.max_lifetime_seconds, created_at = now(),
         public_key = EXCLUDED.public_key, algorithm = EXCLUDED.algorithm,
         generation = gen_random_uuid();
  DELETE FROM supabash.grants g WHERE g.key_id = $1;
  IF $8 = 'HS256' THEN
    -- A fresh generation and its secret, derived in native code (refused without a key file).
    RETURN supabash._hs256_rotate($1);
  END IF;
  RETURN rtrim(translate(encode(substring(pair FROM 1 FOR 32), 'base64'), '+/', '-_'), '=');
END
$$;

-- For the database owner only: removes a verifier and the grants minted with it (a grant whose
-- exchange commits after the revocation is dead too: its generation is gone).
CREATE FUNCTION public.supabash_revoke_capability_verifier(key_id text) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  WITH g AS (DELETE FROM supabash.grants x WHERE x.key_id = $1),
       v AS (DELETE FROM supabash.capability_verifiers x WHERE x.key_id = $1 RETURNING 1)
  SELECT count(*) > 0 FROM v
$$;
