//! How request types are declared: the [`WorkspaceRequest`] trait and the `request!` and
//! `rpc!` macros every request module (`requests`, `audit`, `listing`, `verify`) uses. They
//! live apart from the requests themselves so no request module needs another one for them.

/// A request about one workspace, optionally presenting a delegated grant.
pub trait WorkspaceRequest {
    fn workspace_id(&self) -> &str;
    fn delegated_grant(&self) -> Option<&str>;
}

/// A request type: `#[derive]`s and serde attributes every request has, and its [`Rpc`] facts
/// (through `rpc!`).
///
/// [`Rpc`]: super::Rpc
macro_rules! request {
    ($name:literal, mutates = $m:literal, $answer:ty $(, $ws:ident)?;
     $(#[$attr:meta])* pub struct $req:ident { $($body:tt)* }) => {
        $(#[$attr])*
        #[skip_serializing_none]
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $req { $($body)* }
        rpc!($req, $name, mutates = $m, $answer $(, $ws)?);
    };
}

/// The [`Rpc`] facts of a request type and, with `workspace`, its [`WorkspaceRequest`] impl
/// (from its `workspace_id` and `delegated_grant` fields).
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
    ($req:ident, $name:literal, mutates = $m:literal, $answer:ty, workspace) => {
        rpc!($req, $name, mutates = $m, $answer);
        impl WorkspaceRequest for $req {
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
