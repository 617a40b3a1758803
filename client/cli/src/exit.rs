//! The exit statuses of the `supabash` command, in one table ([`Status::of`]) that every
//! command uses, and the error reports. Every failure ends here: one line `supabash: CODE:
//! message` on stderr (with `--json`, one JSON object), with every secret the command resolved
//! replaced by `[redacted]`, and the status of the table:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | any other failure (codes outside the rows below; `ERROR`: outside the taxonomy) |
//! | 2 | usage: the command line, a setting or an argument was refused |
//! | 3 | not found |
//! | 4 | authentication or permission |
//! | 5 | conflict |
//! | 6 | retryable: nothing happened and an immediate retry may succeed |
//! | 7 | outcome unknown: a change was sent but its answer was lost; it may have been applied |
//! | 8 | problems found: a check (`verify`, `doctor`, `storage-setup`) ran and failed |
//!
//! The code decides statuses 2 to 5, the client error's flags 6 and 7 (`outcome_unknown` wins
//! over the code: whatever the code, the change may be in). A report of an unknown outcome says
//! how to check and whether rerunning the command is safe ([`Rerun`]). `supabash run` exits
//! with its command's status when supabash itself did not fail (docs/cli.md).

use serde::{Deserialize, Serialize};
use std::error::Error;
use std::sync::Mutex;
use supabash::{ErrorCode, SupabashError};

/// The exit statuses, stable for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok = 0,
    /// Any failure the other statuses do not name.
    Other = 1,
    /// The command line or an argument was refused (also `INVALID_ARGUMENT`, `INVALID_PATH`).
    Usage = 2,
    /// `NOT_FOUND`, `REVISION_NOT_FOUND`.
    NotFound = 3,
    /// Authentication or permission: `AUTHENTICATION`, `AUTHORIZATION`, `POLICY_DENIED`,
    /// `INVALID_CAPABILITY`, `EXPIRED_CAPABILITY`.
    Denied = 4,
    /// `COMMIT_CONFLICT`, `IDEMPOTENCY_CONFLICT`, `COMMIT_IN_PROGRESS`.
    Conflict = 5,
    /// Nothing happened, and an immediate retry may succeed (the code or a transport failure
    /// before the change could be applied says so).
    Retryable = 6,
    /// A change was sent and its answer lost: it may have been applied.
    OutcomeUnknown = 7,
    /// A check ran and found problems (`verify`, `doctor`, `storage-setup`).
    Problems = 8,
}

impl Status {
    /// The process exit code.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The status of a client error: its code, its retry verdict, and whether the change it
    /// was sending may have been applied.
    pub fn of(code: ErrorCode, retryable: bool, outcome_unknown: bool) -> Status {
        use ErrorCode as C;
        match code {
            _ if outcome_unknown => Status::OutcomeUnknown,
            C::NotFound | C::RevisionNotFound => Status::NotFound,
            C::Authentication
            | C::Authorization
            | C::PolicyDenied
            | C::InvalidCapability
            | C::ExpiredCapability => Status::Denied,
            C::CommitConflict | C::IdempotencyConflict | C::CommitInProgress => Status::Conflict,
            _ if retryable => Status::Retryable,
            C::InvalidArgument | C::InvalidPath => Status::Usage,
            _ => Status::Other,
        }
    }
}

/// What running a command again does after its outcome was left unknown: whether that is
/// safe, why, and how to see whether the first run took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rerun {
    /// Running the command again cannot apply its change twice.
    pub safe: bool,
    /// Why (or what a rerun would do), for people.
    pub why: &'static str,
    /// The command that shows whether the change was applied, e.g. `supabash log`.
    pub check: &'static str,
}

impl Rerun {
    /// A rerun that cannot apply the change twice.
    pub const fn safe(why: &'static str, check: &'static str) -> Rerun {
        Rerun {
            safe: true,
            why,
            check,
        }
    }

    /// A rerun that may apply the change twice: check first.
    pub const fn not_safe(why: &'static str, check: &'static str) -> Rerun {
        Rerun {
            safe: false,
            why,
            check,
        }
    }

    /// A command that only reads (a read never leaves an outcome unknown).
    pub const READ: Rerun = Rerun::safe("it only reads", "supabash log");
}

