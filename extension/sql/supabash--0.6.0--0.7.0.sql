-- supabash 0.6.0 -> 0.7.0. Hand-written upgrade script, run by ALTER EXTENSION supabash UPDATE.
-- Once released it is never edited: a later change ships as supabash--0.7.0--<next>.sql.
-- tests/tests/upgrade.rs installs every older version with data, runs the upgrade path, and
-- compares the catalog with a fresh install of 0.7.0.
\echo Use "ALTER EXTENSION supabash UPDATE" to load this file. \quit

-- 0.7.0: the tenant-keyed schema (issue 35, docs/scale.md). Every table of workspace data
-- carries its owner in its primary, unique and foreign keys, and every policy compares that
-- column with supabash._row_owner() instead of looking the workspace up in a subquery.
--
-- Cost: every table of workspace data is rewritten once (its owner is filled in) and its keys
-- are rebuilt, in this one transaction; ALTER TABLE holds each table's ACCESS EXCLUSIVE lock to
-- the end, so reads and writes wait for the upgrade (docs/scale.md gives measured times).
-- Rows the update rewrites leave their old versions for VACUUM.

-- The owner whose rows the running statement may see (extension/src/pg/scope.rs).
CREATE FUNCTION supabash."_row_owner"() RETURNS uuid
STRICT STABLE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'row_owner_wrapper';

-- The old policies look workspaces up in subqueries: they go first.
DROP POLICY owner ON supabash.workspaces;
DROP POLICY owner ON supabash.revisions;
DROP POLICY owner ON supabash.entries;
DROP POLICY owner ON supabash.checkpoints;
DROP POLICY owner ON supabash.purged_commits;
DROP POLICY owner ON supabash.redactions;
DROP POLICY owner ON supabash.audit_records;
DROP POLICY owner ON supabash.leases;
DROP POLICY owner ON supabash.revision_notes;
DROP POLICY owner ON supabash.bodies;
DROP POLICY owner ON supabash.usage;
DROP POLICY exchange ON supabash.capability_nonces;
DROP POLICY exchange ON supabash.grants;
DROP POLICY spend ON supabash.storage_nonces;

-- Every key that changes: foreign keys first (they depend on the keys they reference).
ALTER TABLE supabash.workspaces DROP CONSTRAINT workspaces_id_head_revision_fkey;
ALTER TABLE supabash.workspaces DROP CONSTRAINT workspaces_fork_of_fkey;
ALTER TABLE supabash.revisions DROP CONSTRAINT revisions_workspace_id_fkey;
ALTER TABLE supabash.usage DROP CONSTRAINT usage_workspace_id_fkey;
ALTER TABLE supabash.purged_commits DROP CONSTRAINT purged_commits_workspace_id_fkey;
ALTER TABLE supabash.redactions DROP CONSTRAINT redactions_workspace_id_fkey;
ALTER TABLE supabash.checkpoints DROP CONSTRAINT checkpoints_workspace_id_fkey;
ALTER TABLE supabash.checkpoints DROP CONSTRAINT checkpoints_workspace_id_revision_id_fkey;
ALTER TABLE supabash.leases DROP CONSTRAINT leases_workspace_id_fkey;
ALTER TABLE supabash.audit_records DROP CONSTRAINT audit_records_workspace_id_fkey;
ALTER TABLE supabash.revision_notes DROP CONSTRAINT revision_notes_workspace_id_revision_id_fkey;

ALTER TABLE supabash.workspaces DROP CONSTRAINT workspaces_pkey;
ALTER TABLE supabash.revisions DROP CONSTRAINT revisions_pkey,
  DROP CONSTRAINT revisions_workspace_id_position_key,
  DROP CONSTRAINT revisions_workspace_id_transaction_id_key;
