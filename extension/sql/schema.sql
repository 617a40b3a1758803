-- supabash: roles, private schema and tables.
-- Runs first in CREATE EXTENSION (pgrx "bootstrap"). The rest of the SQL layer, by concern:
--   policies.sql       row-level security: enabled and forced on every table, every policy
--   rpc.sql            the public RPCs (public.supabash_*) and the private SQL helpers they call
--   privileges.sql     supabash._assert_privileges(): every grant, revoke and owner change
--   install_check.sql  supabash._check_install(): refuses an install a PostgREST role could abuse
--   finalize.sql       the install's last step: assert privileges, check, reload PostgREST
-- supabash--X.sql are frozen install scripts of released versions, supabash--A--B.sql the
-- upgrade scripts (README: "Versions and upgrades").

DO $$
BEGIN
  -- Throwaway test clusters may opt in to getting the three Supabase API roles created here
  -- (postgresql.conf: supabash.bootstrap_roles = on); everyone else gets them from Supabase or
  -- from sql/bootstrap.sql.
  IF current_setting('supabash.bootstrap_roles', true) = 'on' THEN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'anon') THEN
      CREATE ROLE anon NOLOGIN NOINHERIT;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'authenticated') THEN
      CREATE ROLE authenticated NOLOGIN NOINHERIT;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'service_role') THEN
      CREATE ROLE service_role NOLOGIN NOINHERIT BYPASSRLS;
    END IF;
  END IF;
  IF (SELECT count(*) FROM pg_catalog.pg_roles
       WHERE rolname IN ('anon', 'authenticated', 'service_role')) <> 3 THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: the Supabase roles anon, authenticated and service_role must exist'
      USING HINT = 'On plain PostgreSQL run sql/bootstrap.sql first.';
  END IF;
  -- The role every RPC runs as. Cluster-wide, so it outlives DROP EXTENSION (see sql/uninstall.sql).
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'supabash_owner') THEN
    CREATE ROLE supabash_owner NOLOGIN NOINHERIT NOBYPASSRLS;
  ELSIF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'supabash_owner'
                   AND (rolcanlogin OR rolbypassrls OR rolsuper)) THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: role supabash_owner exists and can log in, bypass RLS or is superuser';
  END IF;
  -- The only role that writes capability verifiers (through the register and revoke functions).
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'supabash_keeper') THEN
    CREATE ROLE supabash_keeper NOLOGIN NOINHERIT NOBYPASSRLS;
  ELSIF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'supabash_keeper'
                   AND (rolcanlogin OR rolbypassrls OR rolsuper)) THEN
    RAISE EXCEPTION 'SUPABASH_INSTALL: role supabash_keeper exists and can log in, bypass RLS or is superuser';
  END IF;
END
$$;

-- Created here, not by the control file, so the schema is a member of the extension and
-- DROP EXTENSION removes it with everything in it.
CREATE SCHEMA supabash;

-- Who is calling: supabash.request_claims(), request_role() and request_owner() are native
-- (extension/src/identity.rs); the policies that use them are in sql/policies.sql.

