//! The command policy's adversarial cases: each denied with the right reason code, while
//! values only known at run time and ordinary agent commands are let through.

use proptest::prelude::*;
use std::sync::Arc;
use supabash_agent::policy::{CommandPolicy, Denial, Inspector, Invocation, Placement, Reason};

fn code(policy: &CommandPolicy, command: &str) -> Option<String> {
    policy
        .check(command)
        .err()
        .map(|d| d.reason.code().to_owned())
}

fn assert_denied(policy: &CommandPolicy, cases: &[(&str, &str)]) {
    for (command, want) in cases {
        assert_eq!(
            code(policy, command).as_deref(),
            Some(*want),
            "{command:?} should be denied as {want}"
        );
    }
}

#[test]
fn quoting_and_whitespace_tricks_on_the_root() {
    let p = CommandPolicy::default();
    assert_denied(
        &p,
        &[
            ("rm -rf /", "recursive-root"),
            ("r''m -rf /", "recursive-root"),
            ("\"rm\" -rf \"/\"", "recursive-root"),
            ("\\rm -rf '/'", "recursive-root"),
            ("rm\t-r   -f\t/", "recursive-root"),
            ("rm -rf -- /", "recursive-root"),
            ("rm --recursive --force /", "recursive-root"),
            ("rm -fR //", "recursive-root"),
            ("rm -rf /.", "recursive-root"),
            ("rm -rf /tmp/..", "recursive-root"),
            ("rm -rf ~", "recursive-root"),
            ("rm -rf ~/", "recursive-root"),
            ("rm -rf *", "recursive-root"),
            ("rm -rf /*", "recursive-root"),
            ("rm -rf ./.*", "recursive-root"),
            ("/bin/rm -rf /", "recursive-root"),
            ("find / -delete", "recursive-root"),
            ("find . -exec rm {} \\;", "recursive-root"),
            ("chmod -R 000 /", "recursive-root"),
        ],
    );
}

#[test]
fn lists_groups_functions_and_directory_changes() {
    let p = CommandPolicy::default();
    assert_denied(
        &p,
        &[
            ("true && rm -rf /", "recursive-root"),
            ("false || rm -rf /", "recursive-root"),
            ("cd / && rm -rf .", "recursive-root"),
            ("cd /docs && cd .. && rm -rf .", "recursive-root"),
            ("cd /tmp/.. && rm -rf *", "recursive-root"),
            // A `cd` that may fail leaves the shell where it was.
            ("cd /tmp; rm -rf *", "recursive-root"),
            ("cd /nonexistent || rm -rf .", "recursive-root"),
            ("{ rm -rf /; }", "recursive-root"),
            ("( cd / && rm -rf . )", "recursive-root"),
            ("f() { rm -rf /; }; f", "recursive-root"),
            ("if true; then rm -rf /; fi", "recursive-root"),
            ("while false; do rm -rf /; done", "recursive-root"),
            ("echo ok | xargs rm -rf /", "recursive-root"),
            ("timeout 5 rm -rf /", "recursive-root"),
            ("eval 'rm -rf /'", "recursive-root"),
            ("bash -c 'cd / && rm -rf .'", "recursive-root"),
        ],
    );
}

#[test]
fn variables_holding_the_root() {
    let p = CommandPolicy::default();
    assert_denied(
        &p,
        &[
            ("D=/; rm -rf \"$D\"", "recursive-root"),
            ("D=/\nrm -rf $D", "recursive-root"),
            ("export D=/; rm -rf ${D}", "recursive-root"),
            ("D=/tmp/..; rm -rf \"$D\"/", "recursive-root"),
            ("for d in /docs /; do rm -rf \"$d\"; done", "recursive-root"),
            ("rm -rf \"$HOME\"", "recursive-root"),
            ("X=..; cat \"$X/secret\"", "escapes-root"),
        ],
    );
}

#[test]
fn paths_outside_the_root_reserved_or_encoded() {
    let p = CommandPolicy::default();
    assert_denied(
        &p,
        &[
            ("cat ../secret", "escapes-root"),
            ("cat /docs/../../etc/passwd", "escapes-root"),
            ("cd ..", "escapes-root"),
            ("cd /docs && cat ../../x", "escapes-root"),
            ("echo hi > ../out.txt", "escapes-root"),
            ("cp a.md --target-directory=../..", "escapes-root"),
            ("cat %2e%2e/%2e%2e/etc/passwd", "percent-encoded-path"),
            ("cat /docs%2f..%2fx", "percent-encoded-path"),
            ("cat /%2E%2E/x", "percent-encoded-path"),
            ("cat /.supabash/meta", "reserved-path"),
            ("ls .supabash", "reserved-path"),
            ("echo x > /docs/.supabash-lock", "reserved-path"),
        ],
    );
}

