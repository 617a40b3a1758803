//! Exit statuses and error reports of the `supabash` command, from the client's error taxonomy
//! (`supabash_core::ErrorCode`, whose `retryable` notion decides status 6). Every failure ends
//! here: one line `supabash: CODE: message` on stderr (with `--json`, one JSON object), with
//! every secret the command resolved replaced by `[redacted]`.

use serde::Serialize;
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
    /// An error whose code (or transport failure) says an immediate retry may succeed.
    Retryable = 6,
}

impl Status {
    /// The process exit code.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The status of a client error code (`retryable`: the error's own retry verdict).
    pub fn of(code: ErrorCode, retryable: bool) -> Status {
        use ErrorCode as C;
        match code {
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

/// A command-line misuse found after parsing (a missing connection setting, a bad profile).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Usage {}

/// A [`Usage`] error, boxed as commands return them.
pub fn usage(message: impl Into<String>) -> Box<dyn Error + Send + Sync> {
    Box::new(Usage(message.into()))
}

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

/// What a failure reports: the code's name, the message, the retry verdict and the status.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// An `ErrorCode` name, `USAGE` for a command-line misuse, `ERROR` for anything else.
    pub code: String,
    pub message: String,
    pub retryable: bool,
    pub exit_status: i32,
}

impl Report {
    /// The report of `e`: the first client error or usage error in its source chain decides.
    pub fn of(e: &(dyn Error + 'static)) -> Report {
        let mut cause: Option<&(dyn Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if let Some(s) = c.downcast_ref::<SupabashError>() {
                let status = Status::of(s.code(), s.is_retryable());
                let message = match s.path() {
                    Some(p) => format!("{} ({p})", s.message()),
                    None => s.message().to_owned(),
                };
                return Report::new(s.code().as_str(), &message, s.is_retryable(), status);
            }
            if let Some(u) = c.downcast_ref::<Usage>() {
                return Report::new("USAGE", &u.0, false, Status::Usage);
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
            exit_status: status.code(),
        }
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

/// Reports `e` on stderr and exits with its status.
pub fn fail(e: &(dyn Error + 'static)) -> ! {
    let report = Report::of(e);
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
            assert_eq!(Status::of(code, code.retryable()).code(), status, "{code}");
        }
        // A backend error the client judged not retryable (an unexpected answer) is status 1.
        assert_eq!(Status::of(ErrorCode::Backend, false), Status::Other);
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
    }
}
