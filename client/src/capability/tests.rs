use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};
use supabash_core::capability::{
    b64_encode, signing_input, CommonClaims, Header, Operation, OperationSet, Policy, Reason,
    StorageBinding, StorageClaims, SCHEMA_VERSION,
};
use supabash_core::ErrorCode;

const NOW: i64 = 1_800_000_000;

fn policy() -> Policy {
    Policy {
        issuer: "jobs.example".into(),
        audience: "storage".into(),
        origin: "https://app.example".into(),
        skew_secs: 30,
        max_lifetime_secs: 900,
    }
}

fn signer() -> StorageSigner {
    StorageSigner::from_seed("issuer-1", &[7; 32])
}

fn verifier() -> StorageVerifier {
    StorageVerifier::new(policy())
        .with_key("issuer-1", &signer().public_key())
        .unwrap()
}

fn claims() -> StorageClaims {
    StorageClaims {
        common: CommonClaims {
            ver: SCHEMA_VERSION,
            iss: "jobs.example".into(),
            aud: "storage".into(),
            sub: "job-7".into(),
            origin: "https://app.example".into(),
            ops: vec!["read".into(), "write".into()],
            iat: NOW,
            exp: NOW + 300,
            nonce: new_nonce(),
            cid: Some("req-1".into()),
        },
        binding: StorageBinding {
            bucket: "reports".into(),
            prefix: "users/42/".into(),
        },
    }
}

fn scope() -> StorageScope {
    StorageScope {
        bucket: "reports".into(),
        prefix: "users/42/".into(),
        operations: OperationSet::new([Operation::Read, Operation::Write]).unwrap(),
    }
}

/// The rule that refused a capability (kept in the error's source for logs).
fn reason(e: &SupabashError) -> Option<Reason> {
    match e.source.as_ref()?.downcast_ref::<CapabilityError>()? {
        CapabilityError::Invalid(r) => Some(*r),
        CapabilityError::Expired => None,
    }
}

fn refused_for(token: &str) -> (ErrorCode, Option<Reason>) {
    let e = verifier().verify_at(token, &scope(), NOW).unwrap_err();
    (e.code, reason(&e))
}

/// Signs arbitrary header and claims JSON with the trusted signer's key.
fn sign_raw(header: &Value, claims: &Value) -> String {
    let encode = |v: &Value| b64_encode(v.to_string().as_bytes());
    let input = format!("{}.{}", encode(header), encode(claims));
    let sig = ed25519_dalek::Signer::sign(
        &ed25519_dalek::SigningKey::from_bytes(&[7; 32]),
        input.as_bytes(),
    );
    format!("{input}.{}", b64_encode(&sig.to_bytes()))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

#[test]
fn a_minted_capability_verifies_and_opens_once() {
    rt().block_on(async {
        let token = signer().mint(&claims()).unwrap();
        let nonces = MemoryNonceStore::new();
        let verified = verifier().verify_at(&token, &scope(), NOW).unwrap();
        assert_eq!(verified.claims().binding.prefix, "users/42/");
        let opened = verified
            .open(&nonces, |c| {
                let prefix = c.binding.prefix.clone();
                async move { Ok(format!("opened {prefix}")) }
            })
            .await
            .unwrap();
        assert_eq!(opened.value, "opened users/42/");
        assert_eq!(opened.claims.common.sub, "job-7");
        assert_eq!(nonces.len(), 1);

        // Replay: it still verifies, but the nonce is spent, and what was opened is dropped.
        let again = verifier().verify_at(&token, &scope(), NOW + 1).unwrap();
        let e = again.open(&nonces, |_| async { Ok(()) }).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidCapability);
        assert_eq!(reason(&e), Some(Reason::Replayed));
    });
}

#[test]
fn the_nonce_is_spent_only_after_the_open_succeeds() {
    rt().block_on(async {
        let token = signer().mint(&claims()).unwrap();
        let nonces = MemoryNonceStore::new();
        let failed = verifier()
            .verify_at(&token, &scope(), NOW)
            .unwrap()
            .open(&nonces, |_| async {
                Err::<(), _>(SupabashError::new(ErrorCode::Backend, "bucket offline"))
            })
            .await
            .unwrap_err();
        assert_eq!(failed.code, ErrorCode::Backend);
        assert!(nonces.is_empty(), "a failed open spends nothing");
        // A capability refused by a check never reaches the store either.
        let wrong = StorageScope {
            prefix: "users/43/".into(),
            ..scope()
        };
        assert!(verifier().verify_at(&token, &wrong, NOW).is_err());
        assert!(nonces.is_empty());
        verifier()
            .verify_at(&token, &scope(), NOW)
            .unwrap()
            .open(&nonces, |_| async { Ok(()) })
            .await
            .unwrap();
        assert_eq!(nonces.len(), 1);
    });
}

