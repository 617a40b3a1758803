//! The search tools: glob over paths and grep over contents, both capped.

use super::walk::walk;
use super::ToolOptions;
use crate::paths::{canon, fs_error};
use crate::AgentFs;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use supabash::error::{Result, SupabashError};
use supabash::tree::FileKind;
use supabash_core::ErrorCode;

fn matcher(pattern: &str) -> Result<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| {
            SupabashError::new(ErrorCode::InvalidArgument, format!("glob {pattern:?}: {e}"))
        })
}

/// The path of `p` relative to `base` (no leading slash).
fn relative<'a>(p: &'a str, base: &str) -> &'a str {
    let rest = if base == "/" { p } else { &p[base.len()..] };
    rest.trim_start_matches('/')
}

/// `glob` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// A glob over paths relative to `path`, e.g. `**/*.md` (`*` stays within one segment).
    pub pattern: String,
    #[serde(default = "root")]
    pub path: String,
}

fn root() -> String {
    "/".into()
}

/// `glob` output.
#[derive(Debug, Clone, Serialize)]
pub struct GlobOutput {
    pub paths: Vec<String>,
    pub truncated: bool,
}

/// Files and directories under `path` whose relative path matches the glob, in tree order.
pub async fn glob(fs: &dyn AgentFs, input: GlobInput, o: &ToolOptions) -> Result<GlobOutput> {
    let base = canon(&input.path).map_err(fs_error)?;
    let m = matcher(&input.pattern)?;
    let (found, cut) = walk(fs, &base, usize::MAX, o.max_walk)
        .await
        .map_err(fs_error)?;
    let mut paths: Vec<String> = found
        .into_iter()
        .filter(|f| m.is_match(relative(&f.path, &base)))
        .map(|f| f.path)
        .collect();
    let truncated = cut || paths.len() > o.max_entries;
    paths.truncate(o.max_entries);
    Ok(GlobOutput { paths, truncated })
}

/// `grep` input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// A regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// Directory or file to search (default `/`).
    #[serde(default = "root")]
    pub path: String,
    /// Only files whose path relative to `path` matches this glob.
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub case_insensitive: bool,
    /// Most matching lines (default and maximum: the tool limit).
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// One matching line.
#[derive(Debug, Clone, Serialize)]
pub struct GrepMatch {
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// The line, capped.
    pub text: String,
}

/// `grep` output.
#[derive(Debug, Clone, Serialize)]
pub struct GrepOutput {
    pub matches: Vec<GrepMatch>,
    pub truncated: bool,
}

/// Lines matching a regex in the UTF-8 text files under `path` (binary files, holding a NUL
/// byte or not UTF-8, are skipped). On a lazily opened tree without a glob, the base's files
/// are searched on the server (`supabash_grep`) and only the staged ones are read here.
pub async fn grep(fs: &dyn AgentFs, input: GrepInput, o: &ToolOptions) -> Result<GrepOutput> {
    let re = regex::RegexBuilder::new(&input.pattern)
        .case_insensitive(input.case_insensitive)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| SupabashError::new(ErrorCode::InvalidArgument, format!("regex: {e}")))?;
    let filter = input.glob.as_deref().map(matcher).transpose()?;
    let cap = input
        .max_results
        .unwrap_or(o.max_matches)
        .min(o.max_matches);
    let base = canon(&input.path).map_err(fs_error)?;
    let st = fs.stat(&base).await.map_err(fs_error)?;
    let keep = |p: &str| {
        filter
            .as_ref()
            .is_none_or(|m| m.is_match(relative(p, &base)))
    };
    let mut matches = Vec::new();
    // A lazily opened tree searches its base on the server; only its staged files are read.
    let server = if st.kind == FileKind::Directory && filter.is_none() {
        fs.search_on_server(&input.pattern, &base, input.case_insensitive, cap)
            .await
            .transpose()?
    } else {
        None
    };
    let (files, mut truncated) = if let Some(found) = server {
        matches.extend(found.matches.into_iter().map(|m| GrepMatch {
            text: super::text::cap(&m.text, o.max_line_bytes).0,
            path: m.path,
            line: m.line,
        }));
        (found.local, found.truncated)
    } else if st.kind == FileKind::Directory {
        let (found, cut) = walk(fs, &base, usize::MAX, o.max_walk)
            .await
            .map_err(fs_error)?;
        let files = found
            .into_iter()
            .filter(|f| f.kind == FileKind::File)
            .map(|f| f.path)
            .filter(|p| keep(p))
            .collect();
        (files, cut)
    } else {
        (vec![base.clone()], false)
    };
    let mut local = Vec::new();
    'files: for p in files {
        let Ok(bytes) = fs.read(&p).await else {
            continue;
        };
        // Binary as grep and the server tell it: a NUL byte (or, here, not UTF-8).
        if bytes.contains(&0) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if !re.is_match(line) {
                continue;
            }
            if local.len() >= cap {
                truncated = true;
                break 'files;
            }
            local.push(GrepMatch {
                path: p.clone(),
                line: i + 1,
                text: super::text::cap(line, o.max_line_bytes).0,
            });
        }
    }
    // Server and local matches in one order (path, then line), at most `cap` of them.
    matches.extend(local);
    matches.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    if matches.len() > cap {
        matches.truncate(cap);
        truncated = true;
    }
    Ok(GrepOutput { matches, truncated })
}
