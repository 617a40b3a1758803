//! The one body encoding of the wire: `text` when the bytes are UTF-8 without NUL (PostgreSQL's
//! jsonb cannot hold `\u0000`), `base64` (standard alphabet, padded) otherwise. Changes, staged
//! documents and stored files all carry a body this way.

use base64::Engine;

/// The two wire fields of a body; at most one is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Encoded {
    pub text: Option<String>,
    pub base64: Option<String>,
}

/// The bytes as text when they can travel as text: UTF-8 without NUL.
pub fn as_text(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    if bytes.contains(&0) {
        return Err(bytes);
    }
    String::from_utf8(bytes).map_err(|e| e.into_bytes())
}

/// Encodes body bytes.
pub fn encode(bytes: Vec<u8>) -> Encoded {
    match as_text(bytes) {
        Ok(text) => Encoded {
            text: Some(text),
            base64: None,
        },
        Err(bytes) => Encoded {
            text: None,
            base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        },
    }
}

/// Decodes the wire fields: `None` when neither is present.
pub fn decode(text: Option<&str>, base64: Option<&str>) -> Result<Option<Vec<u8>>, String> {
    match (text, base64) {
        (Some(_), Some(_)) => Err("give text or base64, not both".into()),
        (Some(t), None) => Ok(Some(t.as_bytes().to_vec())),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map(Some)
            .map_err(|e| format!("base64 is not valid: {e}")),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let e = encode(bytes.clone());
            prop_assert!(e.text.is_some() != e.base64.is_some());
            if let Some(t) = &e.text {
                prop_assert!(!t.contains('\0'));
            }
            prop_assert_eq!(decode(e.text.as_deref(), e.base64.as_deref()).unwrap(), Some(bytes));
        }
    }

    #[test]
    fn nul_and_invalid_utf8_go_as_base64() {
        assert!(encode(b"a\0b".to_vec()).base64.is_some());
        assert!(encode(vec![0xff]).base64.is_some());
        assert_eq!(encode(b"hi".to_vec()).text.as_deref(), Some("hi"));
        assert!(decode(Some("x"), Some("eA==")).is_err());
        assert!(decode(None, Some("***")).is_err());
    }
}