#[test]
fn forged_wrong_key_wrong_alg_and_times_fail() {
    let good = signer().mint(&claims()).unwrap();
    let header = json!({"alg": "EdDSA", "kid": "issuer-1", "typ": "JWT"});
    let body = claims().to_json();

    // Forged: another key's signature under the trusted key id.
    let forger = StorageSigner::from_seed("issuer-1", &[9; 32]);
    assert_eq!(
        refused_for(&forger.mint(&claims()).unwrap()),
        (ErrorCode::InvalidCapability, Some(Reason::Signature))
    );
    // A signature taken from another token, and a truncated one.
    let other = signer().mint(&claims()).unwrap();
    let (input, _) = good.rsplit_once('.').unwrap();
    let (_, other_sig) = other.rsplit_once('.').unwrap();
    assert_eq!(
        refused_for(&format!("{input}.{other_sig}")).1,
        Some(Reason::Signature)
    );
    assert_eq!(
        refused_for(&format!("{input}.AAAA")).1,
        Some(Reason::Signature)
    );
    // Unknown key id.
    let stranger = StorageSigner::from_seed("issuer-2", &[7; 32]);
    assert_eq!(
        refused_for(&stranger.mint(&claims()).unwrap()).1,
        Some(Reason::UnknownKey)
    );
    // Header naming another algorithm (signed with the right key all the same), or none.
    for alg in ["HS256", "none", "ES256", "eddsa"] {
        let mut h = header.clone();
        h["alg"] = json!(alg);
        assert_eq!(
            refused_for(&sign_raw(&h, &body)).1,
            Some(Reason::Header),
            "{alg}"
        );
    }
    let unsigned = format!(
        "{}.",
        signing_input(
            &Header {
                alg: "none".into(),
                kid: "issuer-1".into(),
                typ: None
            },
            &body
        )
    );
    assert_eq!(refused_for(&unsigned).1, Some(Reason::Header));
    // Expired (past exp + skew) has its own code; issued in the future does not.
    let mut c = claims();
    c.common.iat = NOW - 400;
    c.common.exp = NOW - 31;
    assert_eq!(
        refused_for(&signer().mint(&c).unwrap()),
        (ErrorCode::ExpiredCapability, None)
    );
    let mut c = claims();
    c.common.iat = NOW + 31;
    c.common.exp = NOW + 300;
    assert_eq!(
        refused_for(&signer().mint(&c).unwrap()),
        (ErrorCode::InvalidCapability, Some(Reason::IssuedInFuture))
    );
    // Correctly signed but of another schema version, or with a claim nobody knows.
    let mut v2 = body.clone();
    v2["ver"] = json!(2);
    assert_eq!(
        refused_for(&sign_raw(&header, &v2)).1,
        Some(Reason::SchemaVersion)
    );
    let mut extra = body.clone();
    extra["workspace_id"] = json!("w1");
    assert_eq!(
        refused_for(&sign_raw(&header, &extra)).1,
        Some(Reason::Malformed)
    );
}

#[test]
fn scope_must_match_exactly() {
    let token = signer().mint(&claims()).unwrap();
    let v = verifier();
    let ops = |o: &[Operation]| OperationSet::new(o.iter().copied()).unwrap();
    for (what, s) in [
        (
            "sub-prefix",
            StorageScope {
                prefix: "users/42/x/".into(),
                ..scope()
            },
        ),
        (
            "parent",
            StorageScope {
                prefix: "users/".into(),
                ..scope()
            },
        ),
        (
            "bucket",
            StorageScope {
                bucket: "other".into(),
                ..scope()
            },
        ),
        (
            "fewer ops",
            StorageScope {
                operations: ops(&[Operation::Read]),
                ..scope()
            },
        ),
        (
            "more ops",
            StorageScope {
                operations: ops(&[Operation::Read, Operation::Write, Operation::Purge]),
                ..scope()
            },
        ),
    ] {
        let e = v.verify_at(&token, &s, NOW).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidCapability, "{what}");
    }
    // Claims a signer must not mint.
    let mut dup = claims();
    dup.common.ops = vec!["read".into(), "read".into()];
    assert_eq!(
        signer().mint(&dup).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    let mut bad_prefix = claims();
    bad_prefix.binding.prefix = "users/../".into();
    assert!(signer().mint(&bad_prefix).is_err());
}

#[test]
fn weak_public_keys_are_refused() {
    // The identity point is a small-order (weak) key.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert_eq!(
        StorageVerifier::new(policy())
            .with_key("k", &identity)
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
}