#[test]
fn network_commands_wherever_they_hide() {
    let p = CommandPolicy::default();
    assert_denied(
        &p,
        &[
            ("curl https://example.com", "network-disabled"),
            ("echo $(curl -s https://x)", "network-disabled"),
            ("echo `wget -qO- x`", "network-disabled"),
            ("x=$(nc host 80)", "network-disabled"),
            ("echo ${v:-$(curl x)}", "network-disabled"),
            ("cat <(wget -qO- x)", "network-disabled"),
            (
                "cat <<EOF > f\n$(ssh host cat /etc/passwd)\nEOF",
                "network-disabled",
            ),
            ("env A=1 curl x", "network-disabled"),
            ("find . -name x -exec curl {} \\;", "network-disabled"),
            ("sh -c 'scp a host:b'", "network-disabled"),
            ("eval \"wget x\"", "network-disabled"),
            ("/usr/bin/curl x", "network-disabled"),
            ("git clone https://example.com/r.git", "network-disabled"),
            ("echo hi > /dev/tcp/10.0.0.1/80", "network-disabled"),
            ("ls | rsync -a . host:/x", "network-disabled"),
        ],
    );
    let open = CommandPolicy::default().allow_network(true);
    assert_eq!(code(&open, "curl https://example.com"), None);
    assert_eq!(code(&open, "echo $(curl -s https://x)"), None);
}

#[test]
fn host_escapes_fork_bombs_limits_and_syntax() {
    let p = CommandPolicy::default();
    let long = format!("echo {}", "a".repeat(70 * 1024));
    let pipeline = vec!["cat f"; 17].join(" | ");
    assert_denied(
        &p,
        &[
            ("sudo ls", "host-escape"),
            ("chroot / sh", "host-escape"),
            ("docker run alpine", "host-escape"),
            ("echo $(mount)", "host-escape"),
            (":(){ :|:& };:", "fork-bomb"),
            ("bomb() { bomb | bomb & }; bomb", "fork-bomb"),
            ("a() { b; }\nb() { a; }\na", "fork-bomb"),
            ("f() { f; }; f", "fork-bomb"),
            (&long, "command-too-long"),
            (&pipeline, "pipeline-too-long"),
            ("echo \"unterminated", "unparsable"),
            ("if then fi", "unparsable"),
            ("echo $(", "unparsable"),
            ("bash -c 'echo \"open'", "unparsable"),
        ],
    );
    let sixteen = vec!["cat f"; 16].join(" | ");
    assert_eq!(code(&p, &sixteen), None);
    let tight = CommandPolicy::default()
        .max_command_bytes(10)
        .max_pipeline_stages(2);
    assert_eq!(
        code(&tight, "echo 12345678").as_deref(),
        Some("command-too-long")
    );
    assert_eq!(code(&tight, "a|b|c").as_deref(), Some("pipeline-too-long"));
}

#[test]
fn values_known_only_at_run_time_and_ordinary_commands_pass() {
    let p = CommandPolicy::default();
    for command in [
        "rm -rf \"$1\"",
        "rm -rf $(cat list.txt)",
        "X=$(pwd); rm -rf \"$X\"",
        "rm -rf $UNKNOWN/",
        "cd \"$DIR\" && rm -rf .",
        "rm -rf build",
        "rm -rf /tmp/*",
        "cd /tmp && rm -rf *",
        "rm -rf '*'",
        "rm *.md",
        "find /docs -name '*.bak' -delete",
        "find . -name '*.md' | xargs grep -l TODO",
        "find . -name '*.md' -exec grep -l TODO {} +",
        "sed -i 's/../x/' notes.md",
        "sed -e 's#/a/../b#c#' f",
        "grep -r '../' .",
        "printf '%2f\\n' 3.5",
        "echo ..",
        "mkdir -p /docs/a/b && mv /docs/a /docs/c",
        "cat <<'EOF' > /docs/x.md\n# Title\n../ is fine in text\nEOF",
        "for f in *.md; do mv \"$f\" \"${f%.md}.txt\"; done",
        "ls -la | grep md | sort | uniq -c | wc -l",
        "cd /docs/.. && ls",
        "f() { echo hi; }; f; f",
        "git status",
        "echo $(date) > /tmp/stamp",
    ] {
        assert_eq!(p.check(command), Ok(()), "{command:?} should pass");
    }
}

struct NoProdSecrets;

impl Inspector for NoProdSecrets {
    fn inspect(&self, script: &str, invocations: &[Invocation]) -> Result<(), Denial> {
        let touches = invocations
            .iter()
            .flat_map(|i| i.args.iter().flatten())
            .any(|a| a.contains("prod-secret"));
        if touches || script.contains("prod-secret") {
            return Err(Denial::new(
                Reason::Host("custom-deny".into()),
                "blocked by host",
            ));
        }
        Ok(())
    }
}

