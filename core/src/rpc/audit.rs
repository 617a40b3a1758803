//! The audit trail on the wire: the actions a client stages with its tree and sends with the
//! commit they led to (`Commit::audit`) or, for a discarded session, with
//! `supabash_record_discarded`; and the records `supabash_audit` answers. The limits are
//! `crate::limits::MAX_AUDIT_*`; both sides check them.

use super::declare::{request, rpc, WorkspaceRequest};
use super::Rpc;
use crate::limits::MAX_AUDIT_RECORD_BYTES;
use crate::limits::{check_object, check_text, utf8_prefix, FieldError};
use crate::limits::{MAX_AUDIT_ACTIONS, MAX_AUDIT_ARGUMENTS_BYTES, MAX_AUDIT_PATHS};
use crate::limits::{MAX_AUDIT_TEXT_BYTES, MAX_LABEL_BYTES};
use crate::path::MAX_PATH_BYTES;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use serde_with::skip_serializing_none;

/// The surface an action came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ActionKind {
    /// An MCP tool call (the file tools and `bash` have their own kinds).
    McpTool,
    Bash,
    ApplyPatch,
    /// A file tool: read, write, edit, list, grep, move, delete, ...
    FileTool,
    MountSession,
    RunSession,
}

impl ActionKind {
    /// Every kind, in wire order.
    pub const ALL: [ActionKind; 6] = [
        ActionKind::McpTool,
        ActionKind::Bash,
        ActionKind::ApplyPatch,
        ActionKind::FileTool,
        ActionKind::MountSession,
        ActionKind::RunSession,
    ];

    /// The kind a wire name names.
    pub fn parse(name: &str) -> Option<ActionKind> {
        ActionKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The wire name, e.g. `apply_patch` (also the database's).
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::McpTool => "mcp_tool",
            ActionKind::Bash => "bash",
            ActionKind::ApplyPatch => "apply_patch",
            ActionKind::FileTool => "file_tool",
            ActionKind::MountSession => "mount_session",
            ActionKind::RunSession => "run_session",
        }
    }
}

/// How an action ended: `{"status": "ok"}`, `{"status": "error", "code": "..."}` or
/// `{"status": "denied", "reason": "..."}` ([`OUTCOME_SHAPE`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ActionOutcome {
    Ok,
    /// Failed with an error code (`ErrorCode`'s wire name, e.g. `NOT_FOUND`).
    Error {
        code: String,
    },
    /// Refused by policy, with the reason given.
    Denied {
        reason: String,
    },
}

/// One action as a client stages it. `arguments` are already redacted by the client (the
/// database cannot know a secret) and capped ([`cap_arguments`]). On the wire its keys are
/// camelCase like every request's (`recordId`, `atMs`, ...; docs/sql-contract.md); 0.5.0's
/// snake_case keys (`record_id`, `at_ms`, ...) are still read. A wrong shape is refused naming
/// the field and the shape it needs ([`RECORD_SHAPE`]). This library still writes the
/// snake_case keys, which every served schema's database reads (a 0.5.0 extension refuses the
/// camelCase ones).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// A UUID the client chose: a retried write of the same action is written once.
    pub record_id: String,
    /// The client session (UUID) the action belongs to, and its place in it.
    pub session_id: String,
    pub sequence: i64,
    /// When it started, in milliseconds since the Unix epoch (the client's clock).
    pub at_ms: i64,
    pub kind: ActionKind,
    /// The tool or command name (`write`, `bash`, `apply_patch`, `mount`, ...).
    pub tool: String,
    pub arguments: Option<Value>,
    pub outcome: ActionOutcome,
    pub duration_ms: i64,
    /// Paths it changed (the first [`MAX_AUDIT_PATHS`]).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Bytes it wrote.
    #[serde(default)]
    pub bytes_changed: i64,
}

/// What an audit record looks like, as errors name it.
pub const RECORD_SHAPE: &str = "an object {recordId: uuid, sessionId: uuid, sequence: integer >= 0, atMs: integer >= 0, kind: text, tool: text, arguments?: object, outcome: object, durationMs: integer >= 0, paths?: [text], bytesChanged?: integer >= 0}";

/// What an outcome looks like, as errors name it.
pub const OUTCOME_SHAPE: &str = r#"{"status": "ok"}, {"status": "error", "code": text} or {"status": "denied", "reason": text}"#;

/// The kinds as errors list them.
fn kinds() -> String {
    ActionKind::ALL.map(ActionKind::as_str).join(", ")
}

