//! Local verification against a JSON Web Key Set with real keys: ES256 and EdDSA keys generated
//! here (ring), an RSA key from a test-only fixture. The fetched case is served by a JWKS test
//! server (it answers `GET /auth/v1/.well-known/jwks.json` with the set, as Supabase Auth
//! documents, and counts fetches); end to end, postrust verifies the same tokens with the same
//! set (`PGRST_JWT_SECRET` holding the JWKS).

use supabash_tests::client as support;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use supabash::auth::{JwksVerifier, SupabaseConfig, Verifier};
use supabash::{ErrorCode, Workspace};
use support::{
    assert_opens_only_for_its_user, bearer_headers, json_test_server, new_user, Postrust,
};

/// A signing key and its public JWK.
struct TestKey {
    kid: String,
    alg: Algorithm,
    signing: EncodingKey,
    jwk: Value,
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn es256_key(kid: &str) -> TestKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref(); // 0x04 || x || y
    TestKey {
        kid: kid.into(),
        alg: Algorithm::ES256,
        signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
                    "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
    }
}

fn eddsa_key(kid: &str) -> TestKey {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    TestKey {
        kid: kid.into(),
        alg: Algorithm::EdDSA,
        signing: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b64(pair.public_key().as_ref())}),
    }
}

/// The test-only RSA key of `tests/fixtures/` (RSA generation is slow in debug builds).
fn rs256_key(kid: &str) -> TestKey {
    let mut jwk: Value =
        serde_json::from_str(include_str!("fixtures/test-only-rsa-2048-public.jwk.json")).unwrap();
    jwk["kid"] = json!(kid);
    jwk["alg"] = json!("RS256");
    TestKey {
        kid: kid.into(),
        alg: Algorithm::RS256,
        signing: EncodingKey::from_rsa_pem(include_bytes!(
            "fixtures/test-only-rsa-2048-private.pem"
        ))
        .unwrap(),
        jwk,
    }
}

fn all_keys() -> Vec<TestKey> {
    vec![rs256_key("rsa-1"), es256_key("ec-1"), eddsa_key("ed-1")]
}

fn jwks(keys: &[&TestKey]) -> String {
    json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() }).to_string()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims(sub: &str) -> Value {
    json!({ "sub": sub, "role": "authenticated", "aud": "authenticated",
            "exp": now() + 3600, "iat": now() })
}

fn sign_with(key: &TestKey, claims: &Value) -> String {
    let mut header = Header::new(key.alg);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.signing).unwrap()
}

