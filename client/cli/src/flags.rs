//! Argument blocks that several commands flatten, so each flag is declared once: what a
//! staging command commits ([`CommitFlags`]: `run`, `import`) and who and why a new revision
//! records ([`Recorded`]: `restore`, `fork`), and what a sync leaves out ([`ExcludeFlags`]:
//! `run`, `import`). The connection and workspace block is
//! [`crate::connect::Target`].

use supabash::workspace::CommitOptions;
use supabash::Workspace;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The flags of a command that stages changes and may commit them (`run`, `import`).
#[derive(Debug, Clone, clap::Args)]
pub struct CommitFlags {
    /// Commit the staged changes (default: only stage and print them).
    #[arg(long)]
    pub commit: bool,
    /// The commit's cause.
    #[arg(short = 'm', long = "message", requires = "commit")]
    pub message: Option<String>,
    /// Recorded on the commit.
    #[arg(long, default_value = "supabash-cli")]
    pub actor: String,
}

impl CommitFlags {
    /// Commits what `ws` has staged when `--commit` asks and something is staged (`changed`);
    /// answers the revision committed.
    pub async fn commit(&self, ws: &Workspace, changed: bool) -> Result<Option<String>, BoxError> {
        if !self.commit || !changed {
            return Ok(None);
        }
        let mut options = CommitOptions::new(self.actor.clone());
        options.cause = self.message.clone();
        Ok(Some(ws.commit(options).await?.receipt.revision))
    }
}

/// Who and why, recorded on the revision a command makes.
#[derive(Debug, Clone, clap::Args)]
pub struct Recorded {
    /// Recorded on the new revision as who made it.
    #[arg(long, default_value = "supabash-cli")]
    pub actor: String,
    /// Why (recorded on the new revision).
    #[arg(long)]
    pub cause: Option<String>,
}

/// The ignore-list flags of a command that stages a directory (`run`, `import`); see
/// `run/ignore_list.rs`. Nothing is ignored by default.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExcludeFlags {
    /// Leave out paths matching PATTERN (gitignore syntax; repeatable), on top of the
    /// `.supabashignore` at the directory's root. Left-out paths are reported as ignored,
    /// neither staged nor deleted.
    #[arg(long = "exclude", value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Leave out a preset too: `build` is target/, node_modules/ and .venv/.
    #[arg(long, value_enum, value_name = "PRESET")]
    pub exclude_preset: Option<Preset>,
}

/// A preset of `--exclude-preset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// Build output and environments: target/, node_modules/, .venv/.
    Build,
}
