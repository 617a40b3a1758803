-- supabash: row-level security. Every private table has RLS enabled and FORCED (so even the
-- table owner is filtered), and every policy the extension relies on is in this file: a row is
-- visible only when its workspace belongs to the verified caller, or is the one workspace a
-- delegated grant scoped the running native call to. The identity functions these policies ask
-- (supabash.request_owner(), request_role(), _scope_workspace(), _scope_owner()) are native
-- (extension/src/identity.rs, extension/src/access.rs); pgrx creates them before this file
-- (`requires` in extension/src/lib.rs).
--
-- Who may reach the tables at all (grants) is sql/privileges.sql.

-- The workspaces policy: the caller's own workspaces, or the one workspace a delegated grant
-- scoped the running native call to and the other workspaces of its fork family (same body
-- store, same owner), which a fork reads from and a purge must see (supabash._scope_*: set only
-- by the extension's Rust code, for one call; see extension/src/access.rs). The grant itself
-- still names one workspace: every RPC checks it before the scope opens. Child tables'
-- policies defer to this one.
ALTER TABLE supabash.workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.workspaces FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.workspaces TO supabash_owner
  USING (owner_id = (SELECT supabash.request_owner())
         OR (id = (SELECT supabash._scope_workspace())::uuid
             AND owner_id = coalesce((SELECT supabash._scope_owner())::uuid, owner_id))
         OR (store_id = (SELECT supabash._scope_store())::uuid
             AND owner_id = (SELECT supabash._scope_owner())::uuid))
  WITH CHECK (owner_id = (SELECT supabash.request_owner())
         OR ((id = (SELECT supabash._scope_workspace())::uuid
              OR store_id = (SELECT supabash._scope_store())::uuid)
             AND owner_id = (SELECT supabash._scope_owner())::uuid));

-- Workspace contents: visible exactly when their workspace is. The check is an EXISTS
-- correlated with the row, so the planner can look the one workspace up by its key for a
-- statement that touches a few rows (a commit's), and still hash the caller's visible
-- workspaces once for a statement that reads many (a manifest). `workspace_id IN (SELECT id
-- ...)` could only hash them: every statement of a commit read all of the owner's workspaces
-- (an owner of 5,000 made each commit 12 times as costly, bench/ANALYSIS.md).
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['revisions', 'entries', 'checkpoints', 'purged_commits', 'redactions'] LOOP
    EXECUTE format('ALTER TABLE supabash.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE supabash.%I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY owner ON supabash.%1$I TO supabash_owner
                      USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = %1$I.workspace_id))
                      WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = %1$I.workspace_id))', t);
  END LOOP;
END
$$;

-- The audit trail: visible exactly when its workspace is (like workspace contents).
ALTER TABLE supabash.audit_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.audit_records FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.audit_records TO supabash_owner
  USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = audit_records.workspace_id))
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = audit_records.workspace_id));

-- Leases: visible exactly when their workspace is (like workspace contents).
ALTER TABLE supabash.leases ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.leases FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.leases TO supabash_owner
  USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = leases.workspace_id))
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = leases.workspace_id));

-- Notes on revisions: visible exactly when their workspace is (like workspace contents).
ALTER TABLE supabash.revision_notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.revision_notes FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.revision_notes TO supabash_owner
  USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = revision_notes.workspace_id))
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.id = revision_notes.workspace_id));

-- Bodies: visible exactly when a workspace of their store is.
ALTER TABLE supabash.bodies ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.bodies FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.bodies TO supabash_owner
  USING (EXISTS (SELECT FROM supabash.workspaces w WHERE w.store_id = bodies.workspace_id))
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.store_id = bodies.workspace_id));

-- Usage: the owner's (all of their workspaces, for the per-owner quota), also within a call a
-- grant scoped to one of them (the sum of sizes is all such a call reads). Written only for a
-- visible workspace.
ALTER TABLE supabash.usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.usage FORCE ROW LEVEL SECURITY;
CREATE POLICY owner ON supabash.usage TO supabash_owner
  USING (owner_id = (SELECT supabash.request_owner())
         OR owner_id = (SELECT supabash._scope_owner())::uuid)
  WITH CHECK (EXISTS (SELECT FROM supabash.workspaces w WHERE w.store_id = usage.workspace_id));

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
  USING ((SELECT supabash.request_role()) = 'service_role')
  WITH CHECK ((SELECT supabash.request_role()) = 'service_role');
CREATE POLICY exchange ON supabash.grants TO supabash_owner
  USING ((SELECT supabash.request_role()) = 'service_role')
  WITH CHECK ((SELECT supabash.request_role()) = 'service_role');
-- Storage capability nonces: spent by the host's service_role only.
ALTER TABLE supabash.storage_nonces ENABLE ROW LEVEL SECURITY;
ALTER TABLE supabash.storage_nonces FORCE ROW LEVEL SECURITY;
CREATE POLICY spend ON supabash.storage_nonces TO supabash_owner
  USING ((SELECT supabash.request_role()) = 'service_role')
  WITH CHECK ((SELECT supabash.request_role()) = 'service_role');


-- Supabase Realtime's policy on realtime.messages (only where that table exists) is in
-- sql/rpc.sql, after the function it asks, supabash_may_watch.