impl<'de> Deserialize<'de> for ActionKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        v.as_str()
            .and_then(ActionKind::parse)
            .ok_or_else(|| serde::de::Error::custom(format!("kind must be one of {}", kinds())))
    }
}

impl ActionOutcome {
    /// An outcome from its JSON form, or why it is not one (in the contract's words).
    fn from_json(v: &Value) -> Result<ActionOutcome, String> {
        let wrong = || format!("outcome must be {OUTCOME_SHAPE}");
        let o = v.as_object().ok_or_else(wrong)?;
        let text = |key: &str| -> Result<String, String> {
            match o.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                _ => Err(format!("outcome.{key} must be text ({OUTCOME_SHAPE})")),
            }
        };
        let (outcome, keys): (ActionOutcome, &[&str]) =
            match o.get("status").and_then(Value::as_str) {
                Some("ok") => (ActionOutcome::Ok, &["status"]),
                Some("error") => (
                    ActionOutcome::Error {
                        code: text("code")?,
                    },
                    &["status", "code"],
                ),
                Some("denied") => (
                    ActionOutcome::Denied {
                        reason: text("reason")?,
                    },
                    &["status", "reason"],
                ),
                _ => return Err(wrong()),
            };
        if let Some(k) = o.keys().find(|k| !keys.contains(&k.as_str())) {
            return Err(format!(
                "outcome has an unknown key {k:?}: it must be {OUTCOME_SHAPE}"
            ));
        }
        Ok(outcome)
    }
}

