//! The tool layer served over MCP (`rmcp`), over stdio or streamable HTTP.
//!
//! One [`McpServer`] serves one [`Session`]: the agent filesystem of one workspace, or of
//! several workspaces mounted side by side (`/<label>` each), and a shell over it. The staged
//! trees live in the server process and are shared by every request (streamable HTTP is
//! stateless: the handler value is cloned per request, the session is not). Host actions
//! (commit, discard, checkpoint, history, restore) are not tools; the host keeps them (see
//! `supabash mcp --commit-on-exit`).

mod tools;

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

/// What the server tells the agent about itself.
pub const INSTRUCTIONS: &str = "Tools over a staged workspace filesystem. Edits are staged, \
     not saved: the host reviews and commits them. There is no tool to commit, discard, \
     checkpoint, read history or restore.";

/// The MCP server: the tool list and the session they work on. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    session: Arc<Session>,
    tools: Arc<Vec<ToolSpec>>,
    redactor: Redactor,
}

impl McpServer {
    /// Serves [`specs`] over `session`; every text returned is redacted with `redactor`.
    pub fn new(session: Session, redactor: Redactor) -> Self {
        McpServer {
            tools: Arc::new(specs(&session.options)),
            session: Arc::new(session),
            redactor,
        }
    }

    /// The tools, as MCP describes them.
    pub fn tool_list(&self) -> Vec<Tool> {
        self.tools.iter().map(describe).collect()
    }

    async fn call(&self, name: &str, args: Value) -> CallToolResult {
        if !self.tools.iter().any(|t| t.name == name) {
            return self.failure(json!({
                "code": "INVALID_ARGUMENT",
                "message": format!("no tool named {name:?}"),
            }));
        }
        match self.session.call(name, args).await {
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
            Err(e) => self.failure(json!({
                "code": e.code().to_string(),
                "message": e.message(),
                "path": e.path(),
            })),
        }
    }

    fn failure(&self, value: Value) -> CallToolResult {
        let value = self.redact_value(value);
        let text = format!(
            "{}: {}",
            value["code"].as_str().unwrap_or("ERROR"),
            value["message"].as_str().unwrap_or_default()
        );
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
    Tool::new(t.name, t.description, Arc::new(schema)).with_annotations(
        ToolAnnotations::new()
            .read_only(t.read_only)
            .destructive(t.destructive)
            .idempotent(t.idempotent)
            .open_world(false),
    )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("supabash", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
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
