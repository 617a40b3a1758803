//! Delegated capabilities: compact tokens a trusted issuer signs, exchanged by `service_role` for a short-lived grant bound to
//! one workspace, its owner, an actor subject, an exact operation set and a correlation id.
//!
//! A verifier is registered for one algorithm. **EdDSA** (Ed25519, the default): the issuer
//! signs with a private key the database never stores; the database holds the public key.
//! **HS256**: the seed package's format (claims schema version 3, `SeedPostgresClaims`); the
//! shared secret is never stored either, but derived on each use from the server key file
//! (`pg::key_file`), the key id and the verifier's generation ([`hs256_secret`]), so it exists
//! only inside the server process and in the one answer of the registration that created it.
//! Every other rule is the same for both.
//!
//! The database holds each verifier's public key (if any) and a *generation* (renewed on every
//! registration): a grant records the generation it was minted under and works only while
//! that generation is the verifier's current one, so rotation and revocation end every grant
//! of the old key, even one whose exchange commits after them. Every refusal is
//! `SUPABASH_INVALID_CAPABILITY` with the same message, except expiry
//! (`SUPABASH_EXPIRED_CAPABILITY`); nothing in an error repeats the token.

use super::Call;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::key_file;
use crate::store::access;
use crate::store::grants::{self, NewGrant, Verifier, GRANT_BYTES};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use sha2::Sha256;
use supabash_core::capability::{
    b64_encode, parse_compact_among, Algorithm, CapabilityError, Compact, OperationSet,
    PostgresClaims, Reason, SeedPostgresClaims, MAX_TOKEN_BYTES,
};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::Grant;
use supabash_core::Marker;

/// Whether `signature` is a valid Ed25519 signature of `input` under `public_key` (strict
/// verification: no malleable or small-order encodings).
pub fn ed25519_valid(public_key: &[u8], input: &[u8], signature: &[u8]) -> bool {
    let (Ok(key), Ok(sig)) = (
        <[u8; 32]>::try_from(public_key),
        <[u8; 64]>::try_from(signature),
    ) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&key) else {
        return false;
    };
    key.verify_strict(input, &Signature::from_bytes(&sig))
        .is_ok()
}

/// HMAC-SHA256 of `input` under `secret`, compared with `signature` in constant time (the
/// `hmac` crate's `verify_slice`; a signature of another length never matches): how HS256
/// tokens are checked, and what versions before 0.3.0 verified (`_hmac_sha256_equal` in lib.rs).
pub fn hmac_sha256_equal(secret: &[u8], input: &[u8], signature: &[u8]) -> bool {
    use hmac::{Hmac, Mac};
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(input);
    mac.verify_slice(signature).is_ok()
}

/// The HS256 secret of verifier `key_id` at generation `generation`: HMAC-SHA256 under the
/// server key of a domain-separated label, the key id and the generation. A new generation
/// (every registration) gives an unrelated secret, so rotation and revocation end the old one.
pub fn hs256_secret(server_key: &[u8], key_id: &str, generation: &str) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<Sha256>::new_from_slice(server_key).expect("HMAC takes any key length");
    mac.update(b"supabash capability HS256 secret v1\0");
    mac.update(key_id.as_bytes());
    mac.update(b"\0");
    mac.update(generation.as_bytes());
    mac.finalize().into_bytes().into()
}

/// `supabash._hs256_rotate(key_id)`: gives HS256 verifier `key_id` a new generation and
/// answers the secret of that generation (unpadded base64url). The only way any secret
/// leaves the server: each call makes the previous secret worthless, so no secret is ever
/// answered twice. The registration function (database owner only) calls it.
pub fn hs256_rotate(key_id: &str) -> Outcome<String> {
    let key = key_file::load().map_err(|e| Fail::new(Marker::InvalidArgument, e.0))?;
    let generation = grants::new_hs256_generation(key_id)?.ok_or_else(|| {
        Fail::new(
            Marker::InvalidArgument,
            "no HS256 verifier has this key id: register it with algorithm => 'HS256'",
        )
    })?;
    Ok(b64_encode(&hs256_secret(&key, key_id, &generation)))
}

/// A fresh Ed25519 key pair: the 32-byte private seed followed by the 32-byte public key.
pub fn new_key_pair() -> Vec<u8> {
    let seed: [u8; 32] = strong_random(32).try_into().expect("32 random bytes");
    let key = SigningKey::from_bytes(&seed);
    [seed.as_slice(), key.verifying_key().as_bytes()].concat()
}

/// `n` bytes from PostgreSQL's strong random source.
pub fn strong_random(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    // SAFETY: the buffer is valid for `n` bytes; pg_strong_random only writes into it.
    let ok = unsafe { pgrx::pg_sys::pg_strong_random(buf.as_mut_ptr().cast(), n) };
    assert!(ok, "no strong random source");
    buf
}

fn refused(e: CapabilityError) -> Fail {
    match e {
        CapabilityError::Expired => {
            Fail::new(Marker::ExpiredCapability, "the capability has expired")
        }
        CapabilityError::Invalid(_) => {
            Fail::new(Marker::InvalidCapability, "the capability is not valid")
        }
    }
}

fn invalid() -> Fail {
    refused(CapabilityError::Invalid(
        supabash_core::capability::Reason::Malformed,
    ))
}

