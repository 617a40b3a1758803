//! Walks bashkit's syntax tree, tracking the working directory and literal variables, and runs
//! the per-command rules on every statically visible command.

use super::rules::{self, Value};
use super::{CommandPolicy, Denial, Invocation, Placement, Reason};
use bashkit::parser::{
    AssignmentValue, Command, CommandList, CompoundCommand, ListOperator, ParameterOp, Parser,
    RedirectKind, SimpleCommand, Word, WordPart,
};
use std::collections::HashMap;
use supabash_core::path;

/// Deepest nesting of `eval` / `bash -c` text that is inspected.
const MAX_REENTRY: usize = 4;
/// Most working directories tracked at once (past it the directory counts as unknown).
const MAX_CWDS: usize = 8;
/// Most literal values of a `for` loop whose body is inspected once per value.
const MAX_FOR_VALUES: usize = 16;
/// Parser limits (bashkit's own defaults).
const MAX_AST_DEPTH: usize = 100;
const MAX_PARSER_FUEL: usize = 100_000;

/// What the script may know at one point: the possible working directories (`None`: unknown)
/// and variables (`Some(value)` literal, `None` assigned at run time).
#[derive(Debug, Clone)]
pub(super) struct Scope {
    pub cwds: Vec<Option<String>>,
    vars: HashMap<String, Option<String>>,
}

impl Scope {
    fn root() -> Self {
        Scope {
            cwds: vec![Some("/".to_owned())],
            vars: HashMap::new(),
        }
    }

    /// A literal variable value, or `None` when it is only known at run time.
    fn var(&self, name: &str) -> Option<String> {
        match self.vars.get(name) {
            Some(v) => v.clone(),
            None if name == "HOME" => Some("/".to_owned()),
            None if name == "PWD" => match self.cwds.as_slice() {
                [Some(cwd)] => Some(cwd.clone()),
                _ => None,
            },
            None => None,
        }
    }

    fn add_cwd(&mut self, cwd: Option<String>) {
        if self.cwds.contains(&cwd) {
            return;
        }
        if self.cwds.len() >= MAX_CWDS {
            if !self.cwds.contains(&None) {
                self.cwds.push(None);
            }
            return;
        }
        self.cwds.push(cwd);
    }

    /// Adds the directories of `other` (a path that may or may not have been taken).
    fn union_cwds(&mut self, other: &Scope) {
        for cwd in &other.cwds {
            self.add_cwd(cwd.clone());
        }
    }

