"""A scripted HTTP server on 127.0.0.1 for the Jev conformance suite
(``test_jev_sdk.py``): records every request (method, path, headers, body,
arrival time) and answers through a function the test sets. Nothing here
knows toolprune or the SDK.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Optional

DROP = -1
"""A reply status that closes the connection without any HTTP answer."""


@dataclass(frozen=True)
class Received:
    """One request as it arrived."""

    method: str
    path: str
    headers: Dict[str, str]
    """Header names lowercased (HTTP names are case-insensitive)."""
    body: bytes
    at: float
    """``time.monotonic()`` when the request was read."""


@dataclass(frozen=True)
class Reply:
    """What to answer: ``status`` (or :data:`DROP`), headers, body."""

    status: int
    body: bytes = b""
    headers: Dict[str, str] = field(default_factory=dict)


Responder = Callable[[Received, int], Reply]
"""Gets the request and its 0-based number on this server; returns the reply."""


class Loopback:
    """``with Loopback(respond) as server:`` — ``server.base`` is
    ``http://127.0.0.1:PORT``; ``server.received`` the requests in order."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.received: List[Received] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: without this, Nagle
                # and the client's delayed ACK add ~40 ms to every answer.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                got = Received(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.monotonic(),
                )
                with outer._lock:
                    n = len(outer.received)
                    outer.received.append(got)
                reply = outer.respond(got, n)
                if reply.status == DROP:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_POST = _handle  # noqa: N815
            do_GET = _handle  # noqa: N815

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda *a: None  # type: ignore[method-assign]
        self._thread: Optional[threading.Thread] = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> "Loopback":
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()



def gaps(received: List[Received]) -> List[float]:
    """Seconds between consecutive requests (the client's waits, plus a round
    trip on loopback)."""
    return [b.at - a.at for a, b in zip(received, received[1:])]
