//! `toolprune stats` on the log the real doors wrote: the hooks, `toolprune
//! mcp` and `toolprune prune` as processes, on the captured payloads of each
//! agent (tests/fixtures/hooks/); and the log file's privacy (issue 27 §5:
//! symlinks planted at `toolprune.log` and at a session's `lock`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_toolprune");
const PROMPT: &str = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?";

fn fixture(agent: &str, name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks").join(agent).join(name);
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    if let Some(object) = value.as_object_mut() {
        object.retain(|k, _| !k.starts_with('_'));
    }
    value
}

fn with(mut event: Value, changes: Value) -> Value {
    for (k, v) in changes.as_object().unwrap() {
        event[k] = v.clone();
    }
    event
}

fn page() -> String {
    fixture("claude-code", "post_tool_use.mcp_fetch.json")["tool_response"][0]["text"].as_str().unwrap().to_string()
}

fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// A scratch HOME and store.
struct Scratch {
    dir: tempfile::TempDir,
    home: PathBuf,
    store: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        // toolprune's `omitted` server registered for every agent (the hooks prune only
        // where the model can read back: docs/hooks.md "No marker without a way back").
        for dir in [".gemini", ".cursor", ".codex"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::write(home.join(".gemini/settings.json"), r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"], "trust": true}}}"#).unwrap();
        std::fs::write(home.join(".claude.json"), r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"]}}}"#).unwrap();
        std::fs::write(home.join(".cursor/mcp.json"), r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"]}}}"#).unwrap();
        std::fs::write(home.join(".codex/config.toml"), "[mcp_servers.toolprune]\ncommand = \"toolprune\"\nargs = [\"mcp\"]\n").unwrap();
        let store = dir.path().join("store");
        Scratch { dir, home, store }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("TOOLPRUNE_STORE_DIR", &self.store)
            .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-hook-tests-cache"));
        command
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    fn hook(&self, agent: &str, event: &Value) -> String {
        let out = self.run(&["hook", agent], event.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stderr.is_empty(), "a hook never writes stderr: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    fn stats_json(&self, args: &[&str]) -> Value {
        let out = self.run(&[&["stats", "--json"], args].concat(), b"");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.store.join("toolprune.log")).unwrap_or_default()
    }
}

/// Claude Code: the prompt, then the fetch's PostToolUse; the pruned body.
fn pruned_claude(scratch: &Scratch, session: &str) -> String {
    let prompt = with(fixture("claude-code", "user_prompt_submit.json"), json!({"session_id": session, "prompt": PROMPT}));
    assert_eq!(scratch.hook("claude-code", &prompt), "");
    // Another page each time: the same call after a pruned result is a repeat, which passes whole (SPEC §2).
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let fetch = with(
        fixture("claude-code", "post_tool_use.mcp_fetch.json"),
        json!({"session_id": session, "tool_input": {"url": format!("http://127.0.0.1:8000/docs/page-{n}.html"), "max_length": 100000}}),
    );
    let out = scratch.hook("claude-code", &fetch);
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}\nlog: {}", scratch.log()));
    answer["hookSpecificOutput"]["updatedMCPToolOutput"][0]["text"].as_str().unwrap().to_string()
}

/// The first marker's range (`[… paragraphs 2–4 omitted …]`).
fn first_range(body: &str) -> (u64, u64) {
    let marker = body.lines().find(|l| l.starts_with("[… paragraph")).unwrap();
    let n: Vec<u64> = marker.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).take(2).map(|s| s.parse().unwrap()).collect();
    if marker.starts_with("[… paragraphs ") { (n[0], n[1]) } else { (n[0], n[0]) }
}

/// Speaks MCP to `toolprune mcp` over stdio; the text of each `omitted` call.
fn mcp_calls(scratch: &Scratch, calls: &[Value]) -> Vec<String> {
    let mut messages = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (i, arguments) in calls.iter().enumerate() {
        messages.push(json!({"jsonrpc": "2.0", "id": 1 + i, "method": "tools/call", "params": {"name": "omitted", "arguments": arguments}}));
    }
    let mut child = scratch.command(&["mcp"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut answers = Vec::new();
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        if message.get("id").is_none() {
            continue;
        }
        let reply: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if message["method"] == "tools/call" {
            answers.push(reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string());
        }
    }
    drop(stdin);
    let _ = child.wait();
    answers
}

/// The session token Claude Code's PreToolUse hook adds to an `omitted` call.
fn claude_token(scratch: &Scratch, session: &str) -> String {
    let pre = with(fixture("claude-code", "pre_tool_use.mcp_omitted.json"), json!({"session_id": session}));
    let out: Value = serde_json::from_str(&scratch.hook("claude-code", &pre)).unwrap();
    out["hookSpecificOutput"]["updatedInput"]["session"].as_str().unwrap().to_string()
}

fn row<'a>(report: &'a Value, agent: &str, tool: &str) -> &'a Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == agent && r["tool"] == tool)
        .unwrap_or_else(|| panic!("no row {agent} {tool}: {report:#}"))
}

#[test]
fn stats_counts_what_the_hooks_pruned_and_what_omitted_read_back_in_each_agent() {
    let scratch = Scratch::new();
    let page = page();

    // Claude Code: pruned, then omitted through the MCP server: one range
    // twice (read once), and an id the store never gave.
    let body = pruned_claude(&scratch, "c-1");
    let token = claude_token(&scratch, "c-1");
    let (from, to) = first_range(&body);
    let read = json!({"id": "P1", "from": from, "to": to, "session": token});
    let answers = mcp_calls(&scratch, &[read.clone(), read, json!({"id": "P7", "from": 0, "to": 1, "session": token})]);
    assert!(page.contains(answers[0].as_str()) && answers[0] == answers[1]);
    assert!(answers[2].starts_with("There is no text with id=P7"));

    // Gemini CLI: pruned (the body comes back through a tail call: not a read-back).
    let prompt = with(fixture("gemini", "BeforeAgent.stdin.json"), json!({"session_id": "g-1", "prompt": PROMPT}));
    scratch.hook("gemini", &prompt);
    let wrapped = format!("<untrusted_context>\n{page}\n</untrusted_context>");
    let after = with(
        fixture("gemini", "AfterTool.mcp_fetch_fetch.stdin.json"),
        json!({"session_id": "g-1", "tool_response": {"llmContent": [{"text": wrapped}], "returnDisplay": page}}),
    );
    let tail: Value = serde_json::from_str(&scratch.hook("gemini", &after)).unwrap();
    let gemini_body = &mcp_calls(&scratch, &[tail["hookSpecificOutput"]["tailToolCallRequest"]["args"].clone()])[0];
    assert!(gemini_body.contains("id=P1]"), "{gemini_body}");

    let report = scratch.stats_json(&[]);
    assert_eq!(report["schema"], 1);
    assert_eq!(report["tokens"], json!({"estimate": true, "chars_per_token": 4.0}));
    assert_eq!(report["log"]["skipped"], 0, "{:#}", report["log"]);
    let claude = row(&report, "claude-code", "mcp__docs__fetch");
    let removed = chars(&page) - chars(&body);
    assert_eq!((claude["seen"].as_u64(), claude["attempted"].as_u64(), claude["pruned"].as_u64()), (Some(1), Some(1), Some(1)));
    assert_eq!(claude["outcomes"], json!({"ok": 1}));
    assert_eq!(claude["chars"]["removed"], removed, "what the model did not read");
    assert_eq!(claude["chars"]["pruned"], chars(&page));
    assert_eq!(claude["tokens_removed"], (removed as f64 / 4.0).round() as u64);
    assert_eq!(claude["omitted"]["calls"], 2, "both calls of P1 are on the fetch's row");
    assert_eq!(claude["omitted"]["chars_read_back"], chars(&answers[0]), "the same range twice is read once");
    let share = claude["read_back_share"].as_f64().unwrap();
    assert!((share - chars(&answers[0]) as f64 / removed as f64).abs() < 1e-12);
    assert_eq!(row(&report, "claude-code", "-")["omitted"]["outcomes"], json!({"not_found": 1}));
    let gemini = row(&report, "gemini", "mcp_fetch_fetch");
    assert_eq!(gemini["chars"]["removed"], chars(&page) - chars(gemini_body));
    assert_eq!(gemini["omitted"]["calls"], 0, "the tail call that fetches the body is not a read-back");
    assert_eq!(report["total"]["pruned"], 2);
    assert_eq!(report["by_agent"].as_array().unwrap().len(), 2);

    // The table shows the same, and --agent/--tool filter it.
    let table = String::from_utf8(scratch.run(&["stats"], b"").stdout).unwrap();
    assert!(table.starts_with("DAY "), "{table}");
    assert!(table.lines().any(|l| l.contains("claude-code") && l.contains("mcp__docs__fetch") && l.contains(&format!(" {removed} "))), "{table}");
    assert!(!table.contains('\x1b'), "no colour when stdout is not a terminal");
    let only = scratch.stats_json(&["--agent", "gemini"]);
    assert_eq!(only["total"]["pruned"], 1);
    assert_eq!(only["total"]["omitted"]["calls"], 0);
    let tool = scratch.stats_json(&["--tool", "mcp__docs__fetch", "--since", "1h"]);
    assert_eq!(tool["total"]["omitted"]["chars_read_back"], chars(&answers[0]));
    let future = scratch.stats_json(&["--since", "2999-01-01"]);
    assert_eq!(future["rows"], json!([]));
    // No text of the page or the request in the log.
    let log = scratch.log();
    for piece in ["index a Rust String", page.lines().find(|l| l.len() > 40).unwrap()] {
        assert!(!log.contains(piece), "the log carries counts, never text");
    }
}

#[test]
fn toolprune_prune_writes_to_an_existing_stores_log_and_creates_no_store() {
    let scratch = Scratch::new();
    let run = |scratch: &Scratch| scratch.run(&["prune", "--request", PROMPT, "--tool", "docs", "-"], page().as_bytes());
    assert!(run(&scratch).status.success());
    assert!(!scratch.store.exists(), "a text command creates no directory");
    std::fs::create_dir_all(&scratch.store).unwrap();
    set_mode(&scratch.store, 0o700);
    let out = run(&scratch);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let log = scratch.log();
    assert!(log.ends_with(&format!(" {stderr}")) && log.contains(" id=P1 tool prune: agent=cli name=docs outcome=ok"), "{log}");
    let report = scratch.stats_json(&["--agent", "cli"]);
    assert_eq!(report["total"]["pruned"], 1);
}

#[test]
fn corrupt_truncated_and_older_lines_are_skipped_or_read_never_fatal() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(&scratch.store).unwrap();
    set_mode(&scratch.store, 0o700);
    let lines = [
        // An older writer's lines: the time only.
        "1767312000 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok shape=text raw_chars=10000 kept_chars=4000 paragraphs=20 dropped=8 calls=2 jev_tokens=0 ms=- threshold=0.2 ratio=0.6 scorer=offline",
        "1767312001 tool omitted: agent=claude-code id=P1 from=1 to=2 chars=700 outcome=ok",
        "1767312002 hook: agent=claude-code event=PostToolUse answer=replace ms=35",
        "not a line at all",
        "1767312003 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok raw_chars=12",
    ];
    let mut text = lines.join("\n").into_bytes();
    text.extend_from_slice(b"\n1767312004 \xff\xfe\n1767312005 tool prune: agent=claude-code name=mcp__do");
    std::fs::write(scratch.store.join("toolprune.log"), &text).unwrap();
    std::fs::write(scratch.store.join("toolprune.log.1"), "1767225600 tool prune: agent=gemini name=mcp_docs_fetch outcome=nothing_dropped shape=text raw_chars=5000 kept_chars=5000 paragraphs=3 dropped=0 calls=1 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=offline\n").unwrap();
    let report = scratch.stats_json(&[]);
    assert_eq!(report["log"]["files"], 2);
    assert_eq!(report["log"]["skipped"], 4, "garbage, a missing count, not UTF-8, cut short: {:#}", report["log"]);
    assert_eq!(report["log"]["other"], 1);
    assert_eq!(report["by_day"].as_array().unwrap().iter().map(|d| d["key"].as_str().unwrap()).collect::<Vec<_>>(), ["2026-01-01", "2026-01-02"]);
    assert_eq!(report["total"]["chars"]["removed"], 6000);
    // The read-back of an older line has no session: it is counted, on the tool `-`.
    assert_eq!(report["total"]["omitted"]["chars_read_back"], 700);
    let out = scratch.run(&["stats"], b"");
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("4 corrupt or truncated lines skipped."));
}