/// `supabash_exchange_capability`: see docs/sql-contract.md. Only `service_role` exchanges;
/// the token is verified, its nonce spent, and a random grant minted whose hash is stored.
pub fn exchange(call: &Call, req: rq::ExchangeCapability) -> Outcome<Grant> {
    let role = crate::pg::identity::role(&crate::pg::identity::claims());
    if role.as_deref() != Some("service_role") || req.capability.len() > MAX_TOKEN_BYTES {
        return Err(invalid());
    }
    let (compact, verifier) = verified(call, &req.capability)?;
    let (claims, ops) = claims_of(compact.claims, &verifier).map_err(refused)?;
    let workspace = claims.binding.workspace.as_str();
    let owner = access::owner_unscoped(workspace)?.ok_or_else(invalid)?;
    grants::forget_expired()?;
    let forget_at = claims.common.nonce_forget_at(&verifier.policy);
    if !grants::spend_nonce(&claims.common.iss, &claims.common.nonce, forget_at)? {
        return Err(invalid());
    }
    let grant = strong_random(GRANT_BYTES);
    let operations = ops.to_wire();
    let expires_at = grants::insert_grant(
        &grant,
        NewGrant {
            key_id: &compact.header.kid,
            generation: &verifier.generation,
            workspace,
            owner: &owner,
            actor_subject: &claims.common.sub,
            operations: operations.clone(),
            correlation_id: claims.common.cid.clone(),
            expires_at: claims.common.exp,
        },
    )?
    .ok_or_else(invalid)?;
    Ok(Grant {
        delegated_grant: b64_encode(&grant),
        workspace_id: workspace.to_owned(),
        actor_subject: claims.common.sub.clone(),
        operations,
        correlation_id: claims.common.cid.clone(),
        expires_at,
    })
}

/// The claims of a verified token, read in its verifier's schema (ours for EdDSA, the seed
/// package's for HS256), checked by the same rules; and the operation set.
fn claims_of(
    map: serde_json::Map<String, serde_json::Value>,
    verifier: &Verifier,
) -> Result<(PostgresClaims, OperationSet), CapabilityError> {
    match verifier.algorithm {
        Algorithm::EdDSA => {
            let claims = PostgresClaims::from_map(map)?;
            let ops = claims.validate(&verifier.policy, verifier.now)?;
            Ok((claims, ops))
        }
        Algorithm::Hs256 => {
            SeedPostgresClaims::from_map(map)?.validate(&verifier.policy, verifier.now)
        }
    }
}

/// Parses a compact token and checks its signature under its registered verifier: the header's
/// `alg` must be the one the key id was registered for (never chosen by the token).
fn verified<'a>(call: &Call, token: &'a str) -> Outcome<(Compact<'a>, Verifier)> {
    let algs = Algorithm::ALL.map(Algorithm::as_str);
    let compact = parse_compact_among(token, &algs).map_err(refused)?;
    let verifier =
        grants::verifier(&compact.header.kid, call.schema.hs256_verifiers)?.ok_or_else(invalid)?;
    if compact.header.alg != verifier.algorithm.as_str() {
        return Err(refused(Reason::Header.into()));
    }
    let input = compact.signing_input.as_bytes();
    let valid = match verifier.algorithm {
        Algorithm::EdDSA => verifier
            .public_key
            .as_deref()
            .is_some_and(|key| ed25519_valid(key, input, &compact.signature)),
        Algorithm::Hs256 => {
            let key = key_file::load().map_err(|e| {
                pgrx::ereport!(
                    pgrx::PgLogLevel::LOG_SERVER_ONLY,
                    pgrx::PgSqlErrorCode::ERRCODE_CONFIG_FILE_ERROR,
                    format!("supabash: an HS256 capability cannot be verified: {e}")
                );
                Fail::new(
                    Marker::Internal,
                    "HS256 capabilities cannot be verified: the server's key file is not usable (the server log says why)",
                )
            })?;
            let secret = hs256_secret(&key, &compact.header.kid, &verifier.generation);
            hmac_sha256_equal(&secret, input, &compact.signature)
        }
    };
    if !valid {
        return Err(invalid());
    }
    Ok((compact, verifier))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hs256_secrets_differ_by_key_id_generation_and_server_key() {
        let key = [3u8; 32];
        let a = hs256_secret(&key, "k1", "g1");
        assert_eq!(a, hs256_secret(&key, "k1", "g1"));
        assert_ne!(a, hs256_secret(&key, "k2", "g1"));
        assert_ne!(a, hs256_secret(&key, "k1", "g2"));
        assert_ne!(a, hs256_secret(&[4u8; 32], "k1", "g1"));
        use hmac::{Hmac, Mac};
        let mut mac = Hmac::<Sha256>::new_from_slice(&a).unwrap();
        mac.update(b"header.claims");
        let tag = mac.finalize().into_bytes();
        assert!(hmac_sha256_equal(&a, b"header.claims", &tag));
        assert!(!hmac_sha256_equal(&a, b"header.claimz", &tag));
        assert!(!hmac_sha256_equal(&a, b"header.claims", &tag[..31]));
        let mut bad = tag;
        bad[0] ^= 1;
        assert!(!hmac_sha256_equal(&a, b"header.claims", &bad));
    }

    #[test]
    fn ed25519_check_accepts_only_the_exact_signature() {
        use ed25519_dalek::Signer;
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let public = key.verifying_key().to_bytes();
        let good = key.sign(b"header.claims").to_bytes();
        assert!(ed25519_valid(&public, b"header.claims", &good));
        let mut bad = good;
        bad[31] ^= 1;
        assert!(!ed25519_valid(&public, b"header.claims", &bad));
        assert!(!ed25519_valid(&public, b"header.claimz", &good));
        assert!(!ed25519_valid(&public, b"header.claims", &good[..63]));
        let other = SigningKey::from_bytes(&[8u8; 32])
            .verifying_key()
            .to_bytes();
        assert!(!ed25519_valid(&other, b"header.claims", &good));
        assert!(!ed25519_valid(&public[..31], b"header.claims", &good));
    }
}
