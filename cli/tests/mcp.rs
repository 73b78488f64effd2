//! `toolprune mcp` as a process on real pipes: no line the client writes
//! goes unanswered (issue 27 §7). A line that is not JSON gets −32700 with
//! `id: null`, JSON that is not a valid request −32600 with its `id` when it
//! has a usable one, a request whose params do not fit its method −32602,
//! an unknown method −32601, a line of 16 MiB or more −32600 with `id: null`
//! without being held in memory; and after each, a normal `omitted` call is
//! answered as before.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_toolprune");

/// How long a test waits for one answer before it calls it unanswered.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `toolprune mcp` with its own HOME and store; its stdout lines
/// arrive on a channel (read by a thread, so a missing answer is a timeout,
/// not a hang).
struct Server {
    _dir: tempfile::TempDir,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Server {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .arg("mcp")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path().join("home"))
            .env("TOOLPRUNE_STORE_DIR", dir.path().join("store"))
            .env("TOOLPRUNE_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolprune-mcp-tests-cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut server = Server { _dir: dir, child, stdin, lines };
        server.write(&json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}).to_string());
        let init = server.answers(1).remove(0);
        assert_eq!(init["id"], "init", "{init}");
        server.write(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
        server
    }

    /// Writes `line` and a line end.
    fn write(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next `n` answers (each must come within [`PATIENCE`]).
    fn answers(&mut self, n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| match self.lines.recv_timeout(PATIENCE) {
                Ok(line) => serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer {i} is not JSON ({e}): {line}")),
                Err(RecvTimeoutError::Timeout) => panic!("no answer {i} within {PATIENCE:?}: the server left a line unanswered"),
                Err(RecvTimeoutError::Disconnected) => panic!("the server stopped before answer {i}"),
            })
            .collect()
    }

    /// Writes a `tools/call` of `omitted` with `id` and returns nothing; its
    /// answer comes with the others.
    fn call_omitted(&mut self, id: u64) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "omitted", "arguments": {"id": "P1", "from": 0, "to": 3}}}).to_string());
    }

    /// The peak resident memory of the server so far, in bytes (Linux `VmHWM`).
    fn peak_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim().trim_end_matches("kB").trim().parse().unwrap();
        kb * 1024
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts that `answers` are exactly one error with `code` and `id`, and
/// the normal answer to the `omitted` call `call` (any order).
fn assert_error_then_served(answers: &[Value], code: i64, id: &Value, call: u64, what: &str) {
    let errors: Vec<&Value> = answers.iter().filter(|a| a.get("error").is_some()).collect();
    assert_eq!(errors.len(), 1, "{what}: one error answer: {answers:?}");
    assert_eq!(errors[0]["jsonrpc"], "2.0", "{what}: {}", errors[0]);
    assert_eq!(errors[0]["error"]["code"].as_i64(), Some(code), "{what}: {}", errors[0]);
    assert!(errors[0]["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {}", errors[0]);
    assert_eq!(&errors[0]["id"], id, "{what}: {}", errors[0]);
    let served = answers.iter().find(|a| a["id"] == call).unwrap_or_else(|| panic!("{what}: the omitted call after it: {answers:?}"));
    let text = served["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{what}: {served}"));
    assert!(text.starts_with("There is no text with id=P1 here"), "{what}: the guest's answer: {text}");
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_with_a_null_id_and_the_server_goes_on() {
    let mut server = Server::start();
    for (n, line) in ["hello", "{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"tools/list\"", "{} {}", "\u{7f}\u{1}"].into_iter().enumerate() {
        let call = 100 + n as u64;
        server.write(line);
        server.call_omitted(call);
        let answers = server.answers(2);
        assert_error_then_served(&answers, -32700, &Value::Null, call, line);
    }
}

#[test]
fn json_that_is_not_a_valid_request_gets_invalid_request_with_its_id_when_it_has_one() {
    let mut server = Server::start();
    let cases = [
        (r#"{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "not an object"}"#, json!(7)),
        (r#"{"jsonrpc": "2.0", "id": "req-8", "method": 8}"#, json!("req-8")),
        (r#"{"jsonrpc": "1.0", "id": 9, "method": "tools/list"}"#, json!(9)),
        (r#"{"jsonrpc": "2.0", "id": [9], "method": "tools/list"}"#, Value::Null),
        (r#"{"id": 10}"#, json!(10)),
        (r#"[{"jsonrpc": "2.0", "id": 11, "method": "tools/list"}]"#, Value::Null),
        (r#"42"#, Value::Null),
    ];
    for (n, (line, id)) in cases.into_iter().enumerate() {
        let call = 200 + n as u64;
        server.write(line);
        server.call_omitted(call);
        let answers = server.answers(2);
        assert_error_then_served(&answers, -32600, &id, call, line);
    }
}

#[test]
fn a_request_whose_params_do_not_fit_gets_invalid_params_and_an_unknown_method_method_not_found() {
    let mut server = Server::start();
    let cases = [
        (r#"{"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {}}"#, -32602),
        (r#"{"jsonrpc": "2.0", "id": "q-31", "method": "tools/call", "params": {"name": 5}}"#, -32602),
        (r#"{"jsonrpc": "2.0", "id": 32, "method": "tools/call"}"#, -32602),
        (r#"{"jsonrpc": "2.0", "id": 33, "method": "tools/call", "params": {"name": "nope"}}"#, -32602),
        (r#"{"jsonrpc": "2.0", "id": 34, "method": "no/such/method", "params": {}}"#, -32601),
    ];
    for (n, (line, code)) in cases.into_iter().enumerate() {
        let call = 300 + n as u64;
        server.write(line);
        server.call_omitted(call);
        let answers = server.answers(2);
        let id: Value = serde_json::from_str::<Value>(line).unwrap()["id"].clone();
        assert_error_then_served(&answers, code, &id, call, line);
    }
}

#[test]
fn a_line_of_16_mib_or_more_is_refused_unheld_and_the_server_goes_on() {
    let mut server = Server::start();
    let before = server.peak_memory();
    // Exactly 16 MiB, then 64 MiB of a JSON-looking line: each is refused
    // with one error, id null.
    for (n, len) in [16usize << 20, 64 << 20].into_iter().enumerate() {
        let call = 300 + n as u64;
        let mut line = String::with_capacity(len);
        line.push_str(r#"{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "omitted", "arguments": {"pad": ""#);
        line.push_str(&"x".repeat(len - line.len() - 4));
        line.push_str(r#""}}}"#);
        assert_eq!(line.len(), len);
        server.write(&line);
        drop(line);
        server.call_omitted(call);
        let answers = server.answers(2);
        assert_error_then_served(&answers, -32600, &Value::Null, call, &format!("a line of {len} bytes"));
    }
    let grown = server.peak_memory().saturating_sub(before);
    assert!(grown < 40 << 20, "the 64 MiB line was held in memory: peak grew by {grown} bytes");
    // Just under the cap is a request like any other.
    let head = r#"{"jsonrpc": "2.0", "id": 399, "method": "tools/call", "params": {"name": "omitted", "arguments": {"id": "P1", "from": 0, "to": 0, "pad": ""#;
    let tail = r#""}}}"#;
    let line = format!("{head}{}{tail}", "y".repeat((16 << 20) - 1 - head.len() - tail.len()));
    assert_eq!(line.len(), (16 << 20) - 1);
    server.write(&line);
    let answer = server.answers(1).remove(0);
    assert_eq!(answer["id"], 399, "{}", &answer.to_string()[..200.min(answer.to_string().len())]);
    assert!(answer.get("result").is_some(), "under the cap: served: {}", &answer.to_string()[..300.min(answer.to_string().len())]);
}

#[test]
fn a_last_line_without_a_line_end_is_still_answered_before_the_server_ends() {
    let mut server = Server::start();
    let stdin = server.stdin.as_mut().unwrap();
    stdin.write_all(b"not json\n").unwrap();
    stdin.write_all(json!({"jsonrpc": "2.0", "id": 500, "method": "tools/call", "params": {"name": "omitted", "arguments": {"id": "P1", "from": 0, "to": 0}}}).to_string().as_bytes()).unwrap();
    drop(server.stdin.take());
    let answers = server.answers(2);
    assert_error_then_served(&answers, -32700, &Value::Null, 500, "unterminated at the end");
}
