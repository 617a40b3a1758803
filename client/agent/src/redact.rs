//! Redaction of credentials in text handed back to an agent (shell output, tool results).
//!
//! One set of rules, applied by [`Redactor::redact`]:
//! - `Bearer <token>` and `Basic <credentials>` (case-insensitive; token of 8+ characters);
//! - JSON Web Tokens: `eyJ…` followed by two dot-separated base64url segments (this also covers
//!   Supabase `anon` / `service_role` keys, which are JWTs);
//! - the value of any `name=value` pair whose name looks secret: it contains `token`, `secret`,
//!   `password`, `passwd`, `signature`, `credential`, `apikey`, `api_key`, `api-key`,
//!   `service_role` or `private_key`, or is exactly `sig` (signed URL query strings such as
//!   `?token=…`, `X-Amz-Signature=…`, `X-Amz-Security-Token=…`, and shell assignments such as
//!   `SUPABASE_SECRET=…`);
//! - well-known key prefixes: `sb_secret_…`, `sk-…`, `sk_live_…`, `sk_test_…`, `rk_live_…`,
//!   `ghp_…` / `gho_…` / `ghu_…` / `ghs_…` / `ghr_…`, `github_pat_…`, `glpat-…`, `xox[abprs]-…`,
//!   `AKIA…` / `ASIA…` access key ids and `AIza…` API keys;
//! - PEM private key blocks (`-----BEGIN … PRIVATE KEY-----` to the matching END line, or to
//!   the end of the text when it was cut);
//! - literal secrets the host registers ([`Redactor::with_literal`]).
//!
//! Every match is replaced by [`REDACTED`]. Redaction is a courtesy against accidental leaks
//! into model context and logs, not a guarantee: a secret split, encoded or transformed
//! (base64, reversed, spelled out) is not recognised.

/// What replaces a redacted secret.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest literal secret a host may register (shorter ones would redact ordinary words).
pub const MIN_LITERAL_BYTES: usize = 8;

/// Name fragments that make the value of `name=value` secret (compared in lower case).
const SECRET_NAME_PARTS: [&str; 11] = [
    "token",
    "secret",
    "password",
    "passwd",
    "signature",
    "credential",
    "apikey",
    "api_key",
    "api-key",
    "service_role",
    "private_key",
];

/// Key prefixes and the shortest body after them that counts as a key.
const KEY_PREFIXES: [(&str, usize); 21] = [
    ("sb_secret_", 1),
    ("sk-", 20),
    ("sk_live_", 10),
    ("sk_test_", 10),
    ("rk_live_", 10),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 20),
    ("xoxa-", 10),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("sb_secret", 0),
];

/// Redacts credentials from text. `Default` applies the built-in rules only.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    literals: Vec<String>,
}

/// Redacts `text` with the built-in rules.
pub fn redact(text: &str) -> String {
    Redactor::default().redact(text)
}

fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// Length of the run of bytes from `from` satisfying `pred`.
fn run(bytes: &[u8], from: usize, pred: fn(u8) -> bool) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .take_while(|b| pred(**b))
        .count()
}

fn starts_with_ci(bytes: &[u8], at: usize, word: &str) -> bool {
    bytes
        .get(at..at + word.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(word.as_bytes()))
}

/// A match: bytes `[keep, end)` are replaced, bytes `[at, keep)` are kept as they are.
struct Hit {
    keep: usize,
    end: usize,
}

fn pem_block(bytes: &[u8], at: usize) -> Option<Hit> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    if !bytes[at..].starts_with(BEGIN) {
        return None;
    }
    let line_end = bytes[at..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |p| at + p);
    let header = &bytes[at..line_end];
    if !header.windows(16).any(|w| w == b"PRIVATE KEY-----") {
        return None;
    }
    let end = bytes[line_end..]
        .windows(9)
        .position(|w| w == b"-----END ")
        .map(|p| line_end + p)
        .map_or(bytes.len(), |p| {
            let after = bytes[p + 9..]
                .windows(5)
                .position(|w| w == b"-----")
                .map_or(bytes.len(), |q| p + 9 + q + 5);
            after.min(bytes.len())
        });
    Some(Hit { keep: at, end })
}

