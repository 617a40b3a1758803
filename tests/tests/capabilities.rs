//! Delegated capabilities under attack.
//!
//! Every RPC is tried as the owner, another user, anon, service_role without a grant, and with
//! grants that are unknown, expired, for another workspace or lacking the operation; every
//! exchange is tried with capabilities that are forged, tampered (sub, workspace, ops, exp),
//! expired, issued in the future, replayed, for another or an unknown workspace, signed with a
//! revoked or rotated-away key, with an EdDSA or `none` header, with a wrong schema version and
//! with every other broken claim; register and revoke are tried by each PostgREST role; every
//! private table is tried directly by each PostgREST role. Each test counts attempts, denials
//! and expected successes, prints them and requires zero leaks. No error (message, detail,
//! hint) and nothing in the server log may contain a token, a grant or a secret.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};
use supabash::capability::{new_nonce, PostgresSigner};
use supabash_core::capability::{b64_encode, Operation, OperationSet};
use supabash_tests::capability::{
    claims_of, forge, forge_hs256, public_key, register, register_with, revoke, server_log,
    with_claims,
};
use supabash_tests::support::{admin, fingerprint, marker};
use supabash_tests::{Caller, Cluster, DbError, SqlRpc};

const ISS: &str = "https://issuer.test";
const AUD: &str = "supabash";
const ORIGIN: &str = "https://project.test";

const INVALID: &str = "SUPABASH_INVALID_CAPABILITY";
const EXPIRED: &str = "SUPABASH_EXPIRED_CAPABILITY";
const DENIED: &str = "SUPABASH_WORKSPACE_DENIED";

const EXCHANGE: &str = "supabash_exchange_capability";

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .expect("unpadded base64url")
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn ops(list: &[Operation]) -> OperationSet {
    OperationSet::new(list.iter().copied()).unwrap()
}

fn all_ops() -> OperationSet {
    ops(&Operation::ALL)
}

/// A registered verifier and a signer holding its private key (`secret`).
struct Verifier {
    kid: String,
    secret: String,
    signer: PostgresSigner,
}

fn verifier(cluster: &Cluster, kid: &str) -> Verifier {
    let secret = register(cluster, kid, ISS, AUD, ORIGIN);
    assert_eq!(
        secret.len(),
        43,
        "32 bytes, unpadded base64url: {}",
        secret.len()
    );
    Verifier {
        kid: kid.to_owned(),
        signer: PostgresSigner::new(kid, &secret, ISS, AUD, ORIGIN).unwrap(),
        secret,
    }
}

/// A verifier with no clock skew and a maximum lifetime of 60 s.
fn strict_verifier(cluster: &Cluster, kid: &str) -> Verifier {
    let secret = register_with(cluster, kid, (ISS, AUD, ORIGIN), 0, 60);
    Verifier {
        kid: kid.to_owned(),
        signer: PostgresSigner::new(kid, &secret, ISS, AUD, ORIGIN).unwrap(),
        secret,
    }
}

/// Texts that must never appear in an error or in the server log.
#[derive(Default)]
struct Secrets(Vec<String>);

impl Secrets {
    fn add(&mut self, s: &str) {
        if s.len() >= 16 {
            self.0.push(s.to_owned());
        }
    }

    /// A token and its signature part.
    fn token(&mut self, t: &str) {
        self.add(t);
        if let Some(sig) = t.rsplit('.').next() {
            self.add(sig);
        }
    }

    fn found_in(&self, text: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|s| text.contains(s.as_str()))
            .map(String::as_str)
    }
}

/// Attempts, denials and expected successes of one test.
#[derive(Default)]
struct Tally {
    attempts: usize,
    denials: usize,
    successes: usize,
    /// Attempts that should have been denied and were not (or not as required).
    leaks: Vec<String>,
    /// Calls that should have succeeded and did not.
    failures: Vec<String>,
    /// Every distinct (message, detail, hint) of an invalid-capability refusal.
    invalid_texts: BTreeSet<String>,
    secrets: Secrets,
}

fn error_text(e: &DbError) -> String {
    format!(
        "{} | {} | {}",
        e.message,
        e.detail.as_deref().unwrap_or(""),
        e.hint.as_deref().unwrap_or("")
    )
}

impl Tally {
    /// Counts an attempt that must fail with 42501 (and `want`, when given).
    fn deny(&mut self, what: &str, r: Result<Value, DbError>, want: Option<&str>) {
        self.deny_as(what, r, "42501", want);
    }

    /// Counts an attempt that must fail with SQLSTATE `code` (and marker `want`, when given).
    fn deny_as(&mut self, what: &str, r: Result<Value, DbError>, code: &str, want: Option<&str>) {
        self.attempts += 1;
        match r {
            Ok(v) => self.leaks.push(format!("{what}: answered {v}")),
            Err(e) => {
                let text = error_text(&e);
                if let Some(s) = self.secrets.found_in(&text) {
                    self.leaks.push(format!(
                        "{what}: the error shows a secret ({} chars)",
                        s.len()
                    ));
                } else if e.code == code && want.is_none_or(|m| marker(&e) == Some(m)) {
                    self.denials += 1;
                    if marker(&e) == Some(INVALID) {
                        self.invalid_texts.insert(text);
                    }
                } else {
                    self.leaks
                        .push(format!("{what}: {e} (expected {code} {want:?})"));
                }
            }
        }
    }

    /// Counts a call that must succeed; returns its answer.
    fn allow(&mut self, what: &str, r: Result<Value, DbError>) -> Option<Value> {
        match r {
            Ok(v) => {
                self.successes += 1;
                Some(v)
            }
            Err(e) => {
                self.failures.push(format!("{what}: {e}"));
                None
            }
        }
    }

    fn finish(&self, what: &str, cluster: &Cluster) {
        eprintln!(
            "{what}: {} attempts, {} denied, {} leaks; {} expected successes, {} failed",
            self.attempts,
            self.denials,
            self.leaks.len(),
            self.successes,
            self.failures.len()
        );
        assert!(
            self.leaks.is_empty(),
            "{what} leaked:\n{}",
            self.leaks.join("\n")
        );
        assert!(
            self.failures.is_empty(),
            "{what}: calls that should succeed failed:\n{}",
            self.failures.join("\n")
        );
        assert_eq!(self.attempts, self.denials, "{what}");
        assert!(self.attempts > 0);
        assert!(
            self.invalid_texts.len() <= 1,
            "invalid capabilities must all read the same: {:#?}",
            self.invalid_texts
        );
        let log = server_log(cluster);
        if !self.invalid_texts.is_empty() {
            assert!(
                log.contains(INVALID),
                "the refusals were logged (else this check is empty)"
            );
        }
        assert!(
            self.secrets.found_in(&log).is_none(),
            "{what}: the server log holds a token, grant or secret"
        );
    }
}

/// A workspace of a fresh owner with two revisions and a checkpoint.
struct Ws {
    id: String,
    owner: Caller,
    r1: String,
}

async fn workspace(rest: &mut SqlRpc) -> Ws {
    let owner = Caller::new_user();
    let id = rest.create_workspace(&owner).await;
    let r1 = rest
        .commit_as(
            &owner,
            &id,
            None,
            json!([
                {"op": "upsert", "path": "/secret.md", "text": "owner only"},
                {"op": "upsert", "path": "/b.md", "text": "b"}]),
        )
        .await;
    rest.commit_as(
        &owner,
        &id,
        Some(&r1),
        json!([{"op": "upsert", "path": "/secret.md", "text": "owner only, v2"}]),
    )
    .await;
    Ws { id, owner, r1 }
}

/// The head revision and a checkpoint id (made when none is left) of `ws`, as the owner sees
/// them now.
async fn current(rest: &mut SqlRpc, ws: &Ws) -> (String, String) {
    let head = rest
        .call(
            &ws.owner,
            "supabash_load_manifest",
            json!({ "workspace_id": ws.id }),
        )
        .await
        .unwrap()["revision"]
        .as_str()
        .unwrap()
        .to_owned();
    let cps = rest
        .call(
            &ws.owner,
            "supabash_checkpoints",
            json!({ "workspace_id": ws.id }),
        )
        .await
        .unwrap();
    let cp = match cps.as_array().and_then(|a| a.first()) {
        Some(c) => c["checkpointId"].as_str().unwrap().to_owned(),
        None => rest
            .call(
                &ws.owner,
                "supabash_checkpoint",
                json!({ "workspace_id": ws.id, "revision": ws.r1 }),
            )
            .await
            .unwrap()["checkpointId"]
            .as_str()
            .unwrap()
            .to_owned(),
    };
    (head, cp)
}

/// One RPC call with valid arguments and the operations any one of which allows it.
struct Call {
    rpc: &'static str,
    args: Value,
    needs: &'static [Operation],
}

impl Call {
    /// Whether a grant for `set` may make this call: one of `needs`, for a commit of
    /// content (every commit in [`calls`]) `write` as well, and for a read pinned at a
    /// revision older than the grant (`supabash_load_document` at `r1`) `history` as well.
    fn allowed(&self, set: &OperationSet) -> bool {
        let older = self.rpc == "supabash_load_document" && self.args["revision"].is_string();
        self.needs.iter().any(|op| set.contains(*op))
            && (self.rpc != "supabash_commit" || set.contains(Operation::Write))
            && (!older || set.contains(Operation::History))
    }
}

/// Every RPC that takes a grant, with valid arguments for `ws` at `head` with checkpoint `cp`
/// (each would succeed as the owner). Purge is a dry run so that history stays for the rest.
fn calls(ws: &Ws, head: &str, cp: &str) -> Vec<Call> {
    use Operation::*;
    let id = &ws.id;
    let c = |rpc, args, needs| Call { rpc, args, needs };
    vec![
        c(
            "supabash_load_manifest",
            json!({ "workspace_id": id }),
            &[Read],
        ),
        c(
            "supabash_load_document",
            json!({ "workspace_id": id, "path": "/secret.md" }),
            &[Read],
        ),
        c(
            "supabash_load_documents",
            json!({ "workspace_id": id, "paths": ["/secret.md"] }),
            &[Read],
        ),
        c(
            "supabash_load_document",
            json!({ "workspace_id": id, "path": "/secret.md", "revision": ws.r1 }),
            &[Read],
        ),
        c(
            "supabash_load_snapshot",
            json!({ "workspace_id": id }),
            &[Read],
        ),
        c(
            "supabash_list_directory",
            json!({ "workspace_id": id, "path": "/", "totals": true }),
            &[Read],
        ),
        c(
            "supabash_load_revision",
            json!({ "workspace_id": id, "revision": ws.r1 }),
            &[History, Restore],
        ),
        c(
            "supabash_history",
            json!({ "workspace_id": id }),
            &[History],
        ),
        c(
            "supabash_grep",
            json!({ "workspace_id": id, "pattern": "owner" }),
            &[Read],
        ),
        c(
            "supabash_manifest_changes",
            json!({ "workspace_id": id, "since": ws.r1 }),
            &[Read],
        ),
        c(
            "supabash_path_history",
            json!({ "workspace_id": id, "path": "/secret.md", "follow_moves": true }),
            &[History],
        ),
        c(
            "supabash_diff",
            json!({ "workspace_id": id, "from_ref": {"revision": ws.r1}, "to_ref": {"head": true} }),
            &[History],
        ),
        c(
            "supabash_diff",
            json!({ "workspace_id": id, "from_ref": {"head": true}, "to_ref": {"staged": true},
                        "staged": [] }),
            &[History],
        ),
        c(
            "supabash_commit",
            json!({ "workspace_id": id, "actor": "intruder", "base_revision": head,
                        "changes": [{"op": "upsert", "path": "/written.md", "text": new_nonce()}] }),
            &[Commit],
        ),
        // Rebasing onto the head needs nothing beyond commit (and write for content).
        c(
            "supabash_commit",
            json!({ "workspace_id": id, "actor": "intruder", "base_revision": ws.r1, "rebase": true,
                    "changes": [{"op": "upsert", "path": format!("/rebased-{}.md", new_nonce()),
                                 "text": new_nonce()}] }),
            &[Commit],
        ),
        c(
            "supabash_checkpoint",
            json!({ "workspace_id": id, "label": "by a test" }),
            &[Checkpoint],
        ),
        c(
            "supabash_checkpoints",
            json!({ "workspace_id": id }),
            &[Checkpoint],
        ),
        c(
            "supabash_delete_checkpoint",
            json!({ "workspace_id": id, "checkpoint_id": cp }),
            &[Checkpoint],
        ),
        c(
            "supabash_purge",
            json!({ "workspace_id": id, "keep_revisions": 0, "dry_run": true }),
            &[Purge],
        ),
        c(
            "supabash_lease",
            json!({ "workspace_id": id }),
            &[Read, Commit],
        ),
        c(
            "supabash_acquire_lease",
            json!({ "workspace_id": id, "holder": LEASE_HOLDER, "ttl_seconds": 30,
                    "token": LIVE_LEASE }),
            &[Commit],
        ),
        c(
            "supabash_renew_lease",
            json!({ "workspace_id": id, "token": LIVE_LEASE, "ttl_seconds": 30 }),
            &[Commit],
        ),
        c(
            "supabash_release_lease",
            json!({ "workspace_id": id, "token": LIVE_LEASE }),
            &[Commit],
        ),
        c(
            "supabash_fork",
            json!({ "workspace_id": id, "actor": "forker", "label": "by a test" }),
            &[Fork],
        ),
        c("supabash_verify", json!({ "workspace_id": id }), &[History]),
        c(
            "supabash_redact",
            json!({ "workspace_id": id, "paths": ["/secret.md"], "dry_run": true }),
            &[Redact],
        ),
        c("supabash_audit", json!({ "workspace_id": id }), &[History]),
        c(
            "supabash_add_note",
            json!({ "workspace_id": id, "revision": head, "key": "verdict",
                    "value": {"pass": true}, "actor": "reviewer" }),
            &[Commit],
        ),
        c(
            "supabash_notes",
            json!({ "workspace_id": id, "revision": head }),
            &[History],
        ),
        c(
            "supabash_record_discarded",
            json!({ "workspace_id": id, "actor": "agent", "actions": [{
                "record_id": "00000000-0000-4000-8000-0000000000a1",
                "session_id": "00000000-0000-4000-8000-0000000000a2",
                "sequence": 0, "at_ms": 0, "kind": "bash", "tool": "bash",
                "outcome": {"status": "ok"}, "duration_ms": 0 }] }),
            &[Write, Commit],
        ),
    ]
}