-- Timestamps as receipts and grants print them: UTC with microseconds,
-- e.g. 2026-11-30T06:00:00.123456Z. One rule, so a replayed receipt reads like the original.
CREATE FUNCTION supabash.utc_text(t timestamptz) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- head_position counts the workspace's commits: a commit takes head_position + 1 under the
-- workspace's row lock (extension/src/access.rs), so positions follow commit order.
-- Forks (extension/src/lineage.rs): a fork stores only what changed since its fork point and
-- reads every other file from fork_of's entries as they were at fork_position; a fork family
-- shares one body store (bodies and usage are keyed by store_id, the id of the family's first
-- workspace). A deleted workspace that a fork still reads from keeps its row, marked
-- deleted_at, with only the entries its forks see (extension/src/workspaces.rs).
CREATE TABLE supabash.workspaces (
  id            uuid NOT NULL DEFAULT gen_random_uuid(),
  owner_id      uuid NOT NULL,
  head_revision uuid,
  head_position bigint,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  store_id      uuid NOT NULL,
  label         text CHECK (octet_length(label) BETWEEN 1 AND 256),
  fork_of       uuid,
  fork_revision uuid,
  fork_position bigint CHECK (fork_position > 0),
  deleted_at    timestamptz,
  -- Counts applied redactions (extension/src/redact.rs). A commit must send the epoch its
  -- staged tree was loaded at, so a tree loaded before a redaction cannot commit again.
  redaction_epoch bigint NOT NULL DEFAULT 0 CONSTRAINT workspaces_redaction_epoch_check CHECK (redaction_epoch >= 0),
  -- Plain files only (issue 24; supabash_create_workspace's files_only, inherited by forks):
  -- a commit holding a symbolic link, a directory entry or a file mode other than 0o644 is
  -- refused whole with SUPABASH_UNSUPPORTED_CONTENT (extension/src/rpc/commit.rs).
  files_only    boolean NOT NULL DEFAULT false,
  CHECK ((head_revision IS NULL) = (head_position IS NULL)),
  CHECK ((fork_of IS NULL) = (fork_position IS NULL) AND (fork_of IS NULL) = (fork_revision IS NULL)),
  -- The tenant key (0.7.0, docs/scale.md): every table of workspace data carries the owner in
  -- its primary, unique and foreign keys, so one owner's rows can live together on one node.
  CONSTRAINT workspaces_pkey PRIMARY KEY (id, owner_id),
  -- A fork has its parent's owner.
  CONSTRAINT workspaces_fork_of_fkey FOREIGN KEY (fork_of, owner_id) REFERENCES supabash.workspaces (id, owner_id)
);
-- Every commit rewrites its workspace row (the head; no indexed column changes): room left on
-- each page keeps that a HOT update, with no new index entries (issue 22).
ALTER TABLE supabash.workspaces SET (fillfactor = 70);
CREATE INDEX workspaces_owner_idx ON supabash.workspaces (owner_id, id);
CREATE INDEX workspaces_fork_of_idx ON supabash.workspaces (fork_of) WHERE fork_of IS NOT NULL;
CREATE INDEX workspaces_store_idx ON supabash.workspaces (store_id);

-- One row per commit. The receipt is rebuilt from the row on read (so replays return it
-- unchanged); its lines are stored in the compact binary form of supabash_core::receipt_lines.
CREATE TABLE supabash.revisions (
  workspace_id    uuid NOT NULL,
  revision_id     uuid NOT NULL,
  position        bigint NOT NULL,
  parent_revision uuid,
  transaction_id  uuid NOT NULL,
  idempotency_key text,
  request_hash    bytea NOT NULL,
  committed_at    timestamptz NOT NULL,
  actor           text NOT NULL,
  correlation_id  text,
  cause           text,
  metadata        jsonb NOT NULL,
  source_revision uuid,
  lines           bytea NOT NULL,
  -- Set by the database for a commit made with a delegated grant: its verifier's key id.
  delegation_key_id text,
  -- A fork's first revision: the workspace and revision it was forked from.
  forked_from_workspace uuid,
  forked_from_revision  uuid,
  -- Set for a commit made with rebase on an older base: that base (parent_revision is the
  -- head it was applied on top of).
  rebased_from    uuid,
  -- The tree's files and rendered bytes at this revision (issue 25): the parent's plus what the
  -- commit changed, so a lazy open's totals read one row. NULL: unknown (a fork's revision from
  -- before 0.6.0, or one older than a redaction, which recounts only the head): counted by scan.
  tree_files      bigint,
  tree_bytes      bigint,
  -- The tenant key (see workspaces); written by its default, supabash._row_owner()
  -- (sql/policies.sql), like in every table below.
  owner_id        uuid NOT NULL,
  CONSTRAINT revisions_pkey PRIMARY KEY (workspace_id, revision_id, owner_id),
  CONSTRAINT revisions_workspace_id_position_key UNIQUE (workspace_id, position, owner_id),
  CONSTRAINT revisions_workspace_id_transaction_id_key UNIQUE (workspace_id, transaction_id, owner_id),
  CONSTRAINT revisions_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX revisions_idempotency_idx ON supabash.revisions (workspace_id, idempotency_key, owner_id)
  WHERE idempotency_key IS NOT NULL;
-- Reads as of a time find the last revision committed at or before it (extension/src/store/
-- revisions.rs resolve_time) by this index, whatever the workspace's length.
CREATE INDEX revisions_committed_idx ON supabash.revisions (workspace_id, committed_at);

-- What each body store holds: the plain size of its distinct bodies, for the per-owner byte
-- quota (extension/src/quota.rs). One row per store (workspace_id holds the store id).
CREATE TABLE supabash.usage (
  workspace_id uuid NOT NULL,
  owner_id     uuid NOT NULL,
  body_bytes   bigint NOT NULL DEFAULT 0 CHECK (body_bytes >= 0),
  -- The store's live workspaces (the per-owner count quota; a delegated call sees only its own
  -- fork family's workspaces, but all of the owner's usage).
  workspaces   integer NOT NULL DEFAULT 1 CHECK (workspaces >= 0),
  CONSTRAINT usage_pkey PRIMARY KEY (workspace_id, owner_id),
  CONSTRAINT usage_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE
);
-- Rewritten by every commit that adds bytes: room on each page keeps it a HOT update (issue 22).
ALTER TABLE supabash.usage SET (fillfactor = 70);
CREATE INDEX usage_owner_idx ON supabash.usage (owner_id);

