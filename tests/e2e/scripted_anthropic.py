"""A scripted Anthropic Messages API on 127.0.0.1, for running the real Claude Code CLI offline.

`ScriptedAnthropic(script)` listens on a free loopback port (threaded) and answers:

- ``POST /v1/messages`` — streaming (``"stream": true``, Server-Sent Events in the
  order the real API sends them: ``message_start``, ``ping``, per content block
  ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
  ``input_json_delta``) / ``content_block_stop``, ``message_delta`` with the
  ``stop_reason``, ``message_stop``) or non-streaming (one ``message`` JSON object).
- ``POST /v1/messages/count_tokens`` — ``{"input_tokens": N}`` (N = body bytes / 4).
- anything else — logged, answered ``404`` with an Anthropic-shaped error body.

Which requests reach the *script*: every ``POST /v1/messages`` that is a **main**
request of the agent loop (see `is_side_request`). Side requests — calls the CLI
makes on the same endpoint for itself, recognised by having no ``tools`` (with
Claude Code 2.1.332 offline: WebFetch's page digest; FACTS.md) — get an answer
from `side_reply` and never consume a script step.

A *script* is either

- a callable ``script(req: MessagesRequest) -> Reply`` (it sees the whole JSON body,
  and ``req.index``, the 0-based number of the main request), or
- a list of `Reply` (or callables returning one), consumed one per main request;
  past its end the server answers a plain "done" text.

A `Reply` is a list of content blocks: `text("…")` and/or `tool_use(name, input)`;
the stop reason is ``tool_use`` when a tool_use block is present, else ``end_turn``.

``side`` replaces `side_reply`, the answer to side requests.

Every request (path, headers without the API key, parsed JSON body, whether it was
a side request) is recorded in ``server.requests`` in arrival order; a script that
raises is answered with HTTP 500 and the exception is kept in ``server.errors``, so
a test can fail with the real cause instead of the CLI's retry message.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Sequence, Union

__all__ = [
    "MessagesRequest",
    "RecordedRequest",
    "Reply",
    "ScriptedAnthropic",
    "is_side_request",
    "text",
    "tool_use",
]

_ids = itertools.count(1)


@dataclass
class Reply:
    """The assistant's answer to one main request: content blocks (Anthropic shapes)."""

    blocks: list[dict[str, Any]]

    def __add__(self, other: "Reply") -> "Reply":
        return Reply(self.blocks + other.blocks)

    @property
    def stop_reason(self) -> str:
        """``tool_use`` when the reply calls a tool, else ``end_turn``."""
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


def text(body: str) -> Reply:
    """A reply made of one text block."""
    return Reply([{"type": "text", "text": body}])


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> Reply:
    """A reply made of one tool_use block; ``id`` defaults to a fresh ``toolu_e2e_N``."""
    return Reply(
        [{"type": "tool_use", "id": id or f"toolu_e2e_{next(_ids):04d}", "name": name, "input": input}]
    )


@dataclass
class MessagesRequest:
    """One ``POST /v1/messages`` body as the script sees it.

    ``body`` is the parsed JSON; ``index`` is the 0-based number of this main
    request on the server (side requests are not counted).
    """

    body: dict[str, Any]
    index: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def tool_names(self) -> list[str]:
        """The names in the request's ``tools`` list, in order."""
        return [t.get("name", "") for t in self.body.get("tools", [])]

    @property
    def last_user_blocks(self) -> list[dict[str, Any]]:
        """The content blocks of the last ``user`` message (a string content becomes one
        text block). Claude Code 2.1.x may put a ``system`` message after it (the
        environment), so this is not always the last message."""
        users = [m for m in self.messages if m.get("role") == "user"]
        if not users:
            return []
        content = users[-1].get("content", [])
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        return list(content)

    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks of the last user message, in order."""
        return [b for b in self.last_user_blocks if b.get("type") == "tool_result"]

    def user_texts(self) -> list[str]:
        """The texts of the last user message's text blocks (Claude Code adds reminders here too)."""
        return [b.get("text", "") for b in self.last_user_blocks if b.get("type") == "text"]

    def has_prompt(self, prompt: str) -> bool:
        """True when a text block of the last user message contains ``prompt`` (a new user turn)."""
        return any(prompt in t for t in self.user_texts())


Script = Union[Callable[[MessagesRequest], Reply], Sequence[Union[Reply, Callable[[MessagesRequest], Reply]]]]


