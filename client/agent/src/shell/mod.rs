//! bash over an agent filesystem, with bashkit (an in-process bash with its own builtins: no
//! host process is ever started).
//!
//! [`Shell::run`] checks the command with the [`CommandPolicy`], then runs it in a fresh shell
//! (working directory `/`, `HOME=/`, no variables or functions from earlier runs: only the
//! filesystem carries over) against the agent filesystem, under a wall-clock deadline. Output
//! is redacted and then capped. `/tmp` is scratch: it lives in the staged tree's shell-owned
//! area, so it survives between runs of the same tree but never enters a commit; over a
//! filesystem that refuses `/tmp` (a mounted filesystem, a read-only view) the shell keeps its
//! own in-memory `/tmp` instead, for the life of the [`Shell`]. Files that
//! tools create and remove on their way (bashkit's `sed -i` writes a temporary file and renames
//! it) never reach a commit either, because the change set is the difference between the tree
//! and its base.
//!
//! Network is off by default: `curl` and `wget` (bashkit's HTTP client) reach only the URLs of
//! the policy's allowlist ([`CommandPolicy::allow_url`]), checked by the policy before the
//! command runs and by the client on every request and redirect hop, with the response size
//! and time bounded ([`ShellConfig::max_response_bytes`], [`ShellConfig::http_timeout`]);
//! every other network command stays denied. `jq` is built in. Hosts add their own commands
//! with [`HostCommand`] ([`ShellConfig::with_command`]).
//!
//! `grep -r` and `rg` over a lazily opened workspace ask the server (`supabash_grep`) which
//! base files can match and read only those (see the `search` module); their output is the
//! built-ins' own either way ([`Shell::search_counters`] tells how often the server helped).

mod fs;
mod host;
mod output;
mod read_mask;
mod search;

pub use fs::error_code;
pub use host::{HostCommand, HostInvocation, HostOutput, PANIC_EXIT_CODE};
pub use output::{as_text, cap, BINARY_NOTICE, TRUNCATED_MARKER};
pub use read_mask::SearchCounters;

use crate::policy::CommandPolicy;
use crate::redact::Redactor;
use crate::AgentFs;
use bashkit::{Bash, ExecutionLimits, HttpLimits, InMemoryFs, LimitExceeded};
use std::sync::Arc;
use std::time::Duration;
use supabash::error::{Result, SupabashError};
use supabash_core::ErrorCode;

/// Default wall-clock deadline of one command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap of stdout and of stderr, in bytes (each).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// Exit status of a command stopped at its deadline (as `timeout(1)` reports it).
pub const TIMEOUT_EXIT_CODE: i32 = 124;
/// Exit status when bash itself refuses the script (a syntax error, as bash reports it).
pub const SYNTAX_EXIT_CODE: i32 = 2;
/// The scratch directory.
pub const SCRATCH_DIR: &str = "/tmp";
/// Default cap of one HTTP response body, in bytes.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Default deadline of one HTTP request.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// Room bashkit may fill past the cap before it stops collecting, so that redaction sees a
/// secret whole before the cap cuts the text.
const REDACTION_MARGIN: usize = 64 * 1024;

/// How a [`Shell`] runs commands.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ShellConfig {
    /// Wall-clock deadline of one command.
    pub timeout: Duration,
    /// Cap of stdout and of stderr, in bytes (each; the marker comes on top).
    pub max_output_bytes: usize,
    /// The command policy.
    pub policy: CommandPolicy,
    /// Redaction of everything returned.
    pub redactor: Redactor,
    /// Cap of one HTTP response body (`curl`/`wget`), in bytes: a longer one fails the command.
    pub max_response_bytes: usize,
    /// Deadline of one HTTP request.
    pub http_timeout: Duration,
    /// Commands the host registered ([`ShellConfig::with_command`]).
    pub commands: HostCommands,
}