    /// Joins a branch: directories are united, variables that differ become unknown.
    fn merge(&mut self, other: &Scope) {
        self.union_cwds(other);
        let names: Vec<String> = self.vars.keys().chain(other.vars.keys()).cloned().collect();
        for name in names {
            if self.vars.get(&name) != other.vars.get(&name) {
                self.vars.insert(name, None);
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    placement: Placement,
    /// Runs in a pipeline or in the background.
    concurrent: bool,
    /// The function whose body this is.
    function: Option<&'a str>,
    /// `for` values are already being expanded (no nested expansion).
    expanding: bool,
    reentry: usize,
}

struct Walker<'p> {
    policy: &'p CommandPolicy,
    invocations: Vec<Invocation>,
    /// For each function defined: the commands its body calls, and whether concurrently.
    calls: HashMap<String, Vec<(String, bool)>>,
}

/// Parses and inspects `script`; the statically visible commands on success.
pub(super) fn inspect(policy: &CommandPolicy, script: &str) -> Result<Vec<Invocation>, Denial> {
    let mut walker = Walker {
        policy,
        invocations: Vec::new(),
        calls: HashMap::new(),
    };
    let ctx = Ctx {
        placement: Placement::Direct,
        concurrent: false,
        function: None,
        expanding: false,
        reentry: 0,
    };
    walker.script(script, &mut Scope::root(), ctx)?;
    walker.recursion()?;
    Ok(walker.invocations)
}

fn parse(script: &str) -> Result<Vec<Command>, Denial> {
    Parser::with_limits(script, MAX_AST_DEPTH, MAX_PARSER_FUEL)
        .parse()
        .map(|s| s.commands)
        .map_err(|e| Denial::new(Reason::Unparsable, e.to_string()))
}

/// The value of a word, if it is known before run time.
fn eval(word: &Word, scope: &Scope) -> Value {
    let mut text = String::new();
    let mut glob = false;
    for (i, part) in word.parts.iter().enumerate() {
        let quoted = word.part_quoted.get(i).copied().unwrap_or(word.quoted);
        match part {
            WordPart::Literal(s) => {
                glob |= !quoted && s.contains(['*', '?', '[']);
                text.push_str(s);
            }
            WordPart::Variable(name) => match scope.var(name) {
                Some(v) => text.push_str(&v),
                None => return Value::dynamic(),
            },
            WordPart::ParameterExpansion {
                name,
                operator: ParameterOp::UseDefault | ParameterOp::AssignDefault,
                ..
            } => match scope.var(name) {
                Some(v) if !v.is_empty() => text.push_str(&v),
                _ => return Value::dynamic(),
            },
            _ => return Value::dynamic(),
        }
    }
    let unquoted_start = !word.part_quoted.first().copied().unwrap_or(word.quoted);
    if unquoted_start && (text == "~" || text.starts_with("~/")) {
        text = format!("/{}", &text[1..]);
    }
    Value {
        text: Some(text),
        glob,
    }
}

impl<'p> Walker<'p> {
    fn script(&mut self, script: &str, scope: &mut Scope, ctx: Ctx<'_>) -> Result<(), Denial> {
        let commands = parse(script)?;
        self.sequence(&commands, scope, ctx)
    }

    /// Commands separated by newlines or `;`: each may fail, so a `cd` may not have happened.
    fn sequence(
        &mut self,
        commands: &[Command],
        scope: &mut Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        for command in commands {
            let before = scope.clone();
            self.command(command, scope, ctx)?;
            scope.union_cwds(&before);
        }
        Ok(())
    }

    fn command(
        &mut self,
        command: &Command,
        scope: &mut Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        match command {
            Command::Simple(simple) => self.simple(simple, scope, ctx),
            Command::Pipeline(pipeline) => {
                let stages = pipeline.commands.len();
                if stages > self.policy.max_pipeline_stages {
                    return Err(Denial::new(
                        Reason::PipelineTooLong,
                        format!(
                            "{stages} stages, the limit is {}",
                            self.policy.max_pipeline_stages
                        ),
                    ));
                }
                let ctx = Ctx {
                    concurrent: ctx.concurrent || stages > 1,
                    ..ctx
                };
                for stage in &pipeline.commands {
                    self.command(stage, &mut scope.clone(), ctx)?;
                }
                Ok(())
            }
            Command::List(list) => self.list(list, scope, ctx),
            Command::Compound(compound, redirects) => {
                for r in redirects {
                    self.redirect(r.kind, &r.target, scope, ctx)?;
                }
                self.compound(compound, scope, ctx)
            }
            Command::Function(def) => {
                self.calls.entry(def.name.clone()).or_default();
                let ctx = Ctx {
                    placement: Placement::FunctionBody,
                    function: Some(&def.name),
                    ..ctx
                };
                self.command(&def.body, &mut scope.clone(), ctx)
            }
        }
    }

    fn list(&mut self, list: &CommandList, scope: &mut Scope, ctx: Ctx<'_>) -> Result<(), Denial> {
        let items: Vec<&Command> = std::iter::once(list.first.as_ref())
            .chain(list.rest.iter().map(|(_, c)| c))
            .collect();
        for (i, item) in items.into_iter().enumerate() {
            // The operator after an item decides how it runs and what the next one may assume.
            let next_op = list.rest.get(i).map(|(op, _)| *op);
            let before = scope.clone();
            if next_op == Some(ListOperator::Background) {
                let ctx = Ctx {
                    concurrent: true,
                    ..ctx
                };
                self.command(item, &mut scope.clone(), ctx)?;
                continue;
            }
            self.command(item, scope, ctx)?;
            if next_op != Some(ListOperator::And) {
                scope.union_cwds(&before);
            }
        }
        Ok(())
    }

    /// Walks `body` in a copy of `scope` and merges the result back (it may not run).
    fn branch(&mut self, body: &[Command], scope: &mut Scope, ctx: Ctx<'_>) -> Result<(), Denial> {
        let mut inner = scope.clone();
        self.sequence(body, &mut inner, ctx)?;
        scope.merge(&inner);
        Ok(())
    }

    fn compound(
        &mut self,
        compound: &CompoundCommand,
        scope: &mut Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        match compound {
            CompoundCommand::BraceGroup(body) => self.sequence(body, scope, ctx),
            CompoundCommand::Subshell(body) => self.sequence(body, &mut scope.clone(), ctx),
            CompoundCommand::If(c) => {
                self.sequence(&c.condition, scope, ctx)?;
                let start = scope.clone();
                let mut arms: Vec<&[Command]> = vec![&c.then_branch];
                for (cond, body) in &c.elif_branches {
                    arms.push(cond);
                    arms.push(body);
                }
                if let Some(e) = &c.else_branch {
                    arms.push(e);
                }
                for arm in arms {
                    let mut inner = start.clone();
                    self.branch(arm, &mut inner, ctx)?;
                    scope.merge(&inner);
                }
                Ok(())
            }
            CompoundCommand::For(f) => {
                self.for_loop(&f.variable, f.words.as_deref(), &f.body, scope, ctx)
            }
            CompoundCommand::Select(s) => self.for_loop(&s.variable, None, &s.body, scope, ctx),
            CompoundCommand::ArithmeticFor(f) => self.branch(&f.body, scope, ctx),
            CompoundCommand::While(w) => {
                self.branch(&w.condition, scope, ctx)?;
                self.branch(&w.body, scope, ctx)
            }
            CompoundCommand::Until(u) => {
                self.branch(&u.condition, scope, ctx)?;
                self.branch(&u.body, scope, ctx)
            }
            CompoundCommand::Case(c) => {
                self.substitutions(&c.word, scope, ctx)?;
                for item in &c.cases {
                    for p in &item.patterns {
                        self.substitutions(p, scope, ctx)?;
                    }
                    self.branch(&item.commands, scope, ctx)?;
                }
                Ok(())
            }
            CompoundCommand::Time(t) => match &t.command {
                Some(c) => self.command(c, scope, ctx),
                None => Ok(()),
            },
            CompoundCommand::Conditional(words) => {
                for w in words {
                    self.substitutions(w, scope, ctx)?;
                }
                Ok(())
            }
            CompoundCommand::Coproc(c) => {
                let ctx = Ctx {
                    concurrent: true,
                    ..ctx
                };
                self.command(&c.body, &mut scope.clone(), ctx)
            }
            CompoundCommand::Arithmetic(_) => Ok(()),
        }
    }

    fn for_loop(
        &mut self,
        variable: &str,
        words: Option<&[Word]>,
        body: &[Command],
        scope: &mut Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        let mut values = Vec::new();
        for w in words.unwrap_or_default() {
            self.substitutions(w, scope, ctx)?;
            values.push(eval(w, scope));
        }
        let literal: Option<Vec<String>> = values
            .iter()
            .map(|v| if v.glob { None } else { v.text.clone() })
            .collect();
        match literal {
            Some(list) if words.is_some() && !ctx.expanding && list.len() <= MAX_FOR_VALUES => {
                let ctx = Ctx {
                    expanding: true,
                    ..ctx
                };
                for value in list {
                    let mut inner = scope.clone();
                    inner.vars.insert(variable.to_owned(), Some(value));
                    self.branch(body, &mut inner, ctx)?;
                    scope.merge(&inner);
                }
                Ok(())
            }
            _ => {
                scope.vars.insert(variable.to_owned(), None);
                self.branch(body, scope, ctx)
            }
        }
    }

    /// Walks the commands hidden inside a word: `$(…)`, backquotes, `<(…)`, and `$(…)` inside
    /// `${x:-…}` operands.
    fn substitutions(&mut self, word: &Word, scope: &Scope, ctx: Ctx<'_>) -> Result<(), Denial> {
        let ctx = Ctx {
            placement: if ctx.placement == Placement::Direct {
                Placement::Substitution
            } else {
                ctx.placement
            },
            ..ctx
        };
        for part in &word.parts {
            match part {
                WordPart::CommandSubstitution(commands)
                | WordPart::ProcessSubstitution { commands, .. } => {
                    self.sequence(commands, &mut scope.clone(), ctx)?;
                }
                WordPart::ParameterExpansion { operand, .. }
                | WordPart::IndirectExpansion { operand, .. }
                    if operand.contains('$') || operand.contains('`') =>
                {
                    let inner = Parser::parse_word_string_with_limits(
                        operand,
                        MAX_AST_DEPTH,
                        MAX_PARSER_FUEL,
                    );
                    self.substitutions(&inner, scope, ctx)?;
                }
                WordPart::CompoundAssignment { elements, .. } => {
                    for e in elements {
                        self.substitutions(e, scope, ctx)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn redirect(
        &mut self,
        kind: RedirectKind,
        target: &Word,
        scope: &Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        self.substitutions(target, scope, ctx)?;
        match kind {
            RedirectKind::HereDoc
            | RedirectKind::HereDocStrip
            | RedirectKind::HereString
            | RedirectKind::DupOutput
            | RedirectKind::DupInput => Ok(()),
            _ => rules::check_path(self.policy, &eval(target, scope), &scope.cwds),
        }
    }

    fn simple(
        &mut self,
        sc: &SimpleCommand,
        scope: &mut Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        self.substitutions(&sc.name, scope, ctx)?;
        for w in &sc.args {
            self.substitutions(w, scope, ctx)?;
        }
        for a in &sc.assignments {
            match &a.value {
                AssignmentValue::Scalar(w) => self.substitutions(w, scope, ctx)?,
                AssignmentValue::Array(ws) => {
                    for w in ws {
                        self.substitutions(w, scope, ctx)?;
                    }
                }
            }
        }
        for r in &sc.redirects {
            self.redirect(r.kind, &r.target, scope, ctx)?;
        }
        let name = eval(&sc.name, scope);
        if name.text.as_deref() == Some("") && sc.args.is_empty() {
            for a in &sc.assignments {
                let value = match &a.value {
                    AssignmentValue::Scalar(w) if a.index.is_none() && !a.append => {
                        eval(w, scope).text
                    }
                    _ => None,
                };
                scope.vars.insert(a.name.clone(), value);
            }
            return Ok(());
        }
        let args: Vec<Value> = sc.args.iter().map(|w| eval(w, scope)).collect();
        self.run(name.text, args, scope, ctx)?;
        Ok(())
    }

    /// Inspects one command (and the commands it runs: wrappers, `find -exec`, `eval`,
    /// `bash -c`), then applies its effect on the scope (`cd`, `export`, …).
    fn run(
        &mut self,
        name: Option<String>,
        args: Vec<Value>,
        scope: &mut Scope,
        ctx: Ctx<'_>,
    ) -> Result<(), Denial> {
        self.invocations.push(Invocation {
            name: name.clone(),
            args: args.iter().map(|a| a.text.clone()).collect(),
            placement: ctx.placement,
        });
        let Some(name) = name else {
            // A command name known only at run time: its arguments may still be paths.
            return rules::check_args(self.policy, "", &args, &scope.cwds);
        };
        if let Some(function) = ctx.function {
            self.calls
                .entry(function.to_owned())
                .or_default()
                .push((name.clone(), ctx.concurrent));
        }
        rules::check_command(self.policy, &name, &args, &scope.cwds)?;
        for (inner_name, inner_args) in rules::inner_commands(&name, &args) {
            self.run(inner_name, inner_args, &mut scope.clone(), ctx)?;
        }
        if let Some((script, same_shell)) = rules::reentry(&name, &args) {
            if ctx.reentry >= MAX_REENTRY {
                return Err(Denial::new(
                    Reason::Unparsable,
                    "eval / bash -c nested too deeply to inspect",
                ));
            }
            let ctx = Ctx {
                placement: Placement::Reentry,
                reentry: ctx.reentry + 1,
                ..ctx
            };
            if same_shell {
                self.script(&script, scope, ctx)?;
            } else {
                self.script(&script, &mut scope.clone(), ctx)?;
            }
        }
        self.effects(rules::base_name(&name), &args, scope);
        Ok(())
    }

    /// What a command changes in the scope.
    fn effects(&mut self, name: &str, args: &[Value], scope: &mut Scope) {
        let operands: Vec<&Value> = args
            .iter()
            .filter(|a| {
                !a.text
                    .as_deref()
                    .is_some_and(|t| t.starts_with('-') && t.len() > 1)
            })
            .collect();
        match name {
            "cd" | "pushd" => {
                let target = match operands.first() {
                    None => Some("/".to_owned()),
                    Some(v) if v.glob => None,
                    Some(v) => v.text.clone(),
                };
                let cwds = std::mem::take(&mut scope.cwds);
                for cwd in cwds {
                    let next = match (&target, cwd) {
                        (Some(t), _) if t.starts_with('/') => path::resolve("/", t).ok(),
                        (Some(t), Some(cwd)) => path::resolve(&cwd, t).ok(),
                        _ => None,
                    };
                    scope.add_cwd(next);
                }
            }
            "popd" => scope.cwds = vec![None],
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for v in operands {
                    if let Some((n, value)) = v.text.as_deref().and_then(|t| t.split_once('=')) {
                        scope.vars.insert(n.to_owned(), Some(value.to_owned()));
                    }
                }
            }
            "unset" | "read" | "readarray" | "mapfile" | "getopts" => {
                for v in operands {
                    if let Some(t) = &v.text {
                        scope.vars.insert(t.clone(), None);
                    }
                }
            }
            _ => {}
        }
    }

    /// Denies functions that call themselves, directly or through other functions.
    fn recursion(&self) -> Result<(), Denial> {
        for start in self.calls.keys() {
            let mut stack: Vec<(&str, bool)> = vec![(start.as_str(), false)];
            let mut seen: Vec<&str> = Vec::new();
            while let Some((f, concurrent)) = stack.pop() {
                for (callee, c) in self.calls.get(f).into_iter().flatten() {
                    if !self.calls.contains_key(callee) {
                        continue;
                    }
                    let concurrent = concurrent || *c;
                    if callee == start {
                        let how = if concurrent {
                            " in a pipeline or in the background"
                        } else {
                            ""
                        };
                        return Err(Denial::new(
                            Reason::ForkBomb,
                            format!("function `{start}` calls itself{how}"),
                        ));
                    }
                    if !seen.contains(&callee.as_str()) {
                        seen.push(callee);
                        stack.push((callee, concurrent));
                    }
                }
            }
        }
        Ok(())
    }
}