@dataclass
class RecordedRequest:
    """A request as received: method, path (with query), headers (no key), JSON body or None."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    side: bool = False
    status: int = 200


def is_side_request(body: Any) -> bool:
    """True for the CLI's own calls to ``/v1/messages``: those with no ``tools``.

    Claude Code 2.1.x sends every agent-loop request with its tool list (the built-in
    tools are always there); its side calls (WebFetch's digest; with other settings,
    title or quota calls) send none. FACTS.md lists what was seen.
    """
    return not (isinstance(body, dict) and body.get("tools"))


def side_reply(body: dict[str, Any]) -> Reply:
    """The default answer to a side request.

    WebFetch's page digest (its one user message starts with ``Web page content:``)
    gets ``e2e digest of the fetched page``; anything else (title generation and
    the like) a JSON title, which those callers parse.
    """
    if "Web page content:" in json.dumps(body.get("messages", []))[:2000]:
        return text("e2e digest of the fetched page")
    return text('{"title": "E2E session"}')


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _usage(body: dict[str, Any]) -> dict[str, int]:
    return {
        "input_tokens": max(1, len(json.dumps(body)) // 4),
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def stream_events(reply: Reply, model: str, body: dict[str, Any], msg_id: str) -> Iterable[bytes]:
    """The SSE byte chunks of ``reply``, block by block, as the real API streams them."""
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _usage(body),
            },
        },
    )
    yield _sse("ping", {"type": "ping"})
    out_tokens = 0
    for i, block in enumerate(reply.blocks):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            chunks = _split(block["text"], 3)
            for c in chunks:
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": c}})
            out_tokens += max(1, len(block["text"]) // 4)
        elif block["type"] == "tool_use":
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}},
            )
            raw = json.dumps(block["input"])
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": ""}})
            for c in _split(raw, 3):
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": c}})
            out_tokens += max(1, len(raw) // 4)
        else:
            raise ValueError(f"unsupported block type {block['type']!r}")
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": i})
    yield _sse(
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None}, "usage": {"output_tokens": out_tokens}},
    )
    yield _sse("message_stop", {"type": "message_stop"})


def _split(s: str, parts: int) -> list[str]:
    """``s`` in up to ``parts`` non-empty pieces (the real API streams in fragments)."""
    if not s:
        return [""]
    step = max(1, -(-len(s) // parts))
    return [s[i : i + step] for i in range(0, len(s), step)]


class ScriptedAnthropic:
    """A loopback Messages API driven by a script; use as a context manager.

    Attributes: ``url`` (``http://127.0.0.1:PORT``), ``requests`` (every
    `RecordedRequest`, in order), ``errors`` (exceptions raised by the script).
    """

    def __init__(self, script: Script, side: Callable[[dict[str, Any]], Reply] = side_reply):
        self._script = script
        self._side = side
        self._steps = None if callable(script) else list(script)
        self._lock = threading.Lock()
        self._main_count = 0
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "ScriptedAnthropic":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-anthropic", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(5)

    # -- views for assertions -------------------------------------------------

    def main_requests(self) -> list[dict[str, Any]]:
        """The bodies of the main ``/v1/messages`` requests, in order."""
        return [r.body for r in self.requests if r.path.split("?")[0] == "/v1/messages" and not r.side]

    def side_requests(self) -> list[RecordedRequest]:
        """The side ``/v1/messages`` requests (no tools), in order."""
        return [r for r in self.requests if r.path.split("?")[0] == "/v1/messages" and r.side]

    # -- internals ------------------------------------------------------------

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            index = self._main_count
            self._main_count += 1
        req = MessagesRequest(body, index)
        if self._steps is None:
            return self._script(req)  # type: ignore[operator]
        if index >= len(self._steps):
            return text("done")
        step = self._steps[index]
        return step(req) if callable(step) else step

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _read_body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                if not raw:
                    return None
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _record(self, body: Any, side: bool = False) -> RecordedRequest:
                headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in ("x-api-key", "authorization")}
                rec = RecordedRequest(self.command, self.path, headers, body, side)
                with server._lock:
                    server.requests.append(rec)
                return rec

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", f"req_e2e_{next(_ids)}")
                self.end_headers()
                self.wfile.write(data)

            def _not_found(self, rec: RecordedRequest) -> None:
                rec.status = 404
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"e2e: no {self.command} {self.path}"}})

            def do_GET(self) -> None:
                self._not_found(self._record(None))

            def do_HEAD(self) -> None:
                rec = self._record(None)
                rec.status = 404
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = self._read_body()
                path = self.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._record(body)
                    self._json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
                    return
                if path != "/v1/messages" or not isinstance(body, dict):
                    self._not_found(self._record(body))
                    return
                side = is_side_request(body)
                rec = self._record(body, side)
                try:
                    reply = server._side(body) if side else server._next_reply(body)
                except BaseException as e:  # the script's bug: make it visible
                    server.errors.append(e)
                    rec.status = 500
                    self._json(500, {"type": "error", "error": {"type": "api_error", "message": f"e2e script raised {e!r}"}})
                    return
                model = body.get("model", "claude-e2e")
                msg_id = f"msg_e2e_{next(_ids):04d}"
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.send_header("request-id", f"req_e2e_{next(_ids)}")
                    self.end_headers()
                    for chunk in stream_events(reply, model, body, msg_id):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    self.close_connection = True
                else:
                    self._json(
                        200,
                        {
                            "id": msg_id,
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": reply.blocks,
                            "stop_reason": reply.stop_reason,
                            "stop_sequence": None,
                            "usage": _usage(body),
                        },
                    )

        return Handler
