"""The Jev transport against a loopback server (127.0.0.1, started and
stopped by each test): the endpoint and token come from the guest's
configuration (`settings.resolve` of the variables it names, the token from
the variable it names); the request is the guest's body with the Bearer
token added; at most 4 in flight; retries as `settings.retry-delay` says
(Retry-After, retry-after-ms; 429/5xx once, never 402 or a closed
connection); a stall → timeout at the deadline; cancellation at once, also
in a retry wait; no redirects; a loopback endpoint bypasses proxies."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from toolprune import CancelToken, ConfigError, JevScorer, Pruner, ScoringRequest, ScoringResponse

from conftest import Log, note_text
from loopback import Loopback, Reply, jev_answer

TOKEN = "test-token-123"
REQUEST = "How does the upload client retry a failed chunk, and where is the retry limit configured?"
BATCHES = 10
"""Batches of `document()` (checked by the first test)."""


def document(paragraphs: int = 140) -> str:
    """140 paragraphs of ~750 characters: 15 per batch of 12,000 → 10 batches."""
    out = []
    for i in range(paragraphs):
        topic = "the retry limit of the upload client" if i % 2 == 0 else "the colour of the login page"
        sentence = f"Paragraph {i} talks about {topic} in enough words to make a real paragraph. "
        out.append((sentence * 8).strip())
    return "\n\n".join(out) + "\n"


def ok(body: Dict[str, Any], delay: float = 0.0, envelope: bool = False) -> Reply:
    """Even paragraphs (in document(): the retry ones) score 0.9, odd ones 0.05."""
    chunks = body["state"]["chunks"]
    scores = {k[1:]: 0.9 if int(k[1:]) % 2 == 0 else 0.05 for k in chunks}
    return Reply(200, {}, jev_answer(body, scores=scores, envelope=envelope), delay)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[int, int, Dict[str, Any]], Reply]], Loopback]]:
    servers: List[Loopback] = []

    def start(respond: Callable[[int, int, Dict[str, Any]], Reply]) -> Loopback:
        server = Loopback(respond)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def env_for(pruner: Pruner, route: str, base: str, **extra: str) -> Dict[str, str]:
    """The environment a user would set: the route and base URL variables, and the token variable the guest names."""
    env = {"TOOLPRUNE_JEV_ROUTE": route, "TOOLPRUNE_JEV_BASE_URL": base, **extra}
    env[pruner.settings.defaults().token_variable] = TOKEN
    return env


def scorer_for(pruner: Pruner, server: Loopback, route: str = "vercel", suffix: str = "/gw", **extra: str) -> JevScorer:
    return JevScorer.from_env(env_for(pruner, route, server.base + suffix, **extra), pruner=pruner)


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


def prune(pruner: Pruner, scorer: Any, text: Optional[str] = None, **options: Any) -> Any:
    conversation = pruner.conversation(enabled=True, scorer=scorer, log=options.pop("log", Log()), **options)
    return conversation.turn(REQUEST).on_tool_result(tool="fetch", text=text or document(), prunable=True)


def test_the_request_is_the_guest_body_with_the_bearer_token_added(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: ok(body))
    scorer = Recording(scorer_for(pruner, server))
    log = Log()
    result = prune(pruner, scorer, log=log)
    (request,) = scorer.requests
    assert len(request.batches) == BATCHES
    assert result.outcome == "ok" and result.counts is not None
    assert (result.counts.calls, result.counts.jev_tokens) == (BATCHES, sum(len(b.paragraphs) for b in request.batches) * 100)
    assert result.served_model == "jev-1.13.0" and "scorer=jev" in log.lines[0]
    assert sorted(r.body for r in server.requests) == sorted(b.jev_body.encode() for b in request.batches)
    for r in server.requests:
        assert r.path == "/gw/v1/systemone"
        assert r.headers["Authorization"] == f"Bearer {TOKEN}"
        assert r.headers["Content-Type"] == "application/json"
        assert json.loads(r.body)["model"] == scorer.inner.jev_model == "jev-1.13.0"  # the guest's default model
        assert TOKEN.encode() not in r.body
    assert TOKEN not in result.body and TOKEN not in (result.log_line or "") and TOKEN not in repr(scorer.inner)


def test_the_cloudflare_route_takes_the_model_from_the_url_and_answers_in_an_envelope(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: ok(body, envelope=True))
    scorer = scorer_for(pruner, server, "cloudflare", "", TOOLPRUNE_JEV_ACCOUNT_ID="acc-1_x")
    assert scorer.jev_model is None and scorer.route == "cloudflare"
    assert prune(pruner, scorer).outcome == "ok"
    assert {r.path for r in server.requests} == {"/client/v4/accounts/acc-1_x/ai/run/typesafe/jev"}
    assert all("model" not in json.loads(r.body) for r in server.requests)


def test_at_most_four_requests_are_in_flight(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: ok(body, delay=0.15))
    start = time.monotonic()
    assert prune(pruner, scorer_for(pruner, server)).outcome == "ok"
    assert server.max_in_flight == 4 and len(server.requests) == BATCHES
    assert time.monotonic() - start < BATCHES * 0.15 / 2  # in parallel, not one after another


def test_a_429_is_retried_once_after_retry_after(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: Reply(429, {"Retry-After": "0"}) if same == 0 else ok(body))
    result = prune(pruner, scorer_for(pruner, server))
    assert result.outcome == "ok" and result.failures == []
    assert len(server.requests) == 2 * BATCHES and set(server.per_body.values()) == {2}


def test_retry_after_ms_is_waited_for(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: Reply(503, {"retry-after-ms": "300"}) if same == 0 else ok(body))
    start = time.monotonic()
    result = prune(pruner, scorer_for(pruner, server), text=note_text())
    assert result.outcome == "ok" and len(server.requests) == 2
    assert time.monotonic() - start >= 0.3


def test_a_retry_after_past_the_deadline_is_not_waited_for(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: Reply(429, {"Retry-After": "3600"}))
    start = time.monotonic()
    result = prune(pruner, scorer_for(pruner, server), text=note_text())
    assert time.monotonic() - start < 2
    assert (result.outcome, [(f.status, f.klass) for f in result.failures]) == ("failed", [(429, "rate_limited")])
    assert len(server.requests) == 1


def failing_batch(status: int) -> Callable[[int, int, Dict[str, Any]], Reply]:
    """The batch holding paragraph p0 always answers `status` (a body echoing the token), the others score."""

    def respond(n: int, same: int, body: Dict[str, Any]) -> Reply:
        if "p0" in body["state"]["chunks"]:
            return Reply(status, {}, b'{"errors":["echo: Authorization: Bearer test-token-123"]}')
        return ok(body)

    return respond


def test_a_500_is_retried_once_and_its_paragraphs_are_kept(pruner: Pruner, serve: Any) -> None:
    server = serve(failing_batch(500))
    conversation = pruner.conversation(enabled=True, scorer=scorer_for(pruner, server), log=Log(), report=True)
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=document(), prunable=True)
    assert result.outcome == "ok" and result.counts is not None
    assert [(f.batch, f.status, f.klass) for f in result.failures] == [(0, 500, "http_5xx")]
    assert result.counts.calls == BATCHES - 1
    assert {(p.fate, p.score) for p in result.paragraphs[:15]} == {("unscored", None)}
    assert sorted(server.per_body.values()) == [1] * (BATCHES - 1) + [2]
    assert TOKEN not in result.body and TOKEN not in (result.log_line or "")


@pytest.mark.parametrize("status, klass", [(402, "out_of_credit"), (401, "http_4xx"), (404, "http_4xx")])
def test_a_402_or_another_4xx_is_not_retried(pruner: Pruner, serve: Any, status: int, klass: str) -> None:
    server = serve(failing_batch(status))
    result = prune(pruner, scorer_for(pruner, server))
    assert [(f.status, f.klass) for f in result.failures] == [(status, klass)]
    assert sorted(server.per_body.values()) == [1] * BATCHES


def test_a_closed_connection_is_a_network_failure_and_not_retried(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: Reply(close=True))
    result = prune(pruner, scorer_for(pruner, server), text=note_text())
    assert (result.outcome, [(f.status, f.klass) for f in result.failures]) == ("failed", [(None, "network")])
    assert len(server.requests) == 1


def test_a_refused_connection_is_a_network_failure(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: ok(body))
    scorer = scorer_for(pruner, server, "typesafe", "")
    server.close()
    result = prune(pruner, scorer)
    assert result.outcome == "failed"
    assert {(f.status, f.klass) for f in result.failures} == {(None, "network")}


def test_a_redirect_is_not_followed(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: Reply(307, {"Location": "http://127.0.0.1:9/elsewhere"}, b""))
    result = prune(pruner, scorer_for(pruner, server))
    assert result.outcome == "failed" and {f.status for f in result.failures} == {307}
    assert len(server.requests) == BATCHES


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_stalled_server_times_out_at_the_deadline(pruner: Pruner, serve: Any, flavour: str) -> None:
    server = serve(lambda n, same, body: Reply(stall=True))
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=scorer_for(pruner, server), agent="a", log=log, deadline_cap_ms=300)
    text = document()
    start = time.monotonic()
    turn = conversation.turn(REQUEST)
    if flavour == "sync":
        result = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    else:
        result = asyncio.run(turn.on_tool_result_async(tool="fetch", text=text, prunable=True))
    assert 0.29 <= time.monotonic() - start < 1.2
    assert (result.outcome, result.body is text) == ("timeout", True)
    assert "outcome=timeout" in log.lines[0] and "calls=0" in log.lines[0]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_cancelling_stops_waiting_at_once_also_in_a_retry_wait(pruner: Pruner, serve: Any, flavour: str) -> None:
    server = serve(lambda n, same, body: Reply(429, {"retry-after-ms": "5000"}) if same == 0 else ok(body))
    cancel = CancelToken()
    turn = pruner.conversation(enabled=True, scorer=scorer_for(pruner, server), log=Log()).turn(REQUEST, cancel)
    threading.Timer(0.2, cancel.cancel).start()
    start = time.monotonic()
    if flavour == "sync":
        result = turn.on_tool_result(tool="fetch", text=note_text(), prunable=True)
    else:
        result = asyncio.run(turn.on_tool_result_async(tool="fetch", text=note_text(), prunable=True))
    assert time.monotonic() - start < 1.0
    assert result.outcome == "cancelled" and len(server.requests) == 1
    time.sleep(0.3)
    assert len(server.requests) == 1, "the transport stopped: no retry after the cancellation"
    assert turn.on_tool_result(tool="fetch", text=note_text(), prunable=True).outcome == "cancelled"
    assert len(server.requests) == 1, "a cancelled turn sends nothing more"


def test_async_jev_does_not_block_the_loop(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: ok(body, delay=0.3))
    turn = pruner.conversation(enabled=True, scorer=scorer_for(pruner, server), log=Log()).turn(REQUEST)

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


def test_a_loopback_endpoint_bypasses_proxies(pruner: Pruner, serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(lambda n, same, body: ok(body))
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    scorer = scorer_for(pruner, server)
    assert scorer.endpoint.loopback
    assert prune(pruner, scorer, text=note_text()).outcome == "ok"


def test_the_conversation_can_name_another_model(pruner: Pruner, serve: Any) -> None:
    server = serve(lambda n, same, body: ok(body))
    prune(pruner, scorer_for(pruner, server), text=note_text(), jev_model="jev-9")
    assert {json.loads(r.body)["model"] for r in server.requests} == {"jev-9"}


# --- configuration -------------------------------------------------------------------------


def test_the_configuration_is_the_guests(pruner: Pruner, tmp_path: Path) -> None:
    token = pruner.settings.defaults().token_variable
    vercel = JevScorer.from_env({"TOOLPRUNE_JEV_ROUTE": "Vercel", token: " t0k \n", "TOOLPRUNE_JEV_BASE_URL": "http://[::1]:1"}, pruner=pruner)
    assert (vercel.route, vercel.url, vercel.jev_model, vercel.endpoint.loopback) == (
        "vercel",
        "http://[::1]:1/v1/systemone",
        "jev-1.13.0",
        True,
    )
    typesafe = JevScorer.from_env({"TOOLPRUNE_JEV_ROUTE": "typesafe", token: "t"}, pruner=pruner)
    assert typesafe.url.startswith("https://") and not typesafe.endpoint.loopback
    with pytest.raises(ValueError, match="account"):
        JevScorer.from_env({token: "t"}, pruner=pruner)  # cloudflare needs an account id
    with pytest.raises(ValueError, match="loopback"):
        JevScorer.from_env({"TOOLPRUNE_JEV_ROUTE": "vercel", "TOOLPRUNE_JEV_BASE_URL": "http://example.com", token: "t"}, pruner=pruner)
    with pytest.raises(ValueError, match=token):
        JevScorer.from_env({"TOOLPRUNE_JEV_ROUTE": "typesafe"}, pruner=pruner)
    with pytest.raises(ValueError, match="header"):
        JevScorer.from_env({"TOOLPRUNE_JEV_ROUTE": "typesafe", token: "has space"}, pruner=pruner)
    config = tmp_path / "config.toml"
    config.write_text('[jev]\nroute = "typesafe"\nmodel = "jev-file"\n', encoding="utf-8")
    from_file = JevScorer.from_env({"TOOLPRUNE_CONFIG": str(config), token: "t"}, pruner=pruner)
    assert (from_file.route, from_file.jev_model) == ("typesafe", "jev-file")
    config.write_text('[jev]\ntoken = "never from a file"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2"):
        JevScorer.from_env({"TOOLPRUNE_CONFIG": str(config), token: "t"}, pruner=pruner)


def test_only_the_variables_the_guest_names_are_read(pruner: Pruner) -> None:
    class Spy(dict):  # type: ignore[type-arg]
        seen: List[str] = []

        def get(self, key: str, default: Any = None) -> Any:
            self.seen.append(key)
            return super().get(key, default)

    env = Spy({"TOOLPRUNE_JEV_ROUTE": "typesafe", pruner.settings.defaults().token_variable: "t", "SECRET": "x"})
    JevScorer.from_env(env, pruner=pruner)
    assert set(env.seen) <= set(pruner.settings.variables()) | {pruner.settings.defaults().token_variable}


def test_load_with_the_jev_scorer_reads_the_process_environment(pruner: Pruner, serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(lambda n, same, body: ok(body))
    for k, v in env_for(pruner, "typesafe", server.base).items():
        monkeypatch.setenv(k, v)
    jev = Pruner.load(scorer="jev")
    assert jev.scorer.name == "jev" and jev.scorer.url == server.base + "/v1/systemone"
    monkeypatch.delenv(pruner.settings.defaults().token_variable)
    with pytest.raises(ValueError):
        Pruner.load(scorer="jev")
