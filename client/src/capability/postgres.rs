//! Ed25519 capabilities for one Postgres workspace, minted by the trusted issuer that holds the
//! verifier's private key and verified inside the database by `supabash_exchange_capability`,
//! which holds only the public key: nothing the database stores can mint.
//!
//! A token is a compact JWS: header `{"alg":"EdDSA","kid":<key id>,"typ":"JWT"}`, claims
//! `supabash_core::capability::PostgresClaims` (schema version, issuer, audience, subject,
//! origin, operations, iat, exp, a fresh nonce, optional correlation id, backend `postgres`,
//! workspace), signature Ed25519 over the signing input.

use super::{new_nonce, unix_now, KeySigner};
use crate::error::{Result, SupabashError};
use base64::Engine;
use supabash_core::capability::{
    self, CapabilityError, CommonClaims, OperationSet, PostgresBinding, PostgresClaims,
    POSTGRES_BACKEND, SCHEMA_VERSION,
};
use supabash_core::ErrorCode;

/// The header `alg` of a Postgres capability.
pub const ALGORITHM: &str = capability::ALGORITHM;

/// Mints Postgres capabilities with one verifier's private key. Keep it in the trusted issuer
/// only: whoever holds it can grant any operation on any workspace.
pub struct PostgresSigner {
    signer: KeySigner,
    issuer: String,
    audience: String,
    origin: String,
}

impl std::fmt::Debug for PostgresSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSigner")
            .field("kid", &self.signer.kid())
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

fn invalid(message: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::InvalidArgument, message)
}

fn not_mintable(e: CapabilityError) -> SupabashError {
    let reason = match e {
        CapabilityError::Invalid(r) => format!("{r:?}"),
        CapabilityError::Expired => "expired".into(),
    };
    invalid(format!("these claims cannot be minted: {reason}"))
}

