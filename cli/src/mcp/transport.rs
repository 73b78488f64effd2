//! The stdio transport of `toolprune mcp`: newline-delimited JSON-RPC, as
//! rmcp's own, except that **every line that is not a message gets an
//! answer** (issue 27 §7). rmcp's stdio transport ignores a line that is not
//! JSON and drops a line over its length cap without a word, so a client
//! that sent one waits forever; and it answers a malformed request without
//! its `id`. Here, per JSON-RPC 2.0 §5.1:
//!
//! - a line that is not JSON (or not UTF-8) → `-32700` Parse error, `"id": null`;
//! - JSON that is not a valid message (not an object, no `"jsonrpc": "2.0"`,
//!   a bad `method`, `id` or `params`) → `-32600` Invalid Request, with the
//!   line's `id` when it is a string or a number, else `null`; a
//!   well-formed *notification* is never answered (JSON-RPC: a notification
//!   gets no reply), as rmcp does;
//! - a line of [`MAX_LINE_BYTES`] or more → `-32600`, `"id": null`, sent as
//!   soon as the line reaches that size; the rest of the line is read and
//!   thrown away as it comes, so memory stays bounded by the cap;
//! - a blank line is skipped; a last line without a line end before the end
//!   of input is still a message.
//!
//! Then the server goes on reading. Everything else is handed to rmcp's
//! service as it parsed it, and rmcp's answers are written one per line.

use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinSet;

/// A line (without its line end) of this many bytes or more is refused
/// unread: 16 MiB, rmcp's own cap for one stdio message.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// JSON-RPC's code for a line that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request (and for an oversized line).
pub const INVALID_REQUEST: i64 = -32600;

/// The writer half, shared by rmcp's sends and the transport's own answers;
/// `None` once closed.
type Writer<W> = Arc<Mutex<Option<W>>>;

/// A stdio server transport for rmcp that answers every line that is not a
/// message (see the module's documentation). `R` is the client's side
/// (stdin), `W` the answers' (stdout).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read (its bytes so far, line end included once seen).
    line: Vec<u8>,
    /// Throwing away the rest of an oversized line until its line end.
    discarding: bool,
    write: Writer<W>,
    /// The transport's own answers being written: `receive` is polled inside
    /// a `select!` and may be dropped at any await, so an answer is written
    /// by a task of its own and never half-written; `close` waits for them.
    answers: JoinSet<()>,
}

/// What one bounded read gave.
enum Read {
    /// A whole line is in `line` (line end included, or none at end of input).
    Line,
    /// The line reached [`MAX_LINE_BYTES`]; what was read of it is gone.
    Oversized,
    /// End of input, or it cannot be read.
    End,
}

/// What to do with one line.
#[derive(Debug)]
enum Verdict {
    /// A message for the service.
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to do (a blank line, a notification rmcp does not know).
    Skip,
    /// This error answer, one JSON line.
    Answer(String),
}

/// The JSON-RPC error answer `{"jsonrpc":"2.0","id":ID,"error":{"code":…,"message":…}}`
/// (`id`: `null` when none).
pub fn error_answer(id: Option<&Value>, code: i64, message: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": {"code": code, "message": message}}).to_string()
}

/// The `id` of a JSON value that failed as a message, when it can name the
/// request for the client: a string or a number.
fn usable_id(value: &Value) -> Option<&Value> {
    value.get("id").filter(|id| id.is_string() || id.is_number())
}

/// A notification by its shape (an object with `"jsonrpc": "2.0"`, a string
/// `method` and no `id`): never answered, even when rmcp cannot take it.
fn is_notification(value: &Value) -> bool {
    value.get("jsonrpc").and_then(Value::as_str) == Some("2.0") && value.get("method").is_some_and(Value::is_string) && value.get("id").is_none()
}

/// Judges one line (its bytes, line end included or not).
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => return Verdict::Message(Box::new(message)),
        Err(e) => e,
    };
    let parse_error = || Verdict::Answer(error_answer(None, PARSE_ERROR, "Parse error: the line is not JSON"));
    if matches!(error.classify(), serde_json::error::Category::Syntax | serde_json::error::Category::Eof) {
        return parse_error();
    }
    let Ok(value) = serde_json::from_slice::<Value>(line) else { return parse_error() };
    if is_notification(&value) {
        return Verdict::Skip;
    }
    Verdict::Answer(error_answer(usable_id(&value), INVALID_REQUEST, "Invalid Request: not a valid JSON-RPC 2.0 request"))
}

