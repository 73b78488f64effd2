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
fn split_lists_the_paragraphs_as_the_guest_sees_them() {
    let out = toolprune(&["split", "--json", TRANSPORTS], b"");
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let size = std::fs::metadata(TRANSPORTS).expect("corpus").len();
    assert_eq!(
        lines.first().map(|l| l["byte_start"].as_u64()),
        Some(Some(0))
    );
    assert_eq!(
        lines.last().map(|l| l["byte_end"].as_u64()),
        Some(Some(size)),
        "the spans cover the text"
    );

    let table = toolprune(&["split", TRANSPORTS], b"");
    let table = String::from_utf8(table.stdout).expect("utf-8");
    assert_eq!(
        table.lines().count(),
        lines.len() + 1,
        "a header and one line per paragraph"
    );
}

#[test]
fn an_unsupported_threshold_falls_back_to_0_2_and_says_so() {
    let out = toolprune(&["prune", "--threshold", "0.25", "--request", REQUEST, TRANSPORTS], b"");
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert!(stderr.contains(" threshold=0.2 "), "{stderr}");
    assert!(stderr.contains("warning: threshold 0.25 is not a supported value; 0.2 was used"), "{stderr}");
    let out = toolprune(&["prune", "--threshold", "0.3", "--request", REQUEST, TRANSPORTS], b"");
    assert!(!String::from_utf8(out.stderr).expect("utf-8").contains("warning"));
}
