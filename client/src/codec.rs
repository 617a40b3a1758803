//! Document codecs: how the staged bytes of a file become what the database stores, a body
//! plus flat metadata. Reading is codec-independent (the server's body and metadata are always
//! shown as `supabash_core::document::render` bytes); a codec only decides how a write splits.
//!
//! [`PlainCodec`] (the default) stores every file verbatim as its body. [`FrontmatterCodec`]
//! (feature `frontmatter`, opt-in per workspace with [`crate::WorkspaceBuilder::codec`]) splits a
//! leading YAML frontmatter block into metadata. After a successful commit the staged tree holds
//! [`canonical`] bytes, the rendering the database returns, so no phantom change remains.

use crate::error::{Result, SupabashError};
use supabash_core::document::render;
use supabash_core::rpc::Content;
use supabash_core::ErrorCode;

/// Turns the staged bytes of `path` into the stored body and metadata.
pub trait DocumentCodec: Send + Sync {
    /// The body and metadata to store for `bytes`; `UNSUPPORTED_CONTENT` when they cannot be.
    fn split(&self, path: &str, bytes: &[u8]) -> Result<Content>;
}

/// The identity codec: the whole file is the body, with no metadata.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainCodec;

impl DocumentCodec for PlainCodec {
    fn split(&self, _path: &str, bytes: &[u8]) -> Result<Content> {
        Ok(Content {
            body: bytes.to_vec(),
            metadata: Default::default(),
            attrs: Default::default(),
        })
    }
}

/// The bytes the database renders for `content`.
pub fn canonical(content: &Content) -> Vec<u8> {
    render(&content.body, &content.metadata)
}

// Only the frontmatter codec refuses content.
#[cfg_attr(not(feature = "frontmatter"), allow(dead_code))]
fn unsupported(path: &str, reason: impl Into<String>) -> SupabashError {
    SupabashError::new(ErrorCode::UnsupportedContent, reason).with_path(path)
}

#[cfg(feature = "frontmatter")]
pub use frontmatter::{FrontmatterCodec, MetadataValidator, ValidatedFrontmatterCodec};

#[cfg(feature = "frontmatter")]
mod frontmatter {
    use super::{unsupported, DocumentCodec};
    use crate::error::Result;
    use serde_json::Value;
    use supabash_core::document::{metadata_from_json, Metadata};
    use supabash_core::rpc::Content;
    use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
    use yaml_rust2::scanner::{Marker, TScalarStyle};
    use yaml_rust2::Yaml;

    /// YAML frontmatter: a file whose first line is exactly `---` must continue with one flat
    /// YAML 1.2 mapping (keys per `is_metadata_key`; string, finite number, boolean or null
    /// values; no aliases, anchors, tags or duplicate keys) and a closing `---` line; the rest
    /// is the body. A block with no keys (empty or `{}`) keeps the file verbatim as plain text,
    /// since the renderer never writes an empty block. Other files pass through unchanged.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct FrontmatterCodec;

    impl DocumentCodec for FrontmatterCodec {
        fn split(&self, path: &str, bytes: &[u8]) -> Result<Content> {
            let plain = || Content {
                body: bytes.to_vec(),
                metadata: Metadata::new(),
                attrs: Default::default(),
            };
            let Some(rest) = bytes.strip_prefix(b"---\n") else {
                return Ok(plain());
            };
            let (yaml, body) = split_fence(rest)
                .ok_or_else(|| unsupported(path, "frontmatter has no closing `---` line"))?;
            let yaml = std::str::from_utf8(yaml)
                .map_err(|_| unsupported(path, "frontmatter is not UTF-8"))?;
            let metadata = parse_mapping(yaml).map_err(|reason| unsupported(path, reason))?;
            if metadata.is_empty() {
                return Ok(plain());
            }
            if std::str::from_utf8(body).is_err() {
                return Err(unsupported(path, "a body with frontmatter must be UTF-8"));
            }
            Ok(Content {
                body: body.to_vec(),
                metadata,
                attrs: Default::default(),
            })
        }
    }

