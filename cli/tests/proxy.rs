//! `toolprune mcp-proxy` as a process in front of a scripted stdio MCP
//! server (Python, in the test): which tools it treats as prunable.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_toolprune");

/// A stdio MCP server offering `fetch` and `read_file`; every call answers
/// the file named by its first argument, as one text block.
const SERVER: &str = r#"
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
schema = lambda key: {"type": "object", "properties": {key: {"type": "string"}}}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m.get("method") == "tools/list":
        result = {"tools": [{"name": "fetch", "inputSchema": schema("url")}, {"name": "read_file", "inputSchema": schema("path")}]}
    elif m.get("method") == "tools/call":
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"#;

const PROMPT: &str = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?";

fn page() -> std::path::PathBuf {
    let shared = std::env::var("TOOLPRUNE_SHARED").map(Into::into).unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    shared.join("corpus/rust-book-ch08-02-strings.md")
}

#[test]
fn a_file_reader_behind_a_proxy_named_fetch_is_offered_no_request_and_never_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let raw = std::fs::read_to_string(page()).unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp-proxy", "--name", "fetch", "--basis", "argument", "--", "python3", "-c", SERVER])
        .arg(page())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("TOOLPRUNE_STORE_DIR", dir.path().join("store"))
        .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-proxy-tests-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |message: Value| -> Value {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    let listed = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let schema = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"]["properties"].clone();
    assert!(schema("fetch").get("user_request").is_some(), "fetch is prunable: {listed}");
    assert!(schema("read_file").get("user_request").is_none(), "read_file is offered the basis argument: {listed}");
    assert!(tools.iter().any(|t| t["name"] == "omitted"), "{listed}");

    let call = |id: u32, name: &str, key: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {key: "x", "user_request": PROMPT}}})
    };
    let read = ask(call(2, "read_file", "path"));
    assert_eq!(read["result"]["content"][0]["text"].as_str().unwrap(), raw, "read_file's result must come back exactly");
    let fetched = ask(call(3, "fetch", "url"));
    let body = fetched["result"]["content"][0]["text"].as_str().unwrap();
    assert!(body.starts_with("[Omitted by relevance:") && body.len() < raw.len(), "the control: fetch is pruned: {}", &body[..200.min(body.len())]);
    drop(stdin);
    let _ = child.wait();
}

/// The repeat gate through the proxy (SPEC §2, issue 25 §4): the same call
/// again — the same arguments once the basis argument the proxy added is
/// removed, whatever the model restated in it — after a pruned result
/// passes whole, with a `gate=repeated` line `toolprune stats` counts;
/// another page still prunes.
#[test]
fn a_second_identical_call_through_the_proxy_passes_unpruned_and_stats_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let raw = std::fs::read_to_string(page()).unwrap();
    let env = |command: &mut Command| {
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("TOOLPRUNE_STORE_DIR", dir.path().join("store"))
            .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-proxy-tests-cache"));
    };
    let mut command = Command::new(BIN);
    command.args(["mcp-proxy", "--name", "docs", "--basis", "argument", "--", "python3", "-c", SERVER]).arg(page());
    env(&mut command);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |message: Value| -> Value {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
    let call = |id: u32, url: &str, restated: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "fetch", "arguments": {"url": url, "user_request": restated}}})
    };
    let text = |answer: &Value| answer["result"]["content"][0]["text"].as_str().unwrap().to_string();
    let first = text(&ask(call(2, "https://example.org/strings", PROMPT)));
    assert!(first.starts_with("[Omitted by relevance:") && first.contains("id=P"), "the first call is pruned");
    let again = text(&ask(call(3, "https://example.org/strings", "Rust strings: indexing and iterating over chars, again")));
    assert_eq!(again, raw, "the same call again passes whole");
    let other = text(&ask(call(4, "https://example.org/other", PROMPT)));
    assert!(other.starts_with("[Omitted by relevance:"), "another page still prunes");
    drop(stdin);
    let _ = child.wait();

    let log = std::fs::read_to_string(dir.path().join("store/toolprune.log")).unwrap();
    let repeats: Vec<&str> = log.lines().filter(|l| l.contains(" outcome=skipped gate=repeated ")).collect();
    assert_eq!(repeats.len(), 1, "{log}");
    assert!(repeats[0].contains("agent=mcp-proxy:docs name=fetch "), "{}", repeats[0]);
    assert!(!log.contains("example.org"), "the log carries no arguments");
    let mut stats = Command::new(BIN);
    stats.args(["stats", "--json"]);
    env(&mut stats);
    let out = stats.output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["total"]["skipped"]["repeated"], 1, "{report}");
}

/// A stdio server that writes its whole stdin to the file `argv[1]` as it
/// came and, after the first line, writes `argv[2]` (hex) to stdout as it
/// is, then exits when its stdin ends.
const RAW_SERVER: &str = r#"
import sys
out = open(sys.argv[1], "wb")
first = sys.stdin.buffer.readline()
out.write(first)
sys.stdout.buffer.write(bytes.fromhex(sys.argv[2]))
sys.stdout.buffer.flush()
out.write(sys.stdin.buffer.read())
out.close()
"#;

