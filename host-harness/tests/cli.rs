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

#[test]
fn prune_writes_the_body_and_one_log_line() {
    let out = toolprune(
        &[
            "prune",
            "--request",
            "How does a client resume a broken SSE stream?",
            TRANSPORTS,
        ],
        b"",
    );
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("tool prune: agent=cli name=cli outcome="),
        "{stderr}"
    );
    let body = String::from_utf8(out.stdout).expect("utf-8");
    if stderr.contains("outcome=ok ") {
        assert!(body.len() < std::fs::read(TRANSPORTS).expect("corpus").len());
    } else {
        assert_eq!(
            body.as_bytes(),
            std::fs::read(TRANSPORTS).expect("corpus"),
            "raw text byte for byte"
        );
    }

    let json = toolprune(
        &[
            "prune",
            "--json",
            "--request",
            "How does a client resume a broken SSE stream?",
            TRANSPORTS,
        ],
        b"",
    );
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("a JSON report");
    assert_eq!(report["scorer"], "stub");
    assert!(report["paragraphs"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
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
