//! Rewriting a client's MCP server entry to go through the proxy, and back
//! (`toolprune install … --wrap NAME`, `toolprune uninstall … --wrap NAME`).
//!
//! The entry shapes of Claude Code (`.mcp.json`, `~/.claude.json`), Gemini
//! CLI (`settings.json`) and Cursor (`mcp.json`) share `mcpServers.<name>`:
//!
//! - stdio: `{"command": C, "args": [A…], "env": {…}, "cwd": …, …}` →
//!   `{"command": <toolprune>, "args": ["mcp-proxy", "--name", NAME, "--", C, A…], …}`;
//!   every other key (`env`, `cwd`, `type: "stdio"`, `trust`, `timeout`,
//!   `includeTools`, …) stays as it was;
//! - Streamable HTTP: `{"url" | "httpUrl": U, "headers": {K: V}, "type": "http"}` →
//!   `{"command": <toolprune>, "args": ["mcp-proxy", "--name", NAME, "--url", U,
//!   "--header", "K: V"…]}` (`type` becomes `stdio` where it was given);
//! - the legacy SSE transport (`"type": "sse"`) is refused: the proxy's
//!   `--url` speaks Streamable HTTP only.
//!
//! The installer keeps the original entry (its manifest) and puts it back on
//! uninstall; these functions only compute the entries.

use serde_json::{json, Map, Value};

/// Whether `entry` already starts `toolprune mcp-proxy`.
pub fn is_wrapped(entry: &Value) -> bool {
    entry["args"].as_array().and_then(|a| a.first()).and_then(Value::as_str) == Some("mcp-proxy")
        && entry["command"].as_str().is_some_and(|c| c.ends_with("toolprune"))
}

/// The entry that starts `toolprune` (at `toolprune`, an absolute path) as a
/// proxy in front of what `entry` started. Errors: the entry is already
/// wrapped, is not an object, has neither `command` nor a URL, uses the SSE
/// transport, or has a non-string argument or header.
pub fn wrapped(entry: &Value, name: &str, toolprune: &str) -> Result<Value, String> {
    let Some(object) = entry.as_object() else {
        return Err(format!("mcpServers.{name} is not an object"));
    };
    if is_wrapped(entry) {
        return Err(format!("mcpServers.{name} already goes through toolprune mcp-proxy"));
    }
    let mut out: Map<String, Value> = Map::new();
    let mut args = vec![json!("mcp-proxy"), json!("--name"), json!(name)];
    if let Some(command) = object.get("command") {
        let command = command.as_str().ok_or_else(|| format!("mcpServers.{name}.command is not a string"))?;
        args.push(json!("--"));
        args.push(json!(command));
        for arg in object.get("args").and_then(Value::as_array).into_iter().flatten() {
            let arg = arg.as_str().ok_or_else(|| format!("mcpServers.{name}.args holds a non-string"))?;
            args.push(json!(arg));
        }
        for (key, value) in object {
            match key.as_str() {
                "command" => {
                    out.insert(key.clone(), json!(toolprune));
                }
                "args" => {}
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        if !out.contains_key("command") {
            out.insert("command".into(), json!(toolprune));
        }
        out.insert("args".into(), Value::Array(args));
        return Ok(Value::Object(out));
    }
    let url = object.get("url").or_else(|| object.get("httpUrl")).and_then(Value::as_str);
    let Some(url) = url else {
        return Err(format!("mcpServers.{name} has neither a command nor a url"));
    };
    if object.get("type").and_then(Value::as_str) == Some("sse") {
        return Err(format!("mcpServers.{name} uses the SSE transport; mcp-proxy --url speaks Streamable HTTP only"));
    }
    args.push(json!("--url"));
    args.push(json!(url));
    if let Some(headers) = object.get("headers").and_then(Value::as_object) {
        for (key, value) in headers {
            let value = value.as_str().ok_or_else(|| format!("mcpServers.{name}.headers.{key} is not a string"))?;
            args.push(json!("--header"));
            args.push(json!(format!("{key}: {value}")));
        }
    }
    for (key, value) in object {
        match key.as_str() {
            "url" | "httpUrl" | "headers" => {}
            "type" => {
                out.insert(key.clone(), json!("stdio"));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out.insert("command".into(), json!(toolprune));
    out.insert("args".into(), Value::Array(args));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "/usr/local/bin/toolprune";

    #[test]
    fn a_stdio_entry_keeps_its_command_behind_the_proxy_and_every_other_key() {
        let entry = json!({"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch", "--ignore-robots-txt"], "env": {"A": "1"}, "trust": true});
        let w = wrapped(&entry, "fetch", BIN).unwrap();
        assert_eq!(w, json!({"type": "stdio", "command": BIN, "args": ["mcp-proxy", "--name", "fetch", "--", "uvx", "mcp-server-fetch", "--ignore-robots-txt"], "env": {"A": "1"}, "trust": true}));
        assert!(is_wrapped(&w));
        assert!(wrapped(&w, "fetch", BIN).is_err(), "wrapping twice is refused");
    }

    #[test]
    fn an_http_entry_becomes_a_url_with_its_headers() {
        let entry = json!({"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer t"}});
        let w = wrapped(&entry, "docs", BIN).unwrap();
        assert_eq!(w, json!({"type": "stdio", "command": BIN, "args": ["mcp-proxy", "--name", "docs", "--url", "https://example.test/mcp", "--header", "Authorization: Bearer t"]}));
        let gemini = json!({"httpUrl": "https://example.test/mcp", "timeout": 30000});
        assert_eq!(wrapped(&gemini, "docs", BIN).unwrap()["timeout"], 30000);
    }

    #[test]
    fn sse_servers_and_odd_entries_are_refused() {
        assert!(wrapped(&json!({"type": "sse", "url": "http://x/sse"}), "a", BIN).unwrap_err().contains("SSE"));
        assert!(wrapped(&json!({"env": {}}), "a", BIN).is_err());
        assert!(wrapped(&json!("uvx"), "a", BIN).is_err());
        assert!(wrapped(&json!({"command": "x", "args": [1]}), "a", BIN).is_err());
    }
}
