//! Delegated capabilities: EdDSA (Ed25519) compact tokens a trusted issuer signs with a private
//! key the database never stores, exchanged by `service_role` for a short-lived grant bound to
//! one workspace, its owner, an actor subject, an exact operation set and a correlation id.
//!
//! The database holds only each verifier's public key and a *generation* (renewed on every
//! registration): a grant records the generation it was minted under and works only while
//! that generation is the verifier's current one, so rotation and revocation end every grant
//! of the old key, even one whose exchange commits after them. Every refusal is
//! `SUPABASH_INVALID_CAPABILITY` with the same message, except expiry
//! (`SUPABASH_EXPIRED_CAPABILITY`); nothing in an error repeats the token.

use super::Call;
use crate::pg::fail::{Fail, Outcome};
use crate::store::access;
use crate::store::grants::{self, NewGrant, Verifier, GRANT_BYTES};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use sha2::Sha256;
use supabash_core::capability::{
    b64_encode, parse_compact, CapabilityError, Compact, PostgresClaims, ALGORITHM, MAX_TOKEN_BYTES,
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

/// HMAC-SHA256 of `input` under `secret`, compared with `signature` in constant time: what
/// versions before 0.3.0 verified (see `_hmac_sha256_equal` in lib.rs).
pub fn legacy_hmac_sha256_equal(secret: &[u8], input: &[u8], signature: &[u8]) -> bool {
    use hmac::{Hmac, Mac};
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(input);
    mac.verify_slice(signature).is_ok()
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
pub fn exchange(_call: &Call, req: rq::ExchangeCapability) -> Outcome<Grant> {
    let role = crate::pg::identity::role(&crate::pg::identity::claims());
    if role.as_deref() != Some("service_role") || req.capability.len() > MAX_TOKEN_BYTES {
        return Err(invalid());
    }
    let (compact, verifier) = verified(&req.capability)?;
    let claims = PostgresClaims::from_map(compact.claims).map_err(refused)?;
    let ops = claims
        .validate(&verifier.policy, verifier.now)
        .map_err(refused)?;
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

/// Parses a compact token and checks its signature under its registered verifier's key.
fn verified(token: &str) -> Outcome<(Compact<'_>, Verifier)> {
    let compact = parse_compact(token, ALGORITHM).map_err(refused)?;
    let verifier = grants::verifier(&compact.header.kid)?.ok_or_else(invalid)?;
    if !ed25519_valid(
        &verifier.public_key,
        compact.signing_input.as_bytes(),
        &compact.signature,
    ) {
        return Err(invalid());
    }
    Ok((compact, verifier))
}

#[cfg(test)]
mod tests {
    use super::*;

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