/// Writes `line` and a line end to the writer, then flushes.
async fn write_line<W: AsyncWrite + Unpin>(write: &Mutex<Option<W>>, mut line: Vec<u8>) -> std::io::Result<()> {
    line.push(b'\n');
    let mut guard = write.lock().await;
    let out = guard.as_mut().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed"))?;
    out.write_all(&line).await?;
    out.flush().await
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading requests from `read` and writing answers to `write`.
    pub fn new(read: R, write: W) -> Self {
        LineTransport { read: BufReader::new(read), line: Vec::new(), discarding: false, write: Arc::new(Mutex::new(Some(write))), answers: JoinSet::new() }
    }

    /// Reads one line into `self.line`, never holding [`MAX_LINE_BYTES`] or
    /// more of it. Cancel-safe: bytes are moved from the buffer to `line`
    /// (or dropped) with no await in between, so a dropped read resumes
    /// where it was.
    async fn read_line(&mut self) -> Read {
        loop {
            let (consumed, done) = {
                let Ok(available) = self.read.fill_buf().await else { return Read::End };
                if available.is_empty() {
                    self.discarding = false;
                    return if self.line.is_empty() { Read::End } else { Read::Line };
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let content = newline.unwrap_or(available.len());
                let take = newline.map_or(available.len(), |at| at + 1);
                if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len() + content >= MAX_LINE_BYTES {
                    self.line = Vec::new();
                    self.discarding = newline.is_none();
                    (take, Some(Read::Oversized))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| Read::Line))
                }
            };
            self.read.consume(consumed);
            if let Some(done) = done {
                return done;
            }
        }
    }

    /// Sends one of the transport's own answers (on a task: see `answers`).
    fn answer(&mut self, line: String) {
        let write = self.write.clone();
        self.answers.spawn(async move {
            let _ = write_line(&write, line.into_bytes()).await;
        });
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&write, line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Answers already written are collected (the set stays small).
            while self.answers.try_join_next().is_some() {}
            match self.read_line().await {
                Read::Line => {}
                Read::Oversized => {
                    let refused = format!("Invalid Request: a message of {MAX_LINE_BYTES} bytes or more is refused");
                    self.answer(error_answer(None, INVALID_REQUEST, &refused));
                    continue;
                }
                Read::End => return None,
            }
            let verdict = judge(&self.line);
            self.line.clear();
            match verdict {
                Verdict::Message(message) => return Some(*message),
                Verdict::Skip => {}
                Verdict::Answer(line) => self.answer(line),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        while self.answers.join_next().await.is_some() {}
        let mut write = self.write.lock().await;
        if let Some(mut out) = write.take() {
            let _ = out.shutdown().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match judge(line.as_bytes()) {
            Verdict::Answer(text) => serde_json::from_str(&text).unwrap(),
            other => panic!("{line}: no answer but {other:?}"),
        }
    }

    #[test]
    fn a_line_that_is_not_json_is_a_parse_error_with_a_null_id() {
        for line in ["hello", "{\"jsonrpc\": \"2.0\", \"id\": 1", "{} trailing", "\u{1}", "{\"id\": 3,}"] {
            let a = answer(line);
            assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(PARSE_ERROR), &Value::Null), "{line}: {a}");
        }
        let Verdict::Answer(text) = judge(b"{\"id\": \"\xff\"}\n") else { panic!("invalid UTF-8") };
        assert!(text.contains("-32700"), "{text}");
    }

    #[test]
    fn json_that_is_not_a_request_is_invalid_with_its_id_when_it_has_one() {
        let cases = [
            (r#"{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "x"}"#, json_id(7)),
            (r#"{"jsonrpc": "1.0", "id": "a-1", "method": "ping"}"#, Value::from("a-1")),
            (r#"{"jsonrpc": "2.0", "id": 9, "method": 5}"#, json_id(9)),
            (r#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}"#, Value::Null),
            (r#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#, Value::Null),
            (r#"[1, 2]"#, Value::Null),
            (r#""hello""#, Value::Null),
            (r#"{"method": "ping"}"#, Value::Null),
        ];
        for (line, id) in cases {
            let a = answer(line);
            assert_eq!(a["error"]["code"].as_i64(), Some(INVALID_REQUEST), "{line}: {a}");
            assert_eq!(a["id"], id, "{line}: {a}");
            assert_eq!(a["jsonrpc"], "2.0");
        }
    }

    fn json_id(n: i64) -> Value {
        Value::from(n)
    }

    #[test]
    fn messages_go_to_the_service_and_blank_lines_and_notifications_are_not_answered() {
        assert!(matches!(judge(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\"}\r\n"), Verdict::Message(_)));
        assert!(matches!(judge(b"\xEF\xBB\xBF{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}"), Verdict::Message(_)));
        assert!(matches!(judge(b"  \r\n"), Verdict::Skip));
        assert!(matches!(judge(b"{\"jsonrpc\": \"2.0\", \"method\": \"notifications/cancelled\", \"params\": 5}"), Verdict::Skip));
    }
}