/// The lease holder of [`calls`], and the token [`call_now`] replaces with its live lease.
const LEASE_HOLDER: &str = "matrix-host";
const LIVE_LEASE: &str = "00000000-0000-4000-8000-00000000cafe";

/// The token of a live lease on `ws`, taken by the owner as [`LEASE_HOLDER`] (a fresh one).
/// A lease a previous call left live is cleared first: only its token re-acquires it.
async fn live_lease(rest: &mut SqlRpc, ws: &Ws) -> String {
    admin(Cluster::shared())
        .await
        .execute(
            "DELETE FROM supabash.leases WHERE workspace_id = $1::text::uuid",
            &[&ws.id],
        )
        .await
        .unwrap();
    let args = json!({ "workspace_id": ws.id, "holder": LEASE_HOLDER, "ttl_seconds": 30 });
    let lease = rest
        .call(&ws.owner, "supabash_acquire_lease", args)
        .await
        .unwrap();
    lease["token"].as_str().unwrap().to_owned()
}

/// Call `i` of [`calls`] with the current head and checkpoint of `ws`.
/// A lease call gets the token of a live lease; a commit runs with no lease left (a lease call
/// the grant was refused may have left one).
async fn call_now(rest: &mut SqlRpc, ws: &Ws, i: usize) -> Call {
    let (head, cp) = current(rest, ws).await;
    let mut call = calls(ws, &head, &cp).swap_remove(i);
    if call.args.get("token").is_some() {
        call.args["token"] = json!(live_lease(rest, ws).await);
    } else if call.rpc == "supabash_commit" {
        let token = live_lease(rest, ws).await;
        let args = json!({ "workspace_id": ws.id, "token": token });
        rest.call(&ws.owner, "supabash_release_lease", args)
            .await
            .unwrap();
    }
    call
}

fn with_grant(args: &Value, grant: &str) -> Value {
    let mut a = args.clone();
    a["delegated_grant"] = json!(grant);
    a
}

async fn exchange(rest: &mut SqlRpc, caller: &Caller, token: &str) -> Result<Value, DbError> {
    rest.call(caller, EXCHANGE, json!({ "capability": token }))
        .await
}

/// Exchanges a fresh capability as service_role and returns the grant.
async fn grant(
    rest: &mut SqlRpc,
    tally: &mut Tally,
    v: &Verifier,
    ws: &str,
    operations: &OperationSet,
    cid: Option<&str>,
) -> String {
    let token = v.signer.mint("job-7", ws, operations, 300, cid).unwrap();
    tally.secrets.token(&token);
    let answer = exchange(rest, &Caller::Service, &token)
        .await
        .unwrap_or_else(|e| panic!("a valid capability is exchanged: {e}"));
    let g = answer["delegatedGrant"].as_str().unwrap().to_owned();
    tally.secrets.add(&g);
    g
}

#[tokio::test]
async fn each_operation_opens_exactly_its_rpcs() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "ops-matrix");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let mut sets: Vec<(String, OperationSet)> = Operation::ALL
        .iter()
        .map(|op| (op.to_string(), ops(&[*op])))
        .collect();
    sets.push(("every operation".into(), all_ops()));
    // The suite covers every RPC that takes a grant.
    let admin = admin(cluster).await;
    let with_grant_arg: BTreeSet<String> = admin
        .query(
            "SELECT p.proname::text FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
              AND p.proname LIKE 'supabash\\_%' AND 'delegated_grant' = ANY (p.proargnames)",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let covered: BTreeSet<String> = calls(&ws, "", "")
        .iter()
        .map(|c| c.rpc.to_owned())
        .collect();
    assert_eq!(
        with_grant_arg, covered,
        "RPCs taking a grant vs. RPCs tried"
    );
    for (name, set) in sets {
        let g = grant(&mut rest, &mut tally, &v, &ws.id, &set, None).await;
        for i in 0..calls(&ws, "", "").len() {
            // Each call sees the state the previous successful one left.
            let call = call_now(&mut rest, &ws, i).await;
            let what = format!("grant for {name} → {}", call.rpc);
            let r = rest
                .call(&Caller::Service, call.rpc, with_grant(&call.args, &g))
                .await;
            if call.allowed(&set) {
                tally.allow(&what, r);
            } else {
                tally.deny(&what, r, Some(DENIED));
            }
        }
    }
    // The owner, without a grant, reaches every RPC.
    for i in 0..calls(&ws, "", "").len() {
        let call = call_now(&mut rest, &ws, i).await;
        let r = rest.call(&ws.owner, call.rpc, call.args).await;
        tally.allow(&format!("owner → {}", call.rpc), r);
    }
    tally.finish("operations × RPCs", cluster);
}

/// `read` reads the head and the revisions that were the head at the grant's exchange or
/// later; an older revision needs `history`, however it is named (an id or a time) and
/// whichever pinned read names it. A job's base stays readable when others commit.
#[tokio::test]
async fn an_older_revision_needs_history() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "older-revisions");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let (r2, _) = current(&mut rest, &ws).await;
    // r1's successor was committed before the grants below, so r1 predates them; r1's own
    // time names it as a point in time.
    let r1_time = rest
        .call(
            &ws.owner,
            "supabash_history",
            json!({ "workspace_id": ws.id }),
        )
        .await
        .unwrap()["records"][0]["committedAt"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::Read]),
        None,
    )
    .await;
    let both = ops(&[Operation::Read, Operation::History]);
    let history = grant(&mut rest, &mut tally, &v, &ws.id, &both, None).await;
    let r3 = rest
        .commit_as(
            &ws.owner,
            &ws.id,
            Some(&r2),
            json!([{"op": "upsert", "path": "/b.md", "text": "b, v3"}]),
        )
        .await;
    let id = &ws.id;
    let at = |rev: &str| -> Vec<(&'static str, Value)> {
        vec![
            (
                "supabash_load_manifest",
                json!({ "workspace_id": id, "revision": rev }),
            ),
            (
                "supabash_load_snapshot",
                json!({ "workspace_id": id, "revision": rev }),
            ),
            (
                "supabash_load_document",
                json!({ "workspace_id": id, "path": "/b.md", "revision": rev }),
            ),
            (
                "supabash_load_documents",
                json!({ "workspace_id": id, "paths": ["/b.md"], "revision": rev }),
            ),
            (
                "supabash_list_directory",
                json!({ "workspace_id": id, "path": "/", "revision": rev }),
            ),
            (
                "supabash_grep",
                json!({ "workspace_id": id, "pattern": "b", "revision": rev }),
            ),
        ]
    };
    // r1 named by its time is refused like r1's id (load_documents takes ids only).
    let mut older = at(&ws.r1);
    older.extend(
        at(&r1_time)
            .into_iter()
            .filter(|(rpc, _)| *rpc != "supabash_load_documents"),
    );
    for (rpc, args) in &older {
        let what = format!("read-only grant → {rpc} at {}", args["revision"]);
        tally.deny(
            &what,
            rest.call(&Caller::Service, rpc, with_grant(args, &read))
                .await,
            Some(DENIED),
        );
        let what = format!("read+history grant → {rpc} at {}", args["revision"]);
        tally.allow(
            &what,
            rest.call(&Caller::Service, rpc, with_grant(args, &history))
                .await,
        );
    }
    // r2 was the head at the exchange and r3 is the head now: both read with `read` alone.
    for rev in [&r2, &r3] {
        for (rpc, args) in at(rev) {
            let what = format!("read-only grant → {rpc} at {rev}");
            tally.allow(
                &what,
                rest.call(&Caller::Service, rpc, with_grant(&args, &read))
                    .await,
            );
        }
    }
    // What changed since r1 is not told to a grant that may not read r1; since r2 it is.
    for (since, complete) in [(&ws.r1, false), (&r2, true)] {
        let args = json!({ "workspace_id": id, "since": since, "delegated_grant": read });
        let answer = tally
            .allow(
                &format!("read-only grant → supabash_manifest_changes since {since}"),
                rest.call(&Caller::Service, "supabash_manifest_changes", args)
                    .await,
            )
            .unwrap_or_default();
        assert_eq!(
            answer["complete"],
            json!(complete),
            "since {since}: {answer}"
        );
    }
    tally.finish("older revisions × grants", cluster);
}

