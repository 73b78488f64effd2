"""A scripted, loopback stand-in for the Gemini API (Generative Language v1beta).

Gemini CLI talks to it when started with ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT``
and ``GEMINI_API_KEY=<anything>`` (auth type "gateway"; see FACTS-gemini-cursor.md, §Offline
run). The server listens on 127.0.0.1 only, records every request, and answers model calls
from a *script*: a callable that sees each model request and returns the response chunks.

Endpoints (all under ``/v1beta/models/{model}``):

- ``POST :streamGenerateContent?alt=sse`` → ``text/event-stream``, one ``data: <json>\\r\\n\\r\\n``
  event per chunk (each chunk a ``GenerateContentResponse``), as the @google/genai SDK parses it.
- ``POST :generateContent`` → one ``GenerateContentResponse`` (the chunks merged).
- ``POST :countTokens`` → ``{"totalTokens": N}`` with N = request bytes / 4.
- ``POST :embedContent`` / ``:batchEmbedContents`` → zero vectors.
- anything else → 404 with a Google-style error body (still recorded, so a test can see
  what the CLI asked for).

Script contract: ``script(call: ModelCall) -> list[dict] | dict``. A dict is one chunk. Use
:func:`text_chunk` and :func:`function_call_chunk` to build chunks. If the script raises, the
server answers 500 with the exception text (the test sees it in the recorded call's ``error``).

Nothing here leaves the machine: the server binds 127.0.0.1 and makes no outbound calls.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "ModelCall",
    "ScriptedGemini",
    "text_chunk",
    "function_call_chunk",
    "function_responses",
    "last_user_text",
]


@dataclass
class ModelCall:
    """One recorded HTTP request to the scripted server.

    Attributes:
        method: HTTP method ("POST", "GET").
        path: URL path, e.g. ``/v1beta/models/gemini-2.5-pro:streamGenerateContent``.
        query: parsed query string (``{"alt": ["sse"]}``).
        model: the ``{model}`` path segment, or "" when the path has none.
        action: what follows ``:`` in the path (``streamGenerateContent``, ``generateContent``,
            ``countTokens``, …), or "" when none.
        headers: request headers, lower-cased names; the API key header is replaced by
            ``"<redacted>"`` so recorded calls can be written to fixtures.
        raw: the request body bytes exactly as received.
        body: ``raw`` parsed as JSON, or None when it is empty or not JSON.
        error: the exception text if the script raised while answering this call.
    """

    method: str
    path: str
    query: dict[str, list[str]]
    model: str
    action: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    error: str | None = None

    @property
    def is_generation(self) -> bool:
        """True for ``generateContent`` / ``streamGenerateContent`` calls."""
        return self.action in ("generateContent", "streamGenerateContent")


def text_chunk(text: str, *, finish: bool = True) -> dict:
    """A ``GenerateContentResponse`` chunk whose only part is ``text``.

    With ``finish`` the candidate carries ``finishReason: "STOP"`` and usage metadata.
    """
    cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    chunk: dict[str, Any] = {"candidates": [cand]}
    if finish:
        cand["finishReason"] = "STOP"
        chunk["usageMetadata"] = _usage()
    return chunk


def function_call_chunk(name: str, args: dict, *, call_id: str | None = None) -> dict:
    """A ``GenerateContentResponse`` chunk asking for one tool call ``name(args)``.

    ``name`` is the function name as the CLI declared it in ``tools[].functionDeclarations``
    (for an MCP tool in Gemini CLI 0.61: ``mcp_<server>_<tool>``). ``call_id`` becomes
    ``functionCall.id`` when given (the CLI makes one up otherwise).
    """
    fc: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        fc["id"] = call_id
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": fc}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": _usage(),
    }


def function_responses(body: dict) -> list[dict]:
    """Every ``functionResponse`` part in a generation request body, in order.

    Each item is the part's ``functionResponse`` object (``{"id", "name", "response"}``).
    """
    out = []
    for content in body.get("contents", []) if isinstance(body, dict) else []:
        for part in content.get("parts", []):
            if isinstance(part, dict) and "functionResponse" in part:
                out.append(part["functionResponse"])
    return out


def last_user_text(body: dict) -> str:
    """The concatenated ``text`` parts of the last ``role: user`` content, or ""."""
    contents = body.get("contents", []) if isinstance(body, dict) else []
    for content in reversed(contents):
        if content.get("role") == "user":
            return "".join(p.get("text", "") for p in content.get("parts", []) if isinstance(p, dict))
    return ""


def _usage() -> dict:
    return {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def _merge_chunks(chunks: list[dict]) -> dict:
    """Merge streamed chunks into one response (parts concatenated, last finishReason)."""
    parts: list[dict] = []
    finish = "STOP"
    usage = _usage()
    for ch in chunks:
        for cand in ch.get("candidates", []):
            parts.extend(cand.get("content", {}).get("parts", []))
            finish = cand.get("finishReason", finish)
        usage = ch.get("usageMetadata", usage)
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": usage,
    }


Script = Callable[[ModelCall], "list[dict] | dict"]


@dataclass
class ScriptedGemini:
    """The loopback server. Use as a context manager, or call :meth:`start` / :meth:`stop`.

    Args:
        script: answers generation calls (see module docstring).
        host: must be a loopback address; default 127.0.0.1.

    Attributes:
        calls: every request received, in arrival order (thread-safe append).
        url: ``http://127.0.0.1:PORT`` once started (the value for GOOGLE_GEMINI_BASE_URL).
    """

    script: Script
    host: str = "127.0.0.1"
    calls: list[ModelCall] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("ScriptedGemini is not started")
        return f"http://{self.host}:{self._server.server_address[1]}"

    def generation_calls(self) -> list[ModelCall]:
        """The recorded generateContent / streamGenerateContent calls, in order."""
        with self._lock:
            return [c for c in self.calls if c.is_generation]

    def start(self) -> "ScriptedGemini":
        if not self.host.startswith("127.") and self.host not in ("::1", "localhost"):
            raise ValueError(f"ScriptedGemini listens on loopback only, not {self.host!r}")
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_a):  # quiet: tests read owner.calls
                pass

            def do_GET(self):
                self._handle()

            def do_POST(self):
                self._handle()

            def _handle(self):
                split = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                last = split.path.rsplit("/", 1)[-1]
                model, _, action = last.partition(":")
                if "/models/" not in split.path:
                    model = ""
                headers = {k.lower(): v for k, v in self.headers.items()}
                for secret in ("x-goog-api-key", "authorization"):
                    if secret in headers:
                        headers[secret] = "<redacted>"
                call = ModelCall(
                    method=self.command,
                    path=split.path,
                    query=parse_qs(split.query),
                    model=model,
                    action=action,
                    headers=headers,
                    raw=raw,
                    body=body,
                )
                with owner._lock:
                    owner.calls.append(call)
                try:
                    self._answer(call)
                except BrokenPipeError:
                    pass

            def _send_json(self, status: int, obj: Any):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, call: ModelCall):
                if call.action == "countTokens":
                    self._send_json(200, {"totalTokens": max(1, len(call.raw) // 4)})
                    return
                if call.action == "embedContent":
                    self._send_json(200, {"embedding": {"values": [0.0] * 8}})
                    return
                if call.action == "batchEmbedContents":
                    n = len((call.body or {}).get("requests", []))
                    self._send_json(200, {"embeddings": [{"values": [0.0] * 8}] * n})
                    return
                if not call.is_generation:
                    self._send_json(
                        404,
                        {"error": {"code": 404, "message": f"scripted_gemini: no route for {call.path}", "status": "NOT_FOUND"}},
                    )
                    return
                try:
                    out = owner.script(call)
                    chunks = [out] if isinstance(out, dict) else list(out)
                except Exception as exc:  # the script is test code: report, don't crash the server
                    call.error = f"{type(exc).__name__}: {exc}"
                    self._send_json(500, {"error": {"code": 500, "message": call.error, "status": "INTERNAL"}})
                    return
                if call.action == "generateContent":
                    self._send_json(200, _merge_chunks(chunks))
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for ch in chunks:
                    self.wfile.write(b"data: " + json.dumps(ch).encode() + b"\r\n\r\n")
                    self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-gemini", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "ScriptedGemini":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
