-- supabash 0.5.0 -> 0.6.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.6.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.6.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.6.0 makes the core paths cheap and plan-stable, hardens the new surfaces, keeps what
-- programs write (kinds, modes, times), and answers questions only a database can. Each
-- section below names the issue and the change it carries; sections are independent and run
-- in this order.

-- Core paths (issue 22).
-- The workspace row (the head) and the usage row are rewritten by every commit: room left on
-- each page keeps those HOT updates (no new index entries). Existing pages fill as they are
-- rewritten.
ALTER TABLE supabash.workspaces SET (fillfactor = 70);
ALTER TABLE supabash.usage SET (fillfactor = 70);

-- The whole-tree reads are PL/pgSQL (see rpc.sql): a SQL function's tuplestore wrote every
-- answer larger than work_mem to a temporary file.
CREATE OR REPLACE FUNCTION public.supabash_load_snapshot(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('load_snapshot', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant));
END
$$;

CREATE OR REPLACE FUNCTION public.supabash_load_revision(workspace_id text, revision text, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('load_revision', json_build_object('workspace_id', workspace_id, 'revision', revision, 'delegated_grant', delegated_grant));
END
$$;

-- The commit wrapper is PL/pgSQL (see rpc.sql): a SQL function was parsed and planned again
-- on every call.
CREATE OR REPLACE FUNCTION public.supabash_commit(
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

-- Hardening (issue 23).

-- A live lease is re-acquired only with its token: the holder name is public.
DROP FUNCTION public.supabash_acquire_lease(text, text, integer, text);
CREATE FUNCTION public.supabash_acquire_lease(
  workspace_id text, holder text, ttl_seconds integer, delegated_grant text DEFAULT NULL,
  token text DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('acquire_lease', json_build_object('workspace_id', workspace_id,
    'holder', holder, 'ttl_seconds', ttl_seconds, 'delegated_grant', delegated_grant,
    'token', token))
$$;

-- Audit bounds: a record's bytes are kept with it and count in the owner's byte quota.
ALTER TABLE supabash.audit_records
  ADD COLUMN stored_bytes integer NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0);

-- Purge keeps denied, discarded and delegated actors' records unless the owner asks
-- (purge_audit).
DROP FUNCTION public.supabash_purge(text, integer, bigint, text, boolean, text);
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

-- A deleted workspace's audit records go with its revisions, also when it is kept hidden for
-- its forks: those 0.5.0 kept are removed now.
DELETE FROM supabash.audit_records a USING supabash.workspaces w
 WHERE w.id = a.workspace_id AND w.deleted_at IS NOT NULL;

-- The trust report says what is true per server version: from PostgreSQL 16 on, CREATEROLE
-- alone does not let a role grant itself supabash_keeper (it needs the ADMIN option).
CREATE OR REPLACE FUNCTION supabash._trust_report() RETURNS TABLE (role text, why text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  WITH v AS (SELECT current_setting('server_version_num')::int >= 160000 AS admin_rule),
  r AS (
    SELECT r.rolname, r.rolbypassrls, pg_has_role(r.oid, 'pg_read_all_data', 'USAGE') AS reads_all,
           CASE WHEN v.admin_rule
                THEN pg_has_role(r.oid, 'supabash_keeper', 'MEMBER WITH ADMIN OPTION')
                ELSE r.rolcreaterole END AS takes_keeper,
           v.admin_rule
      FROM pg_catalog.pg_roles r, v
     WHERE NOT r.rolsuper AND r.rolname NOT LIKE 'pg\_%'
       AND r.rolname NOT IN ('supabash_owner', 'supabash_keeper', 'service_role'))
  SELECT r.rolname::text,
         concat_ws(', ',
           CASE WHEN r.rolbypassrls AND r.reads_all
                THEN 'reads every workspace (BYPASSRLS, pg_read_all_data)'
                WHEN r.rolbypassrls THEN 'BYPASSRLS' END,
           CASE WHEN r.takes_keeper AND r.admin_rule
                THEN 'ADMIN option on supabash_keeper: can grant itself supabash_keeper and register a key'
                WHEN r.takes_keeper
                THEN 'CREATEROLE (PostgreSQL 15 and older): can grant itself supabash_keeper and register a key' END)
    FROM r
   WHERE r.rolbypassrls OR r.takes_keeper
   ORDER BY 1
$$;

-- POSIX fidelity (issue 24).

-- Each entry version records its kind, permission bits and modification time (see
-- supabash.entries in schema.sql). Existing rows are regular files, 0o644, at the time of the
-- commit that wrote them (the nearest retained one when purge removed it; a version older
-- than every retained revision takes the oldest's time).
ALTER TABLE supabash.entries
  ADD COLUMN kind text NOT NULL DEFAULT 'file' CHECK (kind IN ('file', 'symlink', 'directory')),
  ADD COLUMN mode integer NOT NULL DEFAULT 420 CHECK (mode BETWEEN 0 AND 4095),
  ADD COLUMN mtime_ns bigint;
UPDATE supabash.entries e
   SET mtime_ns = (extract(epoch FROM coalesce(
         (SELECT r.committed_at FROM supabash.revisions r
           WHERE r.workspace_id = e.workspace_id AND r.position <= e.valid_from
           ORDER BY r.position DESC LIMIT 1),
         (SELECT r.committed_at FROM supabash.revisions r
           WHERE r.workspace_id = e.workspace_id
           ORDER BY r.position LIMIT 1),
         now())) * 1000000000)::bigint;
ALTER TABLE supabash.entries
  ALTER COLUMN mtime_ns SET NOT NULL,
  ADD CONSTRAINT entries_kind_content_check CHECK (kind = 'file' OR (metadata IS NULL
    AND (kind <> 'directory' OR body_size = 0)));

-- Many files of one revision with their bodies in one call (a mount or a lazy tree reads a
-- directory's small files at once); owned and granted like every public RPC.
CREATE FUNCTION public.supabash_load_documents(workspace_id text, paths text[], revision text DEFAULT NULL, delegated_grant text DEFAULT NULL)
RETURNS json LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._read('load_documents',
    json_build_object('workspace_id', workspace_id, 'paths', paths, 'revision', revision, 'delegated_grant', delegated_grant))
$$;
REVOKE ALL ON FUNCTION public.supabash_load_documents(text, text[], text, text) FROM PUBLIC, anon;
ALTER FUNCTION public.supabash_load_documents(text, text[], text, text) OWNER TO supabash_owner;
GRANT EXECUTE ON FUNCTION public.supabash_load_documents(text, text[], text, text) TO authenticated, service_role;

-- Plain-files-only workspaces (issue 24): the seed's text-only behaviour as an option fixed
-- at creation (supabash_create_workspace's files_only, inherited by forks): a commit holding a
-- symbolic link, a directory entry or a file mode other than 0o644 is refused whole with
-- SUPABASH_UNSUPPORTED_CONTENT. Existing workspaces keep everything (false).
ALTER TABLE supabash.workspaces ADD COLUMN files_only boolean NOT NULL DEFAULT false;
DROP FUNCTION public.supabash_create_workspace(text);
CREATE FUNCTION public.supabash_create_workspace(label text DEFAULT NULL, files_only boolean DEFAULT NULL)
RETURNS jsonb LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
  SELECT supabash._write('create_workspace', json_build_object('label', label, 'files_only', files_only))
$$;
REVOKE ALL ON FUNCTION public.supabash_create_workspace(text, boolean) FROM PUBLIC, anon, service_role;
ALTER FUNCTION public.supabash_create_workspace(text, boolean) OWNER TO supabash_owner;
GRANT EXECUTE ON FUNCTION public.supabash_create_workspace(text, boolean) TO authenticated;

-- Database answers (issue 25).

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

-- Reads as of a time find the last revision committed at or before it (extension/src/store/
-- revisions.rs resolve_time) by this index, whatever the workspace's length.
CREATE INDEX revisions_committed_idx ON supabash.revisions (workspace_id, committed_at);

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

-- 25: notes

-- Notes on a revision after the fact (issue 25; extension/src/store/notes.rs): a small JSON
-- value under a key, added to an existing revision without a new one. Append-only per key
-- (versions 1, 2, ... of a key on a revision), with who and when; purge removes them with
-- their revision (the foreign key), a redaction's metadata_keys removes those keys' notes.
CREATE TABLE supabash.revision_notes (
  workspace_id      uuid NOT NULL,
  revision_id       uuid NOT NULL,
  key               text NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 1024),
  version           integer NOT NULL CHECK (version >= 1),
  value             jsonb NOT NULL,
  actor             text NOT NULL,
  delegation_key_id text,
  noted_at          timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, revision_id, key, version),
  FOREIGN KEY (workspace_id, revision_id) REFERENCES supabash.revisions ON DELETE CASCADE
);

-- Notes on revisions: visible exactly when their workspace is (like workspace contents).
ALTER TABLE supabash.revision_notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.revision_notes FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.revision_notes TO supabash_owner
  USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = revision_notes.workspace_id))
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = revision_notes.workspace_id));

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