#[test]
fn bad_arguments_are_usage_errors_and_an_empty_store_is_an_empty_report() {
    let scratch = Scratch::new();
    let out = scratch.run(&["stats", "--since", "last tuesday"], b"");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("expected a date"), "{stderr}");
    let out = scratch.run(&["stats"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("No results logged yet"));
    assert!(!scratch.store.exists(), "stats creates nothing");
    let html = scratch.dir.path().join("no-such-dir/report.html");
    let out = scratch.run(&["stats", "--html", html.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().starts_with("toolprune stats: cannot write"));
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_at_the_log_is_refused_and_nothing_is_written_outside_the_root() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(&scratch.store).unwrap();
    set_mode(&scratch.store, 0o700);
    let outside = scratch.dir.path().join("outside.log");
    std::os::unix::fs::symlink(&outside, scratch.store.join("toolprune.log")).unwrap();
    // The hook prunes as ever (a log it cannot write is no reason not to)…
    let body = pruned_claude(&scratch, "s");
    assert!(body.contains("id=P1]"));
    // … and writes nothing through the link: not created, and not appended to.
    assert!(!outside.exists(), "the link's target was created outside the root");
    std::fs::write(&outside, "someone else's file\n").unwrap();
    pruned_claude(&scratch, "s");
    mcp_calls(&scratch, &[json!({"id": "P1", "from": 0, "to": 1, "session": claude_token(&scratch, "s")})]);
    assert!(scratch.run(&["prune", "--request", PROMPT, "-"], page().as_bytes()).status.success());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "someone else's file\n");
    // stats does not read through it either, and says so.
    let report = scratch.stats_json(&[]);
    assert_eq!(report["log"]["lines"], 0);
    assert_eq!(report["log"]["refused"].as_array().unwrap().len(), 1, "{:#}", report["log"]);
    let table = String::from_utf8(scratch.run(&["stats"], b"").stdout).unwrap();
    assert!(table.contains("not read: "), "{table}");
}

#[cfg(unix)]
#[test]
fn a_symlink_planted_at_a_sessions_lock_passes_the_result_unchanged_and_creates_nothing_outside() {
    let scratch = Scratch::new();
    pruned_claude(&scratch, "s");
    let session = std::fs::read_dir(&scratch.store).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    let outside = scratch.dir.path().join("outside-lock");
    std::fs::remove_file(session.join("lock")).unwrap();
    std::os::unix::fs::symlink(&outside, session.join("lock")).unwrap();
    let fetch = with(fixture("claude-code", "post_tool_use.mcp_fetch.json"), json!({"session_id": "s"}));
    assert_eq!(scratch.hook("claude-code", &fetch), "", "the agent's no change: the page reaches the model as it was");
    assert!(!outside.exists(), "the link's target was created outside the root");
    assert!(scratch.log().contains("answer=pass reason=store"), "{}", scratch.log());
}
