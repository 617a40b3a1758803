//! Commands a host registers ([`HostCommand`]): they run inside the shell like a built-in,
//! with their arguments, their standard input, the working directory and the same filesystem
//! view the shell has (the staged tree, through [`AgentFs`]), and answer standard output,
//! standard error and an exit status. The policy sees them wherever they appear (pipelines,
//! lists, substitutions, `eval`) and asks [`HostCommand::inspect`] about each statically
//! visible invocation.
//!
//! A host command is contained: it runs as its own task, so a panic becomes exit status 70
//! with a message, and it is stopped at its deadline (the shell's, or its own shorter
//! [`HostCommand::deadline`]) with exit status 124. A command that never yields cannot be
//! preempted by any async runtime; write blocking work with `tokio::task::spawn_blocking`.

use super::TIMEOUT_EXIT_CODE;
use crate::policy::{Denial, Inspector, Invocation};
use crate::AgentFs;
use std::sync::Arc;
use std::time::Duration;

/// Exit status of a host command that panicked (`EX_SOFTWARE`).
pub const PANIC_EXIT_CODE: i32 = 70;

/// What a host command is given.
pub struct HostInvocation {
    /// The arguments, without the command name.
    pub args: Vec<String>,
    /// Standard input (empty when nothing is piped in).
    pub stdin: Vec<u8>,
    /// The shell's working directory, absolute.
    pub cwd: String,
    /// The filesystem the shell sees: the staged tree (or the view or mount it was given).
    pub fs: Arc<dyn AgentFs>,
}

/// What a host command answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

impl HostOutput {
    /// Success with `stdout`.
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        HostOutput {
            stdout: stdout.into(),
            ..HostOutput::default()
        }
    }

    /// Failure with `stderr` and `exit_code`.
    pub fn err(stderr: impl Into<Vec<u8>>, exit_code: i32) -> Self {
        HostOutput {
            stderr: stderr.into(),
            exit_code,
            ..HostOutput::default()
        }
    }
}

/// A command the host adds to the shell.
///
/// ```
/// use std::sync::Arc;
/// use supabash_agent::shell::{HostCommand, HostInvocation, HostOutput, ShellConfig};
///
/// /// `wc-md`: counts the Markdown files under a directory of the staged tree.
/// struct CountMarkdown;
///
/// #[async_trait::async_trait]
/// impl HostCommand for CountMarkdown {
///     fn name(&self) -> &str {
///         "wc-md"
///     }
///     async fn run(&self, call: HostInvocation) -> HostOutput {
///         let dir = call.args.first().cloned().unwrap_or_else(|| call.cwd.clone());
///         match call.fs.readdir(&dir).await {
///             Ok(entries) => {
///                 let n = entries.iter().filter(|e| e.name.ends_with(".md")).count();
///                 HostOutput::ok(format!("{n}\n"))
///             }
///             Err(e) => HostOutput::err(format!("wc-md: {e}\n"), 1),
///         }
///     }
/// }
///
/// let config = ShellConfig::default().with_command(Arc::new(CountMarkdown));
/// ```
#[async_trait::async_trait]
pub trait HostCommand: Send + Sync + 'static {
    /// The command name scripts call it by.
    fn name(&self) -> &str;

    /// Runs one invocation.
    async fn run(&self, call: HostInvocation) -> HostOutput;

    /// Checks a statically visible invocation before the script runs (the arguments known
    /// only at run time are `None`); the default lets every one through.
    fn inspect(&self, _invocation: &Invocation) -> Result<(), Denial> {
        Ok(())
    }

    /// A deadline of its own, shorter than the shell's (the shell's applies anyway).
    fn deadline(&self) -> Option<Duration> {
        None
    }
}

/// The policy entry of the registered commands: asks each about its invocations.
pub(super) struct HostInspector(pub(super) Vec<Arc<dyn HostCommand>>);

impl Inspector for HostInspector {
    fn inspect(&self, _script: &str, invocations: &[Invocation]) -> Result<(), Denial> {
        for inv in invocations {
            let Some(name) = inv.name.as_deref() else {
                continue;
            };
            let base = name.rsplit('/').next().unwrap_or(name);
            for command in self.0.iter().filter(|c| c.name() == base) {
                command.inspect(inv)?;
            }
        }
        Ok(())
    }
}

/// The bashkit side of one registered command.
pub(super) struct Adapter {
    pub(super) command: Arc<dyn HostCommand>,
    pub(super) fs: Arc<dyn AgentFs>,
    pub(super) deadline: Duration,
}

#[async_trait::async_trait]
impl bashkit::Builtin for Adapter {
    async fn execute(
        &self,
        ctx: bashkit::BuiltinContext<'_>,
    ) -> bashkit::Result<bashkit::ExecResult> {
        let call = HostInvocation {
            args: ctx.args.to_vec(),
            stdin: ctx.stdin.map(|s| s.as_bytes().to_vec()).unwrap_or_default(),
            cwd: ctx.cwd.to_string_lossy().into_owned(),
            fs: self.fs.clone(),
        };
        let out = contained(self.command.clone(), call, self.deadline).await;
        let mut result = bashkit::ExecResult::ok_bytes(out.stdout);
        result.stderr = String::from_utf8_lossy(&out.stderr).into_owned().into();
        result.exit_code = out.exit_code;
        Ok(result)
    }
}

/// Runs `command` as its own task, stopped at `deadline` (or the command's own, shorter one);
/// a panic or the deadline becomes an exit status with a message.
pub(super) async fn contained(
    command: Arc<dyn HostCommand>,
    call: HostInvocation,
    deadline: Duration,
) -> HostOutput {
    let name = command.name().to_owned();
    let deadline = command.deadline().map_or(deadline, |d| d.min(deadline));
    let task = tokio::spawn(async move { command.run(call).await });
    let abort = task.abort_handle();
    match tokio::time::timeout(deadline, task).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) if e.is_panic() => HostOutput::err(
            format!("{name}: the host command panicked\n"),
            PANIC_EXIT_CODE,
        ),
        Ok(Err(_)) => HostOutput::err(format!("{name}: the host command was cancelled\n"), 1),
        Err(_) => {
            abort.abort();
            HostOutput::err(
                format!(
                    "{name}: the host command was stopped at its deadline of {} s\n",
                    deadline.as_secs_f64()
                ),
                TIMEOUT_EXIT_CODE,
            )
        }
    }
}