    /// A host's check of the metadata a file will be stored with: `Err(reason)` refuses the
    /// write's commit with `UNSUPPORTED_CONTENT` (the reason is the message, the path is
    /// attached). Called for every file the codec splits, with empty metadata for a file
    /// without frontmatter.
    pub type MetadataValidator =
        dyn Fn(&str, &Metadata) -> std::result::Result<(), String> + Send + Sync;

    /// [`FrontmatterCodec`] with a host's `validate` callback (the TypeScript package's
    /// `frontmatter.validate`), e.g. requiring a `description` on every Markdown file.
    #[derive(Clone)]
    pub struct ValidatedFrontmatterCodec {
        validate: std::sync::Arc<MetadataValidator>,
    }

    impl FrontmatterCodec {
        /// This codec, refusing what `validate` refuses.
        pub fn with_validate(
            validate: impl Fn(&str, &Metadata) -> std::result::Result<(), String>
                + Send
                + Sync
                + 'static,
        ) -> ValidatedFrontmatterCodec {
            ValidatedFrontmatterCodec {
                validate: std::sync::Arc::new(validate),
            }
        }
    }

    impl DocumentCodec for ValidatedFrontmatterCodec {
        fn split(&self, path: &str, bytes: &[u8]) -> Result<Content> {
            let content = FrontmatterCodec.split(path, bytes)?;
            (self.validate)(path, &content.metadata).map_err(|reason| unsupported(path, reason))?;
            Ok(content)
        }
    }

    /// Splits at the first line that is exactly `---` (ended by `\n` or the end of the file).
    fn split_fence(rest: &[u8]) -> Option<(&[u8], &[u8])> {
        let mut start = 0;
        while start <= rest.len() {
            let end = rest[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| start + i);
            if &rest[start..end] == b"---" {
                return Some((&rest[..start], &rest[(end + 1).min(rest.len())..]));
            }
            start = end + 1;
        }
        None
    }

    /// Collects the events of one document; refuses what a flat scalar mapping cannot hold.
    #[derive(Default)]
    struct Flat {
        depth: usize,
        documents: usize,
        top: Option<&'static str>,
        key: Option<String>,
        map: serde_json::Map<String, Value>,
        error: Option<String>,
    }

    impl Flat {
        fn fail(&mut self, reason: String) {
            self.error.get_or_insert(reason);
        }

        fn scalar(&mut self, text: String, style: TScalarStyle) {
            match self.key.take() {
                None => {
                    if self.map.contains_key(&text) {
                        return self.fail(format!("frontmatter key {text:?} appears twice"));
                    }
                    self.key = Some(text);
                }
                Some(key) => match resolve(&text, style) {
                    Ok(v) => {
                        self.map.insert(key, v);
                    }
                    Err(why) => self.fail(format!("frontmatter value of {key:?} {why}")),
                },
            }
        }
    }

    impl MarkedEventReceiver for Flat {
        fn on_event(&mut self, ev: Event, _mark: Marker) {
            if self.error.is_some() {
                return;
            }
            match ev {
                Event::DocumentStart => self.documents += 1,
                Event::MappingStart(anchor, tag) | Event::SequenceStart(anchor, tag)
                    if anchor != 0 || tag.is_some() =>
                {
                    self.fail("frontmatter may not use anchors or tags".into())
                }
                Event::Scalar(_, _, anchor, tag) if anchor != 0 || tag.is_some() => {
                    self.fail("frontmatter may not use anchors or tags".into())
                }
                Event::Alias(_) => self.fail("frontmatter may not use aliases".into()),
                Event::MappingStart(..) if self.depth == 0 => {
                    self.depth = 1;
                    self.top = Some("mapping");
                }
                Event::SequenceStart(..) if self.depth == 0 => {
                    self.fail("frontmatter must be a mapping".into())
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let reason = match self.key.take() {
                        Some(k) => format!("frontmatter value of {k:?} must be a scalar"),
                        None => "frontmatter keys must be plain strings".into(),
                    };
                    self.fail(reason)
                }
                Event::Scalar(text, style, ..) if self.depth == 1 => self.scalar(text, style),
                Event::Scalar(..) => self.top = Some("scalar"),
                Event::MappingEnd => self.depth = 0,
                _ => {}
            }
        }
    }