/// The commands a host registered, by name.
#[derive(Clone, Default)]
pub struct HostCommands(Vec<Arc<dyn HostCommand>>);

impl std::fmt::Debug for HostCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|c| c.name().to_owned()))
            .finish()
    }
}

impl ShellConfig {
    /// Registers a host command: the shell runs it like a built-in, and the policy lets its
    /// name through the built-in network and host-escape lists and asks
    /// [`HostCommand::inspect`] about every invocation it sees (pipelines, lists,
    /// substitutions, `eval`). A later command of the same name replaces an earlier one.
    pub fn with_command(mut self, command: Arc<dyn HostCommand>) -> Self {
        let name = command.name().to_owned();
        self.commands.0.retain(|c| c.name() != name);
        self.commands.0.push(command.clone());
        self.policy = self
            .policy
            .allow_command(name)
            .inspector(Arc::new(host::HostInspector(vec![command])));
        self
    }
}

supabash::setters! {
    impl ShellConfig {
        with_timeout(timeout: Duration),
        with_max_output_bytes(max_output_bytes: usize),
        with_policy(policy: CommandPolicy),
        with_redactor(redactor: Redactor),
        with_max_response_bytes(max_response_bytes: usize),
        with_http_timeout(http_timeout: Duration),
    }
}

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            policy: CommandPolicy::default(),
            redactor: Redactor::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            http_timeout: DEFAULT_HTTP_TIMEOUT,
            commands: HostCommands::default(),
        }
    }
}

/// What a command printed and how it ended (redacted and capped).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShellOutput {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status ([`TIMEOUT_EXIT_CODE`] at the deadline).
    pub exit_code: i32,
    /// Output was cut (it ends with [`TRUNCATED_MARKER`]).
    pub truncated: bool,
    /// The deadline stopped the command; what it changed before stays staged.
    pub timed_out: bool,
}

/// bash over an agent filesystem.
pub struct Shell {
    fs: Arc<dyn AgentFs>,
    config: ShellConfig,
    /// `/tmp` when the filesystem has none of its own.
    scratch: Arc<InMemoryFs>,
    /// What the server-side search of `grep`/`rg` spared.
    counters: Arc<SearchCounters>,
}

impl Shell {
    /// A shell with the default configuration.
    pub fn new(fs: Arc<dyn AgentFs>) -> Self {
        Self::with_config(fs, ShellConfig::default())
    }

    /// A shell with `config`.
    pub fn with_config(fs: Arc<dyn AgentFs>, config: ShellConfig) -> Self {
        Shell {
            fs,
            config,
            scratch: Arc::new(InMemoryFs::new()),
            counters: Arc::default(),
        }
    }

    /// How often `grep`/`rg` searched on the server, and how many body reads that spared.
    pub fn search_counters(&self) -> &SearchCounters {
        &self.counters
    }

    /// The configuration.
    pub fn config(&self) -> &ShellConfig {
        &self.config
    }

    /// A shell for one run; `scratch` is the in-memory `/tmp` it mounts, if any.
    fn bash(&self, timeout: Duration, scratch: Option<Arc<InMemoryFs>>) -> Result<Bash> {
        let room = self
            .config
            .max_output_bytes
            .saturating_add(REDACTION_MARGIN);
        let limits = ExecutionLimits::new()
            .timeout(timeout)
            .max_input_bytes(self.config.policy.max_bytes())
            .max_stdout_bytes(room)
            .max_stderr_bytes(room);
        let setup = search::Setup {
            fs: self.fs.clone(),
            limits: limits.clone(),
            scratch: scratch.clone(),
            counters: self.counters.clone(),
        };
        let mut builder = Bash::builder()
            .fs(Arc::new(fs::BashFs::new(self.fs.clone())))
            .cwd("/")
            .env("HOME", "/")
            .limits(limits);
        for tool in [search::args::Tool::Grep, search::args::Tool::Rg] {
            let searched = search::Searched {
                tool,
                setup: setup.clone(),
            };
            builder = builder.command(tool.name(), searched);
        }
        if let Some(urls) = self.config.policy.url_allowlist() {
            let http = HttpLimits::default()
                .timeout(self.config.http_timeout.min(timeout))
                .max_response_bytes(self.config.max_response_bytes);
            builder = builder.network(urls).http_limits(http);
        }
        for command in &self.config.commands.0 {
            let adapter = host::Adapter {
                command: command.clone(),
                fs: self.fs.clone(),
                deadline: timeout,
            };
            builder = builder.builtin(command.name(), Box::new(adapter));
        }
        let bash = builder.build();
        if let Some(scratch) = scratch {
            bash.mount(SCRATCH_DIR, scratch)
                .map_err(|e| SupabashError::new(ErrorCode::Backend, e.to_string()))?;
        }
        Ok(bash)
    }

