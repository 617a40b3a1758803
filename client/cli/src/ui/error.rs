//! Errors of the API as values: the client error's code and message (secrets scrubbed) with
//! the HTTP status the page reads (404 unknown workspace or revision, 403 refused, 410
//! redacted, 400 a bad argument, 503 the database unreachable: retry).

use crate::exit::scrub;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use supabash::{ErrorCode, SupabashError};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An error answer: `{"error": {"code", "message"}}` with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
}

/// What a handler answers.
pub type ApiResult<T> = Result<Json<T>, ApiError>;

impl ApiError {
    /// A refused argument.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "INVALID_ARGUMENT".into(),
            message: message.into(),
        }
    }

    /// Nothing there.
    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::from(SupabashError::new(code, message.into()))
    }
}

/// The status of a client error.
fn status_of(e: &SupabashError) -> StatusCode {
    use ErrorCode as C;
    match e.code() {
        C::NotFound | C::RevisionNotFound => StatusCode::NOT_FOUND,
        C::Authentication => StatusCode::UNAUTHORIZED,
        C::Authorization | C::PolicyDenied | C::InvalidCapability | C::ExpiredCapability => {
            StatusCode::FORBIDDEN
        }
        C::Redacted => StatusCode::GONE,
        C::InvalidArgument | C::InvalidPath => StatusCode::BAD_REQUEST,
        _ if e.is_retryable() => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_GATEWAY,
    }
}

impl From<SupabashError> for ApiError {
    fn from(e: SupabashError) -> ApiError {
        ApiError {
            status: status_of(&e),
            code: e.code().as_str().to_owned(),
            message: scrub(e.message()),
        }
    }
}

impl From<BoxError> for ApiError {
    fn from(e: BoxError) -> ApiError {
        match e.downcast::<SupabashError>() {
            Ok(e) => ApiError::from(*e),
            Err(e) => ApiError::bad(scrub(&e.to_string())),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

/// The answer to a path no route serves.
pub async fn no_route() -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        code: "NOT_FOUND".into(),
        message: "no such page".into(),
    }
}
