//! The scope of one native call: a workspace (and its owner and fork family, once known) the
//! call may see beyond the caller's own, opened by a delegated grant. Only this native code sets it, for the
//! duration of one `supabash._call` (see `supabash._scope_workspace()` in the policies), so no
//! SQL a caller could send can widen it.

use std::cell::{Cell, RefCell};

/// The workspace (and owner, once known) a native call may see beyond the caller's own.
struct Scope {
    workspace: String,
    owner: Option<String>,
    store: Option<String>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
    /// The caller (`identity::owner` of the claims) once a native call has asked for it; reset
    /// when a call starts and ends, so it never outlives the claims it was read from.
    static CALLER: Cell<Option<Option<pgrx::Uuid>>> = const { Cell::new(None) };
    /// Whether a native call is running (between a [`Guard`]'s creation and its drop).
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Clears the scope when dropped: created at the start of every `supabash._call`, so a scope
/// never outlives the call that set it, even when the call fails.
pub struct Guard;

impl Guard {
    pub fn new() -> Self {
        clear();
        CALLER.set(None);
        IN_CALL.set(true);
        Guard
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        clear();
        CALLER.set(None);
        IN_CALL.set(false);
    }
}

/// The owner whose rows the running statement may see (`supabash._row_owner()`, which every
/// policy of the 0.7.0 schema compares `owner_id` with, and the default of that column): inside
/// a delegated scope the scoped workspace's owner (none while it is being looked up), otherwise
/// the caller. Within a native call the claims are read once; outside one (a SQL function of
/// the extension reading a table) on every call.
pub fn row_owner() -> Option<pgrx::Uuid> {
    if let Some(scoped) = SCOPE.with(|s| s.borrow().as_ref().map(|s| s.owner.clone())) {
        return scoped.as_deref().and_then(parse_uuid);
    }
    if !IN_CALL.get() {
        return caller();
    }
    CALLER.get().unwrap_or_else(|| {
        let owner = caller();
        CALLER.set(Some(owner));
        owner
    })
}

/// The verified caller, read from the request's claims.
fn caller() -> Option<pgrx::Uuid> {
    crate::pg::identity::owner(&crate::pg::identity::claims())
}

/// A UUID in any form `uuid` parses (scope owners come from the workspace rows' text form).
fn parse_uuid(text: &str) -> Option<pgrx::Uuid> {
    uuid::Uuid::parse_str(text)
        .ok()
        .map(|u| pgrx::Uuid::from_bytes(*u.as_bytes()))
}

/// Lets this call see `workspace` (of `owner`, or of anyone while the owner is being looked up).
pub fn set(workspace: &str, owner: Option<&str>) {
    SCOPE.with(|s| {
        *s.borrow_mut() = Some(Scope {
            workspace: workspace.to_owned(),
            owner: owner.map(str::to_owned),
            store: None,
        })
    });
}

/// Widens the scope to the scoped workspace's fork family (its body store): what a fork reads
/// from and what a purge must see. Does nothing without a scope.
pub fn widen_to_store(store: &str) {
    SCOPE.with(|s| {
        if let Some(scope) = s.borrow_mut().as_mut() {
            scope.store = Some(store.to_owned());
        }
    });
}

/// Ends the scope early (the guard ends it at the latest).
pub fn clear() {
    SCOPE.with(|s| s.borrow_mut().take());
}

/// The scoped workspace id (for the row-level security policies), or NULL.
pub fn workspace() -> Option<String> {
    SCOPE.with(|s| s.borrow().as_ref().map(|s| s.workspace.clone()))
}

/// The scoped workspace's owner (for the row-level security policies), or NULL.
pub fn owner() -> Option<String> {
    SCOPE.with(|s| s.borrow().as_ref().and_then(|s| s.owner.clone()))
}

/// The scoped workspace's body store (for the row-level security policies), or NULL.
pub fn store() -> Option<String> {
    SCOPE.with(|s| s.borrow().as_ref().and_then(|s| s.store.clone()))
}