/// Runs the proxy (pruning on or off) in front of [`RAW_SERVER`] answering
/// `answer`; the client writes `request`, closes its stdin and reads to the
/// end. Returns (what the client read, what the server read).
fn through_proxy(request: &[u8], answer: &[u8], pruning: bool) -> (Vec<u8>, Vec<u8>) {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let received = dir.path().join("received");
    std::fs::write(dir.path().join("config.toml"), format!("enabled = {pruning}\n")).unwrap();
    let hex: String = answer.iter().map(|b| format!("{b:02x}")).collect();
    let mut child = Command::new(BIN)
        .args(["mcp-proxy", "--name", "fetch", "--", "python3", "-c", RAW_SERVER])
        .arg(&received)
        .arg(hex)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("TOOLPRUNE_CONFIG", dir.path().join("config.toml"))
        .env("TOOLPRUNE_STORE_DIR", dir.path().join("store"))
        .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-proxy-tests-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(request).unwrap();
    drop(stdin);
    let mut got = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut got).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0), "the server's exit status");
    (got, std::fs::read(&received).unwrap())
}

#[test]
fn the_proxy_forwards_line_ends_as_they_came_and_adds_none_to_a_last_fragment() {
    // What a direct connection gives: a CRLF line, a blank line, a
    // notification, and a last line with no line end before EOF.
    let answer = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1}}";
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
    for pruning in [false, true] {
        let (client_got, server_got) = through_proxy(request, answer, pruning);
        assert_eq!(String::from_utf8_lossy(&client_got), String::from_utf8_lossy(answer), "server → client, pruning {pruning}");
        assert_eq!(String::from_utf8_lossy(&server_got), String::from_utf8_lossy(request), "client → server, pruning {pruning}");
    }
}

/// A stdio server offering `fetch` (and, with `--own-omitted`, an
/// `omitted` of its own); every `tools/call` answers the file `argv[1]`.
const SERVER_WITH_OMITTED: &str = r#"
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
own = "--own-omitted" in sys.argv
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m.get("method") == "tools/list":
        tools = [{"name": "fetch", "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}}]
        if own:
            tools.append({"name": "omitted", "inputSchema": {"type": "object"}})
        result = {"tools": tools}
    elif m.get("method") == "tools/call":
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"#;

/// The text of each answer to `messages` (requests, in order) through a
/// pruning proxy (`--basis argument`) in front of [`SERVER_WITH_OMITTED`].
fn answers_through(own_omitted: bool, messages: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command.args(["mcp-proxy", "--name", "docs", "--basis", "argument", "--", "python3", "-c", SERVER_WITH_OMITTED]).arg(page());
    if own_omitted {
        command.arg("--own-omitted");
    }
    let mut child = command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("TOOLPRUNE_STORE_DIR", dir.path().join("store"))
        .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-proxy-tests-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let answers = messages
        .iter()
        .map(|message| {
            writeln!(stdin, "{message}").unwrap();
            stdin.flush().unwrap();
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
        })
        .collect();
    drop(stdin);
    let _ = child.wait();
    answers
}

fn fetch_call(id: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "fetch", "arguments": {"url": "x", "user_request": PROMPT}}})
}

fn list(id: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}"))
}

#[test]
fn the_proxy_prunes_only_once_the_client_was_shown_its_omitted_tool() {
    let raw = std::fs::read_to_string(page()).unwrap();
    // Before any listing the client has no `omitted` to call: unchanged.
    let answers = answers_through(false, &[fetch_call(1), list(2), fetch_call(3)]);
    assert_eq!(text_of(&answers[0]), raw, "a call before the tool list was seen is not pruned");
    assert!(answers[1]["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "omitted"), "{}", answers[1]);
    assert!(text_of(&answers[2]).starts_with("[Omitted by relevance:"), "the control: listed, then pruned");
    // The server has an `omitted` of its own: the model's read-back would
    // reach the server, so the proxy adds none and prunes nothing.
    let answers = answers_through(true, &[list(1), fetch_call(2)]);
    let tools = answers[0]["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.iter().filter(|t| t["name"] == "omitted").count(), 1, "the server's own only: {}", answers[0]);
    assert_eq!(text_of(&answers[1]), raw, "no marker without the proxy's way back");
}

/// A stdio server offering `fetch` (and, with `--own-omitted`, an `omitted`
/// of its own) whose every `tools/call` answers the arguments it received.
const ECHO_SERVER: &str = r#"
import json, sys
own = "--own-omitted" in sys.argv
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m.get("method") == "tools/list":
        tools = [{"name": "fetch", "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}}]
        if own:
            tools.append({"name": "omitted", "inputSchema": {"type": "object"}})
        result = {"tools": tools}
    elif m.get("method") == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(m["params"].get("arguments"), sort_keys=True)}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"#;

/// The basis argument is the proxy's, never the server's: a prunable tool's
/// call that the proxy does not prune — before any listing (a client calling
/// from an earlier session's schema), or while the server has its own
/// `omitted` — reaches the server without it (a tester saw it forwarded).
#[test]
fn the_basis_argument_never_reaches_the_server_even_when_nothing_is_pruned() {
    for (own_omitted, list_first) in [(false, false), (true, true)] {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(BIN);
        command.args(["mcp-proxy", "--name", "docs", "--basis", "argument", "--", "python3", "-c", ECHO_SERVER]);
        if own_omitted {
            command.arg("--own-omitted");
        }
        let mut child = command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("TOOLPRUNE_STORE_DIR", dir.path().join("store"))
            .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-proxy-tests-cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut ask = |message: Value| -> Value {
            writeln!(stdin, "{message}").unwrap();
            stdin.flush().unwrap();
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
        };
        if list_first {
            ask(list(1));
        }
        let answer = ask(fetch_call(2));
        let received = answer["result"]["content"][0]["text"].as_str().unwrap().to_string();
        assert_eq!(received, r#"{"url": "x"}"#, "own omitted {own_omitted}, listed {list_first}");
        drop(stdin);
        let _ = child.wait();
    }
}