/// JWKS test server: the current set at `/auth/v1/.well-known/jwks.json`, 404 elsewhere.
struct JwksServer {
    url: String,
    set: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

impl JwksServer {
    async fn start(set: String) -> JwksServer {
        let set = Arc::new(Mutex::new(set));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (set.clone(), fetches.clone());
        let url = json_test_server(move |head| {
            if head.starts_with("GET /auth/v1/.well-known/jwks.json ") {
                counted.fetch_add(1, Ordering::SeqCst);
                ("200 OK", served.lock().unwrap().clone())
            } else {
                ("404 Not Found", "{}".to_owned())
            }
        })
        .await;
        JwksServer { url, set, fetches }
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn verifies_each_algorithm_by_kid_given_or_fetched() {
    let keys = all_keys();
    let set = jwks(&keys.iter().collect::<Vec<_>>());
    let server = JwksServer::start(set.clone()).await;
    let given = JwksVerifier::from_json(&set).unwrap();
    let fetched = JwksVerifier::supabase(&server.url).unwrap();
    for key in &keys {
        let user = new_user();
        let token = sign_with(key, &claims(&user));
        assert_eq!(given.verify(&token).await.unwrap(), user, "{:?}", key.alg);
        assert_eq!(fetched.verify(&token).await.unwrap(), user, "{:?}", key.alg);
    }
    assert_eq!(server.fetches(), 1, "the fetched set is cached");
}

#[tokio::test]
async fn refuses_what_the_key_set_does_not_vouch_for() {
    let keys = all_keys();
    let verifier = JwksVerifier::from_json(&jwks(&keys.iter().collect::<Vec<_>>())).unwrap();
    let user = new_user();
    let refused = |token: String| {
        let verifier = &verifier;
        async move { verifier.verify(&token).await.unwrap_err().code() }
    };
    let [rsa, ec, ed] = &keys[..] else {
        unreachable!()
    };

    // alg none, with and without a signature.
    let unsigned = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT","kid":"ed-1"}"#),
        b64(claims(&user).to_string().as_bytes())
    );
    assert_eq!(refused(unsigned.clone()).await, ErrorCode::Authentication);
    assert_eq!(
        refused(format!("{unsigned}c2ln")).await,
        ErrorCode::Authentication
    );
    // HS256 when only a JWKS is configured (even "signed" with a public key's text).
    let mut hs = Header::new(Algorithm::HS256);
    hs.kid = Some("ed-1".into());
    let hs256 = jsonwebtoken::encode(
        &hs,
        &claims(&user),
        &EncodingKey::from_secret(ed.jwk["x"].as_str().unwrap().as_bytes()),
    )
    .unwrap();
    assert_eq!(refused(hs256).await, ErrorCode::Authentication);
    // A kid not in the set, and no kid at all.
    let stranger = eddsa_key("ed-unknown");
    assert_eq!(
        refused(sign_with(&stranger, &claims(&user))).await,
        ErrorCode::Authentication
    );
    let no_kid =
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims(&user), &ed.signing).unwrap();
    assert_eq!(refused(no_kid).await, ErrorCode::Authentication);
    // Another key claiming a known kid (forged signature), and a kid whose key has another alg.
    let impostor = eddsa_key("ed-1");
    assert_eq!(
        refused(sign_with(&impostor, &claims(&user))).await,
        ErrorCode::Authentication
    );
    let mut cross = Header::new(Algorithm::ES256);
    cross.kid = Some(rsa.kid.clone());
    let cross = jsonwebtoken::encode(&cross, &claims(&user), &ec.signing).unwrap();
    assert_eq!(refused(cross).await, ErrorCode::Authentication);
    // A tampered payload keeps the old signature.
    let good = sign_with(ec, &claims(&user));
    let parts: Vec<&str> = good.split('.').collect();
    let mut other = claims(&new_user());
    other["exp"] = claims(&user)["exp"].clone();
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(other.to_string().as_bytes()),
        parts[2]
    );
    assert_eq!(refused(tampered).await, ErrorCode::Authentication);

    // Claims: exp and nbf with the documented leeway, aud, role, sub.
    let leeway = supabash::auth::LEEWAY_SECS as i64;
    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = claims(&user);
        change(&mut c);
        sign_with(ed, &c)
    };
    let within = with(&|c| c["exp"] = json!(now() - leeway / 2));
    assert_eq!(verifier.verify(&within).await.unwrap(), user);
    let cases: Vec<(&str, String, ErrorCode)> = vec![
        (
            "expired",
            with(&|c| c["exp"] = json!(now() - leeway - 60)),
            ErrorCode::Authentication,
        ),
        (
            "no exp",
            with(&|c| {
                c.as_object_mut().unwrap().remove("exp");
            }),
            ErrorCode::Authentication,
        ),
        (
            "not yet valid",
            with(&|c| c["nbf"] = json!(now() + leeway + 60)),
            ErrorCode::Authentication,
        ),
        (
            "other audience",
            with(&|c| c["aud"] = json!("anon")),
            ErrorCode::Authentication,
        ),
        (
            "no audience",
            with(&|c| {
                c.as_object_mut().unwrap().remove("aud");
            }),
            ErrorCode::Authentication,
        ),
        (
            "anon role",
            with(&|c| c["role"] = json!("anon")),
            ErrorCode::Authentication,
        ),
        (
            "no role",
            with(&|c| {
                c.as_object_mut().unwrap().remove("role");
            }),
            ErrorCode::Authentication,
        ),
        (
            "service_role",
            with(&|c| c["role"] = json!("service_role")),
            ErrorCode::Authorization,
        ),
        (
            "no sub",
            with(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
            ErrorCode::Authentication,
        ),
    ];
    for (what, token, code) in cases {
        assert_eq!(
            verifier.verify(&token).await.unwrap_err().code(),
            code,
            "{what}"
        );
    }
}

