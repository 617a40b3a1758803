//! The per-command rules: command tables, paths, recursive operations on the root, and the
//! commands a command runs (wrappers, `find -exec`, `eval`, `bash -c`).

use super::{CommandPolicy, Denial, Reason};
use supabash_core::path::{self, PathError};

/// Commands that reach the network.
const NETWORK: [&str; 24] = [
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "sftp", "scp", "ssh",
    "rsync", "http", "https", "xh", "aria2c", "lynx", "w3m", "links", "ping", "dig", "nslookup",
    "host", "whois",
];
/// `git` subcommands that reach the network.
const GIT_NETWORK: [&str; 6] = ["clone", "fetch", "pull", "push", "ls-remote", "submodule"];
/// Commands that would act on the host outside the sandbox.
const HOST_ESCAPE: [&str; 23] = [
    "sudo",
    "su",
    "doas",
    "pkexec",
    "chroot",
    "nsenter",
    "unshare",
    "docker",
    "podman",
    "kubectl",
    "mount",
    "umount",
    "systemctl",
    "service",
    "reboot",
    "shutdown",
    "halt",
    "poweroff",
    "insmod",
    "modprobe",
    "setcap",
    "capsh",
    "runuser",
];
/// Wrappers that run the command named in their arguments.
const WRAPPERS: [&str; 10] = [
    "command", "env", "exec", "nice", "nohup", "setsid", "stdbuf", "timeout", "xargs", "time",
];
/// Shells whose `-c` text is inspected.
const SHELLS: [&str; 5] = ["bash", "sh", "dash", "zsh", "ksh"];
/// `find` actions that run a command.
const FIND_EXEC: [&str; 4] = ["-exec", "-execdir", "-ok", "-okdir"];
/// Commands that destroy what `find -exec` hands them.
const DESTRUCTIVE: [&str; 9] = [
    "rm", "rmdir", "unlink", "mv", "shred", "truncate", "chmod", "chown", "chgrp",
];

/// A word's value: the text when it is known before run time, and whether it holds an
/// unquoted glob.
#[derive(Debug, Clone)]
pub(super) struct Value {
    pub text: Option<String>,
    pub glob: bool,
}

impl Value {
    pub fn dynamic() -> Self {
        Value {
            text: None,
            glob: false,
        }
    }

    fn literal(text: &str) -> Self {
        Value {
            text: Some(text.to_owned()),
            glob: false,
        }
    }

    fn is_option(&self) -> bool {
        self.text
            .as_deref()
            .is_some_and(|t| t.starts_with('-') && t.len() > 1)
    }
}

/// The last segment of a command name (`/usr/bin/curl` → `curl`).
pub(super) fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Whether a word is worth resolving as a path.
fn path_like(text: &str) -> bool {
    text.contains('/') || text == ".." || text.contains(path::RESERVED_SEGMENT)
}

/// Checks a path-like value against every possible working directory.
pub(super) fn check_path(
    policy: &CommandPolicy,
    value: &Value,
    cwds: &[Option<String>],
) -> Result<(), Denial> {
    let Some(text) = value.text.as_deref() else {
        return Ok(());
    };
    if !path_like(text) {
        return Ok(());
    }
    for cwd in cwds {
        let base = match cwd {
            Some(c) => c.as_str(),
            // Unknown directory: only what does not depend on it.
            None if text.starts_with('/') => "/",
            None => "/unknown",
        };
        match path::resolve(base, text) {
            Ok(p)
                if !policy.allow_network
                    && (p.starts_with("/dev/tcp/") || p.starts_with("/dev/udp/")) =>
            {
                return Err(Denial::new(
                    Reason::Network,
                    format!("{text:?} opens a network socket"),
                ));
            }
            Ok(_) => {}
            Err(PathError::EscapesRoot) if cwd.is_some() || text.starts_with('/') => {
                return Err(Denial::new(
                    Reason::EscapesRoot,
                    format!("{text:?} climbs above the root"),
                ));
            }
            Err(PathError::Reserved) => {
                return Err(Denial::new(
                    Reason::ReservedPath,
                    format!(
                        "{text:?} uses the reserved {} segment",
                        path::RESERVED_SEGMENT
                    ),
                ));
            }
            Err(PathError::PercentEncoded) => {
                return Err(Denial::new(
                    Reason::PercentEncoded,
                    format!("{text:?} percent-encodes a dot or a separator"),
                ));
            }
            // Other malformed paths are refused by the filesystem itself.
            Err(_) => {}
        }
    }
    Ok(())
}

