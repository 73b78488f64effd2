"""The Jev transport against a loopback server (http.server on 127.0.0.1 in
a thread): the request's shape, at most 4 in flight, 429 then 200, a 500
kept, a stall → timeout, cancellation, no redirects, no leaked token. The
server decodes Jev JSON to answer; the transport never does."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from toolprune import JevScorer, Pruner, ScoringRequest, ScoringResponse
from toolprune.jev import route_url

from conftest import Log

TOKEN = "test-token-123"
REQUEST = "How does the upload client retry a failed chunk, and where is the retry limit configured?"
BATCHES = 10
"""Batches of `document()` (checked by the first test)."""

Reply = Tuple[int, Dict[str, str], bytes, float]
"""(status, headers, body, seconds to wait before answering)."""


def document(paragraphs: int = 140) -> str:
    """140 paragraphs of ~750 characters: 15 per batch of 12,000 → 10 batches."""
    out = []
    for i in range(paragraphs):
        topic = "the retry limit of the upload client" if i % 2 == 0 else "the colour of the login page"
        sentence = f"Paragraph {i} talks about {topic} in enough words to make a real paragraph. "
        out.append((sentence * 8).strip())
    return "\n\n".join(out) + "\n"


def jev_answer(body: Dict[str, Any], tokens: int = 100) -> Dict[str, Any]:
    """Scores each question by its chunk's text: the retry paragraphs 0.9, the others 0.05."""
    chunks = body["state"]["chunks"]
    answers = {
        key: {"type": "noul", "noul": 0.9 if "retry limit" in chunks[key] else 0.05} for key in body["questions"]
    }
    return {"answers": answers, "usage": {"input_tokens": tokens, "output_tokens": 0}}


class Server:
    """A scripted Jev server. `respond(n, body)` gets the 0-based number of
    this request for the same body and the parsed JSON, returns a Reply."""

    def __init__(self, respond: Callable[[int, Dict[str, Any]], Reply]) -> None:
        self.respond = respond
        self.lock = threading.Lock()
        self.requests: List[Dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.per_body: Dict[bytes, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with server.lock:
                    n = server.per_body.get(raw, 0)
                    server.per_body[raw] = n + 1
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": raw})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                answered = False
                try:
                    status, headers, body, wait = server.respond(n, json.loads(raw))
                    if wait:
                        time.sleep(wait)
                    # No longer in flight once the answer is decided, before it
                    # is written: counting until after the write let the client
                    # read it and send its next request first (5 > 4 under load).
                    with server.lock:
                        server.in_flight -= 1
                        answered = True
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body)
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

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[int, Dict[str, Any]], Reply]], Server]]:
    servers: List[Server] = []

    def start(respond: Callable[[int, Dict[str, Any]], Reply]) -> Server:
        server = Server(respond)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def ok(body: Dict[str, Any], wait: float = 0.0, envelope: bool = False) -> Reply:
    answer = jev_answer(body)
    if envelope:
        answer = {"success": True, "result": answer, "errors": [], "messages": []}
    return 200, {}, json.dumps(answer).encode(), wait


class Recording:
    """Wraps a scorer to keep the guest's request (what the server must receive)."""

    def __init__(self, inner: JevScorer) -> None:
        self.inner = inner
        self.name = inner.name
        self.jev_model = inner.jev_model
        self.requests: List[ScoringRequest] = []

    def score(self, request: ScoringRequest, cancel: Any = None) -> ScoringResponse:
        self.requests.append(request)
        return self.inner.score(request, cancel=cancel)


def vercel(server: Server, **kw: Any) -> JevScorer:
    return JevScorer("vercel", token=TOKEN, base_url=server.base + "/gw", **kw)


