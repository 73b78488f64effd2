//! `toolprune hook …` and `toolprune mcp` as processes, on the captured
//! payloads of each agent (tests/fixtures/hooks/): what they print, what
//! the session store holds afterwards, and that every failure is the
//! agent's "no change" with exit 0 and nothing on stderr.
//!
//! Each test gets its own HOME and store; the compiled component is cached
//! in one folder for all of them (as a user's cache would be).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_toolprune");

fn fixture(agent: &str, name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks").join(agent).join(name);
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if let Some(object) = value.as_object_mut() {
        object.retain(|k, _| !k.starts_with('_'));
    }
    value
}

/// Registers toolprune's `omitted` MCP server in every agent's settings
/// under `home` (the hooks prune only where the model can call it): Gemini
/// CLI's trusted (a headless run offers no untrusted server's tools).
fn register_omitted_servers(home: &Path) {
    for dir in [".gemini", ".cursor", ".codex"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    std::fs::write(home.join(".gemini/settings.json"), "{\n  // jsonc\n  \"mcpServers\": {\"toolprune\": {\"command\": \"toolprune\", \"args\": [\"mcp\"], \"trust\": true}}\n}\n").unwrap();
    std::fs::write(home.join(".claude.json"), r#"{"mcpServers": {"toolprune": {"type": "stdio", "command": "toolprune", "args": ["mcp"]}}}"#).unwrap();
    std::fs::write(home.join(".cursor/mcp.json"), r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"]}}}"#).unwrap();
    std::fs::write(home.join(".codex/config.toml"), "[mcp_servers.toolprune]\ncommand = \"toolprune\"\nargs = [\"mcp\"]\n").unwrap();
}

/// A scratch HOME and store for one test.
struct Scratch {
    _dir: tempfile::TempDir,
    home: PathBuf,
    store: PathBuf,
    extra: Vec<(String, String)>,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        register_omitted_servers(&home);
        let store = dir.path().join("store");
        Scratch { home, store, _dir: dir, extra: Vec::new() }
    }

    fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.extra.push((key.to_string(), value.into()));
        self
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TOOLPRUNE_STORE_DIR", &self.store)
            .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-hook-tests-cache"));
        for (k, v) in &self.extra {
            command.env(k, v);
        }
        command
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs one hook event; asserts exit 0 and an empty stderr; returns stdout.
    fn hook(&self, agent: &str, event: &Value) -> String {
        let out = self.run(&["hook", agent], event.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "a hook never writes stderr: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    fn session_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.store) else { return Vec::new() };
        entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.store.join("toolprune.log")).unwrap_or_default()
    }
}

const PROMPT: &str = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?";

fn with(mut event: Value, changes: Value) -> Value {
    for (k, v) in changes.as_object().unwrap() {
        event[k] = v.clone();
    }
    event
}

fn claude_prompt(session: &str) -> Value {
    with(fixture("claude-code", "user_prompt_submit.json"), json!({"session_id": session, "prompt": PROMPT}))
}

/// Another page address each time: a call with the same arguments after a
/// pruned result is a repeat, which passes whole (SPEC §2).
fn fresh_url() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    format!("http://127.0.0.1:8000/docs/page-{}.html", N.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
}

fn claude_fetch(session: &str) -> Value {
    let event = fixture("claude-code", "post_tool_use.mcp_fetch.json");
    let input = with(event["tool_input"].clone(), json!({"url": fresh_url()}));
    with(event, json!({"session_id": session, "tool_input": input}))
}

fn page() -> String {
    fixture("claude-code", "post_tool_use.mcp_fetch.json")["tool_response"][0]["text"].as_str().unwrap().to_string()
}

/// The kept text between the header and markers must be pieces of the page, in order.
fn assert_verbatim(body: &str, page: &str) {
    let (header, rest) = body.split_once("\n\n").unwrap();
    assert!(header.starts_with("[Omitted by relevance:"), "{header}");
    let mut from = 0;
    for piece in rest.split("\n\n") {
        if piece.starts_with("[… paragraph") || piece.is_empty() {
            continue;
        }
        let found = page[from..].find(piece).unwrap_or_else(|| panic!("not verbatim from the page: {piece:?}"));
        from += found + piece.len();
    }
}

fn pruned_claude(scratch: &Scratch, session: &str) -> (Value, String) {
    assert_eq!(scratch.hook("claude-code", &claude_prompt(session)), "", "the prompt hook prints nothing");
    let out = scratch.hook("claude-code", &claude_fetch(session));
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}\nlog: {}", scratch.log()));
    let body = answer["hookSpecificOutput"]["updatedMCPToolOutput"][0]["text"].as_str().unwrap().to_string();
    (answer, body)
}

#[test]
fn claude_code_prunes_a_fetched_page_and_omitted_reads_it_back_through_the_mcp_server() {
    let scratch = Scratch::new();
    let (answer, body) = pruned_claude(&scratch, "s-1");
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    assert_eq!(answer["hookSpecificOutput"]["updatedMCPToolOutput"].as_array().unwrap().len(), 1);
    assert_eq!(answer["hookSpecificOutput"]["updatedMCPToolOutput"][0]["type"], "text");
    assert!(body.contains("id=P1]"), "{body}");
    assert!(body.len() < page().len());
    assert_verbatim(&body, &page());
    assert!(scratch.log().contains("tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok"), "{}", scratch.log());
    assert!(!scratch.log().contains("Rust String"), "the log carries no text");

    // The model calls omitted: PreToolUse adds the session token and allows the call.
    let pre = with(fixture("claude-code", "pre_tool_use.mcp_omitted.json"), json!({"session_id": "s-1"}));
    let pre_out: Value = serde_json::from_str(&scratch.hook("claude-code", &pre)).unwrap();
    let output = &pre_out["hookSpecificOutput"];
    assert_eq!(output["hookEventName"], "PreToolUse");
    assert_eq!(output["permissionDecision"], "allow");
    let input = output["updatedInput"].as_object().unwrap();
    assert_eq!((&input["id"], &input["from"], &input["to"]), (&json!("P1"), &json!(2), &json!(4)));
    let token = input["session"].as_str().unwrap();
    assert!(!token.contains("s-1"), "the raw session id never travels");

    // The MCP server answers from that session.
    let marker = body.lines().find(|l| l.starts_with("[… paragraph")).unwrap();
    let range: Vec<u32> = marker
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| s.parse().unwrap())
        .collect();
    let (from, to) = if marker.starts_with("[… paragraphs ") { (range[0], range[1]) } else { (range[0], range[0]) };
    let answers = mcp_calls(&scratch, &[json!({"id": "P1", "from": from, "to": to, "session": token})]);
    let text = &answers[0];
    assert!(!text.is_empty() && page().contains(text.as_str()), "the dropped paragraphs, verbatim: {text:?}");
    assert!(!body.contains(text.trim()), "they were not in the body");
}