/// How many leading operands of a command are not paths (patterns, programs, formats).
fn non_path_operands(name: &str, args: &[Value]) -> usize {
    match name {
        "echo" | "printf" | "expr" | "test" | "[" | "true" | "false" | ":" => usize::MAX,
        // With -e / -f the pattern or program is an option value, not an operand.
        "grep" | "egrep" | "fgrep" | "rg" | "sed" | "awk" | "jq" => {
            let explicit = args.iter().any(|a| {
                matches!(
                    a.text.as_deref(),
                    Some("-e" | "-f" | "--expression" | "--file")
                )
            });
            usize::from(!explicit)
        }
        _ => 0,
    }
}

/// Checks the path-like arguments of a command (and the values of `--opt=value` options).
pub(super) fn check_args(
    policy: &CommandPolicy,
    name: &str,
    args: &[Value],
    cwds: &[Option<String>],
) -> Result<(), Denial> {
    let pattern_command = non_path_operands(name, args) == 1
        || matches!(
            name,
            "grep" | "egrep" | "fgrep" | "rg" | "sed" | "awk" | "jq"
        );
    let mut skip = non_path_operands(name, args);
    let mut after_dashdash = false;
    let mut pattern_value = false;
    for a in args {
        if std::mem::take(&mut pattern_value) {
            continue;
        }
        if !after_dashdash {
            match a.text.as_deref() {
                Some("--") => {
                    after_dashdash = true;
                    continue;
                }
                Some("-e" | "--expression") if pattern_command => {
                    pattern_value = true;
                    continue;
                }
                Some(t) if a.is_option() => {
                    if let Some((_, value)) = t.split_once('=') {
                        check_path(policy, &Value::literal(value), cwds)?;
                    }
                    continue;
                }
                _ => {}
            }
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        check_path(policy, a, cwds)?;
    }
    Ok(())
}

/// Whether a value is the root, or a glob over every entry of the root, in some directory.
fn is_root(value: &Value, cwds: &[Option<String>]) -> bool {
    let Some(text) = value.text.as_deref() else {
        return false;
    };
    let (dir, last) = match text.rfind('/') {
        _ if !value.glob => (text, ""),
        Some(i) => (if i == 0 { "/" } else { &text[..i] }, &text[i + 1..]),
        None => (".", text),
    };
    if value.glob
        && !(last.chars().all(|c| matches!(c, '*' | '?' | '.')) && last.contains(['*', '?']))
    {
        return false;
    }
    cwds.iter().any(|cwd| match cwd {
        _ if dir.starts_with('/') => path::resolve("/", dir).is_ok_and(|p| p == "/"),
        Some(cwd) => path::resolve(cwd, dir).is_ok_and(|p| p == "/"),
        None => false,
    })
}

fn recursive_flag(args: &[Value], short: &[char]) -> bool {
    args.iter()
        .take_while(|a| a.text.as_deref() != Some("--"))
        .filter_map(|a| a.text.as_deref())
        .any(|t| {
            t == "--recursive"
                || (t.starts_with('-') && !t.starts_with("--") && t[1..].contains(short))
        })
}

fn operands(args: &[Value]) -> Vec<&Value> {
    let mut out = Vec::new();
    let mut after_dashdash = false;
    for a in args {
        if !after_dashdash && a.text.as_deref() == Some("--") {
            after_dashdash = true;
        } else if after_dashdash || !a.is_option() {
            out.push(a);
        }
    }
    out
}

/// Denies recursive operations whose target is the root.
fn recursive_root(name: &str, args: &[Value], cwds: &[Option<String>]) -> Result<(), Denial> {
    let targets: Vec<&Value> = match name {
        "rm" if recursive_flag(args, &['r', 'R']) => operands(args),
        "chmod" | "chown" | "chgrp" if recursive_flag(args, &['R']) => {
            operands(args).into_iter().skip(1).collect()
        }
        "find" if find_destroys(args) => {
            let starts: Vec<&Value> = args
                .iter()
                .take_while(|a| {
                    !a.text
                        .as_deref()
                        .is_some_and(|t| t.starts_with('-') || t == "(" || t == "!")
                })
                .collect();
            if starts.is_empty() {
                return check_root_targets(name, &[&Value::literal(".")], cwds);
            }
            starts
        }
        _ => return Ok(()),
    };
    check_root_targets(name, &targets, cwds)
}

/// Whether `find` deletes, or runs a destructive command on, what it finds.
fn find_destroys(args: &[Value]) -> bool {
    args.iter()
        .enumerate()
        .any(|(i, a)| match a.text.as_deref() {
            Some("-delete") => true,
            Some(t) if FIND_EXEC.contains(&t) => args
                .get(i + 1)
                .and_then(|c| c.text.as_deref())
                .is_some_and(|c| DESTRUCTIVE.contains(&base_name(c))),
            _ => false,
        })
}

fn check_root_targets(
    name: &str,
    targets: &[&Value],
    cwds: &[Option<String>],
) -> Result<(), Denial> {
    match targets.iter().find(|t| is_root(t, cwds)) {
        Some(t) => Err(Denial::new(
            Reason::RecursiveRoot,
            format!(
                "recursive `{name}` on the root ({:?})",
                t.text.as_deref().unwrap_or_default()
            ),
        )),
        None => Ok(()),
    }
}

/// The built-in rules and the host's deny and allow lists for one command.
pub(super) fn check_command(
    policy: &CommandPolicy,
    name: &str,
    args: &[Value],
    cwds: &[Option<String>],
) -> Result<(), Denial> {
    let base = base_name(name);
    if policy.deny.contains(base) || policy.deny.contains(name) {
        return Err(Denial::new(
            Reason::DeniedCommand,
            format!("`{base}` is denied by the host"),
        ));
    }
    let allowed = policy.allow.contains(base) || policy.allow.contains(name);
    if !allowed && HOST_ESCAPE.contains(&base) {
        return Err(Denial::new(
            Reason::HostEscape,
            format!("`{base}` would act on the host"),
        ));
    }
    let web = matches!(base, "curl" | "wget");
    if web {
        if let Some(urls) = policy.url_allowlist() {
            for url in args.iter().filter_map(|a| a.text.as_deref()) {
                if url.contains("://") && !urls.is_allowed(url) {
                    return Err(Denial::new(
                        Reason::UrlNotAllowed,
                        format!(
                            "`{base}` may not reach {url}: it is not in the host's URL allowlist"
                        ),
                    ));
                }
            }
            recursive_root(base, args, cwds)?;
            return check_args(policy, base, args, cwds);
        }
    }
    if !allowed && !policy.allow_network {
        let git_remote = base == "git"
            && operands(args)
                .first()
                .and_then(|a| a.text.as_deref())
                .is_some_and(|s| GIT_NETWORK.contains(&s));
        if NETWORK.contains(&base) || git_remote {
            return Err(Denial::new(
                Reason::Network,
                format!("`{base}` needs the network, which is off"),
            ));
        }
    }
    recursive_root(base, args, cwds)?;
    check_args(policy, base, args, cwds)
}

/// The commands a command runs from its own arguments: the command of a wrapper
/// (`env X=1 curl …`, `timeout 5 rm …`, `xargs rm …`) and `find -exec … ;`.
pub(super) fn inner_commands(name: &str, args: &[Value]) -> Vec<(Option<String>, Vec<Value>)> {
    let base = base_name(name);
    if WRAPPERS.contains(&base) {
        let mut rest = args.iter().skip_while(|a| {
            a.is_option() || (base == "env" && a.text.as_deref().is_some_and(|t| t.contains('=')))
        });
        if base == "timeout" {
            rest.next();
        }
        return match rest.next() {
            Some(cmd) => vec![(cmd.text.clone(), rest.cloned().collect())],
            None => Vec::new(),
        };
    }
    if base == "find" {
        let mut out = Vec::new();
        let mut iter = args.iter();
        while let Some(a) = iter.next() {
            if a.text.as_deref().is_some_and(|t| FIND_EXEC.contains(&t)) {
                let words: Vec<Value> = iter
                    .by_ref()
                    .take_while(|w| !matches!(w.text.as_deref(), Some(";" | "+")))
                    .cloned()
                    .collect();
                if let Some((cmd, rest)) = words.split_first() {
                    out.push((cmd.text.clone(), rest.to_vec()));
                }
            }
        }
        return out;
    }
    Vec::new()
}

/// Literal shell text a command runs: `eval …` (in the same shell) or `bash -c '…'` (in a
/// child shell). `None` when there is none or it is only known at run time.
pub(super) fn reentry(name: &str, args: &[Value]) -> Option<(String, bool)> {
    let base = base_name(name);
    if base == "eval" {
        let words: Option<Vec<String>> = args.iter().map(|a| a.text.clone()).collect();
        return words.map(|w| (w.join(" "), true));
    }
    if SHELLS.contains(&base) {
        let i = args.iter().position(|a| {
            a.text
                .as_deref()
                .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.contains('c'))
        })?;
        return args.get(i + 1)?.text.clone().map(|t| (t, false));
    }
    None
}
