//! How request types are declared: the [`WorkspaceRequest`] trait and the `request!` and
//! `rpc!` macros every request module (`requests`, `audit`, `listing`, `verify`) uses. They
//! live apart from the requests themselves so no request module needs another one for them.

/// A request about one workspace, optionally presenting a delegated grant.
pub trait WorkspaceRequest {
    /// The operations a delegated grant must hold one of to make this call: the one
    /// declaration the extension authorises from and the client's delegated handle checks
    /// before calling. Empty: no grant may make it (the owner's alone). A handler that needs
    /// more in some cases (a commit that writes needs `write` too) checks that itself and says
    /// so in its doc.
    const NEEDS: &'static [Operation];
    fn workspace_id(&self) -> &str;
    fn delegated_grant(&self) -> Option<&str>;
}

/// A request type: `#[derive]`s and serde attributes every request has, and its [`Rpc`] facts
/// (through `rpc!`).
///
/// [`Rpc`]: super::Rpc
macro_rules! request {
    ($name:literal, mutates = $m:literal, $answer:ty $(, workspace = [$($op:ident),*])?;
     $(#[$attr:meta])* pub struct $req:ident { $($body:tt)* }) => {
        $(#[$attr])*
        #[skip_serializing_none]
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $req { $($body)* }
        rpc!($req, $name, mutates = $m, $answer $(, workspace = [$($op),*])?);
    };
}

/// The [`Rpc`] facts of a request type and, with `workspace = [..]`, its [`WorkspaceRequest`]
/// impl: the operations a grant needs (one of them), and its `workspace_id` and
/// `delegated_grant` fields.
///
/// [`Rpc`]: super::Rpc
macro_rules! rpc {
    ($req:ident, $name:literal, mutates = $m:literal, $answer:ty) => {
        impl Rpc for $req {
            const NAME: &'static str = $name;
            const MUTATES: bool = $m;
            type Answer = $answer;
        }
    };
    ($req:ident, $name:literal, mutates = $m:literal, $answer:ty,
     workspace = [$($op:ident),*]) => {
        rpc!($req, $name, mutates = $m, $answer);
        impl WorkspaceRequest for $req {
            const NEEDS: &'static [$crate::capability::Operation] =
                &[$($crate::capability::Operation::$op),*];
            fn workspace_id(&self) -> &str {
                &self.workspace_id
            }
            fn delegated_grant(&self) -> Option<&str> {
                self.delegated_grant.as_deref()
            }
        }
    };
}

pub(super) use {request, rpc};

use crate::capability::Operation;
