//! Opening from an incoming request, with sessions verified by a Supabase Auth test server
//! (it follows Supabase Auth's documented `GET /auth/v1/user` answer) or locally by JWT secret.

use supabash_tests::client as support;

use reqwest::header::HeaderMap;
use serde_json::json;
use supabash::auth::{SupabaseConfig, Verifier};
use supabash::{ErrorCode, Workspace};
use support::{
    assert_opens_only_for_its_user, bearer_headers, json_test_server, new_user, postrust_url, sign,
    user_claims, JWT_SECRET,
};

/// Supabase Auth test server: answers `GET /auth/v1/user` like Supabase Auth does — the user
/// object (`id`, `aud`, `role`, `email`, metadata, timestamps) for a valid access token and
/// `401 {"code":401,"error_code":"bad_jwt","msg":...}` otherwise. It checks tokens with the
/// project's JWT secret, as Supabase Auth does.
async fn supabase_auth_test_server() -> String {
    json_test_server(|request| {
        let header = |name: &str| {
            request.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
        };
        let token =
            header("authorization").and_then(|v| v.strip_prefix("Bearer ").map(str::to_owned));
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
        validation.set_audience(&["authenticated"]);
        let claims = token.and_then(|t| {
            jsonwebtoken::decode::<serde_json::Value>(
                &t,
                &jsonwebtoken::DecodingKey::from_secret(JWT_SECRET.as_bytes()),
                &validation,
            )
            .ok()
        });
        let routed = request.starts_with("GET /auth/v1/user ") && header("apikey").is_some();
        let (status, body) = match claims {
            Some(c) if routed => (
                "200 OK",
                json!({
                    "id": c.claims["sub"], "aud": "authenticated", "role": c.claims["role"],
                    "email": "user@example.com", "phone": "",
                    "app_metadata": {"provider": "email", "providers": ["email"]},
                    "user_metadata": {}, "identities": [],
                    "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                    "is_anonymous": false,
                }),
            ),
            _ => (
                "401 Unauthorized",
                json!({"code": 401, "error_code": "bad_jwt", "msg": "invalid JWT: unable to parse or verify signature"}),
            ),
        };
        (status, body.to_string())
    })
    .await
}

async fn config(verifier: Verifier) -> SupabaseConfig {
    SupabaseConfig::new(&supabase_auth_test_server().await, "sb_publishable_test")
        .with_verifier(verifier)
        .with_rest_url(postrust_url())
}

#[tokio::test]
async fn opens_the_verified_users_workspace_only() {
    for verifier in [
        Verifier::SupabaseAuth,
        Verifier::JwtSecret(JWT_SECRET.into()),
    ] {
        let cfg = config(verifier.clone()).await;
        let alice = new_user();
        let token = sign(&user_claims(&alice));
        let bob = sign(&user_claims(&new_user()));
        assert_opens_only_for_its_user(&cfg, &alice, &token, &bob, &format!("{verifier:?}")).await;
    }
}

#[tokio::test]
async fn refuses_what_must_not_open_a_workspace() {
    for verifier in [
        Verifier::SupabaseAuth,
        Verifier::JwtSecret(JWT_SECRET.into()),
    ] {
        let cfg = config(verifier.clone()).await;
        let user = new_user();
        let token = sign(&user_claims(&user));
        let code =
            |r: supabash::Result<(supabash::auth::Session, Workspace)>| r.err().unwrap().code();

        let two = bearer_headers(&[&token, &token]);
        assert_eq!(
            code(Workspace::builder_from_request(&two, &cfg).create().await),
            ErrorCode::Authentication
        );
        let none = HeaderMap::new();
        assert_eq!(
            code(Workspace::builder_from_request(&none, &cfg).create().await),
            ErrorCode::Authentication
        );

        let mut secret_key = cfg.clone();
        secret_key.publishable_key = "sb_secret_abc".into();
        let one = bearer_headers(&[&token]);
        assert_eq!(
            code(
                Workspace::builder_from_request(&one, &secret_key)
                    .create()
                    .await
            ),
            ErrorCode::Authorization
        );

        let service = sign(&json!({ "role": "service_role", "exp": user_claims(&user)["exp"] }));
        let req = bearer_headers(&[&service]);
        assert_eq!(
            code(Workspace::builder_from_request(&req, &cfg).create().await),
            ErrorCode::Authorization
        );

        let mut expired = user_claims(&user);
        expired["exp"] = json!(1_000_000_000);
        let req = bearer_headers(&[&sign(&expired)]);
        assert_eq!(
            code(Workspace::builder_from_request(&req, &cfg).create().await),
            ErrorCode::Authentication,
            "{verifier:?}"
        );

        let forged = jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &user_claims(&user),
            &jsonwebtoken::EncodingKey::from_secret(b"another-secret-another-secret-another"),
        )
        .unwrap();
        let req = bearer_headers(&[&forged]);
        assert_eq!(
            code(Workspace::builder_from_request(&req, &cfg).create().await),
            ErrorCode::Authentication
        );
    }
}
