//! The tool layer served over MCP (`rmcp`), over stdio or streamable HTTP.
//!
//! One [`McpServer`] serves one [`Session`]: the agent filesystem of one workspace, or of
//! several workspaces mounted side by side (`/<label>` each), and a shell over it. The staged
//! trees live in the server process and are shared by every request (streamable HTTP is
//! stateless: the handler value is cloned per request, the session is not). Host actions
//! (commit, discard, checkpoint, history, restore) are not tools by default; the host keeps
//! them (see `supabash mcp --commit-on-exit`), unless it opts in to [`host`] tools.
//!
//! Every call is recorded in the served workspaces' audit queues when the server has
//! [`AuditTargets`] (module `record`), and runs in a `supabash.tool` tracing span naming the tool
//! and how it ended (never its arguments).

pub mod host;
mod record;
mod tools;

pub use host::HostTools;
pub use record::{AuditTargets, RecordingFs};
pub use tools::{specs, BashArgs, Session, BASH};

use crate::redact::Redactor;
use crate::tools::ToolSpec;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use supabash::audit::{Action, ActionOutcome};
use tracing::Instrument;

/// What the server tells the agent about itself.
pub const INSTRUCTIONS: &str = "Tools over a staged workspace filesystem. Edits are staged, \
     not saved: the host reviews and commits them. There is no tool to commit, discard, \
     checkpoint, read history or restore.";

/// What the server tells the agent when it also serves the host tools.
pub const HOST_INSTRUCTIONS: &str = "Tools over a staged workspace filesystem. Edits are \
     staged, not saved, until the host tools (commit, history, diff, restore, checkpoint) are \
     used.";

/// The MCP server: the tool list and the session they work on. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    session: Arc<Session>,
    tools: Arc<Vec<ToolSpec>>,
    redactor: Redactor,
    audit: Option<AuditTargets>,
    host: Option<Arc<HostTools>>,
}

impl McpServer {
    /// Serves [`specs`] over `session`; every text returned is redacted with `redactor`.
    pub fn new(session: Session, redactor: Redactor) -> Self {
        McpServer {
            tools: Arc::new(specs(&session.options)),
            session: Arc::new(session),
            redactor,
            audit: None,
            host: None,
        }
    }

    /// Records every tool call in these audit queues.
    pub fn with_audit(mut self, targets: AuditTargets) -> Self {
        self.audit = Some(targets);
        self
    }

    /// Also serves the [`host`] tools over these workspaces.
    pub fn with_host_tools(mut self, host: HostTools) -> Self {
        let mut tools = (*self.tools).clone();
        tools.extend(host::SPECS);
        self.tools = Arc::new(tools);
        self.host = Some(Arc::new(host));
        self
    }

