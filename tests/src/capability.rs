//! Capability helpers for the end-to-end tests: register and revoke verifiers as the database
//! owner, forge Ed25519 tokens the signer refuses to mint (any header, any claims) and HS256
//! tokens an attacker would try, and read the server log to check that no secret ends up in it.

use crate::Cluster;
use ed25519_dalek::{Signer, SigningKey};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use supabash_core::capability::b64_encode;

/// Registers (or rotates) verifier `kid` as the database owner with the default clock skew
/// and maximum lifetime, the database generating the pair; returns the private key.
pub fn register(
    cluster: &Cluster,
    kid: &str,
    issuer: &str,
    audience: &str,
    origin: &str,
) -> String {
    let sql = format!(
        "SELECT supabash_register_capability_verifier({}, {}, {}, {})",
        quote(kid),
        quote(issuer),
        quote(audience),
        quote(origin)
    );
    cluster.psql("app", &sql).trim().to_owned()
}

/// [`register`] with a clock skew and a maximum lifetime, in seconds.
pub fn register_with(
    cluster: &Cluster,
    kid: &str,
    (issuer, audience, origin): (&str, &str, &str),
    skew_secs: i32,
    max_lifetime_secs: i32,
) -> String {
    let sql = format!(
        "SELECT supabash_register_capability_verifier({}, {}, {}, {}, {skew_secs}, {max_lifetime_secs})",
        quote(kid),
        quote(issuer),
        quote(audience),
        quote(origin)
    );
    cluster.psql("app", &sql).trim().to_owned()
}

/// Revokes verifier `kid` as the database owner; whether it existed.
pub fn revoke(cluster: &Cluster, kid: &str) -> bool {
    let out = cluster.psql(
        "app",
        &format!("SELECT supabash_revoke_capability_verifier({})", quote(kid)),
    );
    out.trim() == "t"
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn decode(b64: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(b64)
        .expect("unpadded base64url")
}

fn input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        b64_encode(header.to_string().as_bytes()),
        b64_encode(claims.to_string().as_bytes())
    )
}

/// A compact JWS over exactly `header` and `claims`, signed Ed25519 with `private_key` (the
/// 32-byte seed, unpadded base64url, as registration returns it), whatever the header says.
pub fn forge(private_key: &str, header: &Value, claims: &Value) -> String {
    let seed: [u8; 32] = decode(private_key).try_into().expect("a 32-byte seed");
    let input = input(header, claims);
    let signature = SigningKey::from_bytes(&seed).sign(input.as_bytes());
    format!("{input}.{}", b64_encode(&signature.to_bytes()))
}

/// A compact JWS over exactly `header` and `claims`, signed HS256 with the raw bytes `key`:
/// what someone who read a key out of a table would try.
pub fn forge_hs256(key: &[u8], header: &Value, claims: &Value) -> String {
    let input = input(header, claims);
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(input.as_bytes());
    format!("{input}.{}", b64_encode(&mac.finalize().into_bytes()))
}

/// The public key (unpadded base64url) of `private_key`.
pub fn public_key(private_key: &str) -> String {
    let seed: [u8; 32] = decode(private_key).try_into().expect("a 32-byte seed");
    b64_encode(SigningKey::from_bytes(&seed).verifying_key().as_bytes())
}

/// Replaces the claims of `token` with `claims`, keeping its header and signature.
pub fn with_claims(token: &str, claims: &Value) -> String {
    let mut parts = token.split('.');
    let header = parts.next().expect("header");
    let _ = parts.next();
    let signature = parts.next().expect("signature");
    format!(
        "{header}.{}.{signature}",
        b64_encode(claims.to_string().as_bytes())
    )
}

/// The claims of `token` as JSON (unverified).
pub fn claims_of(token: &str) -> Value {
    use base64::Engine;
    let part = token.split('.').nth(1).expect("claims");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url claims");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// Everything the server has logged so far (the cluster's `server.log`).
pub fn server_log(cluster: &Cluster) -> String {
    let bytes = std::fs::read(cluster.dir.join("server.log")).expect("read the server log");
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Registers (or rotates) HS256 verifier `kid` as the database owner; the secret it returns
/// once (unpadded base64url), or psql's error.
pub fn try_register_hs256(
    cluster: &Cluster,
    kid: &str,
    issuer: &str,
    audience: &str,
    origin: &str,
) -> Result<String, String> {
    let sql = format!(
        "SELECT supabash_register_capability_verifier({}, {}, {}, {}, algorithm => 'HS256')",
        quote(kid),
        quote(issuer),
        quote(audience),
        quote(origin)
    );
    cluster
        .try_psql("app", &sql)
        .map(|s| s.trim().to_owned())
        .map_err(|e| e.to_string())
}

/// A Postgres capability built exactly as the TypeScript package's
/// `createPostgresDelegatedCapability({ claims, keyId, secretKey })` builds it, `secretKey`
/// being `importCapabilitySecret(secret)` of the registration's answer: the compact JWS
/// `base64url({"alg":"HS256","kid":keyId,"typ":"JWS"}).base64url(claims).base64url(HMAC-SHA256)`,
/// keyed with the secret's base64url-decoded bytes.
pub fn seed_postgres_capability(secret: &str, key_id: &str, claims: &Value) -> String {
    let header = serde_json::json!({ "alg": "HS256", "kid": key_id, "typ": "JWS" });
    forge_hs256(&decode(secret), &header, claims)
}