def test_the_request_is_the_guest_body_with_the_bearer_token_added(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body))
    scorer = Recording(vercel(server))
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, log=log)
    result = turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    (request,) = scorer.requests
    batches = len(request.batches)
    assert batches == BATCHES
    assert result.outcome == "ok" and result.report is not None
    assert (result.report.counts.calls, result.report.counts.jev_tokens) == (batches, 100 * batches)
    assert "scorer=jev" in log.lines[0]
    assert sorted(r["body"] for r in server.requests) == sorted(b.jev_body.encode() for b in request.batches)
    for r in server.requests:
        assert r["path"] == "/gw/v1/systemone"
        assert r["headers"]["Authorization"] == f"Bearer {TOKEN}"
        assert r["headers"]["Content-Type"] == "application/json"
        assert json.loads(r["body"])["model"] == "jev-1.13.0"  # the native and Vercel routes name it


def test_the_cloudflare_route_takes_the_model_from_the_url_and_answers_in_an_envelope(
    pruner: Pruner, serve: Any
) -> None:
    server = serve(lambda n, body: ok(body, envelope=True))
    scorer = JevScorer("cloudflare", token=TOKEN, account_id="acc-1_x", base_url=server.base)
    assert scorer.jev_model is None
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, log=Log())
    assert turn.on_tool_result(tool="fetch", text=document(), prunable=True).outcome == "ok"
    assert {r["path"] for r in server.requests} == {"/client/v4/accounts/acc-1_x/ai/run/typesafe/jev"}
    assert all("model" not in json.loads(r["body"]) for r in server.requests)


def test_at_most_four_requests_are_in_flight(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body, wait=0.15))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())
    start = time.monotonic()
    assert turn.on_tool_result(tool="fetch", text=document(), prunable=True).outcome == "ok"
    assert server.max_in_flight == 4
    assert len(server.requests) == BATCHES
    assert time.monotonic() - start < BATCHES * 0.15 / 2  # in parallel, not one after another


def test_a_429_is_retried_once_then_scored(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: (429, {"Retry-After": "0"}, b"{}", 0.0) if n == 0 else ok(body))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())
    result = turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    assert result.outcome == "ok" and result.report is not None
    assert result.report.failures == []
    assert len(server.requests) == 2 * BATCHES and set(server.per_body.values()) == {2}


def failing_batch(status: int) -> Callable[[int, Dict[str, Any]], Reply]:
    """The batch holding paragraph p0 always answers `status`, the others score."""

    def respond(n: int, body: Dict[str, Any]) -> Reply:
        if "p0" in body["state"]["chunks"]:
            return status, {}, b'{"errors":["echo: Authorization: Bearer test-token-123"]}', 0.0
        return ok(body)

    return respond


def test_a_500_is_retried_once_and_its_paragraphs_are_kept(pruner: Pruner, serve: Any) -> None:
    server = serve(failing_batch(500))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())
    result = turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    assert result.outcome == "ok" and result.report is not None
    (failure,) = result.report.failures
    assert (failure.batch, failure.status, failure.klass) == (0, 500, "http-5xx")
    assert result.report.counts.calls == BATCHES - 1
    assert {(p.fate, p.score) for p in result.report.paragraphs[:15]} == {("unscored", None)}
    assert sorted(server.per_body.values()) == [1] * (BATCHES - 1) + [2]
    assert TOKEN not in result.body and TOKEN not in (result.log_line or "")


def test_a_402_is_not_retried(pruner: Pruner, serve: Any) -> None:
    server = serve(failing_batch(402))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())
    result = turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    assert result.report is not None
    assert [(f.status, f.klass) for f in result.report.failures] == [(402, "out-of-credit")]
    assert sorted(server.per_body.values()) == [1] * BATCHES


def test_a_stalled_server_times_out_with_the_raw_text(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body, wait=3.0))
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server, deadline_cap_ms=300), agent="a", log=log)
    text = document()
    start = time.monotonic()
    result = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    assert time.monotonic() - start < 1.5
    assert (result.outcome, result.body) == ("timeout", text)
    assert "outcome=timeout" in log.lines[0] and "calls=0" in log.lines[0]