#[tokio::test]
async fn every_rpc_refuses_every_identity_but_the_owner_and_a_valid_grant() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "identities");
    let a = workspace(&mut rest).await;
    let b = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let g_a = grant(&mut rest, &mut tally, &v, &a.id, &all_ops(), None).await;
    let g_b = grant(&mut rest, &mut tally, &v, &b.id, &all_ops(), None).await;
    // A grant that expires two seconds from now (a verifier without clock skew).
    let strict = strict_verifier(cluster, "identities-strict");
    tally.secrets.add(&strict.secret);
    let t = now();
    let claims = strict
        .signer
        .claims("job-7", &a.id, &all_ops(), t - 10, 12, None);
    let short = strict.signer.sign(&claims).unwrap();
    tally.secrets.token(&short);
    let g_short = exchange(&mut rest, &Caller::Service, &short).await.unwrap()["delegatedGrant"]
        .as_str()
        .unwrap()
        .to_owned();
    tally.secrets.add(&g_short);
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    let unknown = b64_encode(&[9u8; 32]);
    let owner_sub = match &a.owner {
        Caller::User(s) => s.clone(),
        _ => unreachable!(),
    };
    let other = Caller::new_user();
    // (who, caller, grant, the marker required with 42501: None = any)
    let intruders: Vec<(&str, Caller, Option<&str>, Option<&str>)> = vec![
        (
            "service_role without a grant",
            Caller::Service,
            None,
            Some(DENIED),
        ),
        (
            "service_role with an unknown grant",
            Caller::Service,
            Some(&unknown),
            Some(DENIED),
        ),
        (
            "service_role with another workspace's grant",
            Caller::Service,
            Some(&g_b),
            Some(DENIED),
        ),
        (
            "service_role with an expired grant",
            Caller::Service,
            Some(&g_short),
            Some(DENIED),
        ),
        (
            "the owner passing a grant",
            a.owner.clone(),
            Some(&g_a),
            Some(DENIED),
        ),
        ("another user", other.clone(), None, None),
        (
            "another user passing the grant",
            other.clone(),
            Some(&g_a),
            Some(DENIED),
        ),
        ("anon", Caller::Anon, None, None),
        ("anon with the grant", Caller::Anon, Some(&g_a), None),
        (
            "authenticator (no SET ROLE) with the grant",
            Caller::Raw {
                role: None,
                claims: json!({ "role": "service_role" }),
            },
            Some(&g_a),
            None,
        ),
        (
            "service_role claims under authenticated with the grant",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: json!({ "role": "service_role", "sub": owner_sub }),
            },
            Some(&g_a),
            None,
        ),
        (
            "the owner's claims under service_role with the grant",
            Caller::Raw {
                role: Some("service_role".into()),
                claims: json!({ "role": "authenticated", "sub": owner_sub }),
            },
            Some(&g_a),
            None,
        ),
    ];
    let (head, cp) = current(&mut rest, &a).await;
    let before = fingerprint(&admin, &a.id).await;
    for (who, caller, g, want) in &intruders {
        for call in calls(&a, &head, &cp) {
            let args = match g {
                Some(g) => with_grant(&call.args, g),
                None => call.args.clone(),
            };
            let what = format!("{who} → {} {}", call.rpc, call.args);
            let r = rest.call(caller, call.rpc, args).await;
            tally.deny(&what, r, *want);
            assert!(rest.alive().await, "{what}: connection lost");
        }
        // A signed-in user may create a workspace of their own: that is not access.
        if !matches!(caller, Caller::User(_)) {
            let r = rest
                .call(caller, "supabash_create_workspace", json!({}))
                .await;
            tally.deny(&format!("{who} → supabash_create_workspace"), r, None);
            let r = rest
                .call(
                    caller,
                    "supabash_create_workspace",
                    json!({ "files_only": true }),
                )
                .await;
            tally.deny(
                &format!("{who} → supabash_create_workspace files_only"),
                r,
                None,
            );
        }
    }
    // An empty grant is a malformed argument.
    for call in calls(&a, &head, &cp) {
        let r = rest
            .call(&Caller::Service, call.rpc, with_grant(&call.args, ""))
            .await;
        let what = format!("service_role with an empty grant → {}", call.rpc);
        tally.deny_as(&what, r, "22023", Some("SUPABASH_INVALID_ARGUMENT"));
    }
    assert_eq!(
        fingerprint(&admin, &a.id).await,
        before,
        "an intruder changed the owner's data"
    );
    // The owner and the valid grant reach everything.
    for (who, caller, g) in [
        ("owner", a.owner.clone(), None),
        ("service_role with the grant", Caller::Service, Some(&g_a)),
    ] {
        for i in 0..calls(&a, "", "").len() {
            let call = call_now(&mut rest, &a, i).await;
            let args = match g {
                Some(g) => with_grant(&call.args, g),
                None => call.args,
            };
            let r = rest.call(&caller, call.rpc, args).await;
            tally.allow(&format!("{who} → {}", call.rpc), r);
        }
    }
    tally.finish("RPCs by identity", cluster);
}

#[tokio::test]
async fn broken_capabilities_are_refused_at_the_exchange() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "exchange");
    let ws = workspace(&mut rest).await;
    let other = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let read_commit = ops(&[Operation::Read, Operation::Commit]);
    let t = now();
    let fresh = |iat: i64, life: i64| -> Value {
        v.signer
            .claims("job-7", &ws.id, &read_commit, iat, life, Some("cid-1"))
            .to_json()
    };
    let header = json!({ "alg": "EdDSA", "kid": v.kid, "typ": "JWT" });
    let signed = |claims: &Value| forge(&v.secret, &header, claims);
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut c = fresh(t, 300);
        f(&mut c);
        signed(&c)
    };

    // A valid token offered by callers other than service_role: refused, nonce not spent.
    let valid = v
        .signer
        .mint("job-7", &ws.id, &read_commit, 300, None)
        .unwrap();
    tally.secrets.token(&valid);
    let owner_sub = match &ws.owner {
        Caller::User(s) => s.clone(),
        _ => unreachable!(),
    };
    for (who, caller) in [
        ("anon", Caller::Anon),
        ("the owner", ws.owner.clone()),
        ("another user", Caller::new_user()),
        (
            "authenticator",
            Caller::Raw {
                role: None,
                claims: json!({ "role": "service_role" }),
            },
        ),
        (
            "service_role claims under authenticated",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: json!({ "role": "service_role", "sub": owner_sub }),
            },
        ),
    ] {
        let r = exchange(&mut rest, &caller, &valid).await;
        tally.deny(&format!("{who} exchanges a valid capability"), r, None);
    }
    let answer = tally
        .allow(
            "service_role exchanges the capability the others could not",
            exchange(&mut rest, &Caller::Service, &valid).await,
        )
        .expect("exchanged");
    tally
        .secrets
        .add(answer["delegatedGrant"].as_str().unwrap_or_default());
    assert_eq!(answer["workspaceId"], json!(ws.id));
    assert_eq!(answer["actorSubject"], json!("job-7"));
    let granted: BTreeSet<&str> = answer["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert_eq!(granted, BTreeSet::from(["commit", "read"]));
    assert_eq!(answer["correlationId"], Value::Null);
    let grant = answer["delegatedGrant"].as_str().unwrap();
    assert_eq!(grant.len(), 43, "32 random bytes, unpadded base64url");
    assert!(answer["expiresAt"].as_str().unwrap().ends_with('Z'));

    // Within the clock skew (60 s) is accepted.
    let early = edit(&|c| {
        c["iat"] = json!(t + 30);
        c["exp"] = json!(t + 300);
    });
    tally.secrets.token(&early);
    tally.allow(
        "issued 30 s ahead (within skew)",
        exchange(&mut rest, &Caller::Service, &early).await,
    );

    // A verifier's own skew and maximum lifetime apply to its tokens.
    let strict = strict_verifier(cluster, "exchange-strict");
    tally.secrets.add(&strict.secret);
    let strict_token = |iat: i64, life: i64| {
        strict
            .signer
            .sign(
                &strict
                    .signer
                    .claims("job-7", &ws.id, &read_commit, iat, life, None),
            )
            .unwrap()
    };
    let forger = PostgresSigner::new(&v.kid, &b64_encode(&[42u8; 32]), ISS, AUD, ORIGIN).unwrap();
    let revoked = verifier(cluster, "exchange-revoked");
    let by_revoked = revoked
        .signer
        .mint("job-7", &ws.id, &read_commit, 300, None)
        .unwrap();
    assert!(revoke(cluster, "exchange-revoked"));
    assert!(
        !revoke(cluster, "exchange-revoked"),
        "revoking twice finds nothing"
    );
    let rotated = verifier(cluster, "exchange-rotated");
    let by_old_secret = rotated
        .signer
        .mint("job-7", &ws.id, &read_commit, 300, None)
        .unwrap();
    let rotated_again = verifier(cluster, "exchange-rotated");
    assert_ne!(rotated.secret, rotated_again.secret);
    let stranger = |iss: &str, aud: &str, origin: &str| {
        PostgresSigner::new(&v.kid, &v.secret, iss, aud, origin)
            .unwrap()
            .mint("job-7", &ws.id, &read_commit, 300, None)
            .unwrap()
    };
    let with_header = |h: Value| forge(&v.secret, &h, &fresh(t, 300));
    let tamper = |f: &dyn Fn(&mut Value)| {
        let token = v
            .signer
            .mint("job-7", &ws.id, &read_commit, 300, None)
            .unwrap();
        let mut c = claims_of(&token);
        f(&mut c);
        with_claims(&token, &c)
    };
    let payload = b64_encode(fresh(t, 300).to_string().as_bytes());
    let random_sig = b64_encode(&[5u8; 64]);
    let hs_header = b64_encode(header.to_string().as_bytes());
    let hs_header_alt = b64_encode(
        json!({ "alg": "HS256", "kid": v.kid, "typ": "JWT" })
            .to_string()
            .as_bytes(),
    );
    let none_header = b64_encode(
        json!({ "alg": "none", "kid": v.kid, "typ": "JWT" })
            .to_string()
            .as_bytes(),
    );
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "forged: signed with another private key",
            forger
                .mint("job-7", &ws.id, &read_commit, 300, None)
                .unwrap(),
            INVALID,
        ),
        (
            "tampered sub",
            tamper(&|c| c["sub"] = json!("someone-else")),
            INVALID,
        ),
        (
            "tampered workspace",
            tamper(&|c| c["workspace"] = json!(other.id)),
            INVALID,
        ),
        (
            "tampered ops",
            tamper(&|c| c["ops"] = json!(["read", "commit", "purge"])),
            INVALID,
        ),
        (
            "tampered exp",
            tamper(&|c| c["exp"] = json!(t + 800)),
            INVALID,
        ),
        (
            "tampered cid",
            tamper(&|c| c["cid"] = json!("other")),
            INVALID,
        ),
        (
            "expired",
            edit(&|c| {
                c["iat"] = json!(t - 1000);
                c["exp"] = json!(t - 700);
            }),
            EXPIRED,
        ),
        (
            "issued in the future",
            edit(&|c| {
                c["iat"] = json!(t + 600);
                c["exp"] = json!(t + 900);
            }),
            INVALID,
        ),
        (
            "lifetime over the maximum",
            edit(&|c| c["exp"] = json!(t + 901)),
            INVALID,
        ),
        (
            "lifetime over a verifier's maximum of 60 s",
            strict_token(t, 61),
            INVALID,
        ),
        ("past exp with no skew", strict_token(t - 30, 29), EXPIRED),
        (
            "issued 5 s ahead with no skew",
            strict_token(t + 5, 30),
            INVALID,
        ),
        (
            "exp before iat",
            edit(&|c| c["exp"] = json!(t - 1)),
            INVALID,
        ),
        ("exp equal to iat", edit(&|c| c["exp"] = json!(t)), INVALID),
        (
            "iat not a number",
            edit(&|c| c["iat"] = json!(t.to_string())),
            INVALID,
        ),
        ("schema version 2", edit(&|c| c["ver"] = json!(2)), INVALID),
        ("schema version 0", edit(&|c| c["ver"] = json!(0)), INVALID),
        (
            "schema version as text",
            edit(&|c| c["ver"] = json!("1")),
            INVALID,
        ),
        (
            "no schema version",
            edit(&|c| {
                c.as_object_mut().unwrap().remove("ver");
            }),
            INVALID,
        ),
        (
            "backend storage",
            edit(&|c| c["backend"] = json!("storage")),
            INVALID,
        ),
        (
            "no backend",
            edit(&|c| {
                c.as_object_mut().unwrap().remove("backend");
            }),
            INVALID,
        ),
        (
            "unknown workspace",
            edit(&|c| c["workspace"] = json!(uuid::Uuid::new_v4().to_string())),
            INVALID,
        ),
        (
            "upper-case workspace id",
            edit(&|c| c["workspace"] = json!(ws.id.to_uppercase())),
            INVALID,
        ),
        (
            "workspace not a uuid",
            edit(&|c| c["workspace"] = json!("' OR true --")),
            INVALID,
        ),
        ("no operations", edit(&|c| c["ops"] = json!([])), INVALID),
        (
            "repeated operation",
            edit(&|c| c["ops"] = json!(["read", "read"])),
            INVALID,
        ),
        (
            "unknown operation",
            edit(&|c| c["ops"] = json!(["read", "admin"])),
            INVALID,
        ),
        (
            "operation in upper case",
            edit(&|c| c["ops"] = json!(["READ"])),
            INVALID,
        ),
        (
            "operations as text",
            edit(&|c| c["ops"] = json!("read")),
            INVALID,
        ),
        ("empty subject", edit(&|c| c["sub"] = json!("")), INVALID),
        (
            "subject with a newline",
            edit(&|c| c["sub"] = json!("a\nb")),
            INVALID,
        ),
        ("short nonce", edit(&|c| c["nonce"] = json!("abc")), INVALID),
        (
            "nonce with a dot",
            edit(&|c| c["nonce"] = json!("abcdefghijklmnop.q")),
            INVALID,
        ),
        (
            "extra claim: role",
            edit(&|c| c["role"] = json!("service_role")),
            INVALID,
        ),
        (
            "wrong issuer",
            stranger("https://evil.test", AUD, ORIGIN),
            INVALID,
        ),
        ("wrong audience", stranger(ISS, "other", ORIGIN), INVALID),
        (
            "wrong origin",
            stranger(ISS, AUD, "https://other.test"),
            INVALID,
        ),
        ("signed with a revoked key", by_revoked, INVALID),
        ("signed with a rotated-away secret", by_old_secret, INVALID),
        (
            "unknown key id",
            with_header(json!({ "alg": "EdDSA", "kid": "no-such-key", "typ": "JWT" })),
            INVALID,
        ),
        (
            "HS256 header, Ed25519 signature",
            with_header(json!({ "alg": "HS256", "kid": v.kid, "typ": "JWT" })),
            INVALID,
        ),
        (
            "HS256 header, 64-byte signature",
            format!("{hs_header_alt}.{payload}.{random_sig}"),
            INVALID,
        ),
        (
            "HS256 header, HMAC under the public key",
            forge_hs256(
                &base64_decode(&public_key(&v.secret)),
                &json!({ "alg": "HS256", "kid": v.kid, "typ": "JWT" }),
                &fresh(t, 300),
            ),
            INVALID,
        ),
        (
            "EdDSA header, 64 random signature bytes",
            format!("{hs_header}.{payload}.{random_sig}"),
            INVALID,
        ),
        (
            "alg none, no signature",
            format!("{none_header}.{payload}."),
            INVALID,
        ),
        (
            "HS512 header",
            with_header(json!({ "alg": "HS512", "kid": v.kid, "typ": "JWT" })),
            INVALID,
        ),
        (
            "typ at+jwt",
            with_header(json!({ "alg": "EdDSA", "kid": v.kid, "typ": "at+jwt" })),
            INVALID,
        ),
        (
            "no kid",
            with_header(json!({ "alg": "EdDSA", "typ": "JWT" })),
            INVALID,
        ),
        (
            "extra header field",
            with_header(
                json!({ "alg": "EdDSA", "kid": v.kid, "typ": "JWT", "jku": "https://evil.test" }),
            ),
            INVALID,
        ),
        (
            "signature stripped",
            format!("{hs_header}.{payload}."),
            INVALID,
        ),
        ("two parts", format!("{hs_header}.{payload}"), INVALID),
        (
            "four parts",
            format!("{}.x", signed(&fresh(t, 300))),
            INVALID,
        ),
        (
            "padded base64",
            format!("{}=", signed(&fresh(t, 300))),
            INVALID,
        ),
        ("empty", String::new(), INVALID),
        ("dots", "..".into(), INVALID),
        ("not base64", "a!.b!.c!".into(), INVALID),
        ("oversized", "a".repeat(40 * 1024), INVALID),
    ];
    for (what, token, want) in &cases {
        tally.secrets.token(token);
        let r = exchange(&mut rest, &Caller::Service, token).await;
        tally.deny(what, r, Some(want));
        assert!(rest.alive().await, "{what}: connection lost");
    }

    // Replays: a second exchange of a token that was accepted once.
    for (what, token) in [("replayed", &valid), ("replayed within skew", &early)] {
        let r = exchange(&mut rest, &Caller::Service, token).await;
        tally.deny(what, r, Some(INVALID));
    }
    // The rotated secret works; the rotated-away one did not.
    let by_new_secret = rotated_again
        .signer
        .mint("job-7", &ws.id, &read_commit, 300, None)
        .unwrap();
    tally.secrets.token(&by_new_secret);
    tally.secrets.add(&rotated.secret);
    tally.secrets.add(&rotated_again.secret);
    tally.secrets.add(&revoked.secret);
    tally.allow(
        "signed with the rotated secret",
        exchange(&mut rest, &Caller::Service, &by_new_secret).await,
    );
    // Tokens the database refused are still refused at the exchange by the client's reader
    // (an extra operation, no read) before they reach the database: see client/tests.
    tally.finish("capability exchanges", cluster);
}

