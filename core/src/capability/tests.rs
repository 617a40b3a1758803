use super::*;
use proptest::prelude::*;
use serde_json::json;

fn policy() -> Policy {
    Policy {
        issuer: "jobs".into(),
        audience: "storage".into(),
        origin: "https://example.test".into(),
        skew_secs: 30,
        max_lifetime_secs: 900,
    }
}

fn claims(now: i64) -> StorageClaims {
    StorageClaims {
        common: CommonClaims {
            ver: SCHEMA_VERSION,
            iss: "jobs".into(),
            aud: "storage".into(),
            sub: "job-7".into(),
            origin: "https://example.test".into(),
            ops: vec!["read".into(), "write".into()],
            iat: now,
            exp: now + 600,
            nonce: "n0nce-0123456789abcdef".into(),
            cid: Some("req-1".into()),
        },
        binding: StorageBinding {
            bucket: "reports".into(),
            prefix: "users/42/".into(),
        },
    }
}

fn invalid(r: Result<OperationSet, CapabilityError>) -> Reason {
    match r {
        Err(CapabilityError::Invalid(reason)) => reason,
        other => panic!("expected an invalid capability, got {other:?}"),
    }
}

#[test]
fn operations_have_wire_names_and_set_rules() {
    for op in Operation::ALL {
        assert_eq!(Operation::from_wire(op.as_str()), Some(op));
        assert_eq!(serde_json::to_value(op).unwrap(), json!(op.as_str()));
    }
    assert_eq!(Operation::from_wire("Read"), None);
    let set = OperationSet::from_wire(&["write", "read"]).unwrap();
    assert_eq!(set.to_wire(), ["read", "write"]);
    assert!(set.contains(Operation::Read) && !set.contains(Operation::Purge));
    let empty: [&str; 0] = [];
    for bad in [&["read", "read"][..], &empty[..], &["read", "teleport"][..]] {
        assert_eq!(
            OperationSet::from_wire(bad).unwrap_err(),
            CapabilityError::Invalid(Reason::Operations),
            "{bad:?}"
        );
    }
}

#[test]
fn time_rules() {
    let now = 1_800_000_000;
    let p = policy();
    assert!(claims(now).validate(&p, now).is_ok());
    // Skew both ways.
    let mut c = claims(now + 30);
    assert!(c.validate(&p, now).is_ok());
    c = claims(now + 31);
    assert_eq!(invalid(c.validate(&p, now)), Reason::IssuedInFuture);
    c = claims(now);
    assert!(c.validate(&p, now + 630).is_ok());
    assert_eq!(c.validate(&p, now + 631), Err(CapabilityError::Expired));
    assert_eq!(c.common.nonce_until(&p), now + 630);
    c.common.exp = now + 901;
    assert_eq!(invalid(c.validate(&p, now)), Reason::Lifetime);
    c.common.exp = now;
    assert_eq!(invalid(c.validate(&p, now)), Reason::Lifetime);
}

#[test]
fn verifier_bound_claims_and_shape() {
    let now = 1_800_000_000;
    let p = policy();
    type Change = fn(&mut StorageClaims);
    let cases: [(Change, Reason); 12] = [
        (|c| c.common.ver = 2, Reason::SchemaVersion),
        (|c| c.common.iss = "other".into(), Reason::Issuer),
        (|c| c.common.aud = "other".into(), Reason::Audience),
        (
            |c| c.common.origin = "https://evil.test".into(),
            Reason::Origin,
        ),
        (|c| c.common.sub = String::new(), Reason::Text),
        (|c| c.common.cid = Some("a\nb".into()), Reason::Text),
        (|c| c.common.nonce = "short".into(), Reason::Nonce),
        (
            |c| c.common.nonce = "has space in the nonce!".into(),
            Reason::Nonce,
        ),
        (|c| c.common.ops.push("read".into()), Reason::Operations),
        (|c| c.common.ops.clear(), Reason::Operations),
        (|c| c.binding.prefix = "users/42".into(), Reason::Binding),
        (|c| c.binding.bucket = "..".into(), Reason::Binding),
    ];
    for (i, (change, reason)) in cases.into_iter().enumerate() {
        let mut c = claims(now);
        change(&mut c);
        assert_eq!(invalid(c.validate(&p, now)), reason, "case {i}");
    }
}

