//! The command policy: a damage limiter that inspects a shell command before it runs. It is not
//! the security boundary (that is the virtual filesystem, the path rules and the database's
//! authorisation); it stops the obvious accidents and the statically visible abuse early, with
//! a stable reason code the agent can read.
//!
//! The command is parsed with bashkit's own parser (the one that will run it), and the syntax
//! tree is walked: pipelines, lists, groups, subshells, loops, conditionals, functions, command
//! and process substitutions, heredoc bodies, `eval` / `bash -c` with literal text, wrapper
//! commands (`env`, `timeout`, `xargs`, …) and `find -exec`. Literal variable assignments and
//! `cd` are tracked, so `D=/; rm -rf "$D"` and `cd / && rm -rf .` are seen; a value only known
//! at run time (an unknown variable, a command substitution, a glob other than a root-wide one)
//! is not guessed at and runs normally inside the sandbox.
//!
//! Denied, each with a [`Reason`]: statically visible paths that climb above the root, use the
//! reserved `.supabash` segment or percent-encode dots and separators (the rules of
//! [`supabash_core::path`]); recursive operations on the root; network commands (also inside
//! substitutions) when network is off; host escapes; commands longer than the byte limit or
//! pipelines with more stages than the limit; recursive functions (fork bombs); syntax that
//! does not parse; command names the host denies; and whatever a host [`Inspector`] refuses.

mod rules;
mod walk;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use supabash::error::SupabashError;
use supabash_core::ErrorCode;

/// Why a command was denied. [`Reason::code`] is stable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The command does not parse (or nests `eval` / `bash -c` too deeply).
    Unparsable,
    /// The command is longer than the byte limit.
    CommandTooLong,
    /// A pipeline has more stages than the limit.
    PipelineTooLong,
    /// A path climbs above the root (`..`).
    EscapesRoot,
    /// A path uses the reserved `.supabash` segment.
    ReservedPath,
    /// A path percent-encodes a dot or a separator.
    PercentEncoded,
    /// A recursive operation targets the root (`rm -rf /`, `find / -delete`, `rm -rf *` at `/`).
    RecursiveRoot,
    /// A network command (or `/dev/tcp`) while network is off.
    Network,
    /// `curl` / `wget` with a literal URL outside the host's allowlist.
    UrlNotAllowed,
    /// A command that would escape to the host (`sudo`, `chroot`, `docker`, `mount`, …).
    HostEscape,
    /// A function that calls itself, directly or through others (fork bombs).
    ForkBomb,
    /// A command name the host denies.
    DeniedCommand,
    /// A host inspector's own reason code.
    Host(String),
}

impl Reason {
    /// The stable reason code.
    pub fn code(&self) -> &str {
        match self {
            Reason::Unparsable => "unparsable",
            Reason::CommandTooLong => "command-too-long",
            Reason::PipelineTooLong => "pipeline-too-long",
            Reason::EscapesRoot => "escapes-root",
            Reason::ReservedPath => "reserved-path",
            Reason::PercentEncoded => "percent-encoded-path",
            Reason::RecursiveRoot => "recursive-root",
            Reason::Network => "network-disabled",
            Reason::UrlNotAllowed => "url-not-allowed",
            Reason::HostEscape => "host-escape",
            Reason::ForkBomb => "fork-bomb",
            Reason::DeniedCommand => "denied-command",
            Reason::Host(code) => code,
        }
    }
}

/// A denied command: the reason and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Why.
    pub reason: Reason,
    /// What was seen, for the agent.
    pub detail: String,
}

impl Denial {
    /// A denial for `reason` with a detail.
    pub fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Denial {
            reason,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "command denied by policy ({}): {}",
            self.reason.code(),
            self.detail
        )
    }
}

impl std::error::Error for Denial {}

impl From<Denial> for SupabashError {
    fn from(d: Denial) -> Self {
        SupabashError::new(ErrorCode::PolicyDenied, d.to_string()).with_source(d)
    }
}

/// Where a command sits in the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placement {
    /// Run by the script itself.
    Direct,
    /// Inside `$(…)`, backquotes or `<(…)`.
    Substitution,
    /// Inside a function body.
    FunctionBody,
    /// Inside literal text run by `eval` or `bash -c`.
    Reentry,
}

/// One statically visible command, as inspectors see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The command name when it is literal (wrappers like `env` are their own invocation, and
    /// the command they run is another).
    pub name: Option<String>,
    /// The arguments; `None` where the value is only known at run time.
    pub args: Vec<Option<String>>,
    /// Where it sits.
    pub placement: Placement,
}

/// A host's own check, run after the built-in rules on every command that passed them.
pub trait Inspector: Send + Sync {
    /// Denies the command, or lets it through. `script` is the whole command text.
    fn inspect(&self, script: &str, invocations: &[Invocation]) -> Result<(), Denial>;
}

/// The URLs `curl` and `wget` may reach (see [`CommandPolicy::allow_url`]).
#[derive(Debug, Clone, Default)]
struct UrlAllowlist {
    patterns: Vec<String>,
    private_addresses: bool,
}