def test_cancelling_the_turn_stops_waiting_at_once(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body, wait=3.0))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())
    text = document()
    threading.Timer(0.2, turn.cancel).start()
    start = time.monotonic()
    result = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    assert time.monotonic() - start < 1.5
    assert (result.outcome, result.body) == ("cancelled", text)
    # A cancelled turn sends nothing more.
    before = len(server.requests)
    assert turn.on_tool_result(tool="fetch", text=text, prunable=True).outcome == "cancelled"
    assert len(server.requests) == before


def test_async_jev_does_not_block_the_loop_and_cancels(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body, wait=0.3))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())

    async def main() -> "tuple[str, int]":
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.ensure_future(ticker())
        result = await turn.on_tool_result_async(tool="fetch", text=document(), prunable=True)
        done = True
        await t
        return result.outcome, ticks

    outcome, ticks = asyncio.run(main())
    assert outcome == "ok" and ticks >= 30, ticks

    stalled = serve(lambda n, body: ok(body, wait=3.0))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(stalled), log=Log())

    async def cancel_soon() -> str:
        asyncio.get_running_loop().call_later(0.2, turn.cancel)
        return (await turn.on_tool_result_async(tool="fetch", text=document(), prunable=True)).outcome

    start = time.monotonic()
    assert asyncio.run(cancel_soon()) == "cancelled"
    assert time.monotonic() - start < 1.5


def test_a_refused_connection_is_a_network_failure(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body))
    base = server.base
    server.close()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=JevScorer("typesafe", token=TOKEN, base_url=base), log=Log())
    result = turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    assert result.outcome == "failed" and result.report is not None
    assert {(f.status, f.klass) for f in result.report.failures} == {(None, "network")}


def test_a_redirect_is_not_followed(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: (307, {"Location": "http://127.0.0.1:9/elsewhere"}, b"", 0.0))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=vercel(server), log=Log())
    result = turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    assert result.outcome == "failed" and result.report is not None
    assert {f.status for f in result.report.failures} == {307}
    assert len(server.requests) == BATCHES


def test_routes_and_configuration() -> None:
    assert route_url("cloudflare", None, "abc") == "https://api.cloudflare.com/client/v4/accounts/abc/ai/run/typesafe/jev"
    assert route_url("typesafe") == "https://api.typesafe.ai/v1/systemone"
    assert route_url("vercel") == "https://ai-gateway.vercel.sh/typesafe/v1/systemone"
    assert route_url("vercel", "http://127.0.0.1:8080/gw/") == "http://127.0.0.1:8080/gw/v1/systemone"
    for bad in [
        lambda: route_url("cloudflare"),
        lambda: route_url("cloudflare", None, "a/b"),
        lambda: route_url("vercel", "http://example.com"),
        lambda: route_url("vercel", "https://example.com/?x=1"),
        lambda: route_url("openai"),
        lambda: JevScorer("typesafe", token=""),
        lambda: JevScorer("typesafe", token="has space"),
    ]:
        with pytest.raises(ValueError):
            bad()
    scorer = JevScorer("typesafe", token=TOKEN, model="jev-2")
    assert scorer.jev_model == "jev-2" and TOKEN not in repr(scorer)
    env = JevScorer.from_env(
        {"TOOLPRUNE_JEV_ROUTE": "Vercel", "TOOLPRUNE_JEV_TOKEN": " t0k \n", "TOOLPRUNE_JEV_BASE_URL": "http://[::1]:1"}
    )
    assert (env.route, env.url, env.jev_model) == ("vercel", "http://[::1]:1/v1/systemone", "jev-1.13.0")
    with pytest.raises(ValueError):
        JevScorer.from_env({"TOOLPRUNE_JEV_ROUTE": "cloudflare", "TOOLPRUNE_JEV_TOKEN": "t"})


def test_the_turn_passes_the_scorer_model_to_the_guest(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, body: ok(body))
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=JevScorer("typesafe", token=TOKEN, base_url=server.base, model="jev-9"), log=Log())
    turn.on_tool_result(tool="fetch", text=document(), prunable=True)
    assert {json.loads(r["body"])["model"] for r in server.requests} == {"jev-9"}