#[tokio::test]
async fn concurrent_exchanges_of_one_token_spend_it_once() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "race");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let token = v
        .signer
        .mint("job-7", &ws.id, &ops(&[Operation::Read]), 300, None)
        .unwrap();
    tally.secrets.token(&token);
    let mut racers = Vec::new();
    for _ in 0..8 {
        let dsn = cluster.dsn("authenticator");
        let token = token.clone();
        racers.push(tokio::spawn(async move {
            let mut rest = SqlRpc::connect(&dsn).await;
            exchange(&mut rest, &Caller::Service, &token).await
        }));
    }
    let mut answers = Vec::new();
    for r in racers {
        answers.push(r.await.unwrap());
    }
    let (won, lost): (Vec<_>, Vec<_>) = answers.into_iter().partition(Result::is_ok);
    assert_eq!(won.len(), 1, "exactly one exchange wins");
    for (i, r) in won.into_iter().enumerate() {
        let g = tally.allow(&format!("racer {i}"), r);
        tally.secrets.add(
            g.as_ref()
                .and_then(|g| g["delegatedGrant"].as_str())
                .unwrap_or(""),
        );
    }
    for (i, r) in lost.into_iter().enumerate() {
        tally.deny(&format!("racer {i}"), r, Some(INVALID));
    }
    tally.finish("concurrent exchanges", cluster);
}

#[tokio::test]
async fn registration_rotation_overlap_and_revocation() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    let read = ops(&[Operation::Read]);

    // Only the database owner registers or revokes.
    let owner_sub = match &ws.owner {
        Caller::User(s) => s.clone(),
        _ => unreachable!(),
    };
    let roles = [
        ("anon", Caller::Anon),
        ("authenticated", ws.owner.clone()),
        ("service_role", Caller::Service),
        (
            "authenticator",
            Caller::Raw {
                role: None,
                claims: json!({ "role": "service_role", "sub": owner_sub }),
            },
        ),
    ];
    for (who, caller) in &roles {
        let r = rest
            .call(
                caller,
                "supabash_register_capability_verifier",
                json!({ "key_id": "planted", "issuer": ISS, "audience": AUD, "origin": ORIGIN }),
            )
            .await;
        tally.deny(&format!("{who} registers a verifier"), r, None);
        let r = rest
            .call(
                caller,
                "supabash_revoke_capability_verifier",
                json!({ "key_id": "rot-a" }),
            )
            .await;
        tally.deny(&format!("{who} revokes a verifier"), r, None);
    }
    let planted = PostgresSigner::new("planted", &b64_encode(&[0u8; 32]), ISS, AUD, ORIGIN)
        .unwrap()
        .mint("job", &ws.id, &read, 60, None)
        .unwrap();
    let r = exchange(&mut rest, &Caller::Service, &planted).await;
    tally.deny(
        "a verifier a PostgREST role tried to plant",
        r,
        Some(INVALID),
    );

    let a1 = verifier(cluster, "rot-a");
    let mint = |v: &Verifier| v.signer.mint("job", &ws.id, &read, 300, None).unwrap();
    let t_a1 = mint(&a1);
    // Overlap: a second key id while the first stays valid.
    let b = verifier(cluster, "rot-b");
    let t_b = mint(&b);
    // A grant from rot-a's first key, working before the rotation.
    let g_a1 = grant(&mut rest, &mut tally, &a1, &ws.id, &read, None).await;
    let manifest_a1 = json!({ "workspace_id": ws.id, "delegated_grant": g_a1 });
    let r = rest
        .call(
            &Caller::Service,
            "supabash_load_manifest",
            manifest_a1.clone(),
        )
        .await;
    tally.allow("rot-a's first grant before the rotation", r);
    // Rotation: the same key id gets a new key; the old one is gone, with its grants.
    let a2 = verifier(cluster, "rot-a");
    let r = rest
        .call(&Caller::Service, "supabash_load_manifest", manifest_a1)
        .await;
    tally.deny("rot-a's first grant after the rotation", r, Some(DENIED));
    assert_ne!(a1.secret, a2.secret);
    let t_a2 = mint(&a2);
    for s in [&a1.secret, &a2.secret, &b.secret] {
        tally.secrets.add(s);
    }
    for t in [&t_a1, &t_b, &t_a2] {
        tally.secrets.token(t);
    }
    let r = exchange(&mut rest, &Caller::Service, &t_a1).await;
    tally.deny("signed with rot-a's old secret", r, Some(INVALID));
    let r = exchange(&mut rest, &Caller::Service, &t_b).await;
    tally.allow("rot-b during the overlap", r);
    let r = exchange(&mut rest, &Caller::Service, &t_a2).await;
    let g_a2 = tally
        .allow("rot-a's new secret", r)
        .and_then(|a| a["delegatedGrant"].as_str().map(str::to_owned))
        .unwrap_or_default();
    tally.secrets.add(&g_a2);
    let manifest = json!({ "workspace_id": ws.id, "delegated_grant": g_a2 });
    let r = rest
        .call(&Caller::Service, "supabash_load_manifest", manifest.clone())
        .await;
    tally.allow("rot-a's grant before revocation", r);
    // Revocation: rot-a's tokens and grants stop working, rot-b's keep working.
    assert!(revoke(cluster, "rot-a"));
    let r = rest
        .call(&Caller::Service, "supabash_load_manifest", manifest)
        .await;
    tally.deny("rot-a's grant after revocation", r, Some(DENIED));
    let after_a = mint(&a2);
    let after_b = mint(&b);
    tally.secrets.token(&after_a);
    tally.secrets.token(&after_b);
    let r = exchange(&mut rest, &Caller::Service, &after_a).await;
    tally.deny("rot-a after revocation", r, Some(INVALID));
    let r = exchange(&mut rest, &Caller::Service, &after_b).await;
    tally.allow("rot-b after rot-a's revocation", r);
    tally.finish("verifier registration", cluster);
}