/// Speaks MCP to `toolprune mcp` over stdio (the 2025-06-18 handshake) and
/// returns the text of each `omitted` call's result.
fn mcp_calls(scratch: &Scratch, calls: &[Value]) -> Vec<String> {
    let mut messages = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ];
    for (i, arguments) in calls.iter().enumerate() {
        messages.push(json!({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call", "params": {"name": "omitted", "arguments": arguments}}));
    }
    let mut child = scratch.command(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = std::io::BufRead::lines(reader);
    let mut answers = Vec::new();
    let mut tools = None;
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_none() {
            continue;
        }
        let line = lines.next().expect("an answer").unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["id"], message["id"], "{reply}");
        match message["method"].as_str() {
            Some("tools/list") => tools = Some(reply["result"]["tools"].clone()),
            Some("tools/call") => answers.push(reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string()),
            _ => {}
        }
    }
    drop(stdin);
    let _ = child.wait();
    let tools = tools.unwrap();
    assert_eq!(tools[0]["name"], "omitted");
    assert_eq!(tools[0]["inputSchema"]["properties"]["session"]["type"], "string", "the hooked dialect");
    answers
}

#[test]
fn the_mcp_server_never_answers_from_another_sessions_store() {
    let scratch = Scratch::new();
    pruned_claude(&scratch, "alice");
    pruned_claude(&scratch, "bob");
    let pre = with(fixture("claude-code", "pre_tool_use.mcp_omitted.json"), json!({"session_id": "bob"}));
    let pre_out: Value = serde_json::from_str(&scratch.hook("claude-code", &pre)).unwrap();
    let bob = pre_out["hookSpecificOutput"]["updatedInput"]["session"].as_str().unwrap().to_string();
    let (name, mac) = bob.rsplit_once('.').unwrap();
    let alice_dir = scratch.session_dirs().into_iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).find(|d| d != name).unwrap();
    let answers = mcp_calls(
        &scratch,
        &[
            json!({"id": "P1", "from": 0, "to": 999, "session": format!("{alice_dir}.{mac}")}),
            json!({"id": "P1", "from": 0, "to": 999, "session": "made-up"}),
            json!({"id": "P1", "from": 0, "to": 999}),
            json!({"id": "P1", "from": 0, "to": 999, "session": bob}),
        ],
    );
    for refused in &answers[..3] {
        assert!(refused.starts_with("There is no text with id=P1 here"), "{refused}");
    }
    assert!(!answers[3].starts_with("There is no text"), "bob's own token opens bob's store: {}", answers[3]);
}

#[test]
fn ids_count_on_across_turns_and_the_session_end_keeps_only_the_counter() {
    let scratch = Scratch::new();
    pruned_claude(&scratch, "s");
    let (_, second) = pruned_claude(&scratch, "s");
    assert!(second.contains("id=P2]"), "ids never restart within a conversation");
    let dirs = scratch.session_dirs();
    assert_eq!(dirs.len(), 1);
    let end = with(fixture("claude-code", "session_end.json"), json!({"session_id": "s"}));
    let started = std::time::Instant::now();
    assert_eq!(scratch.hook("claude-code", &end), "");
    assert!(started.elapsed() < std::time::Duration::from_millis(1500), "SessionEnd has ~1.5 s: {:?}", started.elapsed());
    let mut files: Vec<String> = std::fs::read_dir(&dirs[0]).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["lock", "state.json"], "records and request gone");
    let (_, resumed) = pruned_claude(&scratch, "s");
    assert!(resumed.contains("id=P3]"), "a resumed conversation numbers on");
}

#[test]
fn images_and_other_blocks_pass_untouched_around_the_pruned_text() {
    let scratch = Scratch::new();
    scratch.hook("claude-code", &claude_prompt("img"));
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let event = with(claude_fetch("img"), json!({"tool_response": [image, {"type": "text", "text": page()}], "extra_field": {"anything": [1, 2]}}));
    let answer: Value = serde_json::from_str(&scratch.hook("claude-code", &event)).unwrap();
    let blocks = answer["hookSpecificOutput"]["updatedMCPToolOutput"].as_array().unwrap();
    assert_eq!(blocks[0], image);
    assert!(blocks[1]["text"].as_str().unwrap().starts_with("[Omitted by relevance:"));
    // Only an image: nothing to prune.
    let only_image = with(claude_fetch("img"), json!({"tool_response": [image]}));
    assert_eq!(scratch.hook("claude-code", &only_image), "");
}

#[test]
fn unchanged_answers_for_errors_other_tools_missing_fields_and_garbage() {
    let scratch = Scratch::new();
    scratch.hook("claude-code", &claude_prompt("e"));
    let cases = [
        with(claude_fetch("e"), json!({"tool_response": {"content": [{"type": "text", "text": page()}], "isError": true}})),
        with(claude_fetch("e"), json!({"is_error": true})),
        with(claude_fetch("e"), json!({"tool_name": "Read"})),
        with(claude_fetch("e"), json!({"tool_name": "mcp__filesystem__read_text_file"})),
        with(claude_fetch("e"), json!({"tool_name": "mcp__docs__search"})),
        with(claude_fetch("e"), json!({"tool_response": [{"type": "text", "text": "short"}]})),
        fixture("claude-code", "post_tool_use.bash.json"),
        json!({"hook_event_name": "PostToolUse"}),
        json!({"hook_event_name": "PostToolUse", "session_id": "e", "tool_name": "mcp__docs__fetch"}),
        json!({"hook_event_name": "Unheard", "session_id": "e"}),
        json!([1, 2, 3]),
        fixture("claude-code", "stop.json"),
        fixture("claude-code", "session_start.startup.json"),
    ];
    for event in &cases {
        assert_eq!(scratch.hook("claude-code", event), "", "{event}");
    }
    for garbage in [&b"not json"[..], b"", b"\xff\xfe", b"{\"hook_event_name\": "] {
        let out = scratch.run(&["hook", "claude-code"], garbage);
        assert_eq!((out.status.code(), out.stdout.len(), out.stderr.len()), (Some(0), 0, 0));
        let out = scratch.run(&["hook", "gemini"], garbage);
        assert_eq!((out.status.code(), &out.stdout[..], out.stderr.len()), (Some(0), &b"{}"[..], 0));
        let out = scratch.run(&["hook", "cursor"], garbage);
        assert_eq!((out.status.code(), &out.stdout[..], out.stderr.len()), (Some(0), &b"{}"[..], 0));
    }
}