#[test]
fn prefixes_are_exact() {
    for good in ["a/", "users/42/reports/", "ünïcode/ok/"] {
        check_prefix(good).unwrap();
    }
    for bad in [
        "", "/", "a", "/a/", "a//b/", "a/./", "a/../", "../", "a\\b/", "a/\u{0}/",
    ] {
        assert!(check_prefix(bad).is_err(), "{bad:?}");
    }
    assert!(check_prefix(&format!("{}/", "a".repeat(MAX_PREFIX_BYTES))).is_err());
    assert!(prefix_covers("users/42/", "users/42/a.pdf"));
    assert!(prefix_covers("users/42/", "users/42/deep/a.pdf"));
    for key in [
        "users/42/",
        "users/420/a",
        "users/42/../43/a",
        "users/42//a",
        "users/4",
    ] {
        assert!(!prefix_covers("users/42/", key), "{key}");
    }
}

#[test]
fn compact_round_trip_and_header_rules() {
    let now = 1_800_000_000;
    let header = Header {
        alg: "EdDSA".into(),
        kid: "k1".into(),
        typ: Some("JWT".into()),
    };
    let body = claims(now).to_json();
    let token = format!("{}.{}", signing_input(&header, &body), b64_encode(b"sig"));
    let parsed = parse_compact(&token, "EdDSA").unwrap();
    assert_eq!(parsed.header, header);
    assert_eq!(parsed.signature, b"sig");
    assert_eq!(parsed.signing_input, signing_input(&header, &body));
    assert_eq!(StorageClaims::from_map(parsed.claims).unwrap(), claims(now));
    // The verifier's algorithm, never the token's.
    assert_eq!(
        parse_compact(&token, "HS256").unwrap_err(),
        CapabilityError::Invalid(Reason::Header)
    );
    let extra = json!({"alg": "EdDSA", "kid": "k1", "crit": ["b64"]}).to_string();
    let token = format!("{}.{}.", b64_encode(extra.as_bytes()), b64_encode(b"{}"));
    assert_eq!(
        parse_compact(&token, "EdDSA").unwrap_err(),
        CapabilityError::Invalid(Reason::Header)
    );
    // Unknown claims are refused.
    let mut map = claims(now).to_json().as_object().unwrap().clone();
    map.insert("workspace".into(), json!("w"));
    assert_eq!(
        StorageClaims::from_map(map).unwrap_err(),
        CapabilityError::Invalid(Reason::Malformed)
    );
}

