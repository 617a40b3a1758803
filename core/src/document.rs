//! The document model: a body plus one flat mapping of scalar metadata, and the single
//! canonical renderer that turns them into the bytes a shell sees. The extension and the client
//! both render with this function, so their hashes agree byte for byte.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Largest accepted metadata mapping, as compact JSON bytes.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;

/// Frontmatter metadata: keys in byte order, scalar values (string, number, boolean, null).
pub type Metadata = BTreeMap<String, Value>;

/// Why a metadata value was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataError {
    NotAnObject,
    BadKey(String),
    NotAScalar(String),
    TooLarge,
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetadataError::NotAnObject => f.write_str("metadata must be a JSON object"),
            MetadataError::BadKey(k) => {
                write!(f, "metadata key {k:?} must match ^[A-Za-z_][A-Za-z0-9_-]*$")
            }
            MetadataError::NotAScalar(k) => {
                write!(
                    f,
                    "metadata value of {k:?} must be a string, number, boolean or null"
                )
            }
            MetadataError::TooLarge => {
                write!(f, "metadata is larger than {MAX_METADATA_BYTES} bytes")
            }
        }
    }
}

impl std::error::Error for MetadataError {}

/// True when `key` is a valid metadata key.
pub fn is_metadata_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks a JSON object against the metadata rules and returns it in canonical order.
pub fn metadata_from_json(value: &Value) -> Result<Metadata, MetadataError> {
    let Value::Object(map) = value else {
        return Err(MetadataError::NotAnObject);
    };
    if value.to_string().len() > MAX_METADATA_BYTES {
        return Err(MetadataError::TooLarge);
    }
    map.iter()
        .map(|(k, v)| {
            if !is_metadata_key(k) {
                return Err(MetadataError::BadKey(k.clone()));
            }
            match v {
                Value::Array(_) | Value::Object(_) => Err(MetadataError::NotAScalar(k.clone())),
                Value::Number(n)
                    if n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) =>
                {
                    // PostgreSQL's numeric has no negative zero: a stored -0.0 reads back as
                    // 0.0, so the rendering (and its hash) could never be reproduced.
                    Ok((k.clone(), Value::from(0.0)))
                }
                _ => Ok((k.clone(), v.clone())),
            }
        })
        .collect()
}

/// The metadata as a JSON object.
pub fn metadata_to_json(metadata: &Metadata) -> Value {
    Value::Object(
        metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Map<_, _>>(),
    )
}

/// Renders a document: the body alone when there is no metadata, otherwise
/// `---\n` + one `key: <compact JSON value>` line per key in byte order + `---\n` + body.
pub fn render(body: &[u8], metadata: &Metadata) -> Vec<u8> {
    if metadata.is_empty() {
        return body.to_vec();
    }
    let mut out = Vec::with_capacity(body.len() + 64 * metadata.len());
    out.extend_from_slice(b"---\n");
    for (key, value) in metadata {
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.to_string().as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"---\n");
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn negative_zero_is_zero() {
        for text in [r#"{"x": -0}"#, r#"{"x": -0.0}"#, r#"{"x": -0e5}"#] {
            let v: Value = serde_json::from_str(text).unwrap();
            let m = metadata_from_json(&v).unwrap();
            assert_eq!(render(b"", &m), b"---\nx: 0.0\n---\n", "{text}");
        }
        let v: Value = serde_json::from_str(r#"{"x": 0, "y": -1.5}"#).unwrap();
        assert_eq!(
            render(b"", &metadata_from_json(&v).unwrap()),
            b"---\nx: 0\ny: -1.5\n---\n"
        );
    }

    #[test]
    fn renders_sorted_scalars() {
        let md = metadata_from_json(&json!({"title": "Été \"x\"", "b": 1.5, "a": true, "n": null}))
            .unwrap();
        let out = String::from_utf8(render(b"body\n", &md)).unwrap();
        assert_eq!(
            out,
            "---\na: true\nb: 1.5\nn: null\ntitle: \"Été \\\"x\\\"\"\n---\nbody\n"
        );
        assert_eq!(render(b"plain", &Metadata::new()), b"plain");
    }

    #[test]
    fn refuses_bad_metadata() {
        assert_eq!(
            metadata_from_json(&json!([])),
            Err(MetadataError::NotAnObject)
        );
        assert_eq!(
            metadata_from_json(&json!({"1a": 1})),
            Err(MetadataError::BadKey("1a".into()))
        );
        assert_eq!(
            metadata_from_json(&json!({"a": [1]})),
            Err(MetadataError::NotAScalar("a".into()))
        );
        let big = json!({"a": "x".repeat(MAX_METADATA_BYTES)});
        assert_eq!(metadata_from_json(&big), Err(MetadataError::TooLarge));
    }

    proptest! {
        #[test]
        fn key_rule_matches_definition(k in "\\PC{0,12}") {
            let expected = !k.is_empty()
                && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            prop_assert_eq!(is_metadata_key(&k), expected);
        }

        #[test]
        fn render_starts_with_fence_iff_metadata(body in proptest::collection::vec(any::<u8>(), 0..64), v in "\\PC{0,10}") {
            let mut md = Metadata::new();
            prop_assert_eq!(render(&body, &md), body.clone());
            md.insert("k".into(), Value::String(v));
            let out = render(&body, &md);
            prop_assert!(out.starts_with(b"---\nk: "));
            prop_assert!(out.ends_with(&body));
        }
    }
}
