//! The RPCs, one file per family, and the one table that routes them. Each public function
//! `supabash_<op>` is a SQL wrapper (sql/rpc.sql) that calls `supabash._write` / `_read` /
//! `_call` with `<op>` and its arguments; [`dispatch`] decodes them into the RPC's request
//! type (from core's contract), runs its handler with the [`Call`] context, and encodes the
//! answer. Adding an RPC is one row of [`HANDLERS`]' table (CONTRIBUTING.md has the recipe).

pub mod audit;
pub mod capability;
pub mod checkpoint;
pub mod commit;
pub mod diff;
pub mod documents;
pub mod files;
pub mod garbage;
pub mod grep;
pub mod grep_engine;
pub mod lease;
pub mod link_check;
pub mod listing;
pub mod manifest_changes;
pub mod notes;
pub mod path_history;
pub mod pinned;
pub mod purge;
pub mod read;
pub mod rebase;
pub mod redact;
pub mod storage_nonce;
pub mod tree_shape;
pub mod verify;
pub mod watch;
pub mod workspaces;

use crate::pg::fail::{invalid, Fail, Outcome};
use crate::pg::schema::Schema;
use crate::pg::{args, budget, clip, scope};
use serde_json::Value;
use supabash_core::rpc::audit as au;
use supabash_core::rpc::listing::ListDirectory;
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::verify::{Garbage, Verify};
use supabash_core::rpc::Rpc;
use supabash_core::Marker;

/// What one RPC call runs with, computed once at its start and handed down.
pub struct Call {
    /// What the installed schema has.
    pub schema: Schema,
}

/// Which SQL entry point a call came through.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `supabash._call` / `_write`: any RPC.
    Any,
    /// `supabash._read`: RPCs that do not write.
    ReadsOnly,
}

/// One row of the handler table: runs an RPC on its JSON arguments if `op` names it.
type Route = fn(&Call, Entry, &str, &mut Option<Value>) -> Option<Outcome<String>>;

/// Declares the handler table: one row per native RPC, its request type (whose `NAME` gives
/// the operation name) and its handler.
macro_rules! handlers {
    ($($request:ty => $handler:path),* $(,)?) => {
        /// Every native RPC: the routes [`dispatch`] tries, in order.
        const HANDLERS: &[Route] = &[$(
            |call, entry, op, args| {
                (op_of::<$request>() == op).then(|| serve::<$request, _>(call, entry, args, $handler))
            }
        ),*];

        /// The operation name of every native RPC, in table order (the in-backend tests compare
        /// it with the SQL wrappers).
        #[cfg(any(test, feature = "pg_test"))]
        pub fn operations() -> Vec<&'static str> {
            vec![$(op_of::<$request>()),*]
        }
    };
}

handlers! {
    rq::CreateWorkspace => workspaces::create_workspace,
    rq::Fork => workspaces::fork,
    rq::DeleteWorkspace => workspaces::delete_workspace,
    rq::ListWorkspaces => workspaces::list_workspaces,
    rq::LoadManifest => read::load_manifest,
    rq::LoadDocument => read::load_document,
    rq::LoadSnapshot => read::load_snapshot,
    rq::LoadDocuments => documents::load_documents,
    rq::LoadRevision => read::load_revision,
    rq::History => read::history,
    ListDirectory => listing::list_directory,
    rq::Commit => commit::commit,
    rq::Diff => diff::diff,
    rq::Checkpoint => checkpoint::checkpoint,
    rq::Checkpoints => checkpoint::checkpoints,
    rq::DeleteCheckpoint => checkpoint::delete_checkpoint,
    rq::Purge => purge::purge,
    rq::Redact => redact::redact,
    rq::ExchangeCapability => capability::exchange,
    rq::AcquireLease => lease::acquire,
    rq::RenewLease => lease::renew,
    rq::ReleaseLease => lease::release,
    rq::LeaseInfo => lease::lease,
    au::RecordDiscarded => audit::record_discarded,
    au::Audit => audit::audit,
    Verify => verify::verify,
    Garbage => garbage::garbage,
    supabash_core::rpc::path_history::PathHistory => path_history::path_history,
    supabash_core::rpc::grep::Grep => grep::grep,
    rq::SpendStorageNonce => storage_nonce::spend_storage_nonce,
    supabash_core::rpc::notes::AddNote => notes::add_note,
    supabash_core::rpc::notes::Notes => notes::notes,
    supabash_core::rpc::watch::MayWatch => watch::may_watch,
    supabash_core::rpc::manifest_changes::ManifestChangesSince => manifest_changes::manifest_changes,
}