    /// Runs `command`. A command the policy denies fails with `POLICY_DENIED` (the reason code
    /// is in the message) and does not run; a command past its deadline is stopped and
    /// reported with [`TIMEOUT_EXIT_CODE`].
    pub async fn run(&self, command: &str) -> Result<ShellOutput> {
        self.run_with_timeout(command, self.config.timeout).await
    }

    /// Runs `command` with its own deadline (see [`Shell::run`]).
    pub async fn run_with_timeout(&self, command: &str, timeout: Duration) -> Result<ShellOutput> {
        if let Err(denial) = self.config.policy.check(command) {
            let e = SupabashError::from(denial);
            let message = self.config.redactor.redact(e.message());
            return Err(e.with_message(message));
        }
        let scratch = match self.fs.mkdir(SCRATCH_DIR, true).await {
            Ok(()) => None,
            Err(_) => Some(self.scratch.clone()),
        };
        let mut bash = self.bash(timeout, scratch)?;
        let result = tokio::time::timeout(timeout, bash.exec(command)).await;
        match result {
            Err(_) => Ok(self.timed_out(timeout)),
            Ok(Ok(r)) => {
                let cut_by_bash = r.stdout_truncated || r.stderr_truncated;
                Ok(self.finish(
                    &as_text(r.stdout.as_bytes()),
                    &as_text(r.stderr.as_bytes()),
                    r.exit_code,
                    cut_by_bash,
                ))
            }
            Ok(Err(bashkit::Error::ResourceLimit(LimitExceeded::Timeout(_)))) => {
                Ok(self.timed_out(timeout))
            }
            Ok(Err(e)) => {
                let message = self.config.redactor.redact(&e.to_string());
                if let Some(code) = error_code(&e) {
                    return Err(SupabashError::new(code, message));
                }
                let exit = match e {
                    bashkit::Error::Parse { .. } => SYNTAX_EXIT_CODE,
                    _ => 1,
                };
                Ok(self.finish("", &format!("bash: {message}\n"), exit, false))
            }
        }
    }

    fn timed_out(&self, timeout: Duration) -> ShellOutput {
        let message = format!(
            "supabash: the command was stopped at its wall-clock deadline of {} s; what it \
             changed before then stays staged\n",
            timeout.as_secs_f64()
        );
        ShellOutput {
            timed_out: true,
            ..self.finish("", &message, TIMEOUT_EXIT_CODE, false)
        }
    }

    /// Redacts, then caps.
    fn finish(&self, stdout: &str, stderr: &str, exit_code: i32, cut: bool) -> ShellOutput {
        let max = self.config.max_output_bytes;
        let (mut stdout, out_cut) = cap(self.config.redactor.redact(stdout), max);
        let (stderr, err_cut) = cap(self.config.redactor.redact(stderr), max);
        if cut && !out_cut && !err_cut {
            stdout.push_str(TRUNCATED_MARKER);
        }
        ShellOutput {
            stdout,
            stderr,
            exit_code,
            truncated: cut || out_cut || err_cut,
            timed_out: false,
        }
    }
}