/// The claim names a tamper test changes, with a different value for each.
fn tamper(field: usize, body: &mut Value) {
    let (name, value) = match field {
        0 => ("sub", json!("job-8")),
        1 => ("prefix", json!("users/43/")),
        2 => ("bucket", json!("other")),
        3 => ("ops", json!(["read", "write", "purge"])),
        4 => ("exp", json!(NOW + 301)),
        5 => ("iat", json!(NOW - 1)),
        6 => ("nonce", json!("0123456789abcdef-other")),
        7 => ("iss", json!("jobs.evil")),
        8 => ("aud", json!("storage2")),
        9 => ("origin", json!("https://evil.example")),
        10 => ("cid", json!("req-2")),
        _ => ("ver", json!(SCHEMA_VERSION + 1)),
    };
    body[name] = value;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn verifier_never_panics(token in ".{0,300}") {
        let _ = verifier().verify_at(&token, &scope(), NOW);
    }

    #[test]
    fn verifier_never_panics_on_token_shaped_input(
        h in "[A-Za-z0-9_-]{0,60}", c in "[A-Za-z0-9_-]{0,120}", s in "[A-Za-z0-9_-]{0,90}",
    ) {
        let _ = verifier().verify_at(&format!("{h}.{c}.{s}"), &scope(), NOW);
    }

    #[test]
    fn any_tampered_field_fails(field in 0usize..12) {
        let token = signer().mint(&claims()).unwrap();
        let (header, rest) = token.split_once('.').unwrap();
        let (payload, sig) = rest.split_once('.').unwrap();
        let bytes = base64::Engine::decode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD, payload,
        ).unwrap();
        let mut body: Value = serde_json::from_slice(&bytes).unwrap();
        tamper(field, &mut body);
        let forged = format!("{header}.{}.{sig}", b64_encode(body.to_string().as_bytes()));
        let e = verifier().verify_at(&forged, &scope(), NOW).unwrap_err();
        prop_assert_eq!(e.code, ErrorCode::InvalidCapability);
        prop_assert_eq!(reason(&e), Some(Reason::Signature));
    }

    #[test]
    fn any_flipped_signature_bit_fails(bit in 0usize..512) {
        let token = signer().mint(&claims()).unwrap();
        let (input, sig) = token.rsplit_once('.').unwrap();
        let mut raw = base64::Engine::decode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD, sig,
        ).unwrap();
        raw[bit / 8] ^= 1 << (bit % 8);
        let forged = format!("{input}.{}", b64_encode(&raw));
        prop_assert!(verifier().verify_at(&forged, &scope(), NOW).is_err());
    }
}

#[test]
fn nonce_store_consumes_once_and_forgets_after_until() {
    rt().block_on(async {
        let store = MemoryNonceStore::new();
        let later = unix_now() + 60;
        assert!(store.consume("a".repeat(16).as_str(), later).await.unwrap());
        assert!(!store.consume("a".repeat(16).as_str(), later).await.unwrap());
        // An entry whose time has passed is dropped on the next call.
        assert!(store.consume("old-nonce-0000000", 1).await.unwrap());
        assert_eq!(store.len(), 2);
        assert!(store.consume("b".repeat(16).as_str(), later).await.unwrap());
        assert_eq!(store.len(), 2, "the passed entry was dropped");
    });
}

/// The default policy holds the seed's 900-second lifetime; a policy that makes no sense
/// refuses every verification with `INVALID_ARGUMENT`.
#[test]
fn the_storage_policy_defaults_to_900_seconds_and_refuses_nonsense() {
    let p = storage_policy("jobs.example", "storage", "https://app.example");
    assert_eq!(p.max_lifetime_secs, 900);
    assert_eq!(p.skew_secs, 60);
    assert!(check_policy(&p).is_ok());
    let token = signer().mint(&claims()).unwrap();
    let with = |p: Policy| {
        StorageVerifier::new(p)
            .with_key("issuer-1", &signer().public_key())
            .unwrap()
            .verify_at(&token, &scope(), NOW)
    };
    assert!(with(p.clone()).is_ok());
    // A token living longer than the default lifetime is refused.
    let mut c = claims();
    c.common.exp = NOW + 901;
    let long = signer().mint(&c).unwrap();
    let v = StorageVerifier::new(p.clone())
        .with_key("issuer-1", &signer().public_key())
        .unwrap();
    assert!(v.verify_at(&long, &scope(), NOW).is_err());
    for bad in [
        Policy {
            max_lifetime_secs: 0,
            ..p.clone()
        },
        Policy {
            max_lifetime_secs: -5,
            ..p.clone()
        },
        Policy {
            max_lifetime_secs: 86_401,
            ..p.clone()
        },
        Policy {
            skew_secs: -1,
            ..p.clone()
        },
        Policy {
            skew_secs: 3601,
            ..p.clone()
        },
        Policy {
            issuer: String::new(),
            ..p.clone()
        },
    ] {
        assert_eq!(
            check_policy(&bad).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            with(bad.clone()).unwrap_err().code,
            ErrorCode::InvalidArgument,
            "{bad:?}"
        );
    }
}