#[tokio::test]
async fn delegated_commits_record_the_grant_actor_and_correlation() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "attribution");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let rc = ops(&[
        Operation::Read,
        Operation::Write,
        Operation::Commit,
        Operation::History,
    ]);
    for cid in [Some("job-42"), None] {
        let g = grant(&mut rest, &mut tally, &v, &ws.id, &rc, cid).await;
        let (head, _) = current(&mut rest, &ws).await;
        let answer = tally
            .allow(
                "a delegated commit",
                rest.call(
                    &Caller::Service,
                    "supabash_commit",
                    json!({ "workspace_id": ws.id, "actor": "the-owner", "correlation_id": "forged",
                            "base_revision": head, "delegated_grant": g,
                            "changes": [{"op": "upsert", "path": "/job.md", "text": new_nonce()}] }),
                )
                .await,
            )
            .expect("committed");
        let receipt = &answer["receipt"];
        assert_eq!(receipt["actor"], json!("delegated:job-7"), "{receipt}");
        assert_eq!(
            receipt["correlationId"].as_str(),
            cid,
            "the grant's correlation id, not the caller's: {receipt}"
        );
        // History shows the same attribution to the owner.
        let page = rest
            .call(
                &ws.owner,
                "supabash_history",
                json!({ "workspace_id": ws.id }),
            )
            .await
            .unwrap();
        let last = page["records"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["actor"], json!("delegated:job-7"));
        assert_eq!(last["correlationId"].as_str(), cid);
        // The database records which verifier's key the grant came from.
        assert_eq!(
            receipt["delegationKeyId"],
            json!("attribution"),
            "{receipt}"
        );
        assert_eq!(last["delegationKeyId"], json!("attribution"), "{last}");
    }
    // A delegated grant with commit may rebase: onto the head, recorded as the grant's.
    let g = grant(&mut rest, &mut tally, &v, &ws.id, &rc, None).await;
    let answer = tally
        .allow(
            "a delegated rebased commit",
            rest.call(
                &Caller::Service,
                "supabash_commit",
                json!({ "workspace_id": ws.id, "base_revision": ws.r1, "rebase": true,
                        "delegated_grant": g,
                        "changes": [{"op": "upsert", "path": "/rebased.md", "text": new_nonce()}] }),
            )
            .await,
        )
        .expect("committed");
    let receipt = &answer["receipt"];
    assert_eq!(receipt["rebasedFrom"], json!(ws.r1), "{receipt}");
    assert_eq!(receipt["actor"], json!("delegated:job-7"), "{receipt}");
    // A user cannot pass for a delegated job: the reserved actor prefix is refused, and the
    // user's own commits carry no key id.
    let (head, _) = current(&mut rest, &ws).await;
    for actor in ["delegated:job-7", "delegated:"] {
        let r = rest
            .call(
                &ws.owner,
                "supabash_commit",
                json!({ "workspace_id": ws.id, "actor": actor, "correlation_id": "job-42",
                        "base_revision": head,
                        "changes": [{"op": "upsert", "path": "/job.md", "text": "forged"}] }),
            )
            .await;
        tally.deny_as(
            &format!("a user commits as {actor:?}"),
            r,
            "22023",
            Some("SUPABASH_INVALID_ARGUMENT"),
        );
    }
    let own = rest
        .call(
            &ws.owner,
            "supabash_commit",
            json!({ "workspace_id": ws.id, "actor": "owner delegated:job-7", "base_revision": head,
                    "changes": [{"op": "upsert", "path": "/job.md", "text": new_nonce()}] }),
        )
        .await;
    let own = tally
        .allow("the owner's own commit", own)
        .expect("committed");
    assert!(
        own["receipt"].get("delegationKeyId").is_none(),
        "{}",
        own["receipt"]
    );
    // A grant without commit cannot commit, whatever actor it claims.
    let reader = ops(&[Operation::Read, Operation::History]);
    let g = grant(&mut rest, &mut tally, &v, &ws.id, &reader, Some("job-42")).await;
    let (head, _) = current(&mut rest, &ws).await;
    let r = rest
        .call(
            &Caller::Service,
            "supabash_commit",
            json!({ "workspace_id": ws.id, "actor": "delegated:job-7", "base_revision": head,
                    "delegated_grant": g,
                    "changes": [{"op": "upsert", "path": "/job.md", "text": "no"}] }),
        )
        .await;
    tally.deny("a commit with a read and history grant", r, Some(DENIED));
    tally.finish("delegated attribution", cluster);
}

#[tokio::test]
async fn private_tables_refuse_every_postgrest_role() {
    let cluster = Cluster::shared();
    let admin = admin(cluster).await;
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "tables");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    grant(&mut rest, &mut tally, &v, &ws.id, &all_ops(), None).await;
    // Every table of schema supabash, with its first column.
    let tables: Vec<(String, String)> = admin
        .query(
            "SELECT c.relname, a.attname FROM pg_class c
               JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = 1
              WHERE c.relnamespace = 'supabash'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
              ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for part in ["verifier", "nonce", "grant"] {
        assert!(
            tables.iter().any(|(t, _)| t.contains(part)),
            "no {part} table among {tables:?}"
        );
    }
    let owner_claims = match &ws.owner {
        Caller::User(sub) => json!({ "role": "authenticated", "sub": sub }),
        _ => unreachable!(),
    };
    let roles = [
        ("anon", Caller::Anon),
        (
            "authenticated (the owner)",
            Caller::Raw {
                role: Some("authenticated".into()),
                claims: owner_claims.clone(),
            },
        ),
        ("service_role", Caller::Service),
        (
            "authenticator",
            Caller::Raw {
                role: None,
                claims: json!({ "role": "service_role" }),
            },
        ),
    ];
    for (who, caller) in &roles {
        for (t, col) in &tables {
            for sql in [
                format!("SELECT * FROM supabash.{t}"),
                format!("INSERT INTO supabash.{t} DEFAULT VALUES"),
                format!("UPDATE supabash.{t} SET {col} = {col}"),
                format!("DELETE FROM supabash.{t}"),
            ] {
                let what = format!("{who}: {sql}");
                let r = rest.sql_as(caller, &sql).await.map(|n| json!(n));
                tally.deny(&what, r, None);
            }
        }
    }
    tally.finish("direct access to private tables", cluster);
}

/// A connection as `role` that runs as service_role the way PostgREST does, inside a
/// transaction the caller controls (`BEGIN` is sent here, `COMMIT` by the caller).
async fn open_service_tx(cluster: &Cluster) -> tokio_postgres::Client {
    let (client, conn) =
        tokio_postgres::connect(&cluster.dsn("authenticator"), tokio_postgres::NoTls)
            .await
            .expect("connect as authenticator");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
        .batch_execute(
            "BEGIN; SELECT set_config('request.jwt.claims', '{\"role\":\"service_role\"}', true);
             SET LOCAL ROLE service_role",
        )
        .await
        .expect("become service_role");
    client
}

/// Exchanges `token` on `client` (inside its open transaction); the grant, or the error.
async fn exchange_on(client: &tokio_postgres::Client, token: &str) -> Result<String, DbError> {
    let row = client
        .query_one(
            "SELECT supabash_exchange_capability($1) ->> 'delegatedGrant'",
            &[&token],
        )
        .await
        .map_err(DbError::from)?;
    Ok(row.get(0))
}

#[tokio::test]
async fn a_grant_without_write_commits_exactly_a_restore() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "restore-only");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    // r1: /secret.md "owner only", /b.md "b"; head: /secret.md "owner only, v2", /b.md "b".
    let restorer = ops(&[Operation::Read, Operation::Commit, Operation::Restore]);
    let g = grant(&mut rest, &mut tally, &v, &ws.id, &restorer, None).await;
    let commit = |changes: Value, source: Option<&str>, head: &str| {
        let mut a = json!({ "workspace_id": ws.id, "actor": "x", "base_revision": head,
                            "delegated_grant": g, "changes": changes });
        if let Some(s) = source {
            a["source_revision"] = json!(s);
        }
        a
    };
    let (head, _) = current(&mut rest, &ws).await;
    let revert = json!([{"op": "upsert", "path": "/secret.md", "text": "owner only"}]);
    let cases = [
        (
            "arbitrary content",
            json!([{"op": "upsert", "path": "/planted.md", "text": "x"}]),
            None,
        ),
        (
            "the restore's changes without source_revision",
            revert.clone(),
            None,
        ),
        (
            "other content under a source_revision",
            json!([{"op": "upsert", "path": "/secret.md", "text": "changed"}]),
            Some(ws.r1.as_str()),
        ),
        (
            "a restore plus an extra file",
            json!([{"op": "upsert", "path": "/secret.md", "text": "owner only"},
                   {"op": "upsert", "path": "/extra.md", "text": "x"}]),
            Some(ws.r1.as_str()),
        ),
        (
            "a restore that deletes a file the source has",
            json!([{"op": "upsert", "path": "/secret.md", "text": "owner only"},
                   {"op": "delete", "path": "/b.md"}]),
            Some(ws.r1.as_str()),
        ),
        (
            "nothing, claiming a restore",
            json!([]),
            Some(ws.r1.as_str()),
        ),
    ];
    for (what, changes, source) in cases {
        let r = rest
            .call(
                &Caller::Service,
                "supabash_commit",
                commit(changes, source, &head),
            )
            .await;
        tally.deny(
            &format!("restore-only grant commits {what}"),
            r,
            Some(DENIED),
        );
    }
    // Exactly the restore of r1 commits, with a grant that has no write.
    let r = rest
        .call(
            &Caller::Service,
            "supabash_commit",
            commit(revert, Some(&ws.r1), &head),
        )
        .await;
    let done = tally.allow("the exact restore of r1", r).expect("restored");
    assert_eq!(done["receipt"]["sourceRevision"], json!(ws.r1));
    let doc = rest
        .call(
            &ws.owner,
            "supabash_load_document",
            json!({ "workspace_id": ws.id, "path": "/secret.md" }),
        )
        .await
        .unwrap();
    assert!(doc.to_string().contains("owner only\""), "{doc}");
    // With write, content commits.
    let writer = ops(&[Operation::Read, Operation::Write, Operation::Commit]);
    let gw = grant(&mut rest, &mut tally, &v, &ws.id, &writer, None).await;
    let (head, _) = current(&mut rest, &ws).await;
    let r = rest
        .call(
            &Caller::Service,
            "supabash_commit",
            json!({ "workspace_id": ws.id, "actor": "x", "base_revision": head, "delegated_grant": gw,
                    "changes": [{"op": "upsert", "path": "/planted.md", "text": "x"}] }),
        )
        .await;
    tally.allow("a grant with write commits content", r);
    tally.finish("restore-only grants", cluster);
}

#[tokio::test]
async fn revocation_and_rotation_serialise_with_an_open_exchange() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let admin = admin(cluster).await;
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    let read = ops(&[Operation::Read]);
    let manifest = |g: &str| json!({ "workspace_id": ws.id, "delegated_grant": g });

    // (1) The exchange is open while the key is revoked (or rotated) and commits after.
    for (what, rotate) in [("revocation", false), ("rotation", true)] {
        let kid = format!("race-open-{rotate}");
        let v = verifier(cluster, &kid);
        tally.secrets.add(&v.secret);
        let token = v.signer.mint("job", &ws.id, &read, 300, None).unwrap();
        tally.secrets.token(&token);
        let session = open_service_tx(cluster).await;
        let g = exchange_on(&session, &token).await.expect("exchanged");
        tally.secrets.add(&g);
        if rotate {
            tally.secrets.add(&verifier(cluster, &kid).secret);
        } else {
            let revoked: bool = admin
                .query_one("SELECT supabash_revoke_capability_verifier($1)", &[&kid])
                .await
                .unwrap()
                .get(0);
            assert!(revoked);
        }
        session.batch_execute("COMMIT").await.unwrap();
        let r = rest
            .call(&Caller::Service, "supabash_load_manifest", manifest(&g))
            .await;
        tally.deny(
            &format!("a grant whose exchange committed after the {what}"),
            r,
            Some(DENIED),
        );
    }

    // (2) The revocation is open while the exchange runs and commits; then it commits.
    let v = verifier(cluster, "race-revoke-open");
    tally.secrets.add(&v.secret);
    let token = v.signer.mint("job", &ws.id, &read, 300, None).unwrap();
    tally.secrets.token(&token);
    admin.batch_execute("BEGIN").await.unwrap();
    admin
        .query_one(
            "SELECT supabash_revoke_capability_verifier('race-revoke-open')",
            &[],
        )
        .await
        .unwrap();
    let exchanged = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        exchange(&mut rest, &Caller::Service, &token),
    )
    .await
    .expect("the exchange does not hang");
    let g = exchanged
        .ok()
        .and_then(|a| a["delegatedGrant"].as_str().map(str::to_owned));
    admin.batch_execute("COMMIT").await.unwrap();
    if let Some(g) = g {
        tally.secrets.add(&g);
        let r = rest
            .call(&Caller::Service, "supabash_load_manifest", manifest(&g))
            .await;
        tally.deny(
            "a grant exchanged while the revocation was open",
            r,
            Some(DENIED),
        );
    }
    tally.finish("revocation races", cluster);
}