-- 25: realtime

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

-- 25: reopen. Each revision keeps its tree's files and rendered bytes (see supabash.revisions
-- in schema.sql), written at commit. Existing revisions of workspaces that are not forks are
-- counted here in one pass over the entries (each version adds at its first position and
-- leaves at its last); a fork's older revisions stay unknown (counted by scan when asked).
ALTER TABLE supabash.revisions ADD COLUMN tree_files bigint, ADD COLUMN tree_bytes bigint;
WITH ev AS (
  SELECT e.workspace_id, e.valid_from AS position, 1::bigint AS files,
         coalesce(e.content_size, e.body_size) AS bytes, NULL::uuid AS revision_id
    FROM supabash.entries e
  UNION ALL
  SELECT e.workspace_id, e.valid_until, -1, -coalesce(e.content_size, e.body_size), NULL
    FROM supabash.entries e WHERE e.valid_until IS NOT NULL
  UNION ALL
  SELECT r.workspace_id, r.position, 0, 0, r.revision_id FROM supabash.revisions r
), run AS (
  SELECT workspace_id, revision_id, (sum(files) OVER w)::bigint AS files,
         (sum(bytes) OVER w)::bigint AS bytes
    FROM ev WINDOW w AS (PARTITION BY workspace_id ORDER BY position)
)
UPDATE supabash.revisions r SET tree_files = run.files, tree_bytes = run.bytes
  FROM run JOIN supabash.workspaces w ON w.id = run.workspace_id AND w.fork_of IS NULL
 WHERE run.revision_id IS NOT NULL AND r.workspace_id = run.workspace_id
   AND r.revision_id = run.revision_id;

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