#[test]
fn without_a_recorded_prompt_the_basis_comes_from_the_transcript() {
    let scratch = Scratch::new();
    let transcript = scratch.home.join("t.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "an older question about something else entirely"}}),
        json!({"type": "user", "isMeta": true, "message": {"role": "user", "content": "<local-command-stdout>meta</local-command-stdout>"}}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": PROMPT}]}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "mcp__docs__fetch", "input": {}}]}}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}}),
    ];
    std::fs::write(&transcript, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    let event = with(claude_fetch("t"), json!({"transcript_path": transcript}));
    let answer: Value = serde_json::from_str(&scratch.hook("claude-code", &event)).unwrap();
    assert!(answer["hookSpecificOutput"]["updatedMCPToolOutput"][0]["text"].as_str().unwrap().starts_with("[Omitted by relevance:"));
    // No prompt and no transcript: no basis, no change.
    let none = with(claude_fetch("n"), json!({"transcript_path": scratch.home.join("missing.jsonl")}));
    assert_eq!(scratch.hook("claude-code", &none), "");
    assert!(scratch.log().contains("outcome=no_basis"), "{}", scratch.log());
}

#[test]
fn an_unusable_store_or_configuration_passes_the_result_unchanged() {
    // The store root is a file (unreadable as a store, also for root).
    let file = tempfile::NamedTempFile::new().unwrap();
    let scratch = Scratch::new().with("TOOLPRUNE_STORE_DIR", file.path().to_string_lossy());
    assert_eq!(scratch.hook("claude-code", &claude_prompt("u")), "");
    assert_eq!(scratch.hook("claude-code", &claude_fetch("u")), "");
    assert_eq!(scratch.hook("gemini", &gemini_after_tool("u")), "{}");
    // A store root open to others is refused.
    let open = Scratch::new();
    std::fs::create_dir_all(&open.store).unwrap();
    set_mode(&open.store, 0o755);
    open.hook("claude-code", &claude_prompt("o"));
    assert_eq!(open.hook("claude-code", &claude_fetch("o")), "");
    // A session whose state is corrupt.
    let corrupt = Scratch::new();
    pruned_claude(&corrupt, "c");
    std::fs::write(corrupt.session_dirs()[0].join("state.json"), "{oops").unwrap();
    assert_eq!(corrupt.hook("claude-code", &claude_fetch("c")), "");
    // A configuration that does not parse, or turns pruning off.
    for (text, reason) in [("enabled = maybe\n", "reason=config"), ("enabled = false\n", "reason=disabled")] {
        let config = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(config.path(), text).unwrap();
        let scratch = Scratch::new().with("TOOLPRUNE_CONFIG", config.path().to_string_lossy());
        scratch.hook("claude-code", &claude_prompt("k"));
        assert_eq!(scratch.hook("claude-code", &claude_fetch("k")), "");
        assert_eq!(scratch.hook("gemini", &gemini_after_tool("k")), "{}");
        assert!(scratch.log().contains(reason), "{}", scratch.log());
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn concurrent_hook_processes_of_one_session_keep_every_record() {
    let scratch = Scratch::new();
    scratch.hook("claude-code", &claude_prompt("busy"));
    let children: Vec<_> = (0..6)
        .map(|_| {
            let event = claude_fetch("busy").to_string();
            let mut child = scratch.command(&["hook", "claude-code"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            child.stdin.take().unwrap().write_all(event.as_bytes()).unwrap();
            child
        })
        .collect();
    let mut ids: Vec<String> = children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0));
            let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
            let body = answer["hookSpecificOutput"]["updatedMCPToolOutput"][0]["text"].as_str().unwrap().to_string();
            body.split("id=").nth(1).unwrap().split(']').next().unwrap().to_string()
        })
        .collect();
    ids.sort_by_key(|id| id[1..].parse::<u32>().unwrap());
    assert_eq!(ids, ["P1", "P2", "P3", "P4", "P5", "P6"], "no id lost or repeated");
    let dir = &scratch.session_dirs()[0];
    for id in &ids {
        let record: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{id}.json"))).unwrap()).unwrap();
        assert_eq!(record["id"], id.as_str());
        assert!(record["chars"].as_u64().unwrap() > 0 && !record["data"].as_str().unwrap().is_empty());
    }
    let state: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["count"], 6);
}

/// The repeat gate at every agent's hook (SPEC §2, issue 25 §4): the same
/// tool called again with the same arguments after its result was pruned
/// passes whole — the agent's "no change" — with a `gate=repeated` line that
/// `toolprune stats` counts; other arguments still prune.
#[test]
fn a_second_identical_call_passes_unpruned_in_every_agent_and_stats_counts_it() {
    let scratch = Scratch::new();
    let same = json!({"url": "http://127.0.0.1:8000/docs/the-same-page.html", "max_length": 100000});
    // The same arguments in another key order and spacing are the same call.
    let reordered: Value = serde_json::from_str(r#"{"max_length":100000, "url":"http://127.0.0.1:8000/docs/the-same-page.html"}"#).unwrap();

    // Claude Code.
    scratch.hook("claude-code", &claude_prompt("rc"));
    let first = scratch.hook("claude-code", &with(claude_fetch("rc"), json!({"tool_input": same})));
    assert!(first.contains("id=P1]"), "the first call is pruned: {first}\n{}", scratch.log());
    assert_eq!(scratch.hook("claude-code", &with(claude_fetch("rc"), json!({"tool_input": reordered}))), "", "the repeat passes whole");
    assert!(scratch.hook("claude-code", &claude_fetch("rc")).contains("id=P2]"), "other arguments still prune");

    // Codex CLI.
    scratch.hook("codex", &codex_prompt("rx"));
    let first = scratch.hook("codex", &with(codex_fetch("rx"), json!({"tool_input": same})));
    assert!(first.contains("id=P1]"), "{first}");
    assert_eq!(scratch.hook("codex", &with(codex_fetch("rx"), json!({"tool_input": same}))), "");

    // Gemini CLI (the pruned body comes back through a tail call to `omitted`).
    let prompt = with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": "rg", "prompt": PROMPT}));
    scratch.hook("gemini", &prompt);
    let first: Value = serde_json::from_str(&scratch.hook("gemini", &with(gemini_after_tool("rg"), json!({"tool_input": same})))).unwrap();
    assert_eq!(first["hookSpecificOutput"]["tailToolCallRequest"]["args"]["id"], "P1");
    assert_eq!(scratch.hook("gemini", &with(gemini_after_tool("rg"), json!({"tool_input": same}))), "{}");

    // Cursor (its `tool_input` may be a JSON text).
    let prompt = with(fixture("cursor", "beforeSubmitPrompt.stdin.json"), json!({"prompt": PROMPT}));
    scratch.hook("cursor", &prompt);
    let output = json!({"content": [{"type": "text", "text": page()}], "isError": false}).to_string();
    let post = with(fixture("cursor", "postToolUse.mcp.stdin.json"), json!({"tool_output": output, "tool_input": same}));
    assert!(scratch.hook("cursor", &post).contains("id=P1]"));
    let again = with(post, json!({"tool_input": reordered.to_string()}));
    assert_eq!(scratch.hook("cursor", &again), "{}");

    let log = scratch.log();
    let repeats: Vec<&str> = log.lines().filter(|l| l.contains(" outcome=skipped gate=repeated ")).collect();
    assert_eq!(repeats.len(), 4, "one line per repeat: {log}");
    for agent in ["claude-code", "codex", "gemini", "cursor"] {
        assert!(repeats.iter().any(|l| l.contains(&format!("agent={agent} "))), "{agent}: {repeats:?}");
        assert!(log.lines().any(|l| l.contains(&format!("hook: agent={agent} event=")) && l.contains("reason=repeated")), "{agent}: {log}");
    }
    assert!(!log.contains("the-same-page"), "the log carries no arguments");
    let stats = scratch.run(&["stats", "--json"], b"");
    assert_eq!(stats.status.code(), Some(0), "{}", String::from_utf8_lossy(&stats.stderr));
    let stats = String::from_utf8(stats.stdout).unwrap();
    let report: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(report["total"]["skipped"]["repeated"], 4, "stats counts the repeats: {stats}");
    for agent in ["claude-code", "codex", "gemini", "cursor"] {
        let row = report["by_agent"].as_array().unwrap().iter().find(|r| r["key"] == agent).unwrap_or_else(|| panic!("{agent}: {stats}"));
        assert_eq!(row["skipped"]["repeated"], 1, "{agent}: {stats}");
    }
}

// -- Gemini CLI ---------------------------------------------------------------------

fn gemini_after_tool(session: &str) -> Value {
    let wrapped = format!("<untrusted_context>\n{}\n</untrusted_context>", page());
    with(
        fixture("gemini", "AfterTool.mcp_fetch_fetch.stdin.json"),
        json!({"session_id": session, "tool_input": {"url": fresh_url()}, "tool_response": {"llmContent": [{"text": wrapped}], "returnDisplay": page()}}),
    )
}

#[test]
fn gemini_replaces_a_result_through_a_tail_call_that_the_mcp_server_answers_with_the_body() {
    let scratch = Scratch::new();
    let prompt = with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": "g", "prompt": PROMPT}));
    assert_eq!(scratch.hook("gemini", &prompt), "{}");
    let answer: Value = serde_json::from_str(&scratch.hook("gemini", &gemini_after_tool("g"))).unwrap();
    let tail = &answer["hookSpecificOutput"]["tailToolCallRequest"];
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "AfterTool");
    assert_eq!(tail["name"], "mcp_toolprune_omitted");
    assert_eq!((&tail["args"]["id"], &tail["args"]["from"], &tail["args"]["to"], &tail["args"]["body"]), (&json!("P1"), &json!(0), &json!(0), &json!(true)));
    let body = &mcp_calls(&scratch, &[tail["args"].clone()])[0];
    assert!(body.starts_with("[Omitted by relevance:") && body.contains("id=P1]"), "{body}");
    assert_verbatim(body, &page());

    // The tail call's own AfterTool: no change.
    let own = with(gemini_after_tool("g"), json!({"tool_name": "mcp_toolprune_omitted", "original_request_name": "mcp_fetch_fetch"}));
    assert_eq!(scratch.hook("gemini", &own), "{}");
    // The model's own omitted call: a tail call to itself with the session added.
    let model = with(
        fixture("gemini", "AfterTool.mcp_fetch_fetch.stdin.json"),
        json!({"session_id": "g", "tool_name": "mcp_toolprune_omitted", "tool_input": {"id": "P1", "from": 0, "to": 3, "session": "the model's", "body": true}}),
    );
    let again: Value = serde_json::from_str(&scratch.hook("gemini", &model)).unwrap();
    let args = &again["hookSpecificOutput"]["tailToolCallRequest"]["args"];
    assert_eq!(args["session"], tail["args"]["session"]);
    assert!(args.get("body").is_none(), "the model cannot ask for the body");
    // An error result, and a result with an image part: no change.
    let error = with(gemini_after_tool("g"), json!({"tool_response": {"llmContent": "MCP tool 'fetch' reported tool error", "error": {"message": "x", "type": "mcp_tool_error"}}}));
    assert_eq!(scratch.hook("gemini", &error), "{}");
    let image = with(gemini_after_tool("g"), json!({"tool_response": {"llmContent": [{"text": page()}, {"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}}));
    assert_eq!(scratch.hook("gemini", &image), "{}");
    // Without toolprune's MCP server in the settings, a tail call would fail: no change.
    std::fs::remove_file(scratch.home.join(".gemini/settings.json")).unwrap();
    let unregistered = with(gemini_after_tool("g"), json!({"cwd": scratch.home.join("nowhere")}));
    assert_eq!(scratch.hook("gemini", &unregistered), "{}");
    assert!(scratch.log().contains("reason=no_omitted_server"), "{}", scratch.log());
    let end = with(fixture("gemini", "SessionEnd.stdin.json"), json!({"session_id": "g"}));
    assert_eq!(scratch.hook("gemini", &end), "{}");
    let after_end = &mcp_calls(&scratch, &[tail["args"].clone()])[0];
    assert!(after_end.starts_with("There is no text with id=P1"), "{after_end}");
}

// -- Cursor -------------------------------------------------------------------------

#[test]
fn cursor_prunes_an_mcp_result_and_answers_omitted_from_the_store() {
    let scratch = Scratch::new();
    let prompt = with(fixture("cursor", "beforeSubmitPrompt.stdin.json"), json!({"prompt": PROMPT}));
    let conversation = prompt["conversation_id"].as_str().unwrap().to_string();
    assert_eq!(scratch.hook("cursor", &prompt), r#"{"continue":true}"#);
    let output = json!({"content": [{"type": "text", "text": page()}], "isError": false}).to_string();
    let post = with(fixture("cursor", "postToolUse.mcp.stdin.json"), json!({"tool_output": output}));
    assert_eq!(post["conversation_id"], conversation.as_str());
    let answer: Value = serde_json::from_str(&scratch.hook("cursor", &post)).unwrap();
    let result = &answer["updated_mcp_tool_output"];
    assert_eq!(result["isError"], false, "the rest of the result stays");
    let body = result["content"][0]["text"].as_str().unwrap();
    assert!(body.contains("id=P1]"));
    assert_verbatim(body, &page());
    let omitted = with(post.clone(), json!({"tool_name": "MCP:omitted", "tool_input": {"id": "P1", "from": 0, "to": 9999}, "tool_output": "{\"content\":[{\"type\":\"text\",\"text\":\"There is no text\"}]}"}));
    let read: Value = serde_json::from_str(&scratch.hook("cursor", &omitted)).unwrap();
    let text = read["updated_mcp_tool_output"]["content"][0]["text"].as_str().unwrap();
    assert!(page().contains(text.split("\n\n").next().unwrap()), "{text}");
    let failed = with(post.clone(), json!({"tool_output": json!({"content": [{"type": "text", "text": page()}], "isError": true}).to_string()}));
    assert_eq!(scratch.hook("cursor", &failed), "{}");
    let shell = with(post, json!({"tool_name": "Shell", "tool_output": "{\"output\": \"ls\"}"}));
    assert_eq!(scratch.hook("cursor", &shell), "{}");
    assert_eq!(scratch.hook("cursor", &fixture("cursor", "sessionEnd.stdin.json")), "{}");
}

/// The request record of one session directory.
fn recorded(scratch: &Scratch) -> Value {
    let dirs = scratch.session_dirs();
    assert_eq!(dirs.len(), 1, "one session");
    serde_json::from_str(&std::fs::read_to_string(dirs[0].join("request.json")).unwrap()).unwrap()
}

#[test]
fn the_prompt_record_names_the_agent_process_and_folder_for_the_mcp_proxy() {
    // The hook's parent here is this test process (not a shell): it is the "agent".
    let scratch = Scratch::new();
    scratch.hook("claude-code", &claude_prompt("s-proxy"));
    let record = recorded(&scratch);
    assert_eq!(record["request"], PROMPT);
    assert_eq!(record["cwd"], "/home/user/project");
    assert_eq!(record["agent_pid"], std::process::id());
    // Cursor has no `cwd`: its first workspace root.
    let scratch = Scratch::new();
    let event = with(fixture("cursor", "beforeSubmitPrompt.stdin.json"), json!({"prompt": PROMPT}));
    scratch.hook("cursor", &event);
    let roots = event["workspace_roots"].as_array().unwrap();
    assert_eq!(recorded(&scratch)["cwd"], roots[0]);
}

#[test]
fn a_server_wrapped_by_the_proxy_is_left_to_the_proxy() {
    let scratch = Scratch::new();
    std::fs::write(
        scratch.home.join(".claude.json"),
        r#"{"mcpServers": {"docs": {"command": "uvx", "args": ["mcp-server-fetch"]}}}"#,
    )
    .unwrap();
    let out = scratch.command(&["install", "claude-code", "--wrap", "docs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let config: Value = serde_json::from_str(&std::fs::read_to_string(scratch.home.join(".claude.json")).unwrap()).unwrap();
    let args = config["mcpServers"]["docs"]["args"].as_array().unwrap().clone();
    assert_eq!(args[..4], [json!("mcp-proxy"), json!("--name"), json!("docs"), json!("--")]);
    // The proxy prunes mcp__docs__fetch itself: the hook answers "no change".
    assert_eq!(scratch.hook("claude-code", &claude_prompt("s-wrapped")), "");
    assert_eq!(scratch.hook("claude-code", &claude_fetch("s-wrapped")), "", "no second pruning");
    // uninstall --wrap puts the entry back; the hook prunes again.
    let out = scratch.command(&["uninstall", "claude-code", "--wrap", "docs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(scratch.hook("claude-code", &claude_fetch("s-wrapped")).contains("updatedMCPToolOutput"));
}

#[test]
fn install_wrap_of_a_server_that_is_not_configured_writes_nothing() {
    let scratch = Scratch::new();
    let claude_json = r#"{"mcpServers": {"docs": {"command": "uvx", "args": ["mcp-server-fetch"]}}}"#;
    std::fs::write(scratch.home.join(".claude.json"), claude_json).unwrap();
    let out = scratch.command(&["install", "claude-code", "--wrap", "fetch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mcpServers.fetch is not configured"));
    assert_eq!(std::fs::read_to_string(scratch.home.join(".claude.json")).unwrap(), claude_json, "no MCP entry added");
    assert!(!scratch.home.join(".claude").exists(), "no hooks written");
    assert!(!scratch.home.join(".config/toolprune/installed.json").exists(), "no manifest written");
}

#[test]
fn a_mistyped_hook_command_changes_nothing_and_says_nothing() {
    let scratch = Scratch::new();
    for args in [&["hook"][..], &["hook", "bogus"], &["hook", "claude-code", "extra"], &["hook", "--agent=claude-code"]] {
        let mut child = scratch.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(claude_prompt("s-typo").to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: exit 2 would block the agent's prompt");
        assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{args:?}");
    }
    let help = scratch.command(&["hook", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("claude-code"), "help still answers");
}

#[test]
fn install_writes_through_a_symlinked_settings_file_and_uninstall_keeps_the_link() {
    let scratch = Scratch::new();
    let dotfiles = scratch.home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(scratch.home.join(".claude")).unwrap();
    let original = "{\n  // mine\n  \"model\": \"opus\"\n}\n";
    std::fs::write(dotfiles.join("claude-settings.json"), original).unwrap();
    let link = scratch.home.join(".claude/settings.json");
    std::os::unix::fs::symlink(dotfiles.join("claude-settings.json"), &link).unwrap();
    let out = scratch.command(&["install", "claude-code"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "still a link");
    assert!(std::fs::read_to_string(dotfiles.join("claude-settings.json")).unwrap().contains("toolprune hook claude-code"));
    let out = scratch.command(&["uninstall", "claude-code"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(dotfiles.join("claude-settings.json")).unwrap(), original);
}

#[test]
fn install_into_settings_whose_keys_hold_something_else_is_refused_and_writes_nothing() {
    let scratch = Scratch::new();
    std::fs::remove_file(scratch.home.join(".claude.json")).unwrap();
    std::fs::create_dir_all(scratch.home.join(".claude")).unwrap();
    let settings = r#"{"hooks": "none", "permissions": {"allow": "all"}}"#;
    std::fs::write(scratch.home.join(".claude/settings.json"), settings).unwrap();
    let out = scratch.command(&["install", "claude-code"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not an object") && stderr.contains("fix or remove it"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("is installed"));
    assert_eq!(std::fs::read_to_string(scratch.home.join(".claude/settings.json")).unwrap(), settings);
    assert!(!scratch.home.join(".claude.json").exists(), "no MCP entry either");
}

// -- Codex CLI ----------------------------------------------------------------------

fn codex_prompt(session: &str) -> Value {
    with(fixture("codex", "user_prompt_submit.json"), json!({"session_id": session, "prompt": PROMPT}))
}

fn codex_fetch(session: &str) -> Value {
    let event = fixture("codex", "post_tool_use.mcp_fetch.json");
    let input = with(event["tool_input"].clone(), json!({"url": fresh_url()}));
    with(event, json!({"session_id": session, "tool_input": input}))
}

/// The prompt, then the fetch; returns the fetch's answer (parsed).
fn pruned_codex(scratch: &Scratch, session: &str) -> Value {
    assert_eq!(scratch.hook("codex", &codex_prompt(session)), "", "the prompt hook prints nothing");
    let out = scratch.hook("codex", &codex_fetch(session));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}\nlog: {}", scratch.log()))
}

#[test]
fn codex_replaces_a_fetched_page_by_a_block_whose_reason_is_the_pruned_body() {
    let scratch = Scratch::new();
    let answer = pruned_codex(&scratch, "c-1");
    assert_eq!(answer.as_object().unwrap().len(), 2, "{answer}");
    assert_eq!(answer["decision"], "block");
    let body = answer["reason"].as_str().unwrap();
    assert!(body.contains("id=P1]") && body.len() < page().len(), "{body}");
    assert_verbatim(body, &page());
    assert!(scratch.log().contains("tool prune: agent=codex name=mcp__docs__fetch outcome=ok"), "{}", scratch.log());
    assert!(!scratch.log().contains("Rust String"), "the log carries no text");

    // The model calls omitted: PreToolUse adds this conversation's token and allows it.
    let pre = with(fixture("codex", "pre_tool_use.mcp_omitted.json"), json!({"session_id": "c-1"}));
    let out: Value = serde_json::from_str(&scratch.hook("codex", &pre)).unwrap();
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    let input = out["hookSpecificOutput"]["updatedInput"].clone();
    assert_eq!((&input["id"], &input["from"], &input["to"]), (&json!("P1"), &json!(2), &json!(4)));
    // toolprune mcp answers from that session: the dropped paragraphs, verbatim.
    let text = &mcp_calls(&scratch, &[json!({"id": "P1", "from": 0, "to": 9999, "session": input["session"]})])[0];
    assert!(!text.starts_with("There is no text") && page().contains(text.split("\n\n").next().unwrap()), "{text}");
    // The fetch's PreToolUse and omitted's own PostToolUse: no change.
    assert_eq!(scratch.hook("codex", &with(fixture("codex", "pre_tool_use.mcp_fetch.json"), json!({"session_id": "c-1"}))), "");
    assert_eq!(scratch.hook("codex", &with(codex_fetch("c-1"), json!({"tool_name": "mcp__toolprune__omitted"}))), "");

    // Ids count on in the conversation; the session's end keeps only the counter.
    let second = pruned_codex(&scratch, "c-1");
    assert!(second["reason"].as_str().unwrap().contains("id=P2]"));
    assert_eq!(scratch.hook("codex", &with(fixture("codex", "session_end.json"), json!({"session_id": "c-1"}))), "");
    let after_end = &mcp_calls(&scratch, &[json!({"id": "P1", "from": 0, "to": 9999, "session": input["session"]})])[0];
    assert!(after_end.starts_with("There is no text with id=P1"), "{after_end}");
    assert!(pruned_codex(&scratch, "c-1")["reason"].as_str().unwrap().contains("id=P3]"), "a resumed conversation numbers on");
}

#[test]
fn codex_never_blocks_on_a_failure_or_a_result_it_must_not_touch() {
    let scratch = Scratch::new();
    scratch.hook("codex", &codex_prompt("e"));
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let cases = [
        with(codex_fetch("e"), json!({"tool_response": {"content": [{"type": "text", "text": page()}], "isError": true}})),
        with(codex_fetch("e"), json!({"tool_response": {"content": [image, {"type": "text", "text": page()}]}})),
        with(codex_fetch("e"), json!({"tool_name": "exec_command", "tool_response": page()})),
        with(codex_fetch("e"), json!({"tool_name": "mcp__filesystem__read_text_file"})),
        with(codex_fetch("e"), json!({"tool_response": {"content": [{"type": "text", "text": "short"}]}})),
        with(codex_fetch("e"), json!({"tool_response": 3})),
        json!({"hook_event_name": "PostToolUse", "tool_name": "mcp__docs__fetch"}),
        fixture("codex", "stop.json"),
        fixture("codex", "session_start.json"),
    ];
    for event in &cases {
        assert_eq!(scratch.hook("codex", event), "", "{event}");
    }
    for garbage in [&b"not json"[..], b"", b"\xff\xfe", b"{\"hook_event_name\": "] {
        let out = scratch.run(&["hook", "codex"], garbage);
        assert_eq!((out.status.code(), out.stdout.len(), out.stderr.len()), (Some(0), 0, 0));
    }
    // A pruned body longer than Codex's hook-output budget would be cut by Codex: no block.
    let long = page().repeat(4);
    let over = with(codex_fetch("e"), json!({"tool_response": {"content": [{"type": "text", "text": long}]}}));
    assert_eq!(scratch.hook("codex", &over), "");
    assert!(scratch.log().contains("reason=codex_hook_budget"), "{}", scratch.log());
    // A store that cannot be used: the store root is a file.
    let file = tempfile::NamedTempFile::new().unwrap();
    let broken = Scratch::new().with("TOOLPRUNE_STORE_DIR", file.path().to_string_lossy());
    assert_eq!(broken.hook("codex", &codex_prompt("b")), "");
    assert_eq!(broken.hook("codex", &codex_fetch("b")), "", "a broken store is no block");
    // A corrupt session state.
    let corrupt = Scratch::new();
    pruned_codex(&corrupt, "c");
    std::fs::write(corrupt.session_dirs()[0].join("state.json"), "{oops").unwrap();
    assert_eq!(corrupt.hook("codex", &codex_fetch("c")), "");
    // A configuration that does not parse, or that turns pruning off.
    for (text, reason) in [("enabled = maybe\n", "reason=config"), ("threshold = \"high\"\n", "reason=config"), ("enabled = false\n", "reason=disabled")] {
        let config = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(config.path(), text).unwrap();
        let scratch = Scratch::new().with("TOOLPRUNE_CONFIG", config.path().to_string_lossy());
        scratch.hook("codex", &codex_prompt("k"));
        assert_eq!(scratch.hook("codex", &codex_fetch("k")), "", "{text}");
        assert!(scratch.log().contains(reason), "{text}: {}", scratch.log());
    }
}

// -- Oversized events ---------------------------------------------------------------

/// A hook process fed `len` bytes of a JSON string through a real pipe;
/// `keep_open` holds stdin open afterwards instead of closing it. Returns
/// whether every byte was written (no EPIPE), the output, and the wall time.
fn feed(agent: &str, len: usize, keep_open: bool) -> (bool, Output, std::time::Duration) {
    let scratch = Scratch::new();
    let started = std::time::Instant::now();
    let mut child = scratch.command(&["hook", agent]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut event = b"{\"hook_event_name\": \"PostToolUse\", \"pad\": \"".to_vec();
    event.resize(len - 2, b'x');
    event.extend_from_slice(b"\"}");
    let written = stdin.write_all(&event).is_ok();
    let out = if keep_open {
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        out
    } else {
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    (written, out, started.elapsed())
}

#[test]
fn an_event_over_64_mib_is_read_to_its_end_before_the_no_change_answer() {
    for (agent, pass) in [("claude-code", ""), ("codex", ""), ("gemini", "{}")] {
        let (written, out, _) = feed(agent, (64 << 20) + (3 << 20), false);
        assert!(written, "{agent}: the agent's write met a closed pipe");
        assert_eq!(out.status.code(), Some(0), "{agent}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), pass, "{agent}");
        assert!(out.stderr.is_empty(), "{agent}");
    }
}

#[test]
fn a_writer_that_never_closes_an_oversized_event_still_gets_an_answer_in_bounded_time() {
    let (written, out, took) = feed("gemini", (64 << 20) + 1, true);
    assert!(written);
    assert_eq!((out.status.code(), &out.stdout[..]), (Some(0), &b"{}"[..]));
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}

// -- Prunable under every name (issue 27 §1, SPEC §2) --------------------------------

#[test]
fn a_file_reader_of_a_server_named_with_a_globs_word_is_never_pruned_by_any_agent() {
    // The default globs hold `mcp__fetch__*` and `mcp_fetch_*`: every tool of a
    // server named `fetch` matches one; `read_file` must stay exact under every
    // agent's name for it all the same.
    let scratch = Scratch::new();
    let text = json!([{"type": "text", "text": page()}]);
    let mut negatives = 0;
    for server in ["fetch", "web", "search"] {
        let session = format!("s-{server}");
        scratch.hook("claude-code", &claude_prompt(&session));
        scratch.hook("codex", &codex_prompt(&session));
        let prompt = with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": session, "prompt": PROMPT}));
        scratch.hook("gemini", &prompt);
        for tool in ["read_file", "read_text_file", "run_shell_command", "edit_file"] {
            let claude = with(claude_fetch(&session), json!({"tool_name": format!("mcp__{server}__{tool}"), "mcp_server": {"name": server}, "tool_response": text}));
            assert_eq!(scratch.hook("claude-code", &claude), "", "{claude}");
            let codex = with(codex_fetch(&session), json!({"tool_name": format!("mcp__{server}__{tool}")}));
            assert_eq!(scratch.hook("codex", &codex), "", "{codex}");
            for name in [format!("mcp_{server}_{tool}"), format!("{server}__{tool}"), tool.to_string()] {
                let context = json!({"server_name": server, "tool_name": tool});
                let gemini = with(gemini_after_tool(&session), json!({"tool_name": name, "mcp_context": context}));
                assert_eq!(scratch.hook("gemini", &gemini), "{}", "{gemini}");
                let without = with(gemini_after_tool(&session), json!({"tool_name": name, "mcp_context": null}));
                assert_eq!(scratch.hook("gemini", &without), "{}", "{without}");
            }
            let output = json!({"content": [{"type": "text", "text": page()}], "isError": false}).to_string();
            let cursor = with(fixture("cursor", "postToolUse.mcp.stdin.json"), json!({"tool_name": format!("MCP:{tool}"), "tool_output": output}));
            assert_eq!(scratch.hook("cursor", &cursor), "{}", "{cursor}");
            negatives += 2 + 6 + 1;
        }
        // The same server's fetch is still pruned (Gemini: `mcp_SERVER_fetch`).
        let fetch = with(gemini_after_tool(&session), json!({"tool_name": format!("mcp_{server}_fetch"), "mcp_context": {"server_name": server, "tool_name": "fetch"}}));
        let answer: Value = serde_json::from_str(&scratch.hook("gemini", &fetch)).unwrap();
        assert_eq!(answer["hookSpecificOutput"]["tailToolCallRequest"]["name"], "mcp_toolprune_omitted", "{answer}\n{}", scratch.log());
    }
    assert_eq!(scratch.log().matches("reason=not_prunable").count(), negatives, "{}", scratch.log());
}

// -- The way back (issue 25 §5) -------------------------------------------------------

/// The dropped-paragraph records (`P<n>.json`) in every session of the store.
fn stored_records(scratch: &Scratch) -> usize {
    scratch
        .session_dirs()
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with('P') && e.file_name().to_string_lossy().ends_with(".json"))
        .count()
}

/// Gemini CLI's user policy that allows the extension's `omitted`.
const GEMINI_POLICY: &str = "[[rule]]\nmcpName = \"toolprune\"\ntoolName = \"omitted\"\ndecision = \"allow\"\npriority = 100\n";

#[test]
fn an_omitted_result_is_never_pruned_at_any_hook_door_even_when_every_tool_is_prunable() {
    let scratch = Scratch::new();
    std::fs::write(scratch.home.join("config.toml"), "prunable = [\"*\"]\n").unwrap();
    std::fs::create_dir_all(scratch.home.join(".gemini/policies")).unwrap();
    std::fs::write(scratch.home.join(".gemini/policies/toolprune.toml"), GEMINI_POLICY).unwrap();
    let config = scratch.home.join("config.toml").to_string_lossy().into_owned();
    let scratch = scratch.with("TOOLPRUNE_CONFIG", config);
    // Settings' hooks and plugins' hooks (`--plugin`), on every name the agent gives our `omitted`.
    let hook = |agent: &str, plugin: bool, event: &Value| -> String {
        if !plugin {
            return scratch.hook(agent, event);
        }
        let out = scratch.run(&["hook", agent, "--plugin"], event.to_string().as_bytes());
        assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let never = |answer: &str, what: &str| assert!(!answer.contains("[Omitted by relevance"), "{what}: an omitted result was pruned: {answer}");
    let mut seen = 0;
    for plugin in [false, true] {
        let session = format!("w-{plugin}");
        scratch.hook("claude-code", &claude_prompt(&session));
        scratch.hook("codex", &codex_prompt(&session));
        scratch.hook("gemini", &with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": session, "prompt": PROMPT})));
        let cursor_prompt = with(fixture("cursor", "beforeSubmitPrompt.stdin.json"), json!({"prompt": PROMPT, "conversation_id": session}));
        scratch.hook("cursor", &cursor_prompt);
        for name in ["mcp__toolprune__omitted", "mcp__plugin_toolprune_toolprune__omitted"] {
            let event = with(claude_fetch(&session), json!({"tool_name": name, "mcp_server": {"name": "toolprune"}}));
            assert_eq!(hook("claude-code", plugin, &event), "", "Claude Code {name}, plugin {plugin}");
            let event = with(codex_fetch(&session), json!({"tool_name": name}));
            assert_eq!(hook("codex", plugin, &event), "", "Codex {name}, plugin {plugin}");
            seen += 2;
        }
        let event = with(gemini_after_tool(&session), json!({"tool_name": "mcp_toolprune_omitted", "mcp_context": {"server_name": "toolprune", "tool_name": "omitted"}, "tool_input": {"id": "P1", "from": 0, "to": 3}}));
        let answer = hook("gemini", plugin, &event);
        never(&answer, "Gemini CLI");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        let tail = &answer["hookSpecificOutput"]["tailToolCallRequest"];
        assert!(tail["args"].get("body").is_none() && tail["args"]["id"] == "P1", "Gemini: the model's own read-back, never a stored body: {answer}");
        for name in ["MCP:omitted", "omitted", "MCP:toolprune:omitted"] {
            let output = json!({"content": [{"type": "text", "text": page()}], "isError": false}).to_string();
            let event = with(fixture("cursor", "postToolUse.mcp.stdin.json"), json!({"conversation_id": session, "tool_name": name, "tool_input": {"id": "P1", "from": 0, "to": 3}, "tool_output": output}));
            never(&hook("cursor", plugin, &event), &format!("Cursor {name}"));
            seen += 1;
        }
        assert_eq!(stored_records(&scratch), 0, "nothing was stored for an omitted result:\n{}", scratch.log());
    }
    assert_eq!(seen, 14);
    // The control: the same page as a fetch is pruned at each door.
    assert!(scratch.hook("claude-code", &claude_fetch("w-false")).contains("[Omitted by relevance"), "{}", scratch.log());
    assert!(scratch.hook("codex", &codex_fetch("w-false")).contains("[Omitted by relevance"), "{}", scratch.log());
    assert!(scratch.hook("gemini", &gemini_after_tool("w-false")).contains("\"body\":true"), "{}", scratch.log());
    let output = json!({"content": [{"type": "text", "text": page()}], "isError": false}).to_string();
    let fetch = with(fixture("cursor", "postToolUse.mcp.stdin.json"), json!({"conversation_id": "w-false", "tool_output": output}));
    assert!(scratch.hook("cursor", &fetch).contains("[Omitted by relevance"), "{}", scratch.log());
    assert_eq!(stored_records(&scratch), 4);
}

/// `toolprune doctor AGENT` run from `project`: its stdout.
fn doctor(scratch: &Scratch, agent: &str, project: &Path) -> String {
    let out = scratch.command(&["doctor", agent]).current_dir(project).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn without_toolprunes_mcp_server_every_hook_passes_the_result_unchanged_and_doctor_says_why() {
    let scratch = Scratch::new();
    let project = scratch.home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    // Nothing registered: the settings' files of every agent hold no toolprune server.
    for file in [".claude.json", ".cursor/mcp.json", ".codex/config.toml"] {
        std::fs::remove_file(scratch.home.join(file)).unwrap();
    }
    std::fs::write(scratch.home.join(".gemini/settings.json"), "{\"mcpServers\": {\"fetch\": {\"command\": \"uvx\"}}}\n").unwrap();
    let output = json!({"content": [{"type": "text", "text": page()}], "isError": false}).to_string();
    let cursor_fetch = |session: &str| with(fixture("cursor", "postToolUse.mcp.stdin.json"), json!({"conversation_id": session, "tool_output": output}));
    let run_all = |session: &str| -> Vec<String> {
        scratch.hook("claude-code", &claude_prompt(session));
        scratch.hook("codex", &codex_prompt(session));
        scratch.hook("gemini", &with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": session, "prompt": PROMPT})));
        scratch.hook("cursor", &with(fixture("cursor", "beforeSubmitPrompt.stdin.json"), json!({"prompt": PROMPT, "conversation_id": session})));
        vec![
            scratch.hook("claude-code", &claude_fetch(session)),
            scratch.hook("codex", &codex_fetch(session)),
            scratch.hook("gemini", &gemini_after_tool(session)),
            scratch.hook("cursor", &cursor_fetch(session)),
        ]
    };
    assert_eq!(run_all("none"), vec!["", "", "{}", "{}"], "every agent's no change:\n{}", scratch.log());
    assert_eq!(scratch.log().matches("reason=no_omitted_server").count(), 4, "{}", scratch.log());
    assert_eq!(stored_records(&scratch), 0, "no record, no id handed out");
    for agent in ["claude-code", "codex", "gemini", "cursor"] {
        let report = doctor(&scratch, agent, &project);
        assert!(report.contains("FAIL toolprune's MCP server (the model's `omitted` tool) is registered in none of"), "{agent}: {report}");
        assert!(report.contains("so the hooks pass every result unchanged"), "{agent}: {report}");
    }
    // Gemini CLI's server registered but neither trusted nor allowed: a headless run would not offer it.
    std::fs::write(scratch.home.join(".gemini/settings.json"), "{\"mcpServers\": {\"toolprune\": {\"command\": \"toolprune\", \"args\": [\"mcp\"]}}}\n").unwrap();
    scratch.hook("gemini", &with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": "untrusted", "prompt": PROMPT})));
    assert_eq!(scratch.hook("gemini", &gemini_after_tool("untrusted")), "{}");
    assert!(scratch.log().contains("reason=omitted_not_allowed"), "{}", scratch.log());
    assert!(doctor(&scratch, "gemini", &project).contains("FAIL mcpServers.toolprune is neither trusted"));
    // Claude Code: a project's `.mcp.json` is a way back, unless the user refused it.
    std::fs::write(project.join(".mcp.json"), r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"]}}}"#).unwrap();
    let in_project = |session: &str| with(claude_fetch(session), json!({"cwd": project}));
    scratch.hook("claude-code", &with(claude_prompt("proj"), json!({"cwd": project})));
    assert!(scratch.hook("claude-code", &in_project("proj")).contains("[Omitted by relevance"), "{}", scratch.log());
    assert!(doctor(&scratch, "claude-code", &project).contains("the model can call omitted"));
    let refused = json!({"projects": {project.to_string_lossy(): {"disabledMcpjsonServers": ["toolprune"]}}});
    std::fs::write(scratch.home.join(".claude.json"), refused.to_string()).unwrap();
    scratch.hook("claude-code", &with(claude_prompt("refused"), json!({"cwd": project})));
    assert_eq!(scratch.hook("claude-code", &in_project("refused")), "");
    // Registered everywhere: every door prunes, doctor agrees.
    register_omitted_servers(&scratch.home);
    let answers = run_all("registered");
    for (agent, answer) in ["claude-code", "codex", "gemini", "cursor"].iter().zip(&answers) {
        assert!(answer.contains("[Omitted by relevance") || answer.contains("\"body\":true"), "{agent}: {answer}\n{}", scratch.log());
        assert!(doctor(&scratch, agent, &project).contains("ok   the model can call omitted"), "{agent}");
    }
}