#[tokio::test]
async fn the_exchange_neither_waits_on_held_rows_nor_stalls() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let admin = admin(cluster).await;
    let holder = supabash_tests::support::admin(cluster).await;
    let v = verifier(cluster, "no-stall");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let read = ops(&[Operation::Read]);

    // Expired rows another transaction holds: the cleanup skips them.
    let nonce = uuid::Uuid::new_v4().as_bytes().repeat(2);
    let grant_hash = uuid::Uuid::new_v4().as_bytes().repeat(2);
    admin
        .execute(
            "INSERT INTO supabash.capability_nonces VALUES ($1, now() - interval '1 hour')",
            &[&nonce],
        )
        .await
        .unwrap();
    admin
        .execute(
            "INSERT INTO supabash.grants (grant_hash, key_id, generation, workspace_id, owner_id,
                    actor_subject, operations, expires_at)
             VALUES ($1, 'no-stall', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'x',
                     '{read}', now() - interval '1 hour')",
            &[&grant_hash],
        )
        .await
        .unwrap();
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute(
            "SELECT 1 FROM supabash.capability_nonces WHERE nonce_hash = $1 FOR UPDATE",
            &[&nonce],
        )
        .await
        .unwrap();
    holder
        .execute(
            "SELECT 1 FROM supabash.grants WHERE grant_hash = $1 FOR UPDATE",
            &[&grant_hash],
        )
        .await
        .unwrap();
    let token = v.signer.mint("job", &ws.id, &read, 300, None).unwrap();
    tally.secrets.token(&token);
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        exchange(&mut rest, &Caller::Service, &token),
    )
    .await
    .expect("the exchange does not wait on rows another transaction holds");
    if let Some(a) = tally.allow("an exchange while expired rows are held", r) {
        tally
            .secrets
            .add(a["delegatedGrant"].as_str().unwrap_or(""));
    }
    holder.batch_execute("ROLLBACK").await.unwrap();

    // A concurrent exchange of the same token holds its nonce: the wait is bounded and ends
    // in the retryable coordination error.
    let token = v.signer.mint("job", &ws.id, &read, 300, None).unwrap();
    tally.secrets.token(&token);
    let session = open_service_tx(cluster).await;
    let g = exchange_on(&session, &token).await.expect("first exchange");
    tally.secrets.add(&g);
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        exchange(&mut rest, &Caller::Service, &token),
    )
    .await
    .expect("a blocked exchange gives up within its lock timeout");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    tally.deny_as(
        "the same token while its first exchange is open",
        r,
        "55P03",
        Some("SUPABASH_COMMIT_COORDINATION"),
    );
    session.batch_execute("COMMIT").await.unwrap();
    tally.finish("exchange stalls", cluster);
}

#[tokio::test]
async fn no_token_is_exchanged_twice_at_the_expiry_edge() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let admin = admin(cluster).await;
    let v = strict_verifier(cluster, "edge");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let read = ops(&[Operation::Read]);
    // The database's clock early in a second E; a token whose exp + skew (skew 0) is E is
    // accepted for the rest of that second.
    let e = loop {
        let t: f64 = admin
            .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
            .await
            .unwrap()
            .get(0);
        if t.fract() < 0.4 {
            break t.floor() as i64;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let claims = v.signer.claims("job", &ws.id, &read, e - 30, 30, None);
    let token = v.signer.sign(&claims).unwrap();
    tally.secrets.token(&token);
    let first = exchange(&mut rest, &Caller::Service, &token).await;
    if let Some(a) = tally.allow("the first exchange, in the last accepted second", first) {
        tally
            .secrets
            .add(a["delegatedGrant"].as_str().unwrap_or(""));
    }
    let again = exchange(&mut rest, &Caller::Service, &token).await;
    // In the same second the nonce refuses it; a second later expiry does.
    tally.attempts += 1;
    match again {
        Err(e) if e.code == "42501" && matches!(marker(&e), Some(INVALID) | Some(EXPIRED)) => {
            tally.denials += 1
        }
        other => tally
            .leaks
            .push(format!("exchanged twice at exp + skew: {other:?}")),
    }
    tally.finish("expiry edge", cluster);
}

#[tokio::test]
async fn a_grant_travels_in_a_request_header() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "header");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let g = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::Read]),
        None,
    )
    .await;
    let other = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::Read]),
        None,
    )
    .await;
    let header = json!({ "x-supabash-grant": g, "content-type": "application/json" });
    let args = json!({ "workspace_id": ws.id });
    for rpc in [
        "supabash_load_manifest",
        "supabash_load_snapshot",
        "supabash_load_document",
        "supabash_load_documents",
    ] {
        let mut a = args.clone();
        if rpc == "supabash_load_document" {
            a["path"] = json!("/b.md");
        }
        if rpc == "supabash_load_documents" {
            a["paths"] = json!(["/b.md"]);
        }
        let r = rest
            .call_with_headers(&Caller::Service, rpc, a, Some(&header))
            .await;
        tally.allow(&format!("{rpc} with the grant in the header"), r);
    }
    let r = rest
        .call_with_headers(
            &Caller::Service,
            "supabash_load_manifest",
            with_grant(&args, &other),
            Some(&header),
        )
        .await;
    tally.deny("header and argument disagree", r, Some(DENIED));
    let r = rest
        .call_with_headers(
            &ws.owner,
            "supabash_load_manifest",
            args.clone(),
            Some(&header),
        )
        .await;
    tally.deny("a user session with a header grant", r, Some(DENIED));
    let r = rest
        .call_with_headers(
            &Caller::Service,
            "supabash_history",
            args.clone(),
            Some(&header),
        )
        .await;
    tally.deny("a read grant in the header for history", r, Some(DENIED));
    let r = rest
        .call_with_headers(
            &Caller::Service,
            "supabash_load_manifest",
            args,
            Some(&json!({ "x-supabash-grant": b64_encode(&[9u8; 32]) })),
        )
        .await;
    tally.deny("an unknown grant in the header", r, Some(DENIED));
    tally.finish("header grants", cluster);
}

#[tokio::test]
async fn supabase_roles_that_read_every_table_cannot_mint_or_use_a_capability() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let admin = admin(cluster).await;
    let v = verifier(cluster, "readers");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let all = all_ops();
    let g = grant(&mut rest, &mut tally, &v, &ws.id, &all, None).await;
    // The roles as Supabase defines them (sql/bootstrap.sql).
    let attrs: Vec<(String, bool, bool, bool, bool)> = admin
        .query(
            "SELECT rolname::text, rolsuper, rolbypassrls, rolcreaterole,
                    pg_has_role(oid, 'pg_read_all_data', 'USAGE')
               FROM pg_roles WHERE rolname IN ('supabase_project_owner', 'supabase_read_only_user')
              ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    assert_eq!(
        attrs,
        vec![
            ("supabase_project_owner".into(), false, true, true, true),
            ("supabase_read_only_user".into(), false, true, false, true),
        ]
    );
    let why: std::collections::HashMap<String, String> = admin
        .query("SELECT role, why FROM supabash._trust_report()", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for role in ["supabase_project_owner", "supabase_read_only_user"] {
        assert!(why.contains_key(role), "{why:?}");
    }
    // Issue 23: the report says what is true on this server. Up to 15 the project owner's
    // CREATEROLE grants it supabash_keeper; from 16 on it cannot (no ADMIN option), and the
    // report does not claim it can.
    let owner_why = &why["supabase_project_owner"];
    if server_version_num(&admin).await < 160000 {
        assert!(
            owner_why
                .contains("CREATEROLE (PostgreSQL 15 and older): can grant itself supabash_keeper"),
            "{owner_why}"
        );
    } else {
        assert!(!owner_why.contains("supabash_keeper"), "{owner_why}");
    }
    assert!(!why["supabase_read_only_user"].contains("supabash_keeper"));
    for role in ["supabase_read_only_user", "supabase_project_owner"] {
        let (reader, conn) = tokio_postgres::connect(&cluster.dsn(role), tokio_postgres::NoTls)
            .await
            .expect("log in");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut took_roles = false;
        if role == "supabase_project_owner" {
            // CREATEROLE: up to PostgreSQL 15 the project owner can take the extension's roles
            // (the install check refuses to install or upgrade while it holds them); from 16
            // on CREATEROLE needs the ADMIN option on a role to grant it, which it lacks.
            let taken = reader
                .batch_execute("GRANT supabash_keeper, supabash_owner TO supabase_project_owner")
                .await;
            if server_version_num(&admin).await < 160000 {
                taken.expect("CREATEROLE grants itself the extension's roles");
                took_roles = true;
            } else {
                let e = taken.expect_err("CREATEROLE without ADMIN cannot take the roles");
                assert_eq!(
                    e.code(),
                    Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
                    "{e}"
                );
            }
        }
        // Everything the role can read in schema supabash, as text and as raw byte strings.
        let tables: Vec<String> = reader
            .query(
                "SELECT c.relname::text FROM pg_class c
                  WHERE c.relnamespace = 'supabash'::regnamespace AND c.relkind = 'r' ORDER BY 1",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut dump = String::new();
        let mut blobs: Vec<Vec<u8>> = Vec::new();
        for t in &tables {
            let rows = reader
                .query(
                    &format!("SELECT to_jsonb(x)::text FROM supabash.{t} x"),
                    &[],
                )
                .await
                .unwrap_or_else(|e| panic!("{role} reads supabash.{t}: {e}"));
            for r in rows {
                dump.push_str(r.get::<_, &str>(0));
                dump.push('\n');
            }
            // The capability tables' byte strings are what could be key material.
            if !["capability_verifiers", "capability_nonces", "grants"].contains(&t.as_str()) {
                continue;
            }
            let raw = reader
                .query(
                    &format!(
                        "SELECT DISTINCT decode(substr(e.val, 3), 'hex')
                           FROM (SELECT * FROM supabash.{t} LIMIT 100) x,
                                jsonb_each_text(to_jsonb(x)) AS e(k, val)
                          WHERE e.val LIKE '\\\\x%'"
                    ),
                    &[],
                )
                .await
                .unwrap();
            blobs.extend(raw.iter().map(|r| r.get::<_, Vec<u8>>(0)));
        }
        assert!(
            dump.contains("readers"),
            "{role} reads the verifiers (else this test proves nothing)"
        );
        assert!(!dump.contains(&v.secret), "{role} found the private key");
        assert!(!dump.contains(&g), "{role} found a grant");
        // Try every byte string read as a signing key (HS256, and Ed25519 when it is a seed)
        // and as a grant.
        let claims = v
            .signer
            .claims("intruder", &ws.id, &all, now(), 300, None)
            .to_json();
        let mut tried = 0;
        for blob in &blobs {
            let hs = forge_hs256(
                blob,
                &json!({ "alg": "HS256", "kid": "readers", "typ": "JWT" }),
                &claims,
            );
            tally.deny(
                &format!("{role}: HS256 under a {}-byte value", blob.len()),
                exchange(&mut rest, &Caller::Service, &hs).await,
                Some(INVALID),
            );
            if blob.len() == 32 {
                let ed = forge(
                    &b64_encode(blob),
                    &json!({ "alg": "EdDSA", "kid": "readers", "typ": "JWT" }),
                    &claims,
                );
                tally.deny(
                    &format!("{role}: Ed25519 under a 32-byte value"),
                    exchange(&mut rest, &Caller::Service, &ed).await,
                    Some(INVALID),
                );
                let r = rest
                    .call(
                        &Caller::Service,
                        "supabash_load_manifest",
                        json!({ "workspace_id": ws.id, "delegated_grant": b64_encode(blob) }),
                    )
                    .await;
                tally.deny(
                    &format!("{role}: a stored hash as a grant"),
                    r,
                    Some(DENIED),
                );
            }
            tried += 1;
        }
        assert!(tried > 0, "{role} read no byte strings");
        if took_roles {
            reader
                .batch_execute("REVOKE supabash_keeper, supabash_owner FROM supabase_project_owner")
                .await
                .unwrap();
        }
    }
    tally.finish("Supabase reader roles", cluster);
}

/// The server's `server_version_num` (150020 for 15.20).
async fn server_version_num(admin: &tokio_postgres::Client) -> i32 {
    let row = admin
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .expect("server_version_num");
    row.get(0)
}

#[tokio::test]
async fn only_a_grant_with_redact_redacts() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "redaction");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let admin = admin(cluster).await;
    let apply = |g: &str| {
        json!({ "workspace_id": ws.id, "paths": ["/secret.md"], "reason": "leak",
                "delegated_grant": g })
    };
    // Every other operation together, history, purge and restore included, does not imply it.
    let others = ops(&Operation::ALL
        .into_iter()
        .filter(|o| *o != Operation::Redact)
        .collect::<Vec<_>>());
    let g = grant(&mut rest, &mut tally, &v, &ws.id, &others, None).await;
    let before = fingerprint(&admin, &ws.id).await;
    let r = rest
        .call(&Caller::Service, "supabash_redact", apply(&g))
        .await;
    tally.deny("redact with every operation but redact", r, Some(DENIED));
    assert_eq!(fingerprint(&admin, &ws.id).await, before, "nothing changed");
    // A grant for another workspace does not reach this one.
    let other = workspace(&mut rest).await;
    let g = grant(
        &mut rest,
        &mut tally,
        &v,
        &other.id,
        &ops(&[Operation::Redact]),
        None,
    )
    .await;
    let r = rest
        .call(&Caller::Service, "supabash_redact", apply(&g))
        .await;
    tally.deny("redact with another workspace's grant", r, Some(DENIED));
    // With redact it is applied, and recorded under the grant's subject.
    let g = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::Redact]),
        None,
    )
    .await;
    let report = tally
        .allow(
            "redact with redact",
            rest.call(&Caller::Service, "supabash_redact", apply(&g))
                .await,
        )
        .expect("redacted");
    assert_eq!(report["dryRun"], json!(false), "{report}");
    assert_eq!(report["epoch"], json!(1), "{report}");
    let actor: String = admin
        .query_one(
            "SELECT actor FROM supabash.redactions WHERE workspace_id = $1::text::uuid",
            &[&ws.id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(actor, "delegated:job-7");
    tally.finish("redact grants", cluster);
}

/// Issue 23, item 4: the holder name of a live lease is public (`supabash_lease`, LEASE_HELD's
/// detail), so naming it proves nothing. A grant with `commit` acquiring under the owner's
/// holder name is LEASE_HELD and the owner's lease lives on; with the live token it may
/// re-acquire.
#[tokio::test]
async fn a_holder_name_does_not_take_over_a_live_lease() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "lease-takeover");
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let alice = rest
        .call(
            &ws.owner,
            "supabash_acquire_lease",
            json!({ "workspace_id": ws.id, "holder": "alice-laptop", "ttl_seconds": 60 }),
        )
        .await
        .unwrap();
    let token = alice["token"].as_str().unwrap().to_owned();
    tally.secrets.add(&token);
    let g = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::Commit]),
        None,
    )
    .await;
    let steal = json!({ "workspace_id": ws.id, "holder": "alice-laptop", "ttl_seconds": 60,
                        "delegated_grant": g });
    let r = rest
        .call(&Caller::Service, "supabash_acquire_lease", steal.clone())
        .await;
    tally.deny_as(
        "a grant re-acquiring by holder name",
        r,
        "PT423",
        Some("SUPABASH_LEASE_HELD"),
    );
    let mut forged = steal.clone();
    forged["token"] = json!("00000000-0000-4000-8000-00000000beef");
    let r = rest
        .call(&Caller::Service, "supabash_acquire_lease", forged)
        .await;
    tally.deny_as(
        "a grant re-acquiring with a wrong token",
        r,
        "PT423",
        Some("SUPABASH_LEASE_HELD"),
    );
    // The owner's own re-acquire without the token is refused the same way.
    let r = rest
        .call(
            &ws.owner,
            "supabash_acquire_lease",
            json!({ "workspace_id": ws.id, "holder": "alice-laptop", "ttl_seconds": 60 }),
        )
        .await;
    tally.deny_as(
        "the owner re-acquiring without the token",
        r,
        "PT423",
        Some("SUPABASH_LEASE_HELD"),
    );
    // Alice's lease lives: she renews it with her token.
    let renew = json!({ "workspace_id": ws.id, "token": token, "ttl_seconds": 60 });
    let r = rest.call(&ws.owner, "supabash_renew_lease", renew).await;
    tally.allow("the holder renews", r);
    // Presenting the live token re-acquires it (a fresh token replaces it).
    let mut again = steal;
    again["token"] = json!(token);
    let fresh = tally
        .allow(
            "re-acquire with the live token",
            rest.call(&Caller::Service, "supabash_acquire_lease", again)
                .await,
        )
        .expect("re-acquired");
    assert_ne!(fresh["token"], json!(token));
    tally.finish("lease takeover by holder name", cluster);
}

