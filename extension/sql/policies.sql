-- supabash: row-level security. Every private table has RLS enabled and FORCED (so even the
-- table owner is filtered), and every policy the extension relies on is in this file: a row is
-- visible only when its workspace belongs to the verified caller, or is the one workspace a
-- delegated grant scoped the running native call to. The identity functions these policies ask
-- (supabash._row_owner(), request_role(), _scope_workspace(), _scope_owner()) are native
-- (extension/src/identity.rs, extension/src/access.rs); pgrx creates them before this file
-- (`requires` in extension/src/lib.rs).
--
-- Who may reach the tables at all (grants) is sql/privileges.sql.

-- The tenant key (0.7.0, docs/scale.md). Every table of workspace data carries its owner,
-- written by default as supabash._row_owner(): the owner whose rows the running native call may
-- see (the caller's `sub`, or inside a delegated grant's scope that workspace's owner; see
-- extension/src/pg/scope.rs). Every policy below compares a column with it: no subquery, which
-- a distributed table refuses, and a comparison the planner evaluates once per index scan
-- instead of looking the workspace up again for every statement.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'entries', 'checkpoints', 'purged_commits', 'redactions',
                           'bodies', 'leases', 'audit_records', 'revision_notes'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ALTER COLUMN owner_id SET DEFAULT supabash._row_owner()', t);
  END LOOP;
END
$$;

-- The workspaces policy: the owner's workspaces; inside a delegated grant's scope only the
-- scoped workspace and, once the call widens it, the other workspaces of its fork family (same
-- body store, same owner), which a fork reads from and a purge must see. While a call looks a
-- workspace's owner up (scope without owner) it sees that one row. The grant itself still names
-- one workspace: every RPC checks it before the scope opens.
ALTER TABLE supabash.workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.workspaces FORCE ROW LEVEL SECURITY;
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

-- Workspace contents, bodies, usage, leases, notes and the audit trail: the owner's rows.
-- Inside a delegated scope that is the scoped workspace's owner; the narrower fork-family bound
-- is the workspace row's (above), which every native call resolves before it reads contents.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'entries', 'checkpoints', 'purged_commits', 'redactions',
                           'bodies', 'usage', 'leases', 'audit_records', 'revision_notes'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE supabash.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY owner ON supabash.%I TO supabash_owner
                      USING (owner_id = supabash._row_owner())
                      WITH CHECK (owner_id = supabash._row_owner())', t);
  END LOOP;
END
$$;

-- Delegated capabilities (docs/capabilities.md).
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['capability_verifiers', 'capability_nonces', 'grants'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE supabash.%I FORCE ROW LEVEL SECURITY', t);
  END LOOP;
END
$$;
-- Verifiers (public keys, nothing that can mint): written by the database owner through
-- keeper-owned functions, read by the exchange and by every delegated call.
CREATE POLICY manage ON supabash.capability_verifiers TO supabash_owner, supabash_keeper
  USING (true) WITH CHECK (true);
-- Registering or revoking a verifier deletes the grants minted with it.
CREATE POLICY revoke ON supabash.grants TO supabash_keeper USING (true);
-- Exchanging a capability (service_role only) consumes nonces and mints grants.
CREATE POLICY exchange ON supabash.capability_nonces TO supabash_owner
  USING (supabash.request_role() = 'service_role')
  WITH CHECK (supabash.request_role() = 'service_role');
CREATE POLICY exchange ON supabash.grants TO supabash_owner
  USING (supabash.request_role() = 'service_role')
  WITH CHECK (supabash.request_role() = 'service_role');
-- Storage capability nonces: spent by the host's service_role only.
ALTER TABLE supabash.storage_nonces ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.storage_nonces FORCE ROW LEVEL SECURITY;
CREATE POLICY spend ON supabash.storage_nonces TO supabash_owner
  USING (supabash.request_role() = 'service_role')
  WITH CHECK (supabash.request_role() = 'service_role');


-- Supabase Realtime's policy on realtime.messages (only where that table exists) is in
-- sql/rpc.sql, after the function it asks, supabash_may_watch.
