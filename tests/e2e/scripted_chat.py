"""A scripted, loopback stand-in for an OpenAI-compatible Chat Completions API, as OpenCode streams it.

OpenCode talks to it through a provider using ``@ai-sdk/openai-compatible`` with
``options.baseURL = "http://127.0.0.1:PORT/v1"`` (FACTS-opencode.md). Requests are
``POST /v1/chat/completions``, ``stream: true``, the whole history in ``messages`` every
time. Each new session also sends one title request (no ``tools``): it is answered with a
short title and recorded apart (``title_requests``), so that a script sees only the
agent's own requests.

The answer is SSE: one ``chat.completion.chunk`` with the assistant's text and/or its
tool calls (:func:`tool_call`), one with the ``finish_reason`` and ``usage``, then
``data: [DONE]``. A script returns ``(text, [tool calls])``; one raising answers 500 with
its text (recorded in ``errors``).

Every agent request is recorded (``requests``: the parsed bodies). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["ScriptedChat", "tool_call", "is_title_request"]


def tool_call(name: str, arguments: dict, call_id: str) -> dict:
    """One tool call (OpenCode names an MCP tool ``<server>_<tool>``)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def is_title_request(body: dict) -> bool:
    """OpenCode's title request: no tools, a system prompt asking for a title."""
    if body.get("tools"):
        return False
    system = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
    return "title" in system.lower()


class ScriptedChat:
    """The server; ``script(body) -> (text, tool_calls)``. A context manager; ``url`` is ``…/v1``."""

    def __init__(self, script: Callable[[dict], tuple[str, list[dict]]]):
        self.requests: list[dict] = []
        self.title_requests: list[dict] = []
        self.errors: list[str] = []
        owner = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(404, "application/json", b'{"error": {"message": "not scripted"}}')

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                if not self.path.endswith("/chat/completions") or not isinstance(body, dict):
                    self._send(404, "application/json", b'{"error": {"message": "not scripted"}}')
                    return
                with lock:
                    if is_title_request(body):
                        owner.title_requests.append(body)
                        text, calls = "Scripted title", []
                    else:
                        owner.requests.append(body)
                        try:
                            text, calls = script(body)
                        except Exception as exc:  # the test sees it in errors
                            owner.errors.append(f"{type(exc).__name__}: {exc}")
                            self._send(500, "application/json", json.dumps({"error": {"message": str(exc)}}).encode())
                            return
                cid, created = f"chatcmpl-{len(owner.requests)}", int(time.time())

                def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
                    c: dict = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": body.get("model"),
                               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    if usage:
                        c["usage"] = usage
                    return f"data: {json.dumps(c)}\n\n".encode()

                delta: dict = {"role": "assistant", "content": text or ""}
                if calls:
                    delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(calls)]
                data = chunk(delta) + chunk({}, "tool_calls" if calls else "stop",
                                            {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
                data += b"data: [DONE]\n\n"
                self._send(200, "text/event-stream", data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedChat":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
