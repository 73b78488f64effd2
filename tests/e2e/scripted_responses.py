"""A scripted, loopback stand-in for the OpenAI Responses API, as Codex CLI streams it.

Codex CLI talks to it through a custom provider (``model_provider = "scripted"``,
``[model_providers.scripted] base_url = "http://127.0.0.1:PORT/v1"``,
``wire_api = "responses"``, ``env_key = …``; FACTS-codex.md). Only ``POST /v1/responses``
arrives, ``stream: true``, ``store: false``, the whole history in ``input`` every time.

The answer is SSE: ``response.created``, one ``response.output_item.done`` per item the
script returns, ``response.completed`` with usage. Items: :func:`message` (assistant text)
and :func:`function_call` (an MCP tool is called as ``namespace`` ``mcp__SERVER`` +
``name`` TOOL). A script raising answers 500 with its text (recorded in ``errors``).

Every request is recorded (``requests``: the parsed bodies). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["ScriptedResponses", "message", "function_call"]


def message(text: str) -> dict:
    """An assistant message item saying ``text``."""
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def function_call(namespace: str | None, name: str, arguments: dict, call_id: str) -> dict:
    """A function-call item: ``name`` in ``namespace`` (MCP: ``mcp__<server>``) with ``arguments``."""
    item = {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}
    if namespace:
        item["namespace"] = namespace
    return item


class ScriptedResponses:
    """The server; ``script(body) -> list[item]``. A context manager; ``url`` is ``…/v1``."""

    def __init__(self, script: Callable[[dict], list[dict]]):
        self.requests: list[dict] = []
        self.errors: list[str] = []
        owner = self
        counter = [0]
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
                if not self.path.endswith("/responses") or not isinstance(body, dict):
                    self._send(404, "application/json", b'{"error": {"message": "not scripted"}}')
                    return
                with lock:
                    owner.requests.append(body)
                    counter[0] += 1
                    n = counter[0]
                    try:
                        items = script(body)
                    except Exception as exc:  # the test sees it in errors
                        owner.errors.append(f"{type(exc).__name__}: {exc}")
                        self._send(500, "application/json", json.dumps({"error": {"message": str(exc)}}).encode())
                        return
                rid = f"resp_{n}"
                events = [{"type": "response.created", "response": {"id": rid}}]
                for i, item in enumerate(items):
                    item = dict(item, id=f"item_{n}_{i}")
                    events.append({"type": "response.output_item.done", "output_index": i, "item": item})
                events.append({"type": "response.completed", "response": {"id": rid, "usage": {
                    "input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
                data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
                self._send(200, "text/event-stream", data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedResponses":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