    /// Serves only the tools named in `names` (the tool list shows only them; any other is
    /// refused by name like an unknown one). A name the server does not serve is an error
    /// naming the ones it does.
    pub fn with_tools<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        for name in names {
            let name = name.as_ref();
            if !self.tools.iter().any(|t| t.name == name) {
                let served: Vec<&str> = self.tools.iter().map(|t| t.name).collect();
                return Err(format!(
                    "no tool named {name:?} is served (the tools are: {})",
                    served.join(", ")
                ));
            }
        }
        let kept = self
            .tools
            .iter()
            .filter(|t| names.iter().any(|n| n.as_ref() == t.name))
            .copied()
            .collect();
        self.tools = Arc::new(kept);
        Ok(self)
    }

    /// Serves no tool that can change anything: only those annotated read-only (reads,
    /// listings, search, file info, images). `bash` and every host tool but history and diff
    /// are gone.
    pub fn read_only(mut self) -> Self {
        let kept = self.tools.iter().filter(|t| t.read_only).copied().collect();
        self.tools = Arc::new(kept);
        self
    }

    /// The names of the tools served, in order.
    pub fn tool_names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name).collect()
    }

    /// The tools, as MCP describes them.
    pub fn tool_list(&self) -> Vec<Tool> {
        self.tools.iter().map(describe).collect()
    }

    /// Runs tool `name` as a `tools/call` request would (recorded, traced, redacted).
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        if !self.tools.iter().any(|t| t.name == name) {
            let message = format!("no tool named {name:?}");
            let outcome = ActionOutcome::Error {
                code: "INVALID_ARGUMENT".into(),
            };
            self.record(name, false, &args, outcome, Instant::now(), None);
            return self.failure(json!({ "code": "INVALID_ARGUMENT", "message": message }));
        }
        let span = tracing::info_span!(
            "supabash.tool",
            tool = name,
            outcome = tracing::field::Empty
        );
        let t0 = Instant::now();
        let run = async {
            match &self.host {
                Some(host) if host::SPECS.iter().any(|t| t.name == name) => {
                    host.call(name, args.clone()).await
                }
                _ => self.session.call(name, args.clone()).await,
            }
        };
        let (result, touched) = record::tracking(run).instrument(span.clone()).await;
        let outcome = record::outcome(&result, |s| self.redactor.redact(s));
        span.record(
            "outcome",
            match &outcome {
                ActionOutcome::Ok => "ok",
                ActionOutcome::Error { .. } => "error",
                ActionOutcome::Denied { .. } => "denied",
            },
        );
        self.record(name, true, &args, outcome, t0, Some(&touched));
        self.answer(name, result)
    }

    /// Stages the audit action of one call (when the server records): its arguments redacted
    /// like its output.
    fn record(
        &self,
        name: &str,
        known: bool,
        args: &Value,
        outcome: ActionOutcome,
        t0: Instant,
        touched: Option<&record::Touched>,
    ) {
        let Some(targets) = &self.audit else {
            return;
        };
        let duration = t0.elapsed();
        let none = record::Touched::default();
        let touched = touched.unwrap_or(&none);
        let action = Action::new(record::kind(name, known), name)
            .with_arguments(self.redact_value(args.clone()))
            .with_outcome(outcome)
            .with_started(
                SystemTime::now()
                    .checked_sub(duration)
                    .unwrap_or_else(SystemTime::now),
            )
            .with_duration(duration)
            .with_bytes_changed(touched.bytes);
        targets.record(action, touched);
    }

    /// The MCP answer of a call.
    fn answer(&self, name: &str, result: supabash::Result<Value>) -> CallToolResult {
        match result {
            Ok(value) if name == "view_image" => {
                let mut result = CallToolResult::success(vec![ContentBlock::image(
                    value["base64"].as_str().unwrap_or_default(),
                    value["mime"].as_str().unwrap_or_default(),
                )]);
                result.structured_content = Some(json!({
                    "path": value["path"],
                    "mime": value["mime"],
                    "bytes": value["bytes"],
                }));
                result
            }
            Ok(value) => {
                let value = self.redact_value(value);
                let text = match &value {
                    Value::Object(o) if name == BASH.name => bash_text(o),
                    v => v.to_string(),
                };
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(value);
                result
            }
            Err(e) => {
                let mut value = json!({
                    "code": e.code().to_string(),
                    "message": e.message(),
                    "path": e.path(),
                });
                if let Some(hint) = e.hint() {
                    value["hint"] = json!(hint);
                }
                if let Some(details) = e.details() {
                    value["details"] = json!(details);
                }
                self.failure(value)
            }
        }
    }

    fn failure(&self, value: Value) -> CallToolResult {
        let value = self.redact_value(value);
        let mut text = format!(
            "{}: {}",
            value["code"].as_str().unwrap_or("ERROR"),
            value["message"].as_str().unwrap_or_default()
        );
        if let Some(details) = value["details"].as_str() {
            text.push_str(&format!("\ndetails: {details}"));
        }
        if let Some(hint) = value["hint"].as_str() {
            text.push_str(&format!("\nhint: {hint}"));
        }
        let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        result
    }

    fn redact_value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redactor.redact(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|v| self.redact_value(v)).collect()),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, v)| (k, self.redact_value(v)))
                    .collect(),
            ),
            v => v,
        }
    }
}

/// What a model reads from a `bash` call.
fn bash_text(o: &serde_json::Map<String, Value>) -> String {
    let mut text = String::new();
    if let Some(out) = o.get("stdout").and_then(Value::as_str) {
        text.push_str(out);
    }
    if let Some(err) = o
        .get("stderr")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty())
    {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(err);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "[exit code {}]",
        o.get("exit_code").and_then(Value::as_i64).unwrap_or(-1)
    ));
    text
}

fn describe(t: &ToolSpec) -> Tool {
    let schema = match (t.input_schema)() {
        Value::Object(o) => o,
        _ => serde_json::Map::new(),
    };
    let mut tool = Tool::new(t.name, t.description, Arc::new(schema)).with_annotations(
        ToolAnnotations::new()
            .read_only(t.read_only)
            .destructive(t.destructive)
            .idempotent(t.idempotent)
            .open_world(false),
    );
    if host::SPECS.iter().any(|h| h.name == t.name) {
        tool.title = Some(format!("{}{}", host::HOST_TITLE, t.name));
    }
    tool
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("supabash", env!("CARGO_PKG_VERSION")))
            .with_instructions(if self.host.is_some() {
                HOST_INSTRUCTIONS
            } else {
                INSTRUCTIONS
            })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).map(describe)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&request.name, args).await.into())
    }
}