fn auth_scheme(bytes: &[u8], at: usize) -> Option<Hit> {
    if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
        return None;
    }
    let scheme = ["bearer", "basic"]
        .into_iter()
        .find(|s| starts_with_ci(bytes, at, s))?;
    let after = at + scheme.len();
    let spaces = run(bytes, after, |b| b == b' ' || b == b'\t');
    if spaces == 0 {
        return None;
    }
    let start = after + spaces;
    let len = run(bytes, start, is_token_char);
    (len >= 8).then_some(Hit {
        keep: start,
        end: start + len,
    })
}

fn jwt(bytes: &[u8], at: usize) -> Option<Hit> {
    if !bytes[at..].starts_with(b"eyJ") {
        return None;
    }
    let header = run(bytes, at, is_b64url);
    let dot1 = at + header;
    if bytes.get(dot1) != Some(&b'.') {
        return None;
    }
    let payload = run(bytes, dot1 + 1, is_b64url);
    if payload == 0 {
        return None;
    }
    let dot2 = dot1 + 1 + payload;
    if bytes.get(dot2) != Some(&b'.') {
        return None;
    }
    let signature = run(bytes, dot2 + 1, is_b64url);
    Some(Hit {
        keep: at,
        end: dot2 + 1 + signature,
    })
}

fn secret_assignment(bytes: &[u8], at: usize) -> Option<Hit> {
    if at > 0 && is_name_char(bytes[at - 1]) {
        return None;
    }
    let name_len = run(bytes, at, is_name_char);
    let eq = at + name_len;
    if name_len == 0 || bytes.get(eq) != Some(&b'=') {
        return None;
    }
    let name = String::from_utf8_lossy(&bytes[at..eq]).to_ascii_lowercase();
    if name != "sig" && !SECRET_NAME_PARTS.iter().any(|p| name.contains(p)) {
        return None;
    }
    let mut start = eq + 1;
    let end = match bytes.get(start) {
        Some(q @ (b'"' | b'\'')) => {
            start += 1;
            bytes[start..]
                .iter()
                .position(|b| b == q)
                .map_or(bytes.len(), |p| start + p)
        }
        _ => {
            start
                + bytes[start..]
                    .iter()
                    .take_while(|b| {
                        !b.is_ascii_whitespace()
                            && !matches!(b, b'&' | b'#' | b'"' | b'\'' | b'<' | b'>' | b';' | b',')
                    })
                    .count()
        }
    };
    (end > start).then_some(Hit { keep: start, end })
}

fn key_prefix(bytes: &[u8], at: usize) -> Option<Hit> {
    for (prefix, min_body) in KEY_PREFIXES {
        if !bytes[at..].starts_with(prefix.as_bytes()) {
            continue;
        }
        // Distinctive prefixes match anywhere; short ones only at the start of a word.
        let anywhere = prefix.starts_with("sb_secret");
        if !anywhere && at > 0 && is_b64url(bytes[at - 1]) {
            continue;
        }
        let body = run(bytes, at + prefix.len(), is_b64url);
        if body >= min_body && (body > 0 || anywhere) {
            return Some(Hit {
                keep: at,
                end: at + prefix.len() + body,
            });
        }
    }
    None
}

impl Redactor {
    /// Also redacts every occurrence of `secret` (ignored when shorter than
    /// [`MIN_LITERAL_BYTES`]). Hosts register the tokens they hold.
    pub fn with_literal(mut self, secret: impl Into<String>) -> Self {
        let secret = secret.into();
        if secret.len() >= MIN_LITERAL_BYTES && !self.literals.contains(&secret) {
            self.literals.push(secret);
        }
        self
    }

    /// `text` with every recognised secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for literal in &self.literals {
            if text.contains(literal.as_str()) {
                text = text.replace(literal.as_str(), REDACTED);
            }
        }
        scan(&text)
    }
}