/// The seed's example claims (`createPostgresDelegatedCapability` in the TypeScript package's
/// README) for workspace `ws`, issued now with a five-minute lifetime and nonce `nonce`.
fn seed_claims(ws: &str, nonce: &str) -> Value {
    let now = now();
    json!({
        "aud": AUD,
        "backend": "postgres",
        "corr": "job-2",
        "exp": now + 300,
        "iat": now,
        "iss": ISS,
        "nonce": nonce,
        "ops": ["read", "write", "commit", "history"],
        "origin": ORIGIN,
        "sub": "job-2",
        "sv": 3,
        "workspace": ws,
    })
}

/// Points `supabash.capability_key_file` at `path` in the server's postgresql.conf (it can be
/// set nowhere else) and waits for the server to have read it.
fn configure_key_file(cluster: &Cluster, path: &str) {
    use std::io::Write;
    let conf = cluster.dir.join("data").join("postgresql.conf");
    let mut f = std::fs::OpenOptions::new().append(true).open(conf).unwrap();
    writeln!(f, "supabash.capability_key_file = '{path}'").unwrap();
    cluster.psql("app", "SELECT pg_reload_conf()");
    for _ in 0..50 {
        let shown = cluster.psql("app", "LOAD 'supabash'; SHOW supabash.capability_key_file");
        if shown.trim() == path {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the server did not read the new setting");
}

/// Writes a fresh 48-byte key to `path` with `mode`, owned by the server's OS user when
/// `server_owned` (the owner of the data directory), else by this process's user.
fn write_key_file(cluster: &Cluster, path: &std::path::Path, mode: u32, server_owned: bool) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let key: Vec<u8> = (0..3)
        .flat_map(|_| *uuid::Uuid::new_v4().as_bytes())
        .collect();
    std::fs::write(path, key).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    if server_owned {
        let data = std::fs::metadata(cluster.dir.join("data")).unwrap();
        std::os::unix::fs::chown(path, Some(data.uid()), Some(data.gid())).unwrap();
    }
}

#[tokio::test]
async fn hs256_capabilities_minted_as_the_seed_describes() {
    use std::os::unix::fs::PermissionsExt;
    use supabash_tests::capability::{seed_postgres_capability, try_register_hs256};
    // Its own cluster: the key file setting is the server's.
    let cluster = &Cluster::start();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let admin = admin(cluster).await;
    let ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    let ed = verifier(cluster, "ed-1");

    // No key file configured: HS256 registration is refused, saying how to configure one.
    let e = try_register_hs256(cluster, "k1", ISS, AUD, ORIGIN).unwrap_err();
    assert!(
        e.contains("SUPABASH_INVALID_ARGUMENT")
            && e.contains("supabash.capability_key_file")
            && e.contains("pg_reload_conf"),
        "{e}"
    );
    // A key file others can read, or none at all, is refused when it is loaded.
    let key_path = cluster.dir.join("capability.key");
    write_key_file(cluster, &key_path, 0o644, true);
    configure_key_file(cluster, key_path.to_str().unwrap());
    let e = try_register_hs256(cluster, "k1", ISS, AUD, ORIGIN).unwrap_err();
    assert!(
        e.contains("readable or writable by others") && e.contains("chmod 600"),
        "{e}"
    );
    std::fs::remove_file(&key_path).unwrap();
    let e = try_register_hs256(cluster, "k1", ISS, AUD, ORIGIN).unwrap_err();
    assert!(e.contains("cannot be read"), "{e}");
    let n: i64 = admin
        .query_one(
            "SELECT count(*) FROM supabash.capability_verifiers WHERE key_id = 'k1'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "a refused registration leaves no verifier");
    // An EdDSA key cannot ride along.
    let e = cluster
        .try_psql(
            "app",
            &format!(
                "SELECT supabash_register_capability_verifier('k1', '{ISS}', '{AUD}', '{ORIGIN}',
                   public_key => '{}', algorithm => 'HS256')",
                public_key(&ed.secret)
            ),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("takes no public_key"), "{e}");

    // Owned by another OS user (this test's, when the server runs as another one).
    write_key_file(cluster, &key_path, 0o600, false);
    let uid =
        |p: &std::path::Path| std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(p).unwrap());
    if uid(&key_path) != uid(&cluster.dir.join("data")) {
        let e = try_register_hs256(cluster, "k1", ISS, AUD, ORIGIN).unwrap_err();
        assert!(e.contains("not owned by the server's OS user"), "{e}");
    }
    write_key_file(cluster, &key_path, 0o600, true);
    let secret = try_register_hs256(cluster, "k1", ISS, AUD, ORIGIN).unwrap();
    assert_eq!(secret.len(), 43, "32 bytes, unpadded base64url");
    tally.secrets.add(&secret);
    let server_key = std::fs::read(&key_path).unwrap();

    // The seed's token is exchanged, and its grant works with exactly the granted operations.
    let token = seed_postgres_capability(&secret, "k1", &seed_claims(&ws.id, "job-2"));
    tally.secrets.token(&token);
    let r = exchange(&mut rest, &Caller::Service, &token).await;
    let answer = tally.allow("the seed's HS256 capability", r).unwrap();
    assert_eq!(answer["workspaceId"], json!(ws.id));
    assert_eq!(answer["actorSubject"], json!("job-2"));
    assert_eq!(answer["correlationId"], json!("job-2"));
    assert_eq!(
        answer["operations"],
        json!(["read", "write", "commit", "history"])
    );
    let g = answer["delegatedGrant"].as_str().unwrap().to_owned();
    tally.secrets.add(&g);
    let manifest = json!({ "workspace_id": ws.id, "delegated_grant": g });
    let r = rest
        .call(&Caller::Service, "supabash_load_manifest", manifest.clone())
        .await;
    tally.allow("a read with the HS256 grant", r);
    let r = rest
        .call(
            &Caller::Service,
            "supabash_checkpoints",
            with_grant(&json!({ "workspace_id": ws.id }), &g),
        )
        .await;
    tally.deny("checkpoint is not granted", r, Some(DENIED));
    let head = current(&mut rest, &ws).await.0;
    let args = json!({ "workspace_id": ws.id, "actor": "ignored", "base_revision": head,
                       "changes": [{"op": "upsert", "path": "/job.md", "text": "done"}] });
    let r = rest
        .call(&Caller::Service, "supabash_commit", with_grant(&args, &g))
        .await;
    let commit = tally.allow("a commit with the HS256 grant", r).unwrap();
    let actor: String = admin
        .query_one(
            "SELECT actor FROM supabash.revisions WHERE revision_id = $1::text::uuid",
            &[&commit["receipt"]["revision"].as_str().unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(actor, "delegated:job-2");

    // Every other rule is the Ed25519 one.
    let r = exchange(&mut rest, &Caller::Service, &token).await;
    tally.deny("the same token again (nonce spent)", r, Some(INVALID));
    let fresh = |nonce: &str| seed_claims(&ws.id, nonce);
    let wrong = seed_postgres_capability(&b64_encode(&[7u8; 32]), "k1", &fresh("wrong-secret"));
    tally.secrets.token(&wrong);
    let r = exchange(&mut rest, &Caller::Service, &wrong).await;
    tally.deny("signed with a wrong secret", r, Some(INVALID));
    let server_keyed = forge_hs256(
        &server_key,
        &json!({ "alg": "HS256", "kid": "k1", "typ": "JWS" }),
        &fresh("server-key"),
    );
    let r = exchange(&mut rest, &Caller::Service, &server_keyed).await;
    tally.deny("signed with the server key itself", r, Some(INVALID));
    let as_eddsa = forge(
        &ed.secret,
        &json!({ "alg": "EdDSA", "kid": "k1", "typ": "JWS" }),
        &fresh("eddsa-header"),
    );
    tally.secrets.token(&as_eddsa);
    let r = exchange(&mut rest, &Caller::Service, &as_eddsa).await;
    tally.deny("an EdDSA token for the HS256 key id", r, Some(INVALID));
    let mut ed_claims = fresh("hs256-for-ed");
    ed_claims["ver"] = json!(1);
    let as_hs256 = seed_postgres_capability(&ed.secret, "ed-1", &fresh("hs256-for-ed"));
    tally.secrets.token(&as_hs256);
    let r = exchange(&mut rest, &Caller::Service, &as_hs256).await;
    tally.deny("an HS256 token for an Ed25519 key id", r, Some(INVALID));
    let ours = ed
        .signer
        .mint("job", &ws.id, &ops(&[Operation::Read]), 300, None)
        .unwrap();
    let r = exchange(&mut rest, &Caller::Service, &ours).await;
    tally.allow("Ed25519 next to HS256", r);
    for (what, field, value) in [
        ("sv 2", "sv", json!(2)),
        ("another issuer", "iss", json!("https://other.test")),
        ("another audience", "aud", json!("other")),
        ("another origin", "origin", json!("https://other.test")),
        ("another backend", "backend", json!("storage")),
        ("an unknown operation", "ops", json!(["read", "admin"])),
        ("a repeated operation", "ops", json!(["read", "read"])),
        ("issued in the future", "iat", json!(now() + 600)),
        ("a lifetime over 900 s", "exp", json!(now() + 1200)),
        ("a blank subject", "sub", json!(" ")),
        (
            "an upper-case workspace",
            "workspace",
            json!(ws.id.to_uppercase()),
        ),
        ("an extra claim", "cid", json!("x")),
    ] {
        let mut c = fresh(&format!("bad-{field}-{}", uuid::Uuid::new_v4().simple()));
        c[field] = value;
        let t = seed_postgres_capability(&secret, "k1", &c);
        tally.secrets.token(&t);
        let r = exchange(&mut rest, &Caller::Service, &t).await;
        tally.deny(what, r, Some(INVALID));
    }
    let mut other_ws = fresh("other-workspace");
    other_ws["workspace"] = json!("0f8fad5b-d9cb-469f-a165-70867728950e");
    let t = seed_postgres_capability(&secret, "k1", &other_ws);
    let r = exchange(&mut rest, &Caller::Service, &t).await;
    tally.deny("a workspace that does not exist", r, Some(INVALID));
    let mut old = fresh("expired");
    old["iat"] = json!(now() - 1000);
    old["exp"] = json!(now() - 700);
    let t = seed_postgres_capability(&secret, "k1", &old);
    let r = exchange(&mut rest, &Caller::Service, &t).await;
    tally.deny("expired", r, Some(EXPIRED));

    // No table and no function result holds the secret (nor the server key).
    let forms = |raw: &[u8]| {
        use base64::Engine;
        vec![
            b64_encode(raw),
            base64::engine::general_purpose::STANDARD.encode(raw),
            hex::encode(raw),
        ]
    };
    let mut hidden = forms(&base64_decode(&secret));
    hidden.extend(forms(&server_key));
    let tables: Vec<String> = admin
        .query(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'm', 'v') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                AND n.nspname NOT LIKE 'pg\\_toast%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.iter().any(|t| t == "supabash.capability_verifiers"));
    for t in tables.iter().chain(
        [
            "pg_catalog.pg_settings".to_owned(),
            "pg_catalog.pg_proc".to_owned(),
        ]
        .iter(),
    ) {
        let text: Option<String> = admin
            .query_one(
                &format!("SELECT string_agg(x::text, E'\\n') FROM {t} x"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        let text = text.unwrap_or_default().to_lowercase();
        for h in &hidden {
            assert!(!text.contains(&h.to_lowercase()), "{t} holds the secret");
        }
    }
    // The one function that derives a secret rotates as it answers: the answer is never the
    // registration's secret, whose tokens stop working; it is the keeper's alone.
    let again = cluster.psql("app", "SELECT supabash._hs256_rotate('k1')");
    assert_ne!(again.trim(), secret);
    let t = seed_postgres_capability(&secret, "k1", &fresh("after-rederive"));
    let r = exchange(&mut rest, &Caller::Service, &t).await;
    tally.deny(
        "the registration's secret after another derivation",
        r,
        Some(INVALID),
    );
    let r = rest
        .call(&Caller::Service, "supabash_load_manifest", manifest.clone())
        .await;
    tally.deny("a grant of the previous generation", r, Some(DENIED));
    // A role that reads every table and bypasses row-level security reads no key, no secret.
    admin
        .batch_execute(
            "CREATE ROLE hs256_reader LOGIN BYPASSRLS; GRANT pg_read_all_data TO hs256_reader",
        )
        .await
        .unwrap();
    let (reader, conn) =
        tokio_postgres::connect(&cluster.dsn("hs256_reader"), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    for sql in [
        "SELECT supabash._hs256_rotate('k1')".to_owned(),
        format!("SELECT pg_read_file('{}')", key_path.display()),
        format!("SELECT pg_read_binary_file('{}')", key_path.display()),
        "SELECT supabash_register_capability_verifier('k9', 'i', 'a', 'o', algorithm => 'HS256')"
            .to_owned(),
    ] {
        let e = reader.query(&sql, &[]).await.expect_err(&sql);
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {e}"
        );
    }
    let rows = reader
        .query("SELECT x::text FROM supabash.capability_verifiers x", &[])
        .await
        .unwrap();
    assert_eq!(
        rows.len(),
        2,
        "it reads the verifiers, which hold no secret"
    );
    // Who can read the key file is named by the trust report (and so by the install check's
    // warning and `supabash doctor`): the server's OS user, every superuser, and a role that
    // reads server files, which really can.
    admin
        .batch_execute(
            "CREATE ROLE hs256_file_reader LOGIN; GRANT pg_read_server_files TO hs256_file_reader",
        )
        .await
        .unwrap();
    let report: std::collections::HashMap<String, String> = admin
        .query("SELECT role, why FROM supabash._trust_report()", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let key_shown = key_path.display().to_string();
    for who in ["hs256_file_reader", "postgres", "the server's OS user"] {
        let why = report
            .get(who)
            .unwrap_or_else(|| panic!("{who} is not named: {report:?}"));
        assert!(
            why.contains("HS256 key file") && why.contains(&key_shown),
            "{who}: {why}"
        );
    }
    assert!(report["hs256_file_reader"].contains("pg_read_server_files"));
    assert!(report["postgres"].starts_with("superuser"));
    assert!(!report["hs256_reader"].contains("key file"), "{report:?}");
    let (file_reader, conn) =
        tokio_postgres::connect(&cluster.dsn("hs256_file_reader"), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // pg_read_server_files opens server files with COPY: the key's bytes are read (they may
    // not be valid text, so a data error counts too), never refused for privilege.
    let copied = file_reader
        .batch_execute(&format!(
            "CREATE TEMP TABLE key_bytes (line text); COPY key_bytes FROM '{key_shown}'"
        ))
        .await;
    if let Err(e) = copied {
        let code = e.code().map(|c| c.code().to_owned()).unwrap_or_default();
        assert!(
            code.starts_with("22"),
            "pg_read_server_files reads the key file: the risk the report names: {e}"
        );
    }
    let doctor = supabash_cli::doctor::run(&supabash_cli::doctor::DoctorArgs {
        connect: supabash_cli::connect::ConnectArgs {
            dsn: Some(cluster.dsn("authenticator")),
            sub: Some(uuid::Uuid::new_v4().to_string()),
            url: None,
            token: None,
            apikey: None,
            dsn_file: None,
            token_file: None,
            apikey_file: None,
            profile: None,
            config: None,
        },
        db: Some(cluster.dsn("postgres")),
        storage_url: None,
        bucket: "workspaces".into(),
        max_skew_seconds: supabash_cli::doctor::DEFAULT_MAX_SKEW_SECONDS,
        clock_offset_seconds: 0,
        json: false,
    })
    .await;
    let trust = doctor.check("trust").expect("a trust check");
    assert_eq!(trust.status, supabash_cli::doctor::Status::Warn);
    for who in [
        "hs256_file_reader",
        "the server's OS user",
        "postgres (superuser",
    ] {
        assert!(trust.detail.contains(who), "{who}: {}", trust.detail);
    }
    // The install check (run by every install and upgrade) warns with the same names.
    let (checker, mut conn) =
        tokio_postgres::connect(&cluster.dsn("postgres"), tokio_postgres::NoTls)
            .await
            .unwrap();
    let (tx, mut notices) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(m)) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
            if let tokio_postgres::AsyncMessage::Notice(n) = m {
                let _ = tx.send(n.message().to_owned());
            }
        }
    });
    checker
        .batch_execute("SELECT supabash._check_install()")
        .await
        .unwrap();
    drop(checker);
    let mut warned = String::new();
    while let Some(n) = notices.recv().await {
        warned.push_str(&n);
    }
    for who in [
        "hs256_file_reader",
        "the server's OS user",
        "HS256 key file",
    ] {
        assert!(warned.contains(who), "{who}: {warned}");
    }
    admin
        .batch_execute("DROP ROLE hs256_file_reader")
        .await
        .unwrap();

    // Rotation by registration: a new secret; the old one and its grants stop working.
    let rotated = try_register_hs256(cluster, "k1", ISS, AUD, ORIGIN).unwrap();
    tally.secrets.add(&rotated);
    assert_ne!(rotated, secret);
    let t = seed_postgres_capability(&rotated, "k1", &fresh("rotated"));
    tally.secrets.token(&t);
    let r = exchange(&mut rest, &Caller::Service, &t).await;
    let g2 = tally
        .allow("the rotated secret", r)
        .and_then(|a| a["delegatedGrant"].as_str().map(str::to_owned))
        .unwrap();
    tally.secrets.add(&g2);
    // A key file loosened later is refused at the next load; the exchange says only that the
    // server cannot verify, the server log says why.
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let t = seed_postgres_capability(&rotated, "k1", &fresh("loosened"));
    let e = exchange(&mut rest, &Caller::Service, &t).await.unwrap_err();
    assert_eq!(marker(&e), Some("SUPABASH_INTERNAL"), "{e:?}");
    assert!(!error_text(&e).contains("capability.key"), "{e:?}");
    assert!(server_log(cluster).contains("readable or writable by others"));
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = exchange(&mut rest, &Caller::Service, &t).await;
    tally.allow("the same token once the key file is private again", r);
    // Revocation ends the key id's tokens and grants.
    assert!(revoke(cluster, "k1"));
    let r = rest
        .call(
            &Caller::Service,
            "supabash_load_manifest",
            json!({ "workspace_id": ws.id, "delegated_grant": g2 }),
        )
        .await;
    tally.deny("a grant after revocation", r, Some(DENIED));
    let t = seed_postgres_capability(&rotated, "k1", &fresh("revoked"));
    let r = exchange(&mut rest, &Caller::Service, &t).await;
    tally.deny("a token after revocation", r, Some(INVALID));
    tally.finish("HS256 capabilities", cluster);
}

/// `supabash_may_watch` (what the Realtime policy asks): the owner, and service_role with a
/// grant holding `history` in the grant header; false, not an error, for everyone else.
#[tokio::test]
async fn may_watch_admits_the_owner_and_a_grant_with_history() {
    let cluster = Cluster::shared();
    let mut rest = SqlRpc::connect(&cluster.dsn("authenticator")).await;
    let v = verifier(cluster, "may-watch");
    let ws = workspace(&mut rest).await;
    let other_ws = workspace(&mut rest).await;
    let mut tally = Tally::default();
    tally.secrets.add(&v.secret);
    let history = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::History]),
        None,
    )
    .await;
    let read = grant(
        &mut rest,
        &mut tally,
        &v,
        &ws.id,
        &ops(&[Operation::Read]),
        None,
    )
    .await;
    let args = json!({ "workspace_id": ws.id });
    let header = |g: &str| json!({ "x-supabash-grant": g });
    let mut ask = async |caller: &Caller, args: &Value, headers: Option<Value>| {
        rest.call_with_headers(caller, "supabash_may_watch", args.clone(), headers.as_ref())
            .await
    };
    assert_eq!(ask(&ws.owner, &args, None).await.unwrap(), json!(true));
    assert_eq!(
        ask(&Caller::Service, &args, Some(header(&history)))
            .await
            .unwrap(),
        json!(true)
    );
    for (who, caller, args, headers) in [
        ("another user", Caller::new_user(), &args, None),
        ("service_role without a grant", Caller::Service, &args, None),
        (
            "a grant without history",
            Caller::Service,
            &args,
            Some(header(&read)),
        ),
        (
            "a grant for another workspace",
            Caller::Service,
            &json!({ "workspace_id": other_ws.id }),
            Some(header(&history)),
        ),
        (
            "the owner presenting a grant",
            ws.owner.clone(),
            &args,
            Some(header(&history)),
        ),
    ] {
        assert_eq!(
            ask(&caller, args, headers).await.unwrap(),
            json!(false),
            "{who}"
        );
    }
    // anon may not even ask.
    let e = ask(&Caller::Anon, &args, None).await.unwrap_err();
    assert_eq!(e.code, "42501", "{e}");
}
