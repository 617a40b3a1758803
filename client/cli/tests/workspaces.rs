//! `supabash workspaces`, `fork` and `delete-workspace`: the built binary against a real
//! PostgreSQL with the extension, over a direct connection acting as a user.

use serde_json::Value;
use std::process::{Command, Output};
use supabash_tests::client::{cluster, new_user, workspace_with, Via};

fn supabash(user: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_supabash"))
        .args(args)
        .env("SUPABASH_DSN", cluster().dsn("authenticator"))
        .env("SUPABASH_SUB", user)
        .output()
        .unwrap()
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn fork_list_and_delete_from_the_command_line() {
    let user = new_user();
    let ws = workspace_with(Via::Postgres, &user, &[("/a.md", "a")]).await;
    let head = ws.base_revision().unwrap();
    let forked = json_of(&supabash(
        &user,
        &["fork", "--workspace", ws.id(), "--label", "try 1", "--json"],
    ));
    assert_eq!(forked["forkedFrom"]["workspaceId"], ws.id());
    assert_eq!(forked["forkedFrom"]["revision"], head.as_str());
    let fork_id = forked["workspaceId"].as_str().unwrap().to_owned();
    let created = json_of(&supabash(
        &user,
        &["workspaces", "create", "--label", "fresh", "--json"],
    ));
    assert_eq!(created["headRevision"], Value::Null);
    let plain = supabash(&user, &["workspaces", "create"]);
    assert!(plain.status.success());
    let plain_id = String::from_utf8_lossy(&plain.stdout).trim().to_owned();
    assert_eq!(plain_id.len(), 36, "prints the id alone: {plain_id}");
    let listed = json_of(&supabash(&user, &["workspaces", "--json"]));
    let labels: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["label"])
        .collect();
    assert_eq!(labels.len(), 4, "{listed}");
    for want in [Value::from("try 1"), Value::from("fresh")] {
        assert!(labels.contains(&&want), "{listed}");
    }
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["workspaceId"].as_str())
        .collect();
    assert!(ids.contains(&created["workspaceId"].as_str().unwrap()));
    assert!(ids.contains(&plain_id.as_str()));
    // Without --yes nothing is deleted, and the tool says why.
    let refused = supabash(&user, &["delete-workspace", "--workspace", &fork_id]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--yes"));
    let deleted = json_of(&supabash(
        &user,
        &[
            "delete-workspace",
            "--workspace",
            &fork_id,
            "--yes",
            "--json",
        ],
    ));
    assert_eq!(deleted["workspaceId"], fork_id.as_str());
    let listed = json_of(&supabash(&user, &["workspaces", "--json"]));
    assert_eq!(
        listed.as_array().unwrap().len(),
        3,
        "the fork is gone, the created ones stay"
    );
    // Another user cannot fork it: a permission failure, exit status 4 (docs/cli.md).
    let other = supabash(&new_user(), &["fork", "--workspace", ws.id()]);
    assert_eq!(other.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&other.stderr).contains("WORKSPACE"));
}
