//! `--url`: a Streamable HTTP upstream, through rmcp's Streamable HTTP client
//! transport (`StreamableHttpClientTransport` on reqwest with rustls): it
//! does the HTTP side — POSTs, the SSE streams, `Mcp-Session-Id`, protocol
//! headers, resumption, session re-initialisation, both protocol eras.
//!
//! That transport is typed: each client line is parsed into rmcp's
//! `ClientJsonRpcMessage` and each server message arrives as a
//! `ServerJsonRpcMessage`, re-serialized here for the client. So over HTTP
//! the proxy is transparent at the level of rmcp's model (what the model
//! does not know — an unknown field of a known type — may be dropped, key
//! order follows the model), not byte for byte as over stdio. The pruning,
//! `omitted` and the basis are the same ([`super::Core`]).

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio::io::BufReader;
use tokio::sync::mpsc;

use super::{message, next_line, start_setup, write_lines, Core, ProxyArgs};

/// Runs the proxy against the Streamable HTTP server at `url`; the exit
/// code is 0 when the client closed the connection, 1 when the server
/// connection failed.
pub async fn run(args: &ProxyArgs, url: String) -> u8 {
    let mut headers = HashMap::new();
    let mut auth = None;
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            eprintln!("toolprune mcp-proxy: --header {header:?}: expected `Name: value`");
            return 2;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("authorization") {
            auth = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_string());
            continue;
        }
        match (name.parse::<::http::HeaderName>(), value.parse::<::http::HeaderValue>()) {
            (Ok(n), Ok(v)) => {
                headers.insert(n, v);
            }
            _ => {
                eprintln!("toolprune mcp-proxy: --header {name:?}: not a valid HTTP header");
                return 2;
            }
        }
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = headers;
    config.auth_header = auth;
    config.allow_stateless = true;
    let mut transport = StreamableHttpClientTransport::from_config(config);

    let core = Core::new();
    start_setup(&core, args);
    let (to_client, client_rx) = mpsc::unbounded_channel::<String>();
    let (to_upstream, mut upstream_rx) = mpsc::unbounded_channel::<String>();
    let client_writer = tokio::spawn(write_lines(client_rx, tokio::io::stdout()));
    let client_reader = {
        let core: Arc<Core> = core.clone();
        let to_client = to_client.clone();
        tokio::spawn(async move {
            let mut stdin = BufReader::new(tokio::io::stdin());
            let mut buf = Vec::new();
            while let Some(line) = next_line(&mut stdin, &mut buf).await {
                core.ready_for(&line).await;
                core.from_client(line, &to_upstream, &to_client);
            }
        })
    };
    let mut code = 0;
    loop {
        tokio::select! {
            line = upstream_rx.recv() => {
                let Some(line) = line else { break };
                match serde_json::from_str::<ClientJsonRpcMessage>(&line) {
                    Ok(msg) => {
                        let sending = transport.send(msg);
                        let to_client = to_client.clone();
                        let raw_id = match message::classify(&line) {
                            message::Line::Request { raw_id, .. } => Some(raw_id.get().to_string()),
                            _ => None,
                        };
                        tokio::spawn(async move {
                            if let Err(e) = sending.await {
                                eprintln!("toolprune mcp-proxy: the server did not take a message: {e}");
                                if let Some(id) = raw_id {
                                    let _ = to_client.send(message::error_line(&id, -32603, &format!("upstream: {e}")));
                                }
                            }
                        });
                    }
                    Err(e) => {
                        if let message::Line::Request { raw_id, .. } = message::classify(&line) {
                            let _ = to_client.send(message::error_line(raw_id.get(), -32600, &format!("invalid request: {e}")));
                        }
                    }
                }
            }
            msg = transport.receive() => {
                let Some(msg) = msg else {
                    code = 1;
                    break;
                };
                match serde_json::to_string::<ServerJsonRpcMessage>(&msg) {
                    Ok(line) => core.from_upstream(line + "\n", &to_client),
                    Err(e) => eprintln!("toolprune mcp-proxy: a server message could not be encoded: {e}"),
                }
            }
        }
    }
    core.cancel_all();
    for _ in 0..200 {
        if !core.busy() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let _ = transport.close().await;
    client_reader.abort();
    drop(to_client);
    drop(core);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), client_writer).await;
    code
}
