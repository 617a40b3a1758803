//! How commands name a revision ([`resolve`]: `head`, an id, a position, an id prefix or a
//! time), a workspace's [`head`], and the walk over every page of its history.

use crate::exit::usage;
use supabash::transport::call;
use supabash::{ErrorCode, SupabashError, Transport, Workspace};
use supabash_core::point_in_time::{self, RevisionArg};
use supabash_core::rpc::requests as rq;
use supabash_core::rpc::{HistoryPage, Receipt};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A revision found by [`resolve`]: its id, and its receipt when finding it read it.
pub struct Resolved {
    pub id: String,
    pub receipt: Option<Receipt>,
}

/// A revision as people name it: `head`, a full revision id, a position (`3`), a prefix
/// of an id of at least 4 characters that names one revision (digits are tried as both), or a
/// time (RFC 3339), which passes through for the server to resolve. `REVISION_NOT_FOUND` when
/// none matches.
pub async fn resolve(
    transport: &dyn Transport,
    workspace: &str,
    rev: &str,
) -> Result<Resolved, BoxError> {
    match point_in_time::classify(rev) {
        Ok(RevisionArg::Time(t)) => {
            return Ok(Resolved {
                id: t.to_owned(),
                receipt: None,
            })
        }
        Ok(RevisionArg::Id(_)) => {}
        Err(e) => return Err(usage(e.to_string())),
    }
    if rev.eq_ignore_ascii_case("head") {
        let id = head(transport, workspace).await?.ok_or_else(|| {
            SupabashError::new(
                ErrorCode::RevisionNotFound,
                "the workspace has no revision yet",
            )
        })?;
        return Ok(Resolved { id, receipt: None });
    }
    if let Ok(id) = uuid::Uuid::parse_str(rev) {
        return Ok(Resolved {
            id: id.hyphenated().to_string(),
            receipt: None,
        });
    }
    let position = rev.parse::<i64>().ok();
    let prefix = rev.to_ascii_lowercase();
    let is_prefix = prefix.len() >= 4 && prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if position.is_none() && !is_prefix {
        return Err(usage(format!(
            "{rev:?} is not a revision: give head, an id, a position or an id prefix (4+ hex digits)"
        )));
    }
    let mut found: Vec<Receipt> = Vec::new();
    for_each_page(transport, workspace, |page| {
        // Digits may be a position or an id prefix ("22365167"): both are tried, and a
        // string naming two revisions is refused as ambiguous below.
        found.extend(page.records.into_iter().filter(|r| {
            position == Some(r.position) || (is_prefix && r.revision.starts_with(&prefix))
        }));
    })
    .await?;
    match found.len() {
        0 => Err(SupabashError::new(
            ErrorCode::RevisionNotFound,
            format!("no revision {rev:?} in workspace {workspace}"),
        )
        .into()),
        1 => {
            let r = found.remove(0);
            Ok(Resolved {
                id: r.revision.clone(),
                receipt: Some(r),
            })
        }
        n => Err(usage(format!(
            "{rev:?} names {n} revisions: give more of the id"
        ))),
    }
}

/// The id of `rev` as [`resolve`] reads it, when one is given (`None`: none was, and the
/// request's default, the head, applies).
pub async fn resolve_given(
    transport: &dyn Transport,
    workspace: &str,
    rev: Option<&str>,
) -> Result<Option<String>, BoxError> {
    match rev {
        Some(r) => Ok(Some(resolve(transport, workspace, r).await?.id)),
        None => Ok(None),
    }
}

/// The workspace's head revision (`None`: no commit yet); `NOT_FOUND` when the caller has no
/// such workspace.
pub async fn head(transport: &dyn Transport, workspace: &str) -> Result<Option<String>, BoxError> {
    let mut cursor: Option<String> = None;
    loop {
        let page = Workspace::list(transport, cursor.as_deref(), None).await?;
        if let Some(w) = page
            .workspaces
            .into_iter()
            .find(|w| w.workspace_id == workspace)
        {
            return Ok(w.head_revision);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => {
                return Err(SupabashError::new(
                    ErrorCode::NotFound,
                    format!("no workspace {workspace} among the caller's"),
                )
                .into())
            }
        }
    }
}

/// Calls `each` with every page of history, oldest first.
pub async fn for_each_page(
    transport: &dyn Transport,
    workspace: &str,
    mut each: impl FnMut(HistoryPage),
) -> Result<(), BoxError> {
    let mut cursor: Option<String> = None;
    loop {
        let page = page(transport, workspace, cursor.clone(), None).await?;
        let next = page.next_cursor.clone();
        each(page);
        match next {
            Some(c) => cursor = Some(c),
            None => return Ok(()),
        }
    }
}

/// One page of history from `cursor` (`None`: the first), of at most `page_size` records.
pub async fn page(
    transport: &dyn Transport,
    workspace: &str,
    cursor: Option<String>,
    page_size: Option<i32>,
) -> Result<HistoryPage, BoxError> {
    let request = rq::History {
        workspace_id: workspace.to_owned(),
        cursor,
        page_size,
        ..Default::default()
    };
    Ok(call(transport, &request).await?)
}