/// A failure the tool itself finds, outside the client's taxonomy: a command-line misuse
/// after parsing (a missing setting, a bad profile: `USAGE`, status 2) or a check that ran and
/// found problems (`verify`, `doctor`, `storage-setup`: `PROBLEMS`, status 8; what it found is
/// already printed and the message sums it up).
#[derive(Debug)]
pub struct ToolError {
    status: Status,
    message: String,
}

impl ToolError {
    /// The code its report names.
    fn code(&self) -> &'static str {
        match self.status {
            Status::Usage => "USAGE",
            Status::Problems => "PROBLEMS",
            _ => "ERROR",
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for ToolError {}

/// A command-line misuse (status 2), boxed as commands return errors.
pub fn usage(message: impl Into<String>) -> Box<dyn Error + Send + Sync> {
    Box::new(ToolError {
        status: Status::Usage,
        message: message.into(),
    })
}

/// A check that found problems (status 8), boxed as commands return errors.
pub fn problems(message: impl Into<String>) -> Box<dyn Error + Send + Sync> {
    Box::new(ToolError {
        status: Status::Problems,
        message: message.into(),
    })
}

/// A failure another `supabash` process reported (a mount answering `commit --mount`),
/// reported again as it came.
#[derive(Debug)]
pub struct Relayed(pub Report);

impl std::fmt::Display for Relayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl Error for Relayed {}

static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Remembers a secret the command resolved, so no report ever shows it.
pub fn hide(secret: &str) {
    if secret.is_empty() {
        return;
    }
    if let Ok(mut s) = SECRETS.lock() {
        if !s.iter().any(|k| k == secret) {
            s.push(secret.to_owned());
        }
    }
}

/// `text` with every remembered secret replaced.
pub fn scrub(text: &str) -> String {
    let mut out = text.to_owned();
    if let Ok(secrets) = SECRETS.lock() {
        for s in secrets.iter() {
            out = out.replace(s.as_str(), "[redacted]");
        }
    }
    out
}

/// What a failure reports: the code's name, the message, the client error's flags and the
/// status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// An `ErrorCode` name; `USAGE` for a command-line misuse, `PROBLEMS` for a check that
    /// found problems, `ERROR` for anything else.
    pub code: String,
    pub message: String,
    pub retryable: bool,
    /// A change was sent and its answer lost: it may have been applied.
    #[serde(default)]
    pub outcome_unknown: bool,
    /// With `outcome_unknown`: whether running the same command again is safe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_safe: Option<bool>,
    pub exit_status: i32,
}

impl Report {
    /// The report of `e`: the first client error, tool error or relayed report in its source
    /// chain decides.
    pub fn of(e: &(dyn Error + 'static)) -> Report {
        let mut cause: Option<&(dyn Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if let Some(s) = c.downcast_ref::<SupabashError>() {
                let status = Status::of(s.code(), s.is_retryable(), s.outcome_unknown());
                let message = match s.path() {
                    Some(p) => format!("{} ({p})", s.message()),
                    None => s.message().to_owned(),
                };
                let mut report = Report::new(s.code().as_str(), &message, s.is_retryable(), status);
                report.outcome_unknown = s.outcome_unknown();
                return report;
            }
            if let Some(t) = c.downcast_ref::<ToolError>() {
                return Report::new(t.code(), &t.message, false, t.status);
            }
            if let Some(r) = c.downcast_ref::<Relayed>() {
                return r.0.clone();
            }
            cause = c.source();
        }
        Report::new("ERROR", &e.to_string(), false, Status::Other)
    }

    fn new(code: &str, message: &str, retryable: bool, status: Status) -> Report {
        Report {
            code: code.to_owned(),
            message: scrub(message),
            retryable,
            outcome_unknown: false,
            rerun_safe: None,
            exit_status: status.code(),
        }
    }

    /// The report with what a rerun of the command does, when the outcome is unknown: the
    /// message says the change may have been applied, how to check, and whether rerunning
    /// is safe.
    pub fn with_rerun(mut self, rerun: Rerun) -> Report {
        if !self.outcome_unknown || self.rerun_safe.is_some() {
            return self;
        }
        self.message = format!(
            "{}; the outcome is unknown: the change may have been applied (check with `{}`); rerunning is {}: {}",
            self.message,
            rerun.check,
            if rerun.safe { "safe" } else { "not safe" },
            rerun.why
        );
        self.rerun_safe = Some(rerun.safe);
        self
    }

    /// The line people read: `supabash: CODE: message`.
    pub fn line(&self) -> String {
        format!("supabash: {}: {}", self.code, self.message)
    }

    /// The object scripts read: `{"error": {...}}`.
    pub fn json(&self) -> String {
        serde_json::json!({ "error": self }).to_string()
    }
}

/// Whether the command line asks for JSON (`--json` before any `--`).
pub fn wants_json() -> bool {
    std::env::args()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// Reports `e` on stderr (with what a rerun of the command does: `rerun`) and exits with its
/// status.
pub fn fail(e: &(dyn Error + 'static), rerun: Rerun) -> ! {
    let report = Report::of(e).with_rerun(rerun);
    if wants_json() {
        eprintln!("{}", report.json());
    } else {
        eprintln!("{}", report.line());
    }
    std::process::exit(report.exit_status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use supabash::transport::{Delivery, RpcError};

    #[test]
    fn every_code_has_one_status() {
        let cases = [
            (ErrorCode::NotFound, 3),
            (ErrorCode::RevisionNotFound, 3),
            (ErrorCode::Authorization, 4),
            (ErrorCode::Authentication, 4),
            (ErrorCode::InvalidCapability, 4),
            (ErrorCode::CommitConflict, 5),
            (ErrorCode::CommitCoordination, 6),
            (ErrorCode::LeaseHeld, 6),
            (ErrorCode::Backend, 6),
            (ErrorCode::InvalidArgument, 2),
            (ErrorCode::Redacted, 1),
            (ErrorCode::QuotaExceeded, 1),
        ];
        for (code, status) in cases {
            assert_eq!(
                Status::of(code, code.retryable(), false).code(),
                status,
                "{code}"
            );
        }
        // A backend error the client judged not retryable (an unexpected answer) is status 1.
        assert_eq!(Status::of(ErrorCode::Backend, false, false), Status::Other);
        // A lost answer to a change wins over the code.
        assert_eq!(
            Status::of(ErrorCode::Backend, true, true),
            Status::OutcomeUnknown
        );
    }

    #[test]
    fn reports_name_the_code_and_hide_secrets() {
        hide("hunter2-secret");
        let e = SupabashError::new(ErrorCode::CommitConflict, "moved on (hunter2-secret)");
        let r = Report::of(&e);
        assert_eq!(r.exit_status, 5);
        assert_eq!(r.line(), "supabash: COMMIT_CONFLICT: moved on ([redacted])");
        let boxed: Box<dyn Error + Send + Sync> = usage("give --workspace");
        let r = Report::of(boxed.as_ref());
        assert_eq!((r.code.as_str(), r.exit_status), ("USAGE", 2));
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(v["error"]["exitStatus"], 2);
        assert_eq!(v["error"]["outcomeUnknown"], false);
        assert!(v["error"].get("rerunSafe").is_none());
        let boxed = problems("2 problems");
        let r = Report::of(boxed.as_ref());
        assert_eq!((r.code.as_str(), r.exit_status), ("PROBLEMS", 8));
    }

    #[test]
    fn an_unknown_outcome_says_how_to_check_and_whether_to_rerun() {
        let lost = RpcError::transport(Delivery::Lost, "connection closed");
        let e = SupabashError::from_rpc(lost, true);
        let rerun = Rerun::not_safe("it runs the command again", "supabash log");
        let r = Report::of(&e).with_rerun(rerun);
        assert_eq!((r.exit_status, r.outcome_unknown), (7, true));
        assert_eq!(r.rerun_safe, Some(false));
        assert!(r.line().starts_with("supabash: BACKEND: connection closed; the outcome is unknown: the change may have been applied (check with `supabash log`); rerunning is not safe: it runs the command again"), "{}", r.line());
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(v["error"]["outcomeUnknown"], true);
        assert_eq!(v["error"]["rerunSafe"], false);
        // A report relayed from another process comes back as it was sent.
        let relayed: Report = serde_json::from_value(v["error"].clone()).unwrap();
        assert_eq!(Report::of(&Relayed(relayed.clone())), relayed);
        // A known outcome gets no advice.
        let unreached = RpcError::transport(Delivery::Unreached, "refused");
        let r = Report::of(&SupabashError::from_rpc(unreached, true)).with_rerun(rerun);
        assert_eq!(
            (r.exit_status, r.outcome_unknown, r.rerun_safe),
            (6, false, None)
        );
        assert_eq!(r.message, "refused");
    }
}
