//! A loopback HTTP/1.1 server on 127.0.0.1 that plays Jev, for the Jev
//! tests and the benchmark (no real key, no network beyond loopback).
//!
//! Each connection gets a thread; keep-alive is honoured. The server records
//! every request (method, path, headers, body) and the largest number of
//! requests it was handling at once (from the request's last byte read to
//! just before its answer is written). A [`Handler`] decides each answer.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// 0-based order of arrival over the server's life.
    pub n: usize,
    pub at: Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (the test may parse Jev JSON; the host never does).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }

    /// The chunk names of the request (`p0`, `p1`, …), by paragraph number
    /// (serde_json's map sorts keys as strings: `p100` before `p96`).
    pub fn chunk_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.json()["state"]["chunks"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        names.sort_by_key(|n| n[1..].parse::<u32>().unwrap_or(u32::MAX));
        names
    }
}

/// How the server answers one request.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Never answer (until the server is dropped or 60 s pass).
    pub stall: bool,
    /// Close the connection without an answer (a network error).
    pub close: bool,
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: format!("{{\"error\":\"status {status}\",\"echo\":\"Authorization: Bearer <echoed>\"}}"),
            delay: Duration::ZERO,
            stall: false,
            close: false,
        }
    }

    pub fn ok(body: impl Into<String>) -> Reply {
        Reply {
            body: body.into(),
            ..Reply::status(200)
        }
    }

    pub fn stall() -> Reply {
        Reply {
            stall: true,
            ..Reply::status(200)
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

pub type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A Jev answer (bare body) for every question of `seen`, each paragraph
/// `pN` scored `score(N)`, `usage.input_tokens` = 100 per chunk.
pub fn answer_all(seen: &Seen, score: impl Fn(u32) -> serde_json::Value) -> String {
    let names = seen.chunk_names();
    let answers: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .map(|name| {
            let n: u32 = name[1..].parse().expect("chunk names are pN");
            (name.clone(), serde_json::json!({"type": "noul", "noul": score(n)}))
        })
        .collect();
    serde_json::json!({
        "model": "jev-1.13.0",
        "answers": answers,
        "usage": {"input_tokens": 100 * names.len(), "output_tokens": 0},
    })
    .to_string()
}

/// The same answer in Cloudflare's envelope.
pub fn envelope(bare: &str) -> String {
    format!(r#"{{"success":true,"result":{bare},"errors":[],"messages":[]}}"#)
}

struct State {
    handler: Box<Handler>,
    seen: Mutex<Vec<Seen>>,
    count: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    connections: AtomicUsize,
    max_connections: AtomicUsize,
    shutdown: AtomicBool,
}

/// The running server; stops accepting when dropped.
pub struct FakeJev {
    addr: SocketAddr,
    state: Arc<State>,
}

impl FakeJev {
    /// Starts a server answering with `handler`.
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> FakeJev {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            handler: Box::new(handler),
            seen: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            max_connections: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
        });
        let accept_state = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_state.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let state = accept_state.clone();
                let open = state.connections.fetch_add(1, Ordering::SeqCst) + 1;
                state.max_connections.fetch_max(open, Ordering::SeqCst);
                std::thread::spawn(move || {
                    serve(stream, &state);
                    state.connections.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        FakeJev { addr, state }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Seen> {
        let mut seen = self.state.seen.lock().unwrap().clone();
        seen.sort_by_key(|s| s.n);
        seen
    }

    /// The largest number of TCP connections open at once.
    pub fn max_connections(&self) -> usize {
        self.state.max_connections.load(Ordering::SeqCst)
    }

    /// The largest number of requests handled at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for FakeJev {
    fn drop(&mut self) {
        self.state.shutdown.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, state: &State) {
    let _ = stream.set_nodelay(true);
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let Some(mut seen) = read_request(&mut reader) else { return };
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        seen.n = state.count.fetch_add(1, Ordering::SeqCst);
        state.seen.lock().unwrap().push(seen.clone());
        let reply = (state.handler)(&seen);
        if reply.stall {
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until && !state.shutdown.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            state.in_flight.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        if !reply.delay.is_zero() {
            std::thread::sleep(reply.delay);
        }
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        if reply.close {
            let _ = writer.shutdown(std::net::Shutdown::Both);
            return;
        }
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            reply.status,
            reply.body.len()
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(reply.body.as_bytes()).is_err()
            || writer.flush().is_err()
        {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let find = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if let Some(len) = find("content-length") {
        let len: usize = len.parse().ok()?;
        body.resize(len, 0);
        reader.read_exact(&mut body).ok()?;
    } else if find("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
        n: 0,
        at: Instant::now(),
    })
}