/// Applies the built-in rules to `text`.
fn scan(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        // Every rule starts on an ASCII byte, so `i` is a char boundary whenever one matches.
        let hit = if bytes[i].is_ascii() {
            pem_block(bytes, i)
                .or_else(|| auth_scheme(bytes, i))
                .or_else(|| jwt(bytes, i))
                .or_else(|| key_prefix(bytes, i))
                .or_else(|| secret_assignment(bytes, i))
        } else {
            None
        };
        match hit {
            Some(Hit { keep, end }) => {
                out.push_str(&text[copied..i]);
                // What a rule keeps (`NAME=`, `Bearer `) may itself hold a key.
                out.push_str(&scan(&text[i..keep]));
                out.push_str(REDACTED);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoic2VydmljZV9yb2xlIn0.c2lnbmF0dXJlLXZhbHVl";

    #[test]
    fn redacts_each_kind() {
        let cases = [
            (
                "Authorization: Bearer abcdefgh12345678",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "authorization: basic dXNlcjpwYXNz",
                "authorization: basic [REDACTED]",
            ),
            (
                "GET https://x.supabase.co/storage/v1/object/sign/b/f.png?token=abc.def-123&x=1",
                "GET https://x.supabase.co/storage/v1/object/sign/b/f.png?token=[REDACTED]&x=1",
            ),
            (
                "https://s3/k?X-Amz-Credential=AK%2F2026&X-Amz-Signature=deadbeef01",
                "https://s3/k?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]",
            ),
            (
                "SUPABASE_SERVICE_ROLE_KEY='abc def'",
                "SUPABASE_SERVICE_ROLE_KEY='[REDACTED]'",
            ),
            ("key sb_secret_Abc123_xyz here", "key [REDACTED] here"),
            ("aws AKIAABCDEFGHIJKLMNOP.", "aws [REDACTED]."),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\nok",
                "[REDACTED]\nok",
            ),
            ("-----BEGIN PRIVATE KEY-----\nMIIB cut", "[REDACTED]"),
            // A key inside the name of a secret assignment (found by proptest).
            ("eyJsb_secret_token=eyJ", "eyJ[REDACTED]=[REDACTED]"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
        assert_eq!(redact(&format!("anon={JWT}")), "anon=[REDACTED]");
        assert_eq!(redact(&format!("\"{JWT}\"")), "\"[REDACTED]\"");
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for text in [
            "task-list and risk-free work",
            "The bearer of news",
            "tokens are counted",
            "eyJ is a prefix but no dots",
            "sig: nothing assigned",
            "ünïcödé text — with dashes",
            "-----BEGIN CERTIFICATE-----",
        ] {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn redacts_registered_literals() {
        let r = Redactor::default()
            .with_literal("opaque-secret-value")
            .with_literal("short");
        assert_eq!(
            r.redact("x opaque-secret-value y short"),
            "x [REDACTED] y short"
        );
    }

    fn secret() -> impl Strategy<Value = String> {
        let b64 = "[A-Za-z0-9_-]{24,40}";
        prop_oneof![
            b64.prop_map(|s| format!("Bearer {s}")),
            b64.prop_map(|s| format!("https://h/p?a=1&token={s}")),
            b64.prop_map(|s| format!("https://h/p?X-Amz-Signature={s}")),
            (b64, b64, b64).prop_map(|(a, b, c)| format!("eyJ{a}.{b}.{c}")),
            b64.prop_map(|s| format!("sb_secret_{s}")),
            b64.prop_map(|s| format!("ghp_{s}")),
        ]
    }

    /// The part of a planted secret that must not survive.
    fn sensitive(planted: &str) -> &str {
        planted
            .rsplit(['=', ' '])
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or(planted)
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = redact(&s);
        }

        #[test]
        fn never_panics_on_near_misses(s in "(eyJ|Bearer |token=|sb_secret|-----BEGIN |[a-z.=_ é-]){0,30}") {
            let out = redact(&s);
            prop_assert!(!out.contains("sb_secret_"));
        }

        #[test]
        fn planted_secret_never_survives(before in "\\PC{0,40}", planted in secret(), after in "\\PC{0,40}") {
            let text = format!("{before} {planted} {after}");
            let out = redact(&text);
            prop_assert!(!out.contains(sensitive(&planted)), "{} -> {}", text, out);
        }

        #[test]
        fn redaction_is_stable(s in "\\PC{0,80}", planted in secret()) {
            let once = redact(&format!("{s} {planted}"));
            prop_assert_eq!(redact(&once), once.clone());
        }
    }
}
