//! `grep -r` and `rg` on a lazily opened workspace: the server (`supabash_grep`) says which
//! base files can match, and the built-in reads only those.
//!
//! The shell's `grep` and `rg` are bashkit's own, run unchanged on the same filesystem: their
//! options, output and exit status are the built-ins' by construction. What the server adds is
//! a [`Mask`]: for each directory searched recursively, the base files that are unchanged since
//! the open (the staged tree's own rule, [`StagedTree::search_on_server`]) and in which the
//! server found no line matching a pattern at least as wide as the built-in's ([`args::Plan`]).
//! While the built-in runs, reads of those files answer empty bytes instead of fetching their
//! bodies; an empty file and a file with no matching line give the same output for every
//! option the plan accepts (`-c` counts 0, `-L` lists both, context needs a match).
//!
//! Nothing is masked, and the built-in reads every file as it would, when: the invocation is
//! not a recursive search for literal text with options the plan knows (`-v`, `-a`, `-z`, `-f`,
//! regex patterns, ... are left alone), input comes from a pipe, the tree is not lazily opened
//! or has read every base body, the server fails, or a path is reached through a symbolic link.
//! Binary base files (the server skips them) are masked unless the server says the pattern
//! matches a line of theirs: the built-in then reads them and reports them as it would.
//! Hidden paths (a segment starting with `.`, where ignore files live) are never masked.
//!
//! [`StagedTree::search_on_server`]: supabash::tree::StagedTree::search_on_server

pub(crate) mod args;

use super::fs::BashFs;
use super::read_mask::{Mask, SearchCounters, MASK};
use crate::AgentFs;
use args::{Plan, Tool};
use bashkit::{
    Bash, Command, CommandContext, CommandInput, CommandStatus, ExecOptions, ExecResult,
    ExecutionLimits, InMemoryFs,
};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Server matching lines fetched per searched directory before the rest is read locally.
const MAX_SERVER_LINES: usize = 5000;

/// What a nested shell needs to run the built-in as the outer one would.
#[derive(Clone)]
pub(super) struct Setup {
    pub fs: Arc<dyn AgentFs>,
    pub limits: ExecutionLimits,
    /// The in-memory `/tmp`, when the outer shell mounted one.
    pub scratch: Option<Arc<InMemoryFs>>,
    pub counters: Arc<SearchCounters>,
}

/// The shell's `grep` or `rg`.
pub(super) struct Searched {
    pub tool: Tool,
    pub setup: Setup,
}

/// `p` resolved against `cwd`, normalised (no `.`, `..`, doubled or trailing slashes).
fn absolute(cwd: &str, p: &str) -> String {
    let joined = if p.starts_with('/') {
        p.to_owned()
    } else {
        format!("{cwd}/{p}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for s in joined.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

impl Searched {
    /// The mask for `plan`, or `None` when the built-in must read every file.
    async fn mask(&self, plan: &Plan, cwd: &str) -> Option<Mask> {
        let fs = &self.setup.fs;
        let dirs = if plan.dirs.is_empty() {
            vec![cwd.to_owned()]
        } else {
            plan.dirs.iter().map(|d| absolute(cwd, d)).collect()
        };
        let mut mask = Mask::new(self.setup.counters.clone());
        for dir in dirs {
            // A file operand is read as it is; a link is left to the built-in.
            let Ok(st) = fs.lstat(&dir).await else {
                continue;
            };
            if st.kind != supabash::tree::FileKind::Directory
                || fs.realpath(&dir).await.ok().as_deref() != Some(dir.as_str())
            {
                continue;
            }
            let found = fs
                .search_on_server(&plan.pattern, &dir, plan.ignore_case, MAX_SERVER_LINES)
                .await?
                .ok()?;
            let frontier = found
                .truncated
                .then(|| found.matches.last().map(|m| m.path.clone()))
                .map(|f| f.unwrap_or_else(|| dir.clone()));
            let mut keep: HashSet<String> = found.local.into_iter().collect();
            // The built-in reports a binary file only when it matches (`-I`: never).
            if !plan.binary_silent {
                keep.extend(found.binary_matches);
            }
            keep.extend(found.matches.into_iter().map(|m| m.path));
            // The files the built-in will read, in a few requests (a first read would fetch
            // its whole directory).
            let mut wanted: Vec<String> = keep.iter().cloned().collect();
            wanted.sort();
            fs.prefetch(&wanted).await;
            mask.add_scope(dir, keep, frontier);
        }
        (!mask.is_empty()).then_some(mask)
    }

    /// Runs the built-in in a shell of its own over the same filesystem, with `stdin`.
    async fn builtin(
        &self,
        args: &[String],
        env: &std::collections::HashMap<String, String>,
        cwd: &str,
        stdin: Vec<u8>,
    ) -> bashkit::Result<ExecResult> {
        let mut builder = Bash::builder()
            .fs(Arc::new(BashFs::new(self.setup.fs.clone())))
            .cwd(cwd)
            .limits(self.setup.limits.clone());
        for (k, v) in env {
            builder = builder.env(k, v);
        }
        let mut bash = builder.build();
        if let Some(scratch) = &self.setup.scratch {
            bash.mount(super::SCRATCH_DIR, scratch.clone())?;
        }
        let options = ExecOptions::new()
            .positional(args.iter().cloned())
            .stdin(stdin);
        let script = format!("{} \"$@\"", self.tool.name());
        bash.exec_with_options(&script, options).await
    }
}

/// All of standard input (piped input is collected before the built-in runs).
async fn read_all(input: &CommandInput) -> bashkit::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(chunk) = input.read_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

#[async_trait::async_trait]
impl Command for Searched {
    async fn execute(&self, ctx: CommandContext<'_>) -> bashkit::Result<CommandStatus> {
        let cwd = absolute("/", &ctx.cwd.to_string_lossy());
        let plan = args::plan(self.tool, ctx.args)
            .filter(|_| self.tool != Tool::Rg || !ctx.env.contains_key("RIPGREP_CONFIG_PATH"));
        // A recursive search of directories reads no input; anything else may.
        let stdin = match &plan {
            Some(p) if !p.dirs.iter().any(|d| d == "-") => Vec::new(),
            _ => read_all(&ctx.stdin).await?,
        };
        let plan = plan.filter(|_| stdin.is_empty());
        let mask = match &plan {
            Some(plan) => self.mask(plan, &cwd).await,
            None => None,
        };
        let run = self.builtin(ctx.args, ctx.env, &cwd, stdin);
        let result = match mask {
            Some(mask) => {
                self.setup
                    .counters
                    .server_searches
                    .fetch_add(1, Ordering::Relaxed);
                MASK.scope(Arc::new(mask), run).await?
            }
            None => run.await?,
        };
        ctx.stdout.write_all(result.stdout.as_bytes()).await?;
        ctx.stderr.write_all(result.stderr.as_bytes()).await?;
        Ok(CommandStatus::with_code(result.exit_code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_resolve_against_the_working_directory() {
        assert_eq!(absolute("/", "."), "/");
        assert_eq!(absolute("/a/b", "../c/"), "/a/c");
        assert_eq!(absolute("/a", "/x//y/."), "/x/y");
        assert_eq!(absolute("/", ".."), "/");
    }
}
