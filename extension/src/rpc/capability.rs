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
use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use crate::pg::scope;
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use supabash_core::capability::{
    b64_encode, parse_compact, CapabilityError, Policy, PostgresClaims, ALGORITHM, MAX_TOKEN_BYTES,
};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::Grant;
use supabash_core::Marker;

/// Random bytes in a minted grant.
const GRANT_BYTES: usize = 32;

/// Expired nonces and grants one exchange removes at most (the rest wait for the next one).
const CLEANUP_BATCH: i64 = 64;

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

/// The stored form of a presented grant: SHA-256 of its bytes; `None` when it is not the
/// unpadded base64url of [`GRANT_BYTES`] bytes.
pub fn grant_hash(grant: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(grant)
        .ok()?;
    (raw.len() == GRANT_BYTES).then(|| Sha256::digest(&raw).to_vec())
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

/// A verifier as registered.
struct Verifier {
    policy: Policy,
    public_key: Vec<u8>,
    generation: String,
    /// The database's clock, in Unix seconds.
    now: i64,
}

/// `supabash_exchange_capability`: see docs/sql-contract.md.
pub fn exchange(_call: &Call, req: rq::ExchangeCapability) -> Outcome<Grant> {
    let role = crate::pg::identity::role(&crate::pg::identity::claims());
    if role.as_deref() != Some("service_role") {
        return Err(invalid());
    }
    if req.capability.len() > MAX_TOKEN_BYTES {
        return Err(invalid());
    }
    let compact = parse_compact(&req.capability, ALGORITHM).map_err(refused)?;
    let verifier = db::row(
        "SELECT issuer, audience, origin, clock_skew_seconds::bigint, max_lifetime_seconds::bigint,
                public_key, generation::text,
                floor(extract(epoch FROM clock_timestamp()))::bigint
           FROM supabash.capability_verifiers WHERE key_id = $1 AND public_key IS NOT NULL",
        &[compact.header.kid.as_str().into()],
        |r| {
            Ok(Verifier {
                policy: Policy {
                    issuer: db::get(r, 1)?,
                    audience: db::get(r, 2)?,
                    origin: db::get(r, 3)?,
                    skew_secs: db::get(r, 4)?,
                    max_lifetime_secs: db::get(r, 5)?,
                },
                public_key: db::get(r, 6)?,
                generation: db::get(r, 7)?,
                now: db::get(r, 8)?,
            })
        },
    )?
    .ok_or_else(invalid)?;
    if !ed25519_valid(
        &verifier.public_key,
        compact.signing_input.as_bytes(),
        &compact.signature,
    ) {
        return Err(invalid());
    }
    let policy = verifier.policy;
    let claims = PostgresClaims::from_map(compact.claims).map_err(refused)?;
    let ops = claims.validate(&policy, verifier.now).map_err(refused)?;
    let workspace = claims.binding.workspace.as_str();

    // The owner of the named workspace, seen through a scope limited to this one lookup.
    scope::set(workspace, None);
    let owner = db::row(
        "SELECT owner_id::text FROM supabash.workspaces WHERE id = $1::uuid",
        &[workspace.into()],
        |r| db::get::<String>(r, 1),
    );
    scope::clear();
    let owner = owner?.ok_or_else(invalid)?;

    // Forget what can no longer matter, skipping rows another transaction holds (a concurrent
    // exchange's cleanup, a revocation) instead of waiting on them.
    db::exec(
        "WITH n AS (DELETE FROM supabash.capability_nonces WHERE nonce_hash IN (
                      SELECT nonce_hash FROM supabash.capability_nonces
                       WHERE expires_at <= clock_timestamp()
                       LIMIT $1 FOR UPDATE SKIP LOCKED))
         DELETE FROM supabash.grants WHERE grant_hash IN (
           SELECT grant_hash FROM supabash.grants WHERE expires_at <= clock_timestamp()
            LIMIT $1 FOR UPDATE SKIP LOCKED)",
        &[CLEANUP_BATCH.into()],
    )?;
    let nonce = Sha256::digest(format!("{}\0{}", claims.common.iss, claims.common.nonce)).to_vec();
    let fresh = db::row(
        "INSERT INTO supabash.capability_nonces (nonce_hash, expires_at)
         VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING RETURNING true",
        &[nonce.into(), claims.common.nonce_forget_at(&policy).into()],
        |_| Ok(()),
    )?;
    if fresh.is_none() {
        return Err(invalid());
    }
    let grant = strong_random(GRANT_BYTES);
    let operations = ops.to_wire();
    let expires_at = db::row(
        "INSERT INTO supabash.grants
                (grant_hash, key_id, generation, workspace_id, owner_id, actor_subject, operations,
                 correlation_id, expires_at)
         VALUES ($1, $2, $3::uuid, $4::uuid, $5::uuid, $6, $7, $8, to_timestamp($9))
         RETURNING supabash.utc_text(expires_at)",
        &[
            Sha256::digest(&grant).to_vec().into(),
            compact.header.kid.as_str().into(),
            verifier.generation.as_str().into(),
            workspace.into(),
            owner.as_str().into(),
            claims.common.sub.as_str().into(),
            operations.clone().into(),
            claims.common.cid.clone().into(),
            claims.common.exp.into(),
        ],
        |r| db::get::<String>(r, 1),
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

    #[test]
    fn grant_hash_needs_exactly_32_bytes() {
        assert!(grant_hash(&b64_encode(&[1u8; 32])).is_some());
        assert!(grant_hash(&b64_encode(&[1u8; 31])).is_none());
        assert!(grant_hash("not base64!").is_none());
    }
}