-- 25: opens. The manifest and the directory listing are PL/pgSQL, like the whole-tree reads
-- (issue 22 above): a SQL function copies its answer through a tuplestore (to a temporary
-- file past work_mem); PL/pgSQL hands the datum back as it is. The manifest takes `compact`
-- (each file without the fields that hold their default: about half the bytes).
DROP FUNCTION public.supabash_load_manifest(text, text, text);
CREATE FUNCTION public.supabash_load_manifest(workspace_id text, revision text DEFAULT NULL, delegated_grant text DEFAULT NULL,
  compact boolean DEFAULT false)
RETURNS json LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on AS $$
BEGIN
  RETURN supabash._read('load_manifest', json_build_object('workspace_id', workspace_id, 'revision', revision,
    'delegated_grant', delegated_grant, 'compact', compact));
END
$$;
REVOKE ALL ON FUNCTION public.supabash_load_manifest(text, text, text, boolean) FROM PUBLIC, anon;
ALTER FUNCTION public.supabash_load_manifest(text, text, text, boolean) OWNER TO supabash_owner;
GRANT EXECUTE ON FUNCTION public.supabash_load_manifest(text, text, text, boolean) TO authenticated, service_role;

CREATE OR REPLACE FUNCTION public.supabash_list_directory(
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

-- Agent surface: HS256 capabilities (issue 26).

-- A verifier names its algorithm: EdDSA (every existing one) or HS256, the TypeScript
-- supabash-fs package's tokens, whose secret is derived from the server key file
-- (supabash.capability_key_file) and stored nowhere. Registration takes the algorithm; the
-- derivation that answers a secret is the keeper's alone.
ALTER TABLE supabash.capability_verifiers
  ADD COLUMN algorithm text NOT NULL DEFAULT 'EdDSA'
    CONSTRAINT capability_verifiers_algorithm_check CHECK (algorithm IN ('EdDSA', 'HS256')),
  ADD CONSTRAINT capability_verifiers_hs256_keyless CHECK (algorithm = 'EdDSA' OR public_key IS NULL);

CREATE FUNCTION supabash."_hs256_rotate"(
	"key_id" TEXT /* &str */
) RETURNS TEXT /* alloc::string::String */
STRICT VOLATILE PARALLEL UNSAFE
SET search_path TO pg_catalog, pg_temp
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'hs256_rotate_wrapper';

DROP FUNCTION public.supabash_register_capability_verifier(text, text, text, text, integer, integer, text);
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

-- Storage capabilities across processes: the host's service_role spends each capability's
-- nonce in the database (supabash_spend_storage_nonce), so it is accepted once by every host
-- process; only hashes are kept, until the token expires.
CREATE TABLE supabash.storage_nonces (
  nonce_hash bytea PRIMARY KEY CHECK (octet_length(nonce_hash) = 32),
  expires_at timestamptz NOT NULL
);
CREATE INDEX storage_nonces_expiry_idx ON supabash.storage_nonces (expires_at);
ALTER TABLE supabash.storage_nonces ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.storage_nonces FORCE ROW LEVEL SECURITY;
CREATE POLICY spend ON supabash.storage_nonces TO supabash_owner
  USING ((SELECT supabash.request_role()) = 'service_role')
  WITH CHECK ((SELECT supabash.request_role()) = 'service_role');
CREATE FUNCTION public.supabash_spend_storage_nonce(nonce text, keep_until bigint) RETURNS jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET row_security = on SET lock_timeout = '1s' AS $$
  SELECT supabash._write('spend_storage_nonce', json_build_object('nonce', nonce, 'keep_until', keep_until))
$$;

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

-- The trust report names who can read the HS256 key file when one is configured (the server's
-- OS user, superusers, pg_read_server_files and pg_execute_server_program), and the install
-- check's warning says so.
CREATE OR REPLACE FUNCTION supabash._trust_report() RETURNS TABLE (role text, why text)
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

-- Issue 22: the contents' policies check their workspace with an EXISTS correlated with the row
-- (sql/policies.sql says why): the same rows are visible, a commit's statements look the one
-- workspace up instead of reading all of the owner's.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'entries', 'checkpoints', 'purged_commits', 'redactions',
                           'audit_records', 'leases'] LOOP
    EXECUTE format('ALTER POLICY owner ON supabash.%1$I
                      USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = %1$I.workspace_id))
                      WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = %1$I.workspace_id))', t);
  END LOOP;
END
$$;
ALTER POLICY owner ON supabash.bodies
  USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.store_id = bodies.workspace_id))
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.store_id = bodies.workspace_id));
ALTER POLICY owner ON supabash.usage
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.store_id = usage.workspace_id));

-- Every upgrade ends like the install (extension/sql/finalize.sql).
SELECT supabash._assert_privileges();
SELECT supabash._check_install();

NOTIFY pgrst, 'reload schema';

