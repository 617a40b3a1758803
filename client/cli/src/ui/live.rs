//! `GET /api/ws/{id}/events`: the workspace's change feed as Server-Sent Events, one `change`
//! event (the announcement as JSON) per commit, purge or redaction, from the client's
//! [`Watch`] (a `LISTEN` on a direct connection: no polling). A failure is sent as a `lost`
//! event and the watch tries again from where it was.

use super::error::ApiError;
use super::UiState;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use std::convert::Infallible;
use std::time::Duration;
use supabash::watch::Watch;

/// How long the feed waits after a failure before it tries again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// The event stream.
pub async fn events(
    State(s): State<UiState>,
    Path(ws): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let watch = Watch::start(s.transport.clone(), ws, None).await?;
    let feed = stream::unfold((watch, false), |(mut watch, failed)| async move {
        if failed {
            tokio::time::sleep(RETRY_AFTER).await;
        }
        let (event, failed) = match watch.next().await {
            Ok(a) => (Event::default().event("change").json_data(&a), false),
            Err(e) => (
                Ok(Event::default()
                    .event("lost")
                    .data(ApiError::from(e).message)),
                true,
            ),
        };
        let event = event.unwrap_or_else(|_| Event::default().event("lost").data("encoding"));
        Some((Ok(event), (watch, failed)))
    });
    Ok(Sse::new(feed).keep_alive(KeepAlive::default()))
}