#[test]
fn host_allow_deny_lists_and_inspectors() {
    let p = CommandPolicy::default()
        .deny_command("reboot-app")
        .allow_command("ssh")
        .inspector(Arc::new(NoProdSecrets));
    assert_eq!(
        code(&p, "echo $(reboot-app now)").as_deref(),
        Some("denied-command")
    );
    assert_eq!(code(&p, "ssh host true"), None);
    assert_eq!(code(&p, "curl x").as_deref(), Some("network-disabled"));
    assert_eq!(
        code(&p, "cat /prod-secret.txt").as_deref(),
        Some("custom-deny")
    );
    // Built-in rules run first.
    assert_eq!(
        code(&p, "rm -rf / prod-secret").as_deref(),
        Some("recursive-root")
    );
}

#[test]
fn inspectors_see_substitutions_and_placements() {
    struct Record(std::sync::Mutex<Vec<Invocation>>);
    impl Inspector for Record {
        fn inspect(&self, _: &str, inv: &[Invocation]) -> Result<(), Denial> {
            self.0.lock().unwrap().extend_from_slice(inv);
            Ok(())
        }
    }
    let record = Arc::new(Record(Default::default()));
    let p = CommandPolicy::default().inspector(record.clone());
    p.check("echo $(cat a) \"$X\"; f() { ls; }").unwrap();
    let seen = record.0.lock().unwrap();
    let names: Vec<_> = seen
        .iter()
        .map(|i| (i.name.as_deref(), i.placement))
        .collect();
    assert!(
        names.contains(&(Some("cat"), Placement::Substitution)),
        "{names:?}"
    );
    assert!(
        names.contains(&(Some("ls"), Placement::FunctionBody)),
        "{names:?}"
    );
    let echo = seen
        .iter()
        .find(|i| i.name.as_deref() == Some("echo"))
        .unwrap();
    assert_eq!(echo.args, vec![None, None]);
}

#[test]
fn a_denial_is_a_policy_denied_error() {
    let d = CommandPolicy::default().check("rm -rf /").unwrap_err();
    let e: supabash::SupabashError = d.into();
    assert_eq!(e.code(), supabash::ErrorCode::PolicyDenied);
    assert!(e.message().contains("recursive-root"), "{}", e.message());
}

proptest! {
    #[test]
    fn never_panics(s in "\\PC{0,200}") {
        let _ = CommandPolicy::default().check(&s);
    }

    #[test]
    fn never_panics_on_shell_shaped_input(s in "(rm|cd|curl|eval|f\\(\\)|\\{|\\}|\\(|\\)|;|&&|\\|\\||\\||&|\\$\\(|`|'|\"|/|\\.\\.|\\*|-rf| |\\n|\\$D|D=/|%2e|<<EOF|x){0,40}") {
        let _ = CommandPolicy::default().check(&s);
    }

    #[test]
    fn root_removal_is_denied_however_spaced(pre in "[ \\t]{0,3}", mid in "[ \\t]{1,3}", flags in "-(rf|fr|Rf|r|R)") {
        let command = format!("{pre}rm{mid}{flags}{mid}/");
        let got = code(&CommandPolicy::default(), &command);
        prop_assert_eq!(got.as_deref(), Some("recursive-root"));
    }
}

proptest! {
    #[test]
    fn values_only_known_at_run_time_pass(var in "[A-Z][A-Z0-9_]{0,8}", cmd in "(rm -rf|cat|mv|cp -r|chmod -R 644)") {
        prop_assume!(var != "HOME" && var != "PWD");
        for command in [
            format!("{cmd} \"${var}\""),
            format!("{cmd} \"${var}\"/sub"),
            format!("cd \"${var}\" && {cmd} ./*"),
            format!("{cmd} $(cat /list-{var})"),
        ] {
            prop_assert_eq!(CommandPolicy::default().check(&command), Ok(()), "{}", command);
        }
    }
}

#[test]
fn deep_nesting_is_inspected_or_refused_without_overflow() {
    let p = CommandPolicy::default();
    for depth in [10, 50, 99, 150, 400] {
        let groups = format!("{}rm -rf /{}", "{ ".repeat(depth), "; }".repeat(depth));
        let subshells = format!("{}rm -rf /{}", "( ".repeat(depth), " )".repeat(depth));
        let substitutions = format!("{}curl x{}", "echo $(".repeat(depth), ")".repeat(depth));
        let ifs = format!(
            "{}rm -rf /{}",
            "if true; then ".repeat(depth),
            "; fi".repeat(depth)
        );
        for command in [groups, subshells, substitutions, ifs] {
            // Either seen and denied for what it does, or refused as too deep to parse.
            let denial = p
                .check(&command)
                .expect_err(&format!("{depth}: {}", &command[..command.len().min(80)]));
            assert!(
                matches!(
                    denial.reason.code(),
                    "recursive-root" | "network-disabled" | "unparsable"
                ),
                "{depth}: {denial:?}"
            );
        }
    }
    let nested_eval = (0..6).fold("rm -rf /".to_owned(), |inner, _| {
        format!("eval {}", shell_quote(&inner))
    });
    let denial = p.check(&nested_eval).unwrap_err();
    assert!(
        matches!(denial.reason.code(), "recursive-root" | "unparsable"),
        "{denial:?}"
    );
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
