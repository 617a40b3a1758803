//! Checks that repair nothing: an installation ([`doctor`]) and a workspace's stored history,
//! with its orphan bodies and idle workspaces ([`verify`]: `verify` and `gc`).

pub mod doctor;
pub mod verify;