#[tokio::test]
async fn unknown_kids_refetch_at_most_once_per_interval() {
    let first = eddsa_key("ed-1");
    let server = JwksServer::start(jwks(&[&first])).await;
    let verifier = JwksVerifier::supabase(&server.url).unwrap();
    let user = new_user();
    verifier
        .verify(&sign_with(&first, &claims(&user)))
        .await
        .unwrap();
    assert_eq!(server.fetches(), 1);
    // A flood of random kids: one refetch, then refusals from the cache.
    for i in 0..20 {
        let token = sign_with(&eddsa_key(&format!("random-{i}")), &claims(&user));
        assert_eq!(
            verifier.verify(&token).await.unwrap_err().code(),
            ErrorCode::Authentication
        );
    }
    assert_eq!(server.fetches(), 2, "one refetch for twenty unknown kids");

    // A rotated-in key is found by a refetch (interval zero: every unknown kid may fetch).
    let rotating = JwksVerifier::supabase(&server.url)
        .unwrap()
        .with_unknown_kid_interval(Duration::ZERO);
    rotating
        .verify(&sign_with(&first, &claims(&user)))
        .await
        .unwrap();
    let second = es256_key("ec-2");
    *server.set.lock().unwrap() = jwks(&[&first, &second]);
    let before = server.fetches();
    assert_eq!(
        rotating
            .verify(&sign_with(&second, &claims(&user)))
            .await
            .unwrap(),
        user
    );
    rotating
        .verify(&sign_with(&first, &claims(&user)))
        .await
        .unwrap();
    assert_eq!(server.fetches(), before + 1, "known kids use the cache");
}

#[tokio::test]
async fn an_unreachable_key_set_is_a_retryable_failure() {
    let server = JwksServer::start(String::new()).await;
    let verifier = JwksVerifier::fetched_from(&format!("{}/elsewhere.json", server.url)).unwrap();
    let token = sign_with(&eddsa_key("ed-1"), &claims(&new_user()));
    let e = verifier.verify(&token).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    assert!(e.is_retryable());
    // Within the interval the failure is not retried against the server.
    let e = verifier.verify(&token).await.unwrap_err();
    assert!(e.is_retryable() && e.code() == ErrorCode::Backend);
    // Only https, or http to loopback.
    for url in ["http://auth.example.com", "ftp://127.0.0.1", "not a url"] {
        assert_eq!(
            JwksVerifier::supabase(url).unwrap_err().code(),
            ErrorCode::InvalidArgument,
            "{url}"
        );
    }
    JwksVerifier::supabase("https://auth.example.com").unwrap();
    JwksVerifier::supabase("http://[::1]:9").unwrap();
    JwksVerifier::supabase("http://localhost:9").unwrap();
    let garbage = JwksServer::start("not json".into()).await;
    let e = JwksVerifier::supabase(&garbage.url)
        .unwrap()
        .verify(&token)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
}

#[tokio::test]
async fn opens_through_postgrest_with_asymmetric_tokens() {
    let keys = all_keys();
    let set = jwks(&keys.iter().collect::<Vec<_>>());
    let auth = JwksServer::start(set.clone()).await;
    let rest = Postrust::start(&set); // its PGRST_JWT_SECRET is the key set
    let config = SupabaseConfig::new(&auth.url, "sb_publishable_test")
        .with_verifier(Verifier::Jwks(Arc::new(
            JwksVerifier::supabase(&auth.url).unwrap(),
        )))
        .with_rest_url(rest.url.clone());
    for key in &keys {
        let alice = new_user();
        let token = sign_with(key, &claims(&alice));
        let bob = sign_with(key, &claims(&new_user()));
        assert_opens_only_for_its_user(&config, &alice, &token, &bob, &format!("{:?}", key.alg))
            .await;
    }
    // The project's HS256 tokens are refused by a JWKS-only verifier.
    let hs256 = support::sign(&support::user_claims(&new_user()));
    let e = Workspace::builder_from_request(&bearer_headers(&[&hs256]), &config)
        .create()
        .await
        .err()
        .unwrap();
    assert_eq!(e.code(), ErrorCode::Authentication);
    assert_eq!(auth.fetches(), 1);
}