    /// A scalar per the YAML 1.2 core schema (quoted scalars are strings), as the JSON value
    /// the database will hand back (so the client's rendering equals the server's).
    fn resolve(text: &str, style: TScalarStyle) -> std::result::Result<Value, &'static str> {
        if style != TScalarStyle::Plain {
            return Ok(Value::String(text.to_owned()));
        }
        let digits = text.strip_prefix('+').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = digits.parse::<u64>() {
                return Ok(Value::from(n));
            }
        }
        Ok(match Yaml::from_str(text) {
            Yaml::Null => Value::Null,
            Yaml::Boolean(b) => Value::Bool(b),
            Yaml::Integer(i) => Value::from(i),
            Yaml::Real(r) => {
                // `.inf` and `.nan` do not parse here; both are refused as not finite.
                number(r.parse().unwrap_or(f64::NAN)).ok_or("must be a finite number")?
            }
            Yaml::String(s) => Value::String(s),
            _ => return Err("must be a string, number, boolean or null"),
        })
    }

    /// A finite float as stored: PostgreSQL's numeric has no negative zero and writes integral
    /// values in full, which serde_json reads back as integers when they fit.
    pub(super) fn number(f: f64) -> Option<Value> {
        if !f.is_finite() {
            return None;
        }
        let f = if f == 0.0 { 0.0 } else { f };
        let text = Value::from(f).to_string();
        if f.fract() == 0.0 && text.contains('e') {
            if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                return Some(Value::from(f as u64));
            }
            if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
                return Some(Value::from(f as i64));
            }
        }
        Some(Value::from(f))
    }

    /// The frontmatter text as checked metadata (empty when it holds no keys).
    pub(super) fn parse_mapping(yaml: &str) -> std::result::Result<Metadata, String> {
        let mut flat = Flat::default();
        Parser::new_from_str(yaml)
            .load(&mut flat, true)
            .map_err(|e| format!("frontmatter is not valid YAML: {e}"))?;
        if let Some(e) = flat.error {
            return Err(e);
        }
        if flat.documents > 1 {
            return Err("frontmatter must be one YAML document".into());
        }
        match flat.top {
            Some("mapping") | None => {}
            _ => return Err("frontmatter must be a mapping".into()),
        }
        metadata_from_json(&Value::Object(flat.map)).map_err(|e| e.to_string())
    }
}