DROP INDEX supabash.revisions_idempotency_idx;
ALTER TABLE supabash.usage DROP CONSTRAINT usage_pkey;
ALTER TABLE supabash.purged_commits DROP CONSTRAINT purged_commits_pkey;
DROP INDEX supabash.purged_commits_idempotency_idx;
ALTER TABLE supabash.bodies DROP CONSTRAINT bodies_pkey;
ALTER TABLE supabash.entries DROP CONSTRAINT entries_pkey;
DROP INDEX supabash.entries_open_idx;
ALTER TABLE supabash.redactions DROP CONSTRAINT redactions_pkey;
ALTER TABLE supabash.checkpoints DROP CONSTRAINT checkpoints_pkey,
  DROP CONSTRAINT checkpoints_workspace_id_idempotency_key_key;
ALTER TABLE supabash.leases DROP CONSTRAINT leases_pkey;
ALTER TABLE supabash.audit_records DROP CONSTRAINT audit_records_pkey;
ALTER TABLE supabash.revision_notes DROP CONSTRAINT revision_notes_pkey;

-- The owner on every row: the workspace's (a body store's id is its first workspace's, which
-- stays while any workspace of the family does). A body no workspace names is garbage
-- (supabash_garbage would delete it): it goes now, since it has no owner to carry.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'purged_commits', 'bodies', 'entries', 'redactions',
                           'checkpoints', 'leases', 'audit_records', 'revision_notes'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ADD COLUMN owner_id uuid', t);
    EXECUTE format('UPDATE supabash.%I t SET owner_id = w.owner_id
                      FROM supabash.workspaces w WHERE w.id = t.workspace_id', t);
  END LOOP;
END
$$;
DELETE FROM supabash.bodies WHERE owner_id IS NULL;
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'purged_commits', 'bodies', 'entries', 'redactions',
                           'checkpoints', 'leases', 'audit_records', 'revision_notes'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ALTER COLUMN owner_id SET NOT NULL', t);
  END LOOP;
END
$$;

-- The keys again, each with the owner (as sql/schema.sql declares them).
ALTER TABLE supabash.workspaces ADD CONSTRAINT workspaces_pkey PRIMARY KEY (id, owner_id);
ALTER TABLE supabash.revisions
  ADD CONSTRAINT revisions_pkey PRIMARY KEY (workspace_id, revision_id, owner_id),
  ADD CONSTRAINT revisions_workspace_id_position_key UNIQUE (workspace_id, position, owner_id),
  ADD CONSTRAINT revisions_workspace_id_transaction_id_key UNIQUE (workspace_id, transaction_id, owner_id);
CREATE UNIQUE INDEX revisions_idempotency_idx ON supabash.revisions (workspace_id, idempotency_key, owner_id)
  WHERE idempotency_key IS NOT NULL;
ALTER TABLE supabash.usage ADD CONSTRAINT usage_pkey PRIMARY KEY (workspace_id, owner_id);
ALTER TABLE supabash.purged_commits
  ADD CONSTRAINT purged_commits_pkey PRIMARY KEY (workspace_id, transaction_id, owner_id);
CREATE UNIQUE INDEX purged_commits_idempotency_idx ON supabash.purged_commits (workspace_id, idempotency_key, owner_id)
  WHERE idempotency_key IS NOT NULL;
ALTER TABLE supabash.bodies ADD CONSTRAINT bodies_pkey PRIMARY KEY (workspace_id, hash, owner_id);
ALTER TABLE supabash.entries ADD CONSTRAINT entries_pkey PRIMARY KEY (workspace_id, path, valid_from, owner_id);
CREATE UNIQUE INDEX entries_open_idx ON supabash.entries (workspace_id, path, owner_id) WHERE valid_until IS NULL;
ALTER TABLE supabash.redactions ADD CONSTRAINT redactions_pkey PRIMARY KEY (workspace_id, redaction_id, owner_id);
ALTER TABLE supabash.checkpoints
  ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (workspace_id, checkpoint_id, owner_id),
  ADD CONSTRAINT checkpoints_workspace_id_idempotency_key_key UNIQUE (workspace_id, idempotency_key, owner_id);
ALTER TABLE supabash.leases ADD CONSTRAINT leases_pkey PRIMARY KEY (workspace_id, owner_id);
ALTER TABLE supabash.audit_records ADD CONSTRAINT audit_records_pkey PRIMARY KEY (workspace_id, record_id, owner_id);
ALTER TABLE supabash.revision_notes
  ADD CONSTRAINT revision_notes_pkey PRIMARY KEY (workspace_id, revision_id, key, version, owner_id);

ALTER TABLE supabash.workspaces
  ADD CONSTRAINT workspaces_fork_of_fkey FOREIGN KEY (fork_of, owner_id) REFERENCES supabash.workspaces (id, owner_id),
  ADD CONSTRAINT workspaces_id_head_revision_fkey FOREIGN KEY (id, head_revision, owner_id)
    REFERENCES supabash.revisions (workspace_id, revision_id, owner_id) DEFERRABLE INITIALLY DEFERRED;
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'usage', 'purged_commits', 'redactions', 'checkpoints',
                           'leases', 'audit_records'] LOOP
    EXECUTE format('ALTER TABLE supabash.%1$I ADD CONSTRAINT %1$s_workspace_id_fkey
                      FOREIGN KEY (workspace_id, owner_id)
                      REFERENCES supabash.workspaces (id, owner_id) ON DELETE CASCADE', t);
  END LOOP;
END
$$;
ALTER TABLE supabash.checkpoints
  ADD CONSTRAINT checkpoints_workspace_id_revision_id_fkey FOREIGN KEY (workspace_id, revision_id, owner_id)
    REFERENCES supabash.revisions (workspace_id, revision_id, owner_id);
ALTER TABLE supabash.revision_notes
  ADD CONSTRAINT revision_notes_workspace_id_revision_id_fkey FOREIGN KEY (workspace_id, revision_id, owner_id)
    REFERENCES supabash.revisions (workspace_id, revision_id, owner_id) ON DELETE CASCADE;

-- The policies, as sql/policies.sql declares them.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'entries', 'checkpoints', 'purged_commits', 'redactions',
                           'bodies', 'leases', 'audit_records', 'revision_notes'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ALTER COLUMN owner_id SET DEFAULT supabash._row_owner()', t);
  END LOOP;
END
$$;

CREATE POLICY owner ON supabash.workspaces TO supabash_owner
  USING ((owner_id = supabash._row_owner()
          AND (supabash._scope_workspace() IS NULL
               OR id = supabash._scope_workspace()::uuid
               OR store_id = supabash._scope_store()::uuid))
         OR (id = supabash._scope_workspace()::uuid AND supabash._scope_owner() IS NULL))
  WITH CHECK (owner_id = supabash._row_owner()
              AND (supabash._scope_workspace() IS NULL
                   OR id = supabash._scope_workspace()::uuid
                   OR store_id = supabash._scope_store()::uuid));

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'entries', 'checkpoints', 'purged_commits', 'redactions',
                           'bodies', 'usage', 'leases', 'audit_records', 'revision_notes'] LOOP
    EXECUTE format('CREATE POLICY owner ON supabash.%I TO supabash_owner
                      USING (owner_id = supabash._row_owner())
                      WITH CHECK (owner_id = supabash._row_owner())', t);
  END LOOP;
END
$$;

CREATE POLICY exchange ON supabash.capability_nonces TO supabash_owner
  USING (supabash.request_role() = 'service_role')
  WITH CHECK (supabash.request_role() = 'service_role');
CREATE POLICY exchange ON supabash.grants TO supabash_owner
  USING (supabash.request_role() = 'service_role')
  WITH CHECK (supabash.request_role() = 'service_role');
CREATE POLICY spend ON supabash.storage_nonces TO supabash_owner
  USING (supabash.request_role() = 'service_role')
  WITH CHECK (supabash.request_role() = 'service_role');

SELECT supabash._assert_privileges();
SELECT supabash._check_install();

-- PostgREST reloads its schema cache on this notice. Under Citus a DDL transaction ends in a
-- two-phase commit, which PostgreSQL refuses after NOTIFY: there the operator reloads
-- PostgREST instead (docs/scale.md).
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
    NOTIFY pgrst, 'reload schema';
  END IF;
END
$$;