impl PostgresSigner {
    /// A signer for the verifier registered as `kid` with `issuer`, `audience` and `origin`;
    /// `private_key` is the 32-byte Ed25519 seed, unpadded base64url (what the registration
    /// returns when it generates the pair).
    pub fn new(
        kid: &str,
        private_key: &str,
        issuer: &str,
        audience: &str,
        origin: &str,
    ) -> Result<Self> {
        let seed: [u8; 32] = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(private_key.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                invalid("the capability private key must be 32 bytes, unpadded base64url")
            })?;
        if kid.is_empty()
            || kid.len() > capability::MAX_TEXT_BYTES
            || kid.contains(char::is_control)
        {
            return Err(invalid("the key id must be 1 to 256 printable bytes"));
        }
        Ok(PostgresSigner {
            signer: KeySigner::new(kid, &seed),
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            origin: origin.to_owned(),
        })
    }

    /// The public key, unpadded base64url: what `supabash_register_capability_verifier`
    /// takes as `public_key` when the issuer generated the pair itself.
    pub fn public_key(&self) -> String {
        capability::b64_encode(self.signer.public_key().as_bytes())
    }

    /// The key id tokens carry in `kid`.
    pub fn kid(&self) -> &str {
        self.signer.kid()
    }

    /// The claims of a capability for `subject` on `workspace` with `operations`, issued at
    /// `issued_at` (Unix seconds) for `lifetime_secs`, with a fresh nonce. Not checked: pass
    /// them to [`Self::sign`].
    pub fn claims(
        &self,
        subject: &str,
        workspace: &str,
        operations: &OperationSet,
        issued_at: i64,
        lifetime_secs: i64,
        correlation_id: Option<&str>,
    ) -> PostgresClaims {
        PostgresClaims {
            common: CommonClaims {
                ver: SCHEMA_VERSION,
                iss: self.issuer.clone(),
                aud: self.audience.clone(),
                sub: subject.to_owned(),
                origin: self.origin.clone(),
                ops: operations.to_wire(),
                iat: issued_at,
                exp: issued_at.saturating_add(lifetime_secs),
                nonce: new_nonce(),
                cid: correlation_id.map(str::to_owned),
            },
            binding: PostgresBinding {
                backend: POSTGRES_BACKEND.to_owned(),
                workspace: workspace.to_owned(),
            },
        }
    }

    /// Mints a capability valid from now for `lifetime_secs` (the verifier's maximum lifetime,
    /// 900 s by default, bounds it): `subject` acts on `workspace` with exactly `operations`;
    /// `correlation_id` is recorded with every commit made through it.
    pub fn mint(
        &self,
        subject: &str,
        workspace: &str,
        operations: &OperationSet,
        lifetime_secs: i64,
        correlation_id: Option<&str>,
    ) -> Result<String> {
        if lifetime_secs <= 0 {
            return Err(invalid("a capability's lifetime must be positive"));
        }
        let claims = self.claims(
            subject,
            workspace,
            operations,
            unix_now(),
            lifetime_secs,
            correlation_id,
        );
        self.sign(&claims)
    }

    /// Signs `claims` after the rules that need no verifier or clock (schema version, texts,
    /// nonce, operations, backend, canonical workspace id); refuses what those refuse. The
    /// issuer, audience and origin are taken as given: the database checks them.
    pub fn sign(&self, claims: &PostgresClaims) -> Result<String> {
        claims.check_shape().map_err(not_mintable)?;
        Ok(self.signer.sign(&claims.to_json()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use proptest::prelude::*;
    use supabash_core::capability::{parse_compact, Operation};

    const WS: &str = "0b6f3c2e-9a41-4d7e-8c55-1f2a3b4c5d6e";

    fn signer() -> PostgresSigner {
        PostgresSigner::new(
            "k1",
            &capability::b64_encode(&[7u8; 32]),
            "iss",
            "aud",
            "org",
        )
        .unwrap()
    }

    fn ops(list: &[Operation]) -> OperationSet {
        OperationSet::new(list.iter().copied()).unwrap()
    }

    #[test]
    fn minted_tokens_parse_and_verify_with_the_public_key() {
        let s = signer();
        let token = s
            .mint(
                "job-1",
                WS,
                &ops(&[Operation::Read, Operation::Commit]),
                300,
                Some("c-1"),
            )
            .unwrap();
        let compact = parse_compact(&token, ALGORITHM).unwrap();
        assert_eq!(compact.header.kid, "k1");
        assert_eq!(compact.header.typ.as_deref(), Some("JWT"));
        let claims = PostgresClaims::from_map(compact.claims.clone()).unwrap();
        assert_eq!(claims.common.sub, "job-1");
        assert_eq!(claims.common.ops, vec!["read", "commit"]);
        assert_eq!(claims.common.exp - claims.common.iat, 300);
        assert_eq!(claims.common.cid.as_deref(), Some("c-1"));
        assert_eq!(claims.binding.workspace, WS);
        let signature = ed25519_dalek::Signature::from_slice(&compact.signature).unwrap();
        let public = SigningKey::from_bytes(&[7u8; 32]).verifying_key();
        assert_eq!(s.public_key(), capability::b64_encode(public.as_bytes()));
        public
            .verify_strict(compact.signing_input.as_bytes(), &signature)
            .unwrap();
        let wrong = SigningKey::from_bytes(&[8u8; 32]).verifying_key();
        assert!(wrong
            .verify_strict(compact.signing_input.as_bytes(), &signature)
            .is_err());
        // Every token has its own nonce.
        let again = s
            .mint("job-1", WS, &ops(&[Operation::Read]), 300, None)
            .unwrap();
        let again =
            PostgresClaims::from_map(parse_compact(&again, ALGORITHM).unwrap().claims).unwrap();
        assert_ne!(again.common.nonce, claims.common.nonce);
        assert_eq!(again.common.cid, None);
    }

    #[test]
    fn refuses_what_the_database_would_refuse() {
        let s = signer();
        let read = ops(&[Operation::Read]);
        for (sub, ws) in [
            ("", WS),
            ("a\nb", WS),
            ("job", "not-a-uuid"),
            ("job", "0B6F3C2E-9A41-4D7E-8C55-1F2A3B4C5D6E"),
        ] {
            let e = s.mint(sub, ws, &read, 60, None).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{sub:?} {ws:?}");
        }
        assert!(s.mint("job", WS, &read, 0, None).is_err());
        assert!(s.mint("job", WS, &read, 60, Some("")).is_err());
        let mut claims = s.claims("job", WS, &read, 1_800_000_000, 60, None);
        claims.common.ver = 2;
        assert!(s.sign(&claims).is_err());
        let mut claims = s.claims("job", WS, &read, 1_800_000_000, 60, None);
        claims.common.ops = vec!["read".into(), "read".into()];
        assert!(s.sign(&claims).is_err());
        claims.common.ops = vec!["admin".into()];
        assert!(s.sign(&claims).is_err());
        claims.common.ops = vec!["read".into()];
        claims.binding.backend = "storage".into();
        assert!(s.sign(&claims).is_err());
        claims.binding.backend = POSTGRES_BACKEND.into();
        claims.common.nonce = "short".into();
        assert!(s.sign(&claims).is_err());
        claims.common.nonce = new_nonce();
        assert!(s.sign(&claims).is_ok());
    }

    #[test]
    fn private_keys_must_be_32_bytes_of_base64url() {
        for key in [
            "",
            "not base64!",
            &capability::b64_encode(&[1u8; 31]),
            &capability::b64_encode(&[1u8; 33]),
        ] {
            let e = PostgresSigner::new("k", key, "i", "a", "o").unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert!(!e.message.contains(key) || key.is_empty());
        }
        assert!(
            PostgresSigner::new("", &capability::b64_encode(&[1u8; 32]), "i", "a", "o").is_err()
        );
        let debug = format!("{:?}", signer());
        assert!(
            !debug.contains(&capability::b64_encode(&[7u8; 32])),
            "{debug}"
        );
        assert!(!debug.contains("[7, 7"), "{debug}");
    }

    proptest! {
        #[test]
        fn any_subject_either_mints_a_parseable_token_or_is_refused(sub in "\\PC{0,300}") {
            let s = signer();
            match s.mint(&sub, WS, &ops(&[Operation::Read]), 60, None) {
                Ok(token) => {
                    let claims = PostgresClaims::from_map(
                        parse_compact(&token, ALGORITHM).unwrap().claims,
                    )
                    .unwrap();
                    prop_assert_eq!(claims.common.sub, sub);
                }
                Err(e) => prop_assert_eq!(e.code, ErrorCode::InvalidArgument),
            }
        }
    }
}