impl UrlAllowlist {
    fn to_bashkit(&self) -> Option<bashkit::NetworkAllowlist> {
        (!self.patterns.is_empty()).then(|| {
            bashkit::NetworkAllowlist::new()
                .allow_many(self.patterns.iter().cloned())
                .block_private_ips(!self.private_addresses)
        })
    }
}

/// Default byte limit of one command.
pub const DEFAULT_MAX_COMMAND_BYTES: usize = 64 * 1024;
/// Default limit of stages in one pipeline.
pub const DEFAULT_MAX_PIPELINE_STAGES: usize = 16;

/// The policy: limits, network switch, URL allowlist, host allow/deny lists and inspectors.
#[derive(Clone)]
pub struct CommandPolicy {
    allow_network: bool,
    urls: UrlAllowlist,
    max_command_bytes: usize,
    max_pipeline_stages: usize,
    allow: BTreeSet<String>,
    deny: BTreeSet<String>,
    inspectors: Vec<Arc<dyn Inspector>>,
}

impl Default for CommandPolicy {
    fn default() -> Self {
        CommandPolicy {
            allow_network: false,
            urls: UrlAllowlist::default(),
            max_command_bytes: DEFAULT_MAX_COMMAND_BYTES,
            max_pipeline_stages: DEFAULT_MAX_PIPELINE_STAGES,
            allow: BTreeSet::new(),
            deny: BTreeSet::new(),
            inspectors: Vec::new(),
        }
    }
}

impl fmt::Debug for CommandPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandPolicy")
            .field("allow_network", &self.allow_network)
            .field("urls", &self.urls)
            .field("max_command_bytes", &self.max_command_bytes)
            .field("max_pipeline_stages", &self.max_pipeline_stages)
            .field("allow", &self.allow)
            .field("deny", &self.deny)
            .field("inspectors", &self.inspectors.len())
            .finish()
    }
}

impl CommandPolicy {
    /// Lets network commands through (the shell must also be given network access).
    pub fn allow_network(mut self, allow: bool) -> Self {
        self.allow_network = allow;
        self
    }

    /// Whether network commands are let through.
    pub fn network_allowed(&self) -> bool {
        self.allow_network
    }

    /// Lets `curl` and `wget` reach URLs matching `pattern`: scheme, host and port exactly, and
    /// the path as a prefix (`https://api.example.com/v1` allows `…/v1/items` and `…/v1x`,
    /// so end a prefix with `/` to keep to one directory). Only these two commands; every other
    /// network command stays denied unless [`CommandPolicy::allow_network`]. The policy checks
    /// literal URLs before the command runs; the shell's HTTP client checks every request and
    /// every redirect hop again against the same list.
    pub fn allow_url(mut self, pattern: impl Into<String>) -> Self {
        self.urls.patterns.push(pattern.into());
        self
    }

    /// Lets allowed URLs reach loopback and private addresses (off by default: a name that
    /// resolves to one is refused, against DNS rebinding). For tests and hosts whose allowed
    /// services are on a private network.
    pub fn allow_private_addresses(mut self, allow: bool) -> Self {
        self.urls.private_addresses = allow;
        self
    }

    /// The URL allowlist, when the host configured one (`None`: `curl`/`wget` have no network).
    pub fn url_allowlist(&self) -> Option<bashkit::NetworkAllowlist> {
        self.urls.to_bashkit()
    }

    /// Sets the byte limit of one command.
    pub fn max_command_bytes(mut self, bytes: usize) -> Self {
        self.max_command_bytes = bytes;
        self
    }

    /// The byte limit of one command.
    pub fn max_bytes(&self) -> usize {
        self.max_command_bytes
    }

    /// Sets the stage limit of one pipeline.
    pub fn max_pipeline_stages(mut self, stages: usize) -> Self {
        self.max_pipeline_stages = stages;
        self
    }

    /// Exempts a command name from the built-in network and host-escape lists (for a command
    /// the host registered itself).
    pub fn allow_command(mut self, name: impl Into<String>) -> Self {
        self.allow.insert(name.into());
        self
    }

    /// Denies a command name wherever it appears.
    pub fn deny_command(mut self, name: impl Into<String>) -> Self {
        self.deny.insert(name.into());
        self
    }

    /// Adds a host inspector.
    pub fn inspector(mut self, inspector: Arc<dyn Inspector>) -> Self {
        self.inspectors.push(inspector);
        self
    }

    /// Checks `script` before it runs.
    pub fn check(&self, script: &str) -> Result<(), Denial> {
        if script.len() > self.max_command_bytes {
            return Err(Denial::new(
                Reason::CommandTooLong,
                format!(
                    "{} bytes, the limit is {}",
                    script.len(),
                    self.max_command_bytes
                ),
            ));
        }
        let invocations = walk::inspect(self, script)?;
        for inspector in &self.inspectors {
            inspector.inspect(script, &invocations)?;
        }
        Ok(())
    }
}
