//! Who may ask: the one-time token `supabash ui` prints, exchanged on first use for a session
//! cookie (HttpOnly, SameSite=Strict, named after the port so two viewers on one host do not
//! share it). A request with neither is refused 401; one with a wrong or spent token or
//! cookie 403.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The token of the printed address and the session it is exchanged for.
pub struct Auth {
    url_token: String,
    session: String,
    spent: AtomicBool,
    cookie: String,
}

/// 256 random bits as hex (two version-4 UUIDs' 122 random bits each, plus their fixed bits).
fn secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Equal strings, compared in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// What a request presents.
enum Presented<'a> {
    Cookie(&'a str),
    Token(&'a str),
    Nothing,
}

impl Auth {
    /// Fresh secrets for a viewer listening on `port`.
    pub fn new(port: u16) -> Auth {
        Auth {
            url_token: secret(),
            session: secret(),
            spent: AtomicBool::new(false),
            cookie: format!("supabash_ui_{port}"),
        }
    }

    /// The token of the address to open.
    pub fn url_token(&self) -> &str {
        &self.url_token
    }

    fn presented<'a>(&self, req: &'a Request) -> Presented<'a> {
        let cookies = req
            .headers()
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='));
        for (name, value) in cookies {
            if name == self.cookie {
                return Presented::Cookie(value);
            }
        }
        let query = req.uri().query().unwrap_or_default();
        match query.split('&').find_map(|kv| kv.strip_prefix("token=")) {
            Some(t) => Presented::Token(t),
            None => Presented::Nothing,
        }
    }

    /// The answer to the token: the page again without it, with the session cookie.
    fn exchange(&self, req: &Request) -> Response {
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie, self.session
        );
        let path = req.uri().path();
        let location = if path.starts_with('/') && !path.starts_with("//") {
            path
        } else {
            "/"
        };
        let mut res = StatusCode::SEE_OTHER.into_response();
        let h = res.headers_mut();
        if let (Ok(c), Ok(l)) = (
            HeaderValue::from_str(&cookie),
            HeaderValue::from_str(location),
        ) {
            h.insert(header::SET_COOKIE, c);
            h.insert(header::LOCATION, l);
        }
        res
    }
}

fn refused(status: StatusCode, why: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        why,
    )
        .into_response()
}

/// The middleware in front of every route.
pub async fn guard(State(auth): State<Arc<Auth>>, req: Request, next: Next) -> Response {
    match auth.presented(&req) {
        Presented::Cookie(c) if same(c, &auth.session) => next.run(req).await,
        Presented::Cookie(_) => refused(StatusCode::FORBIDDEN, "this session is not valid\n"),
        Presented::Token(t) if same(t, &auth.url_token) => {
            if auth.spent.swap(true, Ordering::SeqCst) {
                refused(
                    StatusCode::FORBIDDEN,
                    "this token was used already: restart `supabash ui` for a new one\n",
                )
            } else {
                auth.exchange(&req)
            }
        }
        Presented::Token(_) => refused(StatusCode::FORBIDDEN, "wrong token\n"),
        Presented::Nothing => refused(
            StatusCode::UNAUTHORIZED,
            "open the address `supabash ui` printed (it holds the token)\n",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_random_and_compared_whole() {
        let (a, b) = (secret(), secret());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &b));
        assert!(!same(&a, &a[..63]));
    }
}
