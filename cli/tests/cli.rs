//! The `toolprune` binary: bytes out exactly, fail-open on what it cannot
//! read as text, one-line errors with their exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const TRANSPORTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/corpus/mcp-spec-2025-11-25-transports.mdx"
);

fn toolprune(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolprune"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolprune runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("toolprune exits")
}

/// The README's run command: the transports page with its manifest request.
const REQUEST: &str = "In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server messages? Also, when does the client have to send the MCP-Protocol-Version header?";

#[test]
fn prune_writes_the_pruned_body_and_one_log_line() {
    let out = toolprune(&["prune", "--threshold", "0.3", "--request", REQUEST, TRANSPORTS], b"");
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("tool prune: agent=cli name=cli outcome=ok shape=text raw_chars=15984 "),
        "{stderr}"
    );
    assert!(stderr.trim_end().ends_with(" scorer=offline"), "{stderr}");
    let body = String::from_utf8(out.stdout).expect("utf-8");
    let raw = std::fs::read_to_string(TRANSPORTS).expect("corpus");
    assert!(body.starts_with("[Omitted by relevance: "), "{}", &body[..200]);
    assert!(body.contains("id=P1]"));
    assert!(body.contains(" omitted: "), "a run marker");
    assert!(body.len() < raw.len());
    // Every kept line is a line of the input (markers aside).
    for line in body.lines().skip(1) {
        if line.starts_with("[… paragraph") || line.is_empty() {
            continue;
        }
        assert!(raw.contains(line), "not verbatim: {line}");
    }

    let json = toolprune(&["prune", "--json", "--scorer", "stub", "--request", REQUEST, TRANSPORTS], b"");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("a JSON report");
    assert_eq!(report["scorer"], "stub");
    assert_eq!(report["paragraphs"].as_array().map(Vec::len), Some(28));
    assert!(report["paragraphs"][0]["score"].is_number());
}

#[test]
fn input_that_is_not_utf8_passes_through_unchanged() {
    let bytes = b"caf\xe9 \xff\n\n".repeat(1000);
    let out = toolprune(
        &[
            "prune",
            "--request",
            "anything long enough to be a basis",
            "-",
        ],
        &bytes,
    );
    assert!(out.status.success());
    assert_eq!(out.stdout, bytes);
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn errors_are_one_line_with_their_exit_codes() {
    let unreadable = toolprune(&["prune", "--request", "x", "/nonexistent/page.md"], b"");
    assert_eq!(unreadable.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&unreadable.stderr).lines().count(),
        1
    );

    let usage = toolprune(&["prune", "--lang", "fr", "--request", "x"], b"");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn split_shows_the_guests_inspection() {
    let out = toolprune(&["split", "--json", TRANSPORTS], b"");
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["shape"], "text");
    assert_eq!(report["wrapper_span"], serde_json::Value::Null);
    let units = report["units"].as_array().expect("units");
    let size = std::fs::metadata(TRANSPORTS).expect("corpus").len();
    assert_eq!(units.first().map(|l| l["byte_start"].as_u64()), Some(Some(0)));
    assert_eq!(units.last().map(|l| l["byte_end"].as_u64()), Some(Some(size)), "the spans cover the text");
    assert!(units.iter().all(|u| ["scored", "fixed", "blank"].contains(&u["kind"].as_str().unwrap_or(""))));

    let table = toolprune(&["split", TRANSPORTS], b"");
    let table = String::from_utf8(table.stdout).expect("utf-8");
    assert!(table.starts_with("shape: text\n"), "{table}");
    assert_eq!(table.lines().count(), units.len() + 2, "the shape, a header and one line per unit");

    // A wrapper: its span, and the units of its decoded string.
    let wrapper = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/cases/wrapper-ascii-escaped.json");
    let out = toolprune(&["split", wrapper], b"");
    let table = String::from_utf8(out.stdout).expect("utf-8");
    assert!(table.starts_with("shape: json_wrapper (string literal at bytes "), "{table}");
    assert!(table.lines().nth(2).is_some_and(|l| l.ends_with("Section 0 on retries: this paragraph explains one detail of …")), "{table}");

    // Structured JSON is not pruned, and says so.
    let out = toolprune(&["split", "-"], br#"{"a": 1, "b": [1, 2]}"#);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "shape: none (not pruned: structured)\n");
}

#[test]
fn an_unsupported_threshold_is_refused_with_the_guests_message_and_the_text_passes_through() {
    for value in ["0.25", "-1", "NaN", "abc"] {
        let out = toolprune(&["prune", "--threshold", value, "--request", REQUEST, TRANSPORTS], b"");
        assert_eq!(out.status.code(), Some(2), "{value}");
        let stderr = String::from_utf8(out.stderr).expect("utf-8");
        assert!(stderr.contains(&format!("threshold \"{value}\" is not one of 0.1")), "{value}: {stderr}");
        assert_eq!(out.stdout, std::fs::read(TRANSPORTS).unwrap(), "{value}: fail-open");
    }
    let out = toolprune(&["prune", "--threshold", "0.30", "--request", REQUEST, TRANSPORTS], b"");
    assert!(out.status.success());
    assert!(String::from_utf8(out.stderr).expect("utf-8").contains(" threshold=0.3 "));
}

#[test]
fn negative_looking_values_are_values() {
    let out = toolprune(&["prune", "--request", "-how do I configure the retry limit for uploads?", "--agent", "-a", TRANSPORTS], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent=-a "));
}

/// The names in a launcher's `NATIVE_ONLY = …` set (the text from the name to
/// the closing bracket: every quoted word in it).
fn native_only(path: &str) -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../").to_string() + path).expect(path);
    let at = text.find("NATIVE_ONLY = ").unwrap_or_else(|| panic!("{path}: no NATIVE_ONLY"));
    let set = &text[at..];
    let set = &set[..set.find([']', ')']).expect("the set closes")];
    set.split(['\'', '"']).skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_npm_and_python_launchers_name_the_same_native_only_commands_as_the_binary_has() {
    let js = native_only("hosts/js/bin/toolprune.mjs");
    let py = native_only("hosts/python/src/_toolprune_launcher.py");
    assert_eq!(js, py, "the two launchers disagree");
    // Every command of the binary is native-only but the three the libraries run and
    // `hook` (answered apart: the agent's "no change").
    let help = String::from_utf8(toolprune(&["--help"], b"").stdout).expect("utf-8");
    let listed = help.split("Commands:\n").nth(1).expect("a command list");
    let mut commands: std::collections::BTreeSet<String> = listed
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| !["prune", "split", "route", "hook", "help"].contains(&c.as_str()))
        .collect();
    commands.insert("plugin".to_string()); // hidden from the list: `toolprune plugin build`
    assert_eq!(js, commands, "NATIVE_ONLY against `toolprune --help`");
    for command in &js {
        assert!(toolprune(&[command, "--help"], b"").status.success(), "toolprune {command} exists");
    }
}
