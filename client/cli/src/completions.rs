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

/// Writes the completion script of `command` (the whole `supabash` command) for `shell`.
pub fn write(shell: CompletionShell, command: &mut clap::Command, out: &mut dyn std::io::Write) {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    clap_complete::generate(shell, command, "supabash", out);
}
