//! The capability tables: registered verifiers (algorithm, public keys and generations), spent nonces
//! and minted grants (stored as hashes only). `rpc::capability` exchanges tokens through these
//! functions; `access` finds a presented grant's delegation.

use crate::pg::db;
use crate::pg::fail::{Fail, Outcome};
use sha2::{Digest, Sha256};
use supabash_core::capability::{Algorithm, Operation, Policy};
use supabash_core::Marker;

/// Random bytes in a minted grant.
pub const GRANT_BYTES: usize = 32;

/// Expired nonces and grants one exchange removes at most (the rest wait for the next one).
const CLEANUP_BATCH: i64 = 64;

/// What a delegated grant binds a call to.
#[derive(Clone)]
pub struct Delegation {
    pub actor_subject: String,
    pub correlation_id: Option<String>,
    /// The key id of the verifier the grant was minted under (recorded with commits).
    pub key_id: String,
    /// The operations the grant allows.
    pub operations: Vec<String>,
    /// When the grant was exchanged (the database's clock, as timestamptz text): without
    /// `history` it reads only revisions that were the head at that time or later.
    pub granted_at: String,
}

impl Delegation {
    /// Whether the grant allows `op`.
    pub fn allows(&self, op: Operation) -> bool {
        self.operations.iter().any(|o| o == op.as_str())
    }
}

/// A verifier as registered.
pub struct Verifier {
    pub policy: Policy,
    /// What its tokens must be signed with.
    pub algorithm: Algorithm,
    /// The Ed25519 public key; `None` for HS256 (its secret is derived, never stored) and for a
    /// verifier of a version before 0.3.0 that was never registered again.
    pub public_key: Option<Vec<u8>>,
    pub generation: String,
    /// The database's clock, in Unix seconds.
    pub now: i64,
}

/// The registered verifier of key id `kid`, if any. `named_algorithms` says whether the
/// installed schema records each verifier's algorithm (0.6.0); before, every one is Ed25519.
pub fn verifier(kid: &str, named_algorithms: bool) -> Outcome<Option<Verifier>> {
    let algorithm = if named_algorithms {
        "algorithm"
    } else {
        "'EdDSA'::text"
    };
    db::row(
        &format!(
            "SELECT issuer, audience, origin, clock_skew_seconds::bigint, max_lifetime_seconds::bigint,
                    public_key, generation::text,
                    floor(extract(epoch FROM clock_timestamp()))::bigint, {algorithm}
               FROM supabash.capability_verifiers WHERE key_id = $1"
        ),
        &[kid.into()],
        |r| {
            let name: String = db::get(r, 9)?;
            Ok(Verifier {
                policy: Policy {
                    issuer: db::get(r, 1)?,
                    audience: db::get(r, 2)?,
                    origin: db::get(r, 3)?,
                    skew_secs: db::get(r, 4)?,
                    max_lifetime_secs: db::get(r, 5)?,
                },
                algorithm: Algorithm::from_wire(&name).ok_or_else(|| {
                    Fail::new(Marker::Internal, "a verifier names an unknown algorithm")
                })?,
                public_key: db::opt(r, 6)?,
                generation: db::get(r, 7)?,
                now: db::get(r, 8)?,
            })
        },
    )
}

/// Gives HS256 verifier `key_id` a new random generation (which makes the secret of the
/// previous one worthless) and answers it; `None` when no HS256 verifier has this key id.
pub fn new_hs256_generation(key_id: &str) -> Outcome<Option<String>> {
    db::row(
        "UPDATE supabash.capability_verifiers SET generation = gen_random_uuid()
          WHERE key_id = $1 AND algorithm = 'HS256' RETURNING generation::text",
        &[key_id.into()],
        |r| db::get(r, 1),
    )
}

