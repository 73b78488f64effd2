"""A scripted Jev server on 127.0.0.1 for the transport tests and the
conformance runner (``http.server`` in a thread; the test starts and stops
it). It decodes Jev JSON to answer; the transport under test never does."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional


@dataclass
class Reply:
    """What the server does with one request."""

    status: int = 200
    headers: Dict[str, str] = field(default_factory=dict)
    body: bytes = b"{}"
    delay: float = 0.0
    """Seconds to wait before answering."""
    stall: bool = False
    """Never answer (until the server stops)."""
    close: bool = False
    """Close the connection without an answer (a network error)."""


@dataclass
class Received:
    path: str
    headers: Dict[str, str]
    body: bytes


Respond = Callable[[int, int, Dict[str, Any]], Reply]
"""``respond(n, same, body)``: ``n`` the 0-based number of this request over
the server's life, ``same`` the number of earlier requests with the same
body, ``body`` the parsed request."""


def jev_answer(request: Dict[str, Any], default: float = 1.0, scores: Optional[Dict[str, float]] = None,
               model: str = "jev-1.13.0", envelope: bool = False, tokens_per_chunk: int = 100) -> bytes:
    """The conformance README's ANSWER RULE: every chunk ``pN`` of the request
    scores ``scores[N]`` else ``default``."""
    chunks = request.get("state", {}).get("chunks", {})
    answers = {
        name: {"type": "noul", "noul": (scores or {}).get(name[1:], default)} for name in chunks
    }
    body: Dict[str, Any] = {
        "model": model,
        "answers": answers,
        "usage": {"input_tokens": tokens_per_chunk * len(chunks), "output_tokens": 0},
    }
    if envelope:
        body = {"success": True, "result": body, "errors": [], "messages": []}
    return json.dumps(body).encode()


class Loopback:
    """The server. ``requests`` holds every request received; ``max_in_flight``
    the most that were unanswered at once."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.lock = threading.Lock()
        self.requests: List[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.per_body: Dict[bytes, int] = {}
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with server.lock:
                    n = len(server.requests)
                    same = server.per_body.get(raw, 0)
                    server.per_body[raw] = same + 1
                    server.requests.append(Received(self.path, dict(self.headers), raw))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                answered = False
                try:
                    try:
                        parsed = json.loads(raw)
                    except ValueError:
                        parsed = {}
                    reply = server.respond(n, same, parsed)
                    if reply.stall:
                        server.stopping.wait()
                        self.close_connection = True
                        return
                    if reply.delay and server.stopping.wait(reply.delay):
                        self.close_connection = True
                        return
                    # No longer in flight once the answer is decided, before it is
                    # written: the client may read it and send its next request first.
                    with server.lock:
                        server.in_flight -= 1
                        answered = True
                    if reply.close:
                        self.close_connection = True
                        return
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    if not answered:
                        with server.lock:
                            server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def close(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        time.sleep(0)
