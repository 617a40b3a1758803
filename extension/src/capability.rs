//! Delegated capabilities: HS256 compact tokens a trusted issuer signs with a secret only the
//! database holds, exchanged by `service_role` for a short-lived grant bound to one workspace,
//! its owner, an actor subject, an exact operation set and a correlation id.
//!
//! The secret never reaches this code: `supabash._signature_valid` (a definer function owned
//! by `supabash_keeper`, the only role that can read `supabash.capability_secrets`) returns a
//! boolean. Every refusal is `SUPABASH_INVALID_CAPABILITY` with the same message, except
//! expiry (`SUPABASH_EXPIRED_CAPABILITY`); nothing in an error repeats the token.

use crate::db;
use crate::fail::{Fail, Outcome};
use crate::scope;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use supabash_core::capability::{
    b64_encode, parse_compact, CapabilityError, Policy, PostgresClaims, MAX_TOKEN_BYTES,
};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::Grant;
use supabash_core::Marker;

/// Random bytes in a minted grant.
const GRANT_BYTES: usize = 32;

/// HMAC-SHA256 of `input` under `secret`, compared with `signature` in constant time.
pub fn hmac_sha256_equal(secret: &[u8], input: &[u8], signature: &[u8]) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(input);
    let expected = mac.finalize().into_bytes();
    expected.len() == signature.len() && bool::from(expected.as_slice().ct_eq(signature))
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
    /// The database's clock, in Unix seconds.
    now: i64,
}

/// `supabash_exchange_capability`: see docs/sql-contract.md.
pub fn exchange(req: rq::ExchangeCapability) -> Outcome<Grant> {
    let role = crate::identity::role(&crate::identity::claims());
    if role.as_deref() != Some("service_role") {
        return Err(invalid());
    }
    if req.capability.len() > MAX_TOKEN_BYTES {
        return Err(invalid());
    }
    let compact = parse_compact(&req.capability, "HS256").map_err(refused)?;
    let verifier = db::row(
        "SELECT issuer, audience, origin, clock_skew_seconds::bigint, max_lifetime_seconds::bigint,
                floor(extract(epoch FROM clock_timestamp()))::bigint
           FROM supabash.capability_verifiers WHERE key_id = $1",
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
                now: db::get(r, 6)?,
            })
        },
    )?
    .ok_or_else(invalid)?;
    let signed = db::row(
        "SELECT supabash._signature_valid($1, $2, $3)",
        &[
            compact.header.kid.as_str().into(),
            compact.signing_input.as_bytes().to_vec().into(),
            compact.signature.clone().into(),
        ],
        |r| db::opt::<bool>(r, 1),
    )?
    .flatten();
    if signed != Some(true) {
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

    db::exec(
        "WITH n AS (DELETE FROM supabash.capability_nonces WHERE expires_at < clock_timestamp())
         DELETE FROM supabash.grants WHERE expires_at < clock_timestamp()",
        &[],
    )?;
    let nonce = Sha256::digest(format!("{}\0{}", claims.common.iss, claims.common.nonce)).to_vec();
    let fresh = db::row(
        "INSERT INTO supabash.capability_nonces (nonce_hash, expires_at)
         VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING RETURNING true",
        &[nonce.into(), claims.common.nonce_until(&policy).into()],
        |_| Ok(()),
    )?;
    if fresh.is_none() {
        return Err(invalid());
    }
    let grant = strong_random(GRANT_BYTES);
    let operations = ops.to_wire();
    let expires_at = db::row(
        "INSERT INTO supabash.grants
                (grant_hash, key_id, workspace_id, owner_id, actor_subject, operations,
                 correlation_id, expires_at)
         VALUES ($1, $2, $3::uuid, $4::uuid, $5, $6, $7, to_timestamp($8))
         RETURNING supabash.utc_text(expires_at)",
        &[
            Sha256::digest(&grant).to_vec().into(),
            compact.header.kid.as_str().into(),
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
    fn hmac_compare_accepts_only_the_exact_mac() {
        let secret = [7u8; 32];
        let mut mac = Hmac::<Sha256>::new_from_slice(&secret).unwrap();
        mac.update(b"header.claims");
        let good = mac.finalize().into_bytes().to_vec();
        assert!(hmac_sha256_equal(&secret, b"header.claims", &good));
        let mut bad = good.clone();
        bad[31] ^= 1;
        assert!(!hmac_sha256_equal(&secret, b"header.claims", &bad));
        assert!(!hmac_sha256_equal(&secret, b"header.claims", &good[..31]));
        assert!(!hmac_sha256_equal(&[8u8; 32], b"header.claims", &good));
    }

    #[test]
    fn grant_hash_needs_exactly_32_bytes() {
        assert!(grant_hash(&b64_encode(&[1u8; 32])).is_some());
        assert!(grant_hash(&b64_encode(&[1u8; 31])).is_none());
        assert!(grant_hash("not base64!").is_none());
    }
}