-- Commits whose revisions purge removed. Their transaction ids and idempotency keys stay
-- spent, so a retry of a purged commit fails clearly instead of committing a second time.
CREATE TABLE supabash.purged_commits (
  workspace_id    uuid NOT NULL,
  transaction_id  uuid NOT NULL,
  idempotency_key text,
  revision_id     uuid NOT NULL,
  purged_at       timestamptz NOT NULL DEFAULT now(),
  owner_id        uuid NOT NULL,
  CONSTRAINT purged_commits_pkey PRIMARY KEY (workspace_id, transaction_id, owner_id),
  CONSTRAINT purged_commits_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX purged_commits_idempotency_idx ON supabash.purged_commits (workspace_id, idempotency_key, owner_id)
  WHERE idempotency_key IS NOT NULL;

ALTER TABLE supabash.workspaces
  ADD CONSTRAINT workspaces_id_head_revision_fkey FOREIGN KEY (id, head_revision, owner_id)
  REFERENCES supabash.revisions (workspace_id, revision_id, owner_id) DEFERRABLE INITIALLY DEFERRED;

-- Content-addressed bodies (SHA-256 of the bytes), stored once per body store (workspace_id
-- holds the store id: the workspace's own id, shared by its forks). No foreign
-- keys on bodies and entries: a per-row referential check would dominate bulk commits, and
-- only the commit (under the workspace lock) and purge write these tables.
CREATE TABLE supabash.bodies (
  workspace_id uuid NOT NULL,
  hash         bytea NOT NULL CHECK (octet_length(hash) = 32),
  size         bigint NOT NULL CHECK (size >= 0),
  -- The stored form (extension/src/stored.rs: a codec byte, then the bytes, a zstd frame, or a
  -- zstd frame against the body base_hash names), not compressed again by PostgreSQL.
  body         bytea NOT NULL CHECK (octet_length(body) >= 1),
  -- For a delta, the body (of the same workspace) it was compressed against: the file's
  -- previous version. Purge keeps a base while a kept body needs it (extension/src/bodies.rs).
  base_hash    bytea CHECK (base_hash <> hash),
  owner_id     uuid NOT NULL,
  CONSTRAINT bodies_pkey PRIMARY KEY (workspace_id, hash, owner_id)
);
ALTER TABLE supabash.bodies ALTER COLUMN body SET STORAGE EXTERNAL;

-- Interval-versioned files: a row is visible at positions [valid_from, valid_until).
-- The head tree is the set of open rows (valid_until IS NULL). A file without metadata (most
-- files) stores NULL content_hash, content_size and metadata: its content is its body, and
-- the ~50 bytes saved per row version are a sixth of a row (db.rs file_rows reads them back).
CREATE TABLE supabash.entries (
  workspace_id uuid NOT NULL,
  path         text COLLATE "C" NOT NULL,
  valid_from   bigint NOT NULL,
  valid_until  bigint CHECK (valid_until > valid_from),
  body_hash    bytea NOT NULL,
  body_size    bigint NOT NULL,
  content_hash bytea,
  content_size bigint,
  metadata     jsonb CHECK (metadata <> '{}'),
  CHECK ((content_hash IS NULL) = (content_size IS NULL)
         AND (content_hash IS NULL) = (metadata IS NULL)),
  -- A tombstone (redaction removed the version's content): an explicit flag, never a content
  -- value a user could write, with an empty body hash (no body is named) and no metadata.
  redacted     boolean NOT NULL DEFAULT false,
  CONSTRAINT entries_tombstone_check CHECK (CASE WHEN redacted
    THEN octet_length(body_hash) = 0 AND body_size = 0 AND content_hash IS NULL
    ELSE octet_length(body_hash) = 32 END),
  -- POSIX attributes (issue 24; core/src/posix.rs): what the version is, its permission bits
  -- and its modification time in nanoseconds since the epoch. A symlink's body is its target
  -- (checked relative and inside the workspace at commit, never followed here); a directory
  -- (kept even when empty) has an empty body. Rows from before 0.6.0 are files, 0o644, at
  -- their commit's time.
  kind         text NOT NULL DEFAULT 'file' CHECK (kind IN ('file', 'symlink', 'directory')),
  mode         integer NOT NULL DEFAULT 420 CHECK (mode BETWEEN 0 AND 4095),
  mtime_ns     bigint NOT NULL,
  CONSTRAINT entries_kind_content_check CHECK (kind = 'file' OR (metadata IS NULL
    AND (kind <> 'directory' OR body_size = 0))),
  owner_id     uuid NOT NULL,
  CONSTRAINT entries_pkey PRIMARY KEY (workspace_id, path, valid_from, owner_id)
);
CREATE UNIQUE INDEX entries_open_idx ON supabash.entries (workspace_id, path, owner_id) WHERE valid_until IS NULL;

-- Applied redactions, append-only (supabash_owner may only insert and read; rows go with their
-- workspace). A path redaction's boundary is also the restore fence: a restore from a revision
-- before it is refused. No foreign key to revisions, so purge cannot remove a fence.
CREATE TABLE supabash.redactions (
  workspace_id      uuid NOT NULL,
  redaction_id      uuid NOT NULL,
  boundary_position bigint NOT NULL,
  boundary_revision uuid NOT NULL,
  paths             text[] NOT NULL,
  hash_count        integer NOT NULL CHECK (hash_count >= 0),
  reason            text,
  actor             text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  owner_id          uuid NOT NULL,
  CONSTRAINT redactions_pkey PRIMARY KEY (workspace_id, redaction_id, owner_id),
  CONSTRAINT redactions_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE
);

CREATE TABLE supabash.checkpoints (
  workspace_id    uuid NOT NULL,
  checkpoint_id   uuid NOT NULL DEFAULT gen_random_uuid(),
  revision_id     uuid NOT NULL,
  label           text,
  retention_class text,
  idempotency_key text,
  request_hash    bytea NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  owner_id        uuid NOT NULL,
  CONSTRAINT checkpoints_pkey PRIMARY KEY (workspace_id, checkpoint_id, owner_id),
  CONSTRAINT checkpoints_workspace_id_idempotency_key_key UNIQUE (workspace_id, idempotency_key, owner_id),
  CONSTRAINT checkpoints_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE,
  CONSTRAINT checkpoints_workspace_id_revision_id_fkey FOREIGN KEY (workspace_id, revision_id, owner_id)
    REFERENCES supabash.revisions (workspace_id, revision_id, owner_id)
);

-- Single-writer leases (extension/src/lease.rs): at most one row per workspace, naming the host
-- that holds it and the random token it presents to renew, release and commit. Every time is
-- the database's clock (clock_timestamp()); a row whose expires_at has passed is no lease.
-- Written only under the workspace's row lock, so lease changes serialise with commits.
CREATE TABLE supabash.leases (
  workspace_id uuid NOT NULL,
  holder       text NOT NULL CHECK (octet_length(holder) BETWEEN 1 AND 256),
  token        uuid NOT NULL,
  acquired_at  timestamptz NOT NULL,
  renewed_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  CHECK (acquired_at <= renewed_at AND renewed_at < expires_at),
  owner_id     uuid NOT NULL,
  CONSTRAINT leases_pkey PRIMARY KEY (workspace_id, owner_id),
  CONSTRAINT leases_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE
);

-- Delegated capabilities (docs/capabilities.md, "Trust model"). Verifiers: what a key id's
-- tokens must say, and its Ed25519 public key or, for HS256, nothing: nothing here can mint. The generation changes on
-- every registration; a grant works only while its verifier still has the generation it was
-- minted under, so rotation and revocation end it. Nonces: kept until a token can no longer
-- verify (exp + skew + 1 s, plus a grace minute) so it can never be exchanged twice. Grants:
-- only the hash of what the exchange handed out.
CREATE TABLE supabash.capability_verifiers (
  key_id               text PRIMARY KEY CHECK (key_id ~ '^[A-Za-z0-9._-]{1,128}$'),
  issuer               text NOT NULL CHECK (octet_length(issuer) BETWEEN 1 AND 256),
  audience             text NOT NULL CHECK (octet_length(audience) BETWEEN 1 AND 256),
  origin               text NOT NULL CHECK (octet_length(origin) BETWEEN 1 AND 256),
  clock_skew_seconds   integer NOT NULL DEFAULT 60 CHECK (clock_skew_seconds BETWEEN 0 AND 3600),
  max_lifetime_seconds integer NOT NULL DEFAULT 900 CHECK (max_lifetime_seconds BETWEEN 1 AND 86400),
  created_at           timestamptz NOT NULL DEFAULT now(),
  -- NULL only for a verifier of an older version (HS256) that was never registered again.
  public_key           bytea CHECK (octet_length(public_key) = 32),
  generation           uuid NOT NULL DEFAULT gen_random_uuid(),
  -- What the key id's tokens are signed with: EdDSA (public_key holds the Ed25519 key) or
  -- HS256 (the seed package's format; the secret is derived from the server key file, the key
  -- id and the generation each time it is needed and stored nowhere, so public_key is NULL).
  algorithm            text NOT NULL DEFAULT 'EdDSA'
                       CONSTRAINT capability_verifiers_algorithm_check CHECK (algorithm IN ('EdDSA', 'HS256')),
  CONSTRAINT capability_verifiers_hs256_keyless CHECK (algorithm = 'EdDSA' OR public_key IS NULL)
);

CREATE TABLE supabash.capability_nonces (
  nonce_hash bytea PRIMARY KEY CHECK (octet_length(nonce_hash) = 32),
  expires_at timestamptz NOT NULL
);
CREATE INDEX capability_nonces_expiry_idx ON supabash.capability_nonces (expires_at);

-- The spent nonces of Storage capabilities (verified in the host process, docs/storage.md),
-- hashed, each kept until its token can no longer be accepted: the host's service_role
-- spends them through supabash_spend_storage_nonce so every host process accepts a
-- capability once.
CREATE TABLE supabash.storage_nonces (
  nonce_hash bytea PRIMARY KEY CHECK (octet_length(nonce_hash) = 32),
  expires_at timestamptz NOT NULL
);
CREATE INDEX storage_nonces_expiry_idx ON supabash.storage_nonces (expires_at);

CREATE TABLE supabash.grants (
  grant_hash     bytea PRIMARY KEY CHECK (octet_length(grant_hash) = 32),
  key_id         text NOT NULL,
  workspace_id   uuid NOT NULL,
  owner_id       uuid NOT NULL,
  actor_subject  text NOT NULL,
  operations     text[] NOT NULL CHECK (cardinality(operations) > 0),
  correlation_id text,
  expires_at     timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- The verifier's generation at the exchange (see supabash.capability_verifiers).
  generation     uuid NOT NULL
);
CREATE INDEX grants_expiry_idx ON supabash.grants (expires_at);

-- The audit trail (extension/src/audit.rs): one row per agent action, written in the
-- transaction of the commit it led to (revision_id) or, for a discarded session, by
-- supabash_record_discarded (revision_id NULL, discarded). Append-only: supabash_owner may
-- insert and read, update only what a redaction scrubs, and delete only what a purge removes
-- with its revisions or a workspace's deletion removes with it (sql/privileges.sql); no API
-- role holds any privilege on it. No foreign key to revisions: purge removes a revision's
-- records itself, and keeps those telling what a job tried (extension/src/store/audit.rs).
CREATE TABLE supabash.audit_records (
  workspace_id  uuid NOT NULL,
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
  -- The record's size as the client sent it (compact JSON): counted in the owner's byte quota
  -- (supabash.usage) while the record exists.
  stored_bytes  integer NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0),
  CHECK (discarded = (revision_id IS NULL)),
  CHECK ((outcome = 'error') = (code IS NOT NULL) AND (outcome = 'denied') = (reason IS NOT NULL)),
  owner_id      uuid NOT NULL,
  CONSTRAINT audit_records_pkey PRIMARY KEY (workspace_id, record_id, owner_id),
  CONSTRAINT audit_records_workspace_id_fkey FOREIGN KEY (workspace_id, owner_id)
    REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE
);
CREATE INDEX audit_records_order_idx ON supabash.audit_records (workspace_id, recorded_at, session_id, sequence, record_id);
CREATE INDEX audit_records_revision_idx ON supabash.audit_records (workspace_id, revision_id);

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
  owner_id          uuid NOT NULL,
  CONSTRAINT revision_notes_pkey PRIMARY KEY (workspace_id, revision_id, key, version, owner_id),
  CONSTRAINT revision_notes_workspace_id_revision_id_fkey FOREIGN KEY (workspace_id, revision_id, owner_id)
    REFERENCES supabash.revisions (workspace_id, revision_id, owner_id) ON DELETE CASCADE
);

-- Row-level security (enabled and forced on every table above) and every policy: sql/policies.sql.
