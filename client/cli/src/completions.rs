//! `supabash completions bash|zsh|fish`: shell completion generated from the command
//! definitions (clap_complete).

use clap_complete::Shell;

/// Arguments of `supabash completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells completion is generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// The completion script of `command` (the whole `supabash` command) for `shell`.
pub fn script(shell: CompletionShell, command: &mut clap::Command) -> Vec<u8> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, command, "supabash", &mut out);
    out
}