#[cfg(all(test, feature = "frontmatter"))]
mod tests {
    use super::frontmatter::{number, parse_mapping};
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};
    use supabash_core::document::Metadata;

    fn split(text: &str) -> Result<Content> {
        FrontmatterCodec.split("/doc.md", text.as_bytes())
    }

    #[test]
    fn a_validate_callback_refuses_what_the_host_refuses() {
        let codec = FrontmatterCodec::with_validate(|path, metadata| {
            if path.ends_with(".md") && !metadata.contains_key("description") {
                return Err(format!("{path} needs a description"));
            }
            Ok(())
        });
        let ok = codec
            .split("/a.md", b"---\ndescription: notes\n---\nbody\n")
            .unwrap();
        assert_eq!(ok.body, b"body\n");
        let e = codec.split("/b.md", b"just text\n").unwrap_err();
        assert_eq!(e.code(), ErrorCode::UnsupportedContent);
        assert_eq!(e.message(), "/b.md needs a description");
        assert_eq!(e.path(), Some("/b.md"));
        assert!(codec.split("/c.txt", b"plain\n").is_ok());
        // The codec's own refusals come first.
        let e = codec.split("/d.md", b"---\ndescription: x\n").unwrap_err();
        assert!(e.message().contains("closing"), "{e}");
    }

    fn refused(text: &str, needle: &str) {
        let e = split(text).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedContent, "{text:?}");
        assert_eq!(e.path.as_deref(), Some("/doc.md"));
        assert!(e.to_string().contains(needle), "{text:?}: {e}");
    }

    #[test]
    fn splits_and_canonicalises() {
        let c =
            split("---\ntitle: Hello world\nn: 1.50\nok: yes\nz: ~\nb: true\n---\nbody\n").unwrap();
        assert_eq!(c.body, b"body\n");
        assert_eq!(
            String::from_utf8(canonical(&c)).unwrap(),
            "---\nb: true\nn: 1.5\nok: \"yes\"\ntitle: \"Hello world\"\nz: null\n---\nbody\n"
        );
        let c = split("---\nq: \"1\"\nx: 0x10\nbig: 1e16\n---\n").unwrap();
        assert_eq!(
            String::from_utf8(canonical(&c)).unwrap(),
            "---\nbig: 10000000000000000\nq: \"1\"\nx: 16\n---\n"
        );
        // The closing fence may end the file.
        assert!(split("---\na: 1\n---").unwrap().body.is_empty());
    }

    #[test]
    fn passes_other_files_through() {
        for text in [
            "no fence",
            "--- \na: 1\n---\n",
            "---\r\na: 1\n---\n",
            "---\n---\nx",
            "---\n{}\n---\n",
            "",
        ] {
            let c = split(text).unwrap();
            assert_eq!(c.body, text.as_bytes());
            assert!(c.metadata.is_empty());
        }
        let bin = [0xffu8, 0, 1];
        assert_eq!(FrontmatterCodec.split("/b", &bin).unwrap().body, bin);
        assert_eq!(
            PlainCodec.split("/p", b"---\na: 1\n---\n").unwrap().body,
            b"---\na: 1\n---\n"
        );
    }

    #[test]
    fn refusals() {
        refused("---\na: 1\n", "no closing");
        refused("---\na: [1, 2]\n---\n", "must be a scalar");
        refused("---\na:\n  b: 1\n---\n", "must be a scalar");
        refused("---\n- 1\n---\n", "must be a mapping");
        refused("---\njust text\n---\n", "must be a mapping");
        refused("---\na: 1\na: 2\n---\n", "appears twice");
        refused("---\na: &x 1\nb: *x\n---\n", "anchors");
        refused("---\na: !!str 1\n---\n", "tags");
        refused("---\n1a: 1\n---\n", "must match");
        refused("---\n\"a b\": 1\n---\n", "must match");
        refused("---\na: .inf\n---\n", "finite");
        refused("---\na: .nan\n---\n", "finite");
        refused("---\na: \"unterminated\n---\n", "not valid YAML");
        refused("---\n? [a]\n: 1\n---\n", "plain strings");
        let mut big = String::from("---\na: \"");
        big.push_str(&"x".repeat(20_000));
        big.push_str("\"\n---\n");
        refused(&big, "larger than");
        let mut bad_body = b"---\na: 1\n---\n".to_vec();
        bad_body.push(0xff);
        let e = FrontmatterCodec.split("/doc.md", &bad_body).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedContent);
    }

    #[test]
    fn numbers_as_stored() {
        assert_eq!(number(-0.0), Some(json!(0.0)));
        assert_eq!(number(1e16), Some(json!(10_000_000_000_000_000u64)));
        assert_eq!(number(-1e16), Some(json!(-10_000_000_000_000_000i64)));
        assert_eq!(number(1e20), Some(json!(1e20)));
        assert_eq!(number(2.0), Some(json!(2.0)));
        assert_eq!(number(f64::NAN), None);
        assert_eq!(parse_mapping("").unwrap(), Metadata::new());
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", number),
            "\\PC{0,20}".prop_map(Value::String),
            "[ -~\t\n\r\u{0}-\u{1f}\u{7f}-\u{a0}\u{2028}\u{feff}]{0,20}".prop_map(Value::String),
        ]
    }

    proptest! {
        #[test]
        fn render_then_split_round_trips(
            metadata in proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_-]{0,8}", scalar(), 0..6),
            body in "(---\n)?[\\PC\n]{0,40}",
        ) {
            let metadata: Metadata = metadata;
            prop_assume!(!metadata.is_empty() || !body.starts_with("---\n"));
            let rendered = render(body.as_bytes(), &metadata);
            let back = FrontmatterCodec.split("/p", &rendered).unwrap();
            prop_assert_eq!(&back.metadata, &metadata);
            prop_assert_eq!(&back.body, body.as_bytes());
            prop_assert_eq!(canonical(&back), rendered);
        }
    }
}