impl<'de> Deserialize<'de> for ActionOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ActionOutcome::from_json(&Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The fields of a record: the camelCase key, and 0.5.0's snake_case one.
const RECORD_KEYS: [(&str, &str); 11] = [
    ("recordId", "record_id"),
    ("sessionId", "session_id"),
    ("sequence", "sequence"),
    ("atMs", "at_ms"),
    ("kind", "kind"),
    ("tool", "tool"),
    ("arguments", "arguments"),
    ("outcome", "outcome"),
    ("durationMs", "duration_ms"),
    ("paths", "paths"),
    ("bytesChanged", "bytes_changed"),
];

impl Action {
    /// An action from its JSON form (camelCase keys, or 0.5.0's snake_case ones), or why it is
    /// not one, naming the field and the shape it needs.
    pub fn from_json(v: Value) -> Result<Action, String> {
        let Value::Object(mut o) = v else {
            return Err(format!("an audit record must be {RECORD_SHAPE}"));
        };
        let mut fields = serde_json::Map::new();
        for (camel, snake) in RECORD_KEYS {
            match (o.remove(camel), o.remove(snake)) {
                (Some(_), Some(_)) => {
                    return Err(format!("{camel} is given twice (as {camel} and {snake})"))
                }
                (Some(x), None) | (None, Some(x)) => {
                    fields.insert(camel.to_owned(), x);
                }
                (None, None) => {}
            }
        }
        if let Some(k) = o.keys().next() {
            return Err(format!(
                "unknown field {k:?}: an audit record is {RECORD_SHAPE}"
            ));
        }
        let mut take = |key: &str| fields.remove(key).filter(|v| !v.is_null());
        let text = |key: &str, v: Option<Value>| -> Result<String, String> {
            match v {
                Some(Value::String(s)) => Ok(s),
                None => Err(format!("{key} is required (text)")),
                Some(_) => Err(format!("{key} must be text")),
            }
        };
        let integer = |key: &str, v: Option<Value>, required: bool| -> Result<i64, String> {
            match v {
                None if !required => Ok(0),
                None => Err(format!("{key} is required (an integer >= 0)")),
                Some(n) => n
                    .as_i64()
                    .ok_or_else(|| format!("{key} must be an integer >= 0")),
            }
        };
        let record_id = text("recordId", take("recordId"))?;
        let session_id = text("sessionId", take("sessionId"))?;
        let sequence = integer("sequence", take("sequence"), true)?;
        let at_ms = integer("atMs", take("atMs"), true)?;
        let kind = match take("kind") {
            Some(Value::String(k)) => ActionKind::parse(&k),
            _ => None,
        }
        .ok_or_else(|| format!("kind must be one of {}", kinds()))?;
        let tool = text("tool", take("tool"))?;
        let arguments = take("arguments");
        let outcome = match take("outcome") {
            Some(o) => ActionOutcome::from_json(&o)?,
            None => return Err(format!("outcome is required: {OUTCOME_SHAPE}")),
        };
        let duration_ms = integer("durationMs", take("durationMs"), true)?;
        let paths = match take("paths") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|p| match p {
                    Value::String(s) => Ok(s),
                    _ => Err("paths must be a list of text".to_owned()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("paths must be a list of text".to_owned()),
        };
        let bytes_changed = integer("bytesChanged", take("bytesChanged"), false)?;
        Ok(Action {
            record_id,
            session_id,
            sequence,
            at_ms,
            kind,
            tool,
            arguments,
            outcome,
            duration_ms,
            paths,
            bytes_changed,
        })
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Action::from_json(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Action {
    /// The shared ceilings on one action's fields.
    pub fn check(&self) -> Result<(), FieldError> {
        check_text("recordId", Some(&self.record_id), MAX_LABEL_BYTES)?;
        check_text("sessionId", Some(&self.session_id), MAX_LABEL_BYTES)?;
        check_text("tool", Some(&self.tool), MAX_AUDIT_TEXT_BYTES)?;
        match &self.outcome {
            ActionOutcome::Ok => {}
            ActionOutcome::Error { code } => check_text("code", Some(code), MAX_AUDIT_TEXT_BYTES)?,
            ActionOutcome::Denied { reason } => {
                check_text("reason", Some(reason), MAX_AUDIT_TEXT_BYTES)?
            }
        }
        check_object(
            "arguments",
            self.arguments.as_ref(),
            MAX_AUDIT_ARGUMENTS_BYTES,
        )?;
        if self.paths.len() > MAX_AUDIT_PATHS {
            return Err(FieldError::TooMany {
                name: "paths",
                max: MAX_AUDIT_PATHS,
            });
        }
        for p in &self.paths {
            check_text("paths[]", Some(p), MAX_PATH_BYTES)?;
        }
        if self.encoded_len() > MAX_AUDIT_RECORD_BYTES {
            return Err(FieldError::TooLong {
                name: "audit record",
                max: MAX_AUDIT_RECORD_BYTES,
            });
        }
        for (name, n) in [
            ("sequence", self.sequence),
            ("atMs", self.at_ms),
            ("durationMs", self.duration_ms),
            ("bytesChanged", self.bytes_changed),
        ] {
            if n < 0 {
                return Err(FieldError::Negative(name));
            }
        }
        Ok(())
    }
}

impl Action {
    /// The action's size as compact JSON: what [`MAX_AUDIT_RECORD_BYTES`] bounds and what a
    /// stored record counts in its owner's byte quota.
    pub fn encoded_len(&self) -> usize {
        serde_json::to_vec(self).map_or(usize::MAX, |v| v.len())
    }
}

/// Makes `action` fit [`MAX_AUDIT_RECORD_BYTES`] by dropping its last paths (its other
/// fields are capped on their own and fit together). Answers how many paths it dropped.
pub fn fit_record(action: &mut Action) -> usize {
    let mut dropped = 0;
    while action.encoded_len() > MAX_AUDIT_RECORD_BYTES && action.paths.pop().is_some() {
        dropped += 1;
    }
    dropped
}

/// Checks a batch of actions: at most [`MAX_AUDIT_ACTIONS`], each within its ceilings.
pub fn check_actions(actions: &[Action]) -> Result<(), FieldError> {
    if actions.len() > MAX_AUDIT_ACTIONS {
        return Err(FieldError::TooMany {
            name: "audit",
            max: MAX_AUDIT_ACTIONS,
        });
    }
    actions.iter().try_for_each(Action::check)
}

/// `arguments` as an action may carry them: unchanged when an object of at most
/// [`MAX_AUDIT_ARGUMENTS_BYTES`]; otherwise `{"truncated": true, "bytes": n, "prefix": ...}`
/// with a prefix of its JSON text (a non-object is wrapped as `{"value": ...}` first).
pub fn cap_arguments(arguments: Value) -> Value {
    let arguments = match arguments {
        Value::Object(_) => arguments,
        other => json!({ "value": other }),
    };
    let text = arguments.to_string();
    if text.len() <= MAX_AUDIT_ARGUMENTS_BYTES {
        return arguments;
    }
    let mut keep = MAX_AUDIT_ARGUMENTS_BYTES / 2;
    loop {
        let capped = json!({
            "truncated": true,
            "bytes": text.len(),
            "prefix": utf8_prefix(&text, keep),
        });
        if capped.to_string().len() <= MAX_AUDIT_ARGUMENTS_BYTES {
            return capped;
        }
        keep /= 2;
    }
}

request! {
    "supabash_record_discarded", mutates = true, AuditWritten, workspace = [Write, Commit];
    /// `supabash_record_discarded`: writes the actions of a session whose staged changes were
    /// discarded, marked discarded (no revision). Retrying writes nothing twice.
    pub struct RecordDiscarded {
        pub workspace_id: String,
        pub actions: Vec<Action>,
        /// Required unless a delegated grant names the actor.
        pub actor: Option<String>,
        pub delegated_grant: Option<String>,
    }
}

impl RecordDiscarded {
    /// The shared ceilings.
    pub fn check_fields(&self) -> Result<(), FieldError> {
        check_text("actor", self.actor.as_deref(), MAX_LABEL_BYTES)?;
        check_actions(&self.actions)
    }
}

request! {
    "supabash_audit", mutates = false, AuditPage, workspace = [History];
    /// `supabash_audit`: records in the order they were written, after `cursor` (a record
    /// id); only those of `revision` when given.
    pub struct Audit {
        pub workspace_id: String,
        pub revision: Option<String>,
        pub cursor: Option<String>,
        pub page_size: Option<i32>,
        pub delegated_grant: Option<String>,
    }
}

request! {
    "supabash_audit_rows", mutates = false, Vec<Value>;
    /// `supabash_audit_rows`: every audit record the caller may see, as table rows (one JSON
    /// object per row over PostgREST). It is what the view `public.supabash_audit_log` shows
    /// SQL users; clients read pages with [`Audit`].
    pub struct AuditRows {}
}

/// `supabash_record_discarded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditWritten {
    /// Records written by this call (0 for a retry).
    pub written: i64,
}

/// One stored record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    pub record_id: String,
    /// The revision the action led to; null for a discarded session's.
    pub revision: Option<String>,
    pub session_id: String,
    pub sequence: i64,
    /// When the action started (client clock) and when the database wrote it, both as
    /// receipts print times.
    pub at: String,
    pub recorded_at: String,
    /// Who committed (or discarded) the session: the commit's actor.
    pub actor: String,
    pub kind: ActionKind,
    pub tool: String,
    /// Null once scrubbed by a redaction of a path the action touched.
    pub arguments: Option<Value>,
    pub outcome: ActionOutcome,
    pub duration_ms: i64,
    pub paths: Vec<String>,
    pub bytes_changed: i64,
    pub discarded: bool,
    pub scrubbed: bool,
}

/// `supabash_audit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    pub records: Vec<AuditRecord>,
    /// Pass it back for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action() -> Action {
        Action {
            record_id: "r".into(),
            session_id: "s".into(),
            sequence: 0,
            at_ms: 1,
            kind: ActionKind::Bash,
            tool: "bash".into(),
            arguments: Some(json!({"command": "ls"})),
            outcome: ActionOutcome::Denied {
                reason: "no".into(),
            },
            duration_ms: 3,
            paths: vec![],
            bytes_changed: 0,
        }
    }

    #[test]
    fn outcomes_are_tagged() {
        let v = serde_json::to_value(action()).unwrap();
        assert_eq!(v["outcome"], json!({"status": "denied", "reason": "no"}));
        assert_eq!(v["kind"], "bash");
        assert_eq!(serde_json::from_value::<Action>(v).unwrap(), action());
    }

    #[test]
    fn limits_are_checked() {
        assert!(action().check().is_ok());
        let mut a = action();
        a.duration_ms = -1;
        assert_eq!(a.check(), Err(FieldError::Negative("durationMs")));
        let mut a = action();
        a.paths = vec!["/p".into(); MAX_AUDIT_PATHS + 1];
        assert!(a.check().unwrap_err().is_quota());
        let mut a = action();
        a.arguments = Some(json!("not an object"));
        assert_eq!(a.check(), Err(FieldError::NotAnObject("arguments")));
    }

    #[test]
    fn records_read_camel_case_and_the_0_5_0_snake_case() {
        let written = serde_json::to_value(action()).unwrap();
        assert_eq!(
            written["record_id"], "r",
            "0.5.0 databases read what this library writes"
        );
        let camel = json!({
            "recordId": "r", "sessionId": "s", "sequence": 0, "atMs": 1, "kind": "bash",
            "tool": "bash", "arguments": {"command": "ls"},
            "outcome": {"status": "denied", "reason": "no"}, "durationMs": 3,
        });
        let snake = json!({
            "record_id": "r", "session_id": "s", "sequence": 0, "at_ms": 1, "kind": "bash",
            "tool": "bash", "arguments": {"command": "ls"},
            "outcome": {"status": "denied", "reason": "no"}, "duration_ms": 3,
        });
        assert_eq!(serde_json::from_value::<Action>(snake).unwrap(), action());
        assert_eq!(serde_json::from_value::<Action>(camel).unwrap(), action());
        assert_eq!(serde_json::from_value::<Action>(written).unwrap(), action());
    }

    #[test]
    fn a_wrong_shape_is_named_in_the_contracts_words() {
        let err = |f: fn(&mut Value)| {
            let mut v = serde_json::to_value(action()).unwrap();
            f(&mut v);
            serde_json::from_value::<Action>(v).unwrap_err().to_string()
        };
        type Case = (fn(&mut Value), &'static str);
        let cases: [Case; 8] = [
            (
                |v| v["outcome"] = json!({"status": "maybe"}),
                "outcome must be {\"status\": \"ok\"}",
            ),
            (|v| v["outcome"] = json!("ok"), "outcome must be"),
            (
                |v| v["outcome"] = json!({"status": "error"}),
                "outcome.code must be text",
            ),
            (
                |v| v["kind"] = json!("telepathy"),
                "kind must be one of mcp_tool, bash",
            ),
            (
                |v| v["extra"] = json!(1),
                "unknown field \"extra\": an audit record is an object {recordId",
            ),
            (|v| v["at_ms"] = json!("soon"), "atMs must be an integer"),
            (
                |v| {
                    v.as_object_mut().unwrap().remove("tool");
                },
                "tool is required",
            ),
            (|v| v["recordId"] = json!("r2"), "recordId is given twice"),
        ];
        for (f, want) in cases {
            let e = err(f);
            assert!(e.contains(want), "{e:?} lacks {want:?}");
            assert!(!e.contains("tagged") && !e.contains("variant"), "{e}");
        }
        let e = serde_json::from_value::<Action>(json!([1]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("an audit record must be an object"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn any_record_round_trips(
            seq in 0i64..1_000_000, at in 0i64..i64::MAX, kind in 0usize..6,
            tool in "[a-z_]{1,20}", paths in proptest::collection::vec("/[a-z]{1,8}", 0..4),
            status in 0u8..3, text in "[ -~]{0,30}", bytes in 0i64..1_000_000,
        ) {
            let a = Action {
                record_id: "r".into(), session_id: "s".into(), sequence: seq, at_ms: at,
                kind: ActionKind::ALL[kind], tool, arguments: Some(json!({ "t": text.clone() })),
                outcome: match status {
                    0 => ActionOutcome::Ok,
                    1 => ActionOutcome::Error { code: text.clone() },
                    _ => ActionOutcome::Denied { reason: text },
                },
                duration_ms: seq, paths, bytes_changed: bytes,
            };
            let v = serde_json::to_value(&a).unwrap();
            proptest::prop_assert_eq!(serde_json::from_value::<Action>(v).unwrap(), a);
        }
    }

    #[test]
    fn a_record_is_bounded_as_a_whole() {
        let mut a = action();
        a.arguments = Some(cap_arguments(
            json!({ "x": "y".repeat(MAX_AUDIT_ARGUMENTS_BYTES) }),
        ));
        a.paths = (0..MAX_AUDIT_PATHS)
            .map(|i| format!("/{i}/{}", "p".repeat(4000)))
            .collect();
        assert_eq!(
            a.check(),
            Err(FieldError::TooLong {
                name: "audit record",
                max: MAX_AUDIT_RECORD_BYTES
            })
        );
        let dropped = fit_record(&mut a);
        assert!(dropped > 0 && !a.paths.is_empty());
        assert!(a.check().is_ok());
        assert!(a.encoded_len() <= MAX_AUDIT_RECORD_BYTES);
        let mut small = action();
        assert_eq!(fit_record(&mut small), 0);
    }

    #[test]
    fn capped_arguments_fit() {
        let big = json!({ "content": "\"".repeat(3 * MAX_AUDIT_ARGUMENTS_BYTES) });
        let capped = cap_arguments(big);
        assert_eq!(capped["truncated"], true);
        assert!(capped.to_string().len() <= MAX_AUDIT_ARGUMENTS_BYTES);
        let small = json!({ "path": "/a" });
        assert_eq!(cap_arguments(small.clone()), small);
        assert_eq!(cap_arguments(json!(3)), json!({"value": 3}));
    }
}