#[test]
fn duplicate_keys_and_nulls_are_refused_in_header_and_claims() {
    let token = |header: &str, claims: &str| {
        format!(
            "{}.{}.{}",
            b64_encode(header.as_bytes()),
            b64_encode(claims.as_bytes()),
            b64_encode(b"sig")
        )
    };
    let good_claims = claims(1_800_000_000).to_json().to_string();
    let good = r#"{"alg":"EdDSA","kid":"k1","typ":"JWT"}"#;
    assert!(parse_compact(&token(good, &good_claims), "EdDSA").is_ok());
    for header in [
        r#"{"alg":"EdDSA","kid":"k1","kid":"k2"}"#,
        r#"{"alg":"none","alg":"EdDSA","kid":"k1"}"#,
        r#"{"alg":"EdDSA","kid":"k1","typ":null}"#,
    ] {
        assert_eq!(
            parse_compact(&token(header, &good_claims), "EdDSA").unwrap_err(),
            CapabilityError::Invalid(Reason::Header),
            "{header}"
        );
    }
    let body = good_claims.trim_end_matches('}');
    for claims in [
        format!(r#"{body},"sub":"someone-else"}}"#),
        format!(r#"{body},"exp":1}}"#),
        good_claims.replace(r#""cid":"req-1""#, r#""cid":null"#),
    ] {
        assert_ne!(claims, good_claims);
        assert_eq!(
            parse_compact(&token(good, &claims), "EdDSA").unwrap_err(),
            CapabilityError::Invalid(Reason::Malformed),
            "{claims}"
        );
    }
}

proptest! {
    #[test]
    fn parser_never_panics(token in ".{0,400}") {
        let _ = parse_compact(&token, "EdDSA");
    }

    #[test]
    fn parser_never_panics_on_token_shaped_input(
        h in "[A-Za-z0-9_=-]{0,80}", c in "[A-Za-z0-9_=-]{0,200}", s in "[A-Za-z0-9_.=-]{0,90}",
    ) {
        let _ = parse_compact(&format!("{h}.{c}.{s}"), "EdDSA");
    }

    #[test]
    fn claims_reader_never_panics(json in any::<Vec<(String, i64)>>(), text in ".{0,40}") {
        let mut map: Map<String, Value> =
            json.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
        for field in ["ops", "prefix", "nonce", "ver"] {
            map.insert(field.into(), Value::from(text.clone()));
        }
        if let Ok(c) = StorageClaims::from_map(map) {
            let _ = c.validate(&policy(), 0);
        }
    }

    #[test]
    fn prefix_rules_never_panic_and_covered_keys_extend_the_prefix(
        prefix in "[a-z./\\\\]{0,12}", key in "[a-z./]{0,16}",
    ) {
        let _ = check_prefix(&prefix);
        if prefix_covers(&prefix, &key) {
            prop_assert!(key.starts_with(&prefix) && key.len() > prefix.len());
        }
    }

    #[test]
    fn operation_sets_accept_exactly_distinct_known_names(
        names in proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(Operation::ALL.map(Operation::as_str).to_vec())
                    .prop_map(str::to_owned),
                "[a-z]{1,10}",
            ],
            0..10,
        ),
    ) {
        let known = names.iter().all(|n| Operation::from_wire(n).is_some());
        let distinct = names.iter().collect::<BTreeSet<_>>().len() == names.len();
        let ok = OperationSet::from_wire(&names).is_ok();
        prop_assert_eq!(ok, known && distinct && !names.is_empty());
    }
}

#[test]
fn postgres_binding_names_one_canonical_workspace() {
    let ok = PostgresBinding {
        backend: POSTGRES_BACKEND.into(),
        workspace: "0f8fad5b-d9cb-469f-a165-70867728950e".into(),
    };
    assert_eq!(ok.check(), Ok(()));
    for (backend, workspace) in [
        ("storage", "0f8fad5b-d9cb-469f-a165-70867728950e"),
        ("postgres", "0F8FAD5B-D9CB-469F-A165-70867728950E"),
        ("postgres", "0f8fad5bd9cb469fa16570867728950e"),
        ("postgres", "0f8fad5b-d9cb-469f-a165-70867728950"),
        ("postgres", "../0f8fad5b-d9cb-469f-a165-7086772895"),
    ] {
        let b = PostgresBinding {
            backend: backend.into(),
            workspace: workspace.into(),
        };
        assert_eq!(
            b.check(),
            Err(CapabilityError::Invalid(Reason::Binding)),
            "{backend} {workspace}"
        );
    }
    let mut map = serde_json::to_value(claims(1_000))
        .unwrap()
        .as_object()
        .unwrap()
        .clone();
    map.remove("bucket");
    map.remove("prefix");
    map.insert("backend".into(), json!("postgres"));
    map.insert("workspace".into(), json!(ok.workspace));
    let pg = PostgresClaims::from_map(map.clone()).unwrap();
    assert_eq!(pg.binding, ok);
    map.insert("bucket".into(), json!("b"));
    assert!(
        PostgresClaims::from_map(map).is_err(),
        "a Storage field is refused"
    );
}

/// The claims `createPostgresDelegatedCapability` signs in the seed's example.
fn seed_claims(now: i64) -> Value {
    json!({
        "aud": "storage",
        "backend": "postgres",
        "corr": "job-2",
        "exp": now + 300,
        "iat": now,
        "iss": "jobs",
        "nonce": "job-2",
        "ops": ["read", "write", "commit", "history"],
        "origin": "https://example.test",
        "sub": "job-2",
        "sv": 3,
        "workspace": "0f8fad5b-d9cb-469f-a165-70867728950e",
    })
}

fn seed(v: Value) -> Result<(PostgresClaims, OperationSet), CapabilityError> {
    SeedPostgresClaims::from_map(v.as_object().unwrap().clone())?.validate(&policy(), 1_000)
}

#[test]
fn seed_claims_validate_by_the_common_rules() {
    let (claims, ops) = seed(seed_claims(1_000)).unwrap();
    assert_eq!(ops.to_wire(), ["read", "write", "commit", "history"]);
    assert_eq!(claims.common.cid.as_deref(), Some("job-2"));
    assert_eq!(
        claims.common.nonce, "job-2",
        "the package's short nonces pass"
    );
    assert_eq!(
        claims.binding.workspace,
        "0f8fad5b-d9cb-469f-a165-70867728950e"
    );
    let with = |k: &str, v: Value| {
        let mut c = seed_claims(1_000);
        c[k] = v;
        c
    };
    let invalid_seed = |v: Value| match seed(v) {
        Err(CapabilityError::Invalid(r)) => r,
        other => panic!("expected an invalid capability, got {other:?}"),
    };
    assert_eq!(invalid_seed(with("sv", json!(2))), Reason::SchemaVersion);
    assert_eq!(invalid_seed(with("sv", json!(1))), Reason::SchemaVersion);
    assert_eq!(invalid_seed(with("iss", json!("other"))), Reason::Issuer);
    assert_eq!(invalid_seed(with("aud", json!("other"))), Reason::Audience);
    assert_eq!(
        invalid_seed(with("origin", json!("https://x"))),
        Reason::Origin
    );
    assert_eq!(invalid_seed(with("sub", json!("  "))), Reason::Text);
    assert_eq!(
        invalid_seed(with("sub", json!("s".repeat(1015)))),
        Reason::Text
    );
    assert!(seed(with("sub", json!("s".repeat(1014)))).is_ok());
    assert_eq!(invalid_seed(with("corr", json!(""))), Reason::Text);
    assert_eq!(invalid_seed(with("nonce", json!(""))), Reason::Nonce);
    assert_eq!(
        invalid_seed(with("nonce", json!("n".repeat(1025)))),
        Reason::Nonce
    );
    assert_eq!(
        invalid_seed(with("ops", json!(["read", "read"]))),
        Reason::Operations
    );
    assert_eq!(
        invalid_seed(with("ops", json!(["admin"]))),
        Reason::Operations
    );
    assert_eq!(
        invalid_seed(with("backend", json!("storage"))),
        Reason::Binding
    );
    assert_eq!(
        invalid_seed(with(
            "workspace",
            json!("0F8FAD5B-D9CB-469F-A165-70867728950E")
        )),
        Reason::Binding
    );
    assert_eq!(
        invalid_seed(with("iat", json!(1_100))),
        Reason::IssuedInFuture
    );
    assert_eq!(
        invalid_seed(with("exp", json!(1_000 + 901))),
        Reason::Lifetime
    );
    assert_eq!(invalid_seed(with("iat", json!(1.5))), Reason::Malformed);
    let mut old = seed_claims(100);
    old["exp"] = json!(200);
    assert_eq!(seed(old), Err(CapabilityError::Expired));
    for field in ["corr", "sv", "backend"] {
        let mut c = seed_claims(1_000);
        c.as_object_mut().unwrap().remove(field);
        assert_eq!(invalid_seed(c), Reason::Malformed, "{field} is required");
    }
    assert_eq!(invalid_seed(with("ver", json!(1))), Reason::Malformed);
    assert_eq!(invalid_seed(with("cid", json!("x"))), Reason::Malformed);
}

#[test]
fn a_verifier_learning_its_algorithm_from_the_key_accepts_only_the_listed_ones() {
    let algs = [Algorithm::EdDSA.as_str(), Algorithm::Hs256.as_str()];
    for (alg, ok) in [
        ("EdDSA", true),
        ("HS256", true),
        ("none", false),
        ("HS512", false),
    ] {
        let header = b64_encode(format!(r#"{{"alg":"{alg}","kid":"k1","typ":"JWS"}}"#).as_bytes());
        let token = format!("{header}.{}.{}", b64_encode(b"{}"), b64_encode(&[1; 32]));
        assert_eq!(parse_compact_among(&token, &algs).is_ok(), ok, "{alg}");
    }
    assert_eq!(Algorithm::from_wire("HS256"), Some(Algorithm::Hs256));
    assert_eq!(Algorithm::from_wire("hs256"), None);
}