/// Forgets expired nonces and grants, a batch at a time, skipping rows another transaction
/// holds (a concurrent exchange's cleanup, a revocation) instead of waiting on them.
pub fn forget_expired() -> Outcome<()> {
    db::exec(
        "WITH n AS (DELETE FROM supabash.capability_nonces WHERE nonce_hash IN (
                      SELECT nonce_hash FROM supabash.capability_nonces
                       WHERE expires_at <= clock_timestamp()
                       LIMIT $1 FOR UPDATE SKIP LOCKED))
         DELETE FROM supabash.grants WHERE grant_hash IN (
           SELECT grant_hash FROM supabash.grants WHERE expires_at <= clock_timestamp()
            LIMIT $1 FOR UPDATE SKIP LOCKED)",
        &[CLEANUP_BATCH.into()],
    )
}

/// Spends the nonce of issuer `iss`, kept until `forget_at` (Unix seconds); `false` when it
/// was spent already.
pub fn spend_nonce(iss: &str, nonce: &str, forget_at: i64) -> Outcome<bool> {
    let hash = Sha256::digest(format!("{iss}\0{nonce}")).to_vec();
    Ok(db::row(
        "INSERT INTO supabash.capability_nonces (nonce_hash, expires_at)
         VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING RETURNING true",
        &[hash.into(), forget_at.into()],
        |_| Ok(()),
    )?
    .is_some())
}

/// What a new grant binds.
pub struct NewGrant<'a> {
    pub key_id: &'a str,
    pub generation: &'a str,
    pub workspace: &'a str,
    pub owner: &'a str,
    pub actor_subject: &'a str,
    pub operations: Vec<String>,
    pub correlation_id: Option<String>,
    /// Unix seconds.
    pub expires_at: i64,
}

/// Stores the hash of grant `grant` and answers its expiry as text.
pub fn insert_grant(grant: &[u8], g: NewGrant) -> Outcome<Option<String>> {
    db::row(
        "INSERT INTO supabash.grants
                (grant_hash, key_id, generation, workspace_id, owner_id, actor_subject, operations,
                 correlation_id, expires_at)
         VALUES ($1, $2, $3::uuid, $4::uuid, $5::uuid, $6, $7, $8, to_timestamp($9))
         RETURNING supabash.utc_text(expires_at)",
        &[
            Sha256::digest(grant).to_vec().into(),
            g.key_id.into(),
            g.generation.into(),
            g.workspace.into(),
            g.owner.into(),
            g.actor_subject.into(),
            g.operations.into(),
            g.correlation_id.into(),
            g.expires_at.into(),
        ],
        |r| db::get::<String>(r, 1),
    )
}

/// The live grant with hash `hash` for `workspace` holding one of `need`, minted under its
/// verifier's current generation (rotation and revocation end it): its owner and delegation.
pub fn find(
    hash: Vec<u8>,
    workspace: &str,
    need: Vec<String>,
) -> Outcome<Option<(String, Delegation)>> {
    db::query_row(
        "SELECT g.owner_id::text, g.actor_subject, g.correlation_id, g.key_id, g.operations,
                g.created_at::text
           FROM supabash.grants g
           JOIN supabash.capability_verifiers v
             ON v.key_id = g.key_id AND v.generation = g.generation
          WHERE g.grant_hash = $1 AND g.workspace_id = $2::uuid
            AND g.expires_at > clock_timestamp() AND g.operations && $3",
        &[hash.into(), workspace.into(), need.into()],
        |r| {
            let owner: String = db::get(r, 1)?;
            let delegation = Delegation {
                actor_subject: db::get(r, 2)?,
                correlation_id: db::opt(r, 3)?,
                key_id: db::get(r, 4)?,
                operations: db::get(r, 5)?,
                granted_at: db::get(r, 6)?,
            };
            Ok((owner, delegation))
        },
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use supabash_core::capability::b64_encode;

    #[test]
    fn grant_hash_needs_exactly_32_bytes() {
        assert!(grant_hash(&b64_encode(&[1u8; 32])).is_some());
        assert!(grant_hash(&b64_encode(&[1u8; 31])).is_none());
        assert!(grant_hash("not base64!").is_none());
    }
}