/// The operation name of RPC `R`: its SQL name without `supabash_`.
fn op_of<R: Rpc>() -> &'static str {
    R::NAME.strip_prefix("supabash_").unwrap_or(R::NAME)
}

/// Runs RPC `op` on `args` and answers its JSON text. The call's scope is cleared when it ends
/// and its decode budget starts here; an installed schema outside the support window is
/// refused before anything runs. The call's statements are planned with `jit = off`: they are
/// index lookups whose cost estimates can still pass `jit_above_cost` (the body chain of a
/// 1,000-file snapshot is estimated at 158,000), and compiling them took 150 ms of a 10 ms
/// statement.
pub fn dispatch(entry: Entry, op: &str, args: Value) -> Outcome<String> {
    let _scope = scope::Guard::new();
    let _no_jit = crate::pg::db::Setting::set(c"jit", c"off");
    budget::start();
    crate::pg::heap::keep();
    #[cfg(feature = "pg_test")]
    if op == "panic" {
        panic!("deliberate panic for tests");
    }
    let call = Call {
        schema: Schema::installed()?,
    };
    let mut args = Some(args);
    HANDLERS
        .iter()
        .find_map(|route| route(&call, entry, op, &mut args))
        .unwrap_or_else(|| Err(invalid(format!("unknown operation {:?}", clip(op)))))
}

/// A handler's answer as JSON text.
pub trait AnswerText {
    fn into_text(self) -> String;
}

impl<A: serde::Serialize> AnswerText for A {
    fn into_text(self) -> String {
        serde_json::to_string(&self).expect("answers serialise")
    }
}

/// An answer a handler wrote as JSON text itself, as it read its rows (the serde text of its
/// RPC's answer type: see `supabash_core::rpc::manifest_text`).
pub struct Text(pub String);

impl AnswerText for Text {
    fn into_text(self) -> String {
        self.0
    }
}

/// Decodes the request of RPC `R`, refuses a write where only reads may run, runs `handler`
/// and encodes its answer as JSON text.
fn serve<R: Rpc, A: AnswerText>(
    call: &Call,
    entry: Entry,
    args: &mut Option<Value>,
    handler: fn(&Call, R) -> Outcome<A>,
) -> Outcome<String> {
    if R::MUTATES && entry == Entry::ReadsOnly {
        return Err(invalid(format!(
            "{} writes: supabash._read serves reads only",
            R::NAME
        )));
    }
    if R::MUTATES && read_only() {
        return Err(Fail::new(
            Marker::ReadOnly,
            format!(
                "{} writes, and this server is a hot standby (read replica) or the transaction is read-only: send it to the primary",
                R::NAME
            ),
        ));
    }
    let request = args::decode::<R>(args.take().unwrap_or(Value::Null))?;
    Ok(handler(call, request)?.into_text())
}

/// Whether this transaction cannot write: the server is in recovery (a hot standby) or the
/// transaction was declared read-only.
fn read_only() -> bool {
    // SAFETY: RecoveryInProgress reads shared state and may be called in any backend;
    // XactReadOnly is the backend's own flag, read on the backend's only thread.
    unsafe { pgrx::pg_sys::RecoveryInProgress() || pgrx::pg_sys::XactReadOnly }
}
