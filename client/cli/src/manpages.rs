//! `supabash manpages DIR` (hidden): writes the man pages of `supabash` and of each visible
//! subcommand (`supabash.1`, `supabash-log.1`, ...), generated from the clap definitions by
//! clap_mangen. scripts/package.sh puts them in the CLI's release archive.

use std::path::Path;

/// Writes the pages of `command` and its visible subcommands into `dir` (created when missing).
pub fn write(dir: &Path, command: clap::Command) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    clap_mangen::generate_to(command, dir)
}
