"""`toolprune mcp-proxy` around the real ``@modelcontextprotocol/server-everything``
(npm, TypeScript SDK, initialize era) with the official Python ``mcp`` SDK client:
the protocol's corners (resources, templates, prompts, completions, logging, ping,
progress, images, structured content, server-to-client requests, list changes) pass
byte for byte; `omitted` stays in the tool list after ``tools/list_changed``;
cancellation reaches the server and stops scoring; a failing scorer and a crashing
server behave as specified.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import anyio
import mcp_types as types
import pytest
from mcp.client.client import Client

from conftest import stack
from test_fetch import assert_transparent, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def everything(tools) -> list[str]:
    return ["node", tools.everything, "stdio"]


REQUEST = "How do I rotate the signing keys of the upload service without downtime?"


def long_message(tag: int = 0) -> str:
    """12 paragraphs (~5,600 characters); the first two are about the request's subject."""
    words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp", "lagoon"]
    paras = []
    for i in range(12):
        if i < 2:
            paras.append(f"Paragraph {i} ({tag}): to rotate the signing keys of the upload service without downtime, publish the new key, "
                         "let both keys verify for one hour, then retire the old one. " * 3)
        else:
            w = words[i]
            paras.append(f"Paragraph {i} ({tag}): " + " ".join(f"{w}{j} meadow{j % 7} quartz{j % 5}" for j in range(22)))
    return "\n\n".join(paras)


async def test_the_protocols_corners_pass_byte_for_byte_and_omitted_survives_a_list_change(tools, toolprune, user):
    user.config('prunable = ["echo"]\n[proxy]\nbasis = "argument"\n')
    s = stack(toolprune, user, everything(tools))
    progress: list[float] = []
    notifications: list[str] = []
    logs: list[str] = []

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method:
            notifications.append(method)

    async def on_log(params) -> None:
        logs.append(str(params.level))

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    async def on_roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/project", name="project")])

    async with Client(s.params, mode="legacy", message_handler=on_message, logging_callback=on_log, list_roots_callback=on_roots) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed.count("omitted") == 1 and listed[-1] == "omitted"
        resources = await client.list_resources()
        assert resources.resources
        first = resources.resources[0]
        read = await client.read_resource(first.uri)
        assert read.contents
        templates = await client.list_resource_templates()
        assert templates.resource_templates
        prompts = await client.list_prompts()
        names = [p.name for p in prompts.prompts]
        assert names
        simple = next(p for p in prompts.prompts if not p.arguments)
        got = await client.get_prompt(simple.name)
        assert got.messages
        with_args = [p for p in prompts.prompts if p.arguments]
        if with_args:
            arg = with_args[0].arguments[0].name
            await client.complete(types.PromptReference(type="ref/prompt", name=with_args[0].name), {"name": arg, "value": ""})
        await client.set_logging_level("debug")
        await client.send_ping()
        long = await client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress)
        assert not long.is_error
        assert len(progress) == 3
        image = await client.call_tool("get-tiny-image", {})
        assert any(b.type == "image" for b in image.content)
        structured = await client.call_tool("get-structured-content", {"location": "New York"})
        assert structured.structured_content is not None
        short = await client.call_tool("echo", {"message": "hello", "user_request": REQUEST})
        assert text_of(short) == "Echo: hello"
        # server-everything registers its client-dependent tools after initialize and
        # says so with notifications/tools/list_changed; the client lists again.
        with anyio.fail_after(10):
            while "notifications/tools/list_changed" not in notifications:
                await anyio.sleep(0.05)
        relisted = [t.name for t in (await client.list_tools(cache_mode="refresh") if _has_cache_mode() else await client.list_tools()).tools]
        assert "get-roots-list" in relisted, relisted
        assert relisted.count("omitted") == 1 and relisted[-1] == "omitted"
    assert_transparent(s)
    # Every notification and server-to-client request reached the client as the server wrote it.
    inner = [l for l in s.inner.lines("s2c") if "method" in json.loads(l)]
    outer = [l for l in s.outer.lines("s2c") if "method" in json.loads(l)]
    assert inner == outer and len(inner) >= 4
    assert any(json.loads(l)["method"] == "roots/list" for l in inner), "a server-to-client request passed"


def _has_cache_mode() -> bool:
    import inspect

    return "cache_mode" in inspect.signature(Client.list_tools).parameters


async def test_a_prunable_result_is_pruned_and_read_back_through_the_proxy(tools, toolprune, user):
    user.config('prunable = ["echo"]\nthreshold = 0.3\n[proxy]\nbasis = "argument"\n')
    s = stack(toolprune, user, everything(tools))
    message = long_message()
    async with Client(s.params, mode="auto") as client:
        await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
        result = await client.call_tool("echo", {"message": message, "user_request": REQUEST})
        body = text_of(result)
        assert body.startswith("[Omitted by relevance:"), body[:200]
        assert "rotate the signing keys" in body
        back = await client.call_tool("omitted", {"id": body.split("id=")[1].split("]")[0], "from": 0, "to": 11})
        assert "dune0" in text_of(back) and "rotate" not in text_of(back)
    sent = [m for m in s.inner.messages("c2s") if m.get("method") == "tools/call"]
    assert sent[0]["params"]["arguments"] == {"message": message}


class StallingJev:
    """A loopback HTTP server that accepts scorer requests and never answers them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self) -> None:
        self.stop = True
        for c in self.conns:
            c.close()
        self.sock.close()


def jev_env(port: int) -> dict[str, str]:
    return {"TOOLPRUNE_JEV_ROUTE": "typesafe", "TOOLPRUNE_JEV_BASE_URL": f"http://127.0.0.1:{port}", "TOOLPRUNE_JEV_TOKEN": "test-token"}


async def test_cancelling_a_call_reaches_the_server_and_stops_scoring_at_once(tools, toolprune, user):
    user.config('prunable = ["echo", "trigger-long-running-operation"]\n[proxy]\nbasis = "argument"\n')
    jev = StallingJev()
    try:
        s = stack(toolprune, user, everything(tools), env=jev_env(jev.port))
        async with Client(s.params, mode="legacy") as client:
            await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
            # 1. A call still running upstream: the cancellation goes to the server.
            with anyio.move_on_after(1.0):
                await client.call_tool("trigger-long-running-operation", {"duration": 20, "steps": 20})
            # 2. A call whose answer is being scored (the scorer never answers): cancel it.
            with anyio.move_on_after(2.0):
                await client.call_tool("echo", {"message": long_message(), "user_request": REQUEST})
            cancelled_at = time.monotonic()
            await client.send_ping()
            await anyio.sleep(1.0)
        sent = s.inner.messages("c2s")
        calls = [m for m in sent if m.get("method") == "tools/call"]
        cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
        assert [c["params"]["requestId"] for c in cancels] == [c["id"] for c in calls], "both cancellations reached the server"
        # The echo's answer, scored until cancelled, went out unchanged right after the cancellation.
        echo_id = calls[1]["id"]
        inner = [r for r in s.inner.records() if r["dir"] == "s2c" and json.loads(r["line"]).get("id") == echo_id]
        outer = [r for r in s.outer.records() if r["dir"] == "s2c" and json.loads(r["line"]).get("id") == echo_id]
        assert inner and outer and outer[0]["line"] == inner[0]["line"]
        assert outer[0]["t"] < cancelled_at + 2.0, "scoring stopped at once (not at the 20 s deadline)"
        assert any("outcome=cancelled" in l for l in s.log_lines()), s.log_lines()
    finally:
        jev.close()


async def test_a_failing_scorer_passes_the_servers_answer_unchanged(tools, toolprune, user):
    user.config('prunable = ["echo"]\n[proxy]\nbasis = "argument"\n')
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens: connection refused
    s = stack(toolprune, user, everything(tools), env=jev_env(port))
    message = long_message()
    async with Client(s.params, mode="legacy") as client:
        await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
        result = await client.call_tool("echo", {"message": message, "user_request": REQUEST})
        assert text_of(result) == "Echo: " + message
    call_ids = {json.dumps(m["id"]) for m in s.outer.messages("c2s") if m.get("method") == "tools/call"}
    inner = [l for l in s.inner.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
    outer = [l for l in s.outer.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
    assert inner == outer
    assert any("outcome=failed" in l for l in s.log_lines()), s.log_lines()


async def crash_during_a_call(s) -> tuple[str, str]:
    """Start a long call, kill the server; what the call raised, and what closing the client raised."""
    raised: list[BaseException] = []
    closing = "nothing"
    try:
        async with Client(s.params, mode="legacy") as client:
            await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
            server_pid = (s.inner if s.inner.path.exists() else s.outer).pids()["child"]

            async def long_call() -> None:
                try:
                    await client.call_tool("trigger-long-running-operation", {"duration": 20, "steps": 20})
                except Exception as e:  # noqa: BLE001 - what the client sees
                    raised.append(e)

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await anyio.sleep(1.0)
                os.kill(server_pid, signal.SIGKILL)
                with anyio.fail_after(10):
                    while not raised:
                        await anyio.sleep(0.05)
    except BaseException as e:  # noqa: BLE001
        closing = describe(e)
    assert raised, "the pending call never failed"
    return describe(raised[0]), closing


def describe(e: BaseException) -> str:
    """An exception with its groups flattened: `Type(args)` of the leaves."""
    if isinstance(e, BaseExceptionGroup):
        return " | ".join(describe(x) for x in e.exceptions)
    return f"{type(e).__name__}{e.args!r}"


async def test_a_crashing_server_fails_the_pending_call_as_a_direct_connection_does(tools, toolprune, user):
    user.config('prunable = ["echo"]\n')
    expected = await crash_during_a_call(stack(toolprune, user, everything(tools), direct=True))
    proxied = stack(toolprune, user, everything(tools))
    got = await crash_during_a_call(proxied)
    print("direct:", expected, "proxied:", got)
    assert got == expected and "Connection closed" in got[0]
    # The proxy itself ends, with the server's status, and leaves nothing running.
    proxy_pid = proxied.outer.pids()["child"]
    with anyio.fail_after(10):
        while os.path.exists(f"/proc/{proxy_pid}") and open(f"/proc/{proxy_pid}/stat").read().split()[2] != "Z":
            await anyio.sleep(0.05)


async def test_a_restarted_proxy_never_reuses_an_id_still_in_the_conversation(tools, toolprune, user):
    """`claude -p --continue` starts a new server process for turn 2 while turn 1's
    marker is still in the conversation: its id must answer not_found, never turn 2's text."""
    user.config('prunable = ["echo"]\nthreshold = 0.3\n[proxy]\nbasis = "argument"\n')
    ids = []
    for turn in (1, 2):
        s = stack(toolprune, user, everything(tools))
        async with Client(s.params, mode="legacy") as client:
            await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
            body = text_of(await client.call_tool("echo", {"message": long_message(turn), "user_request": REQUEST}))
            ids.append(body.split("id=")[1].split("]")[0])
            if turn == 2:
                old = await client.call_tool("omitted", {"id": ids[0], "from": 3, "to": 3})
                new = await client.call_tool("omitted", {"id": ids[1], "from": 3, "to": 3})
    assert ids[0] != ids[1]
    assert text_of(old).startswith(f"There is no text with id={ids[0]}")
    assert text_of(new).startswith("Paragraph 3 (2): dune0 ")


async def test_a_scorer_that_never_answers_times_out_and_the_result_passes_unchanged(tools, toolprune, user):
    """SPEC §11's 20 s deadline through the proxy: the client gets the server's bytes
    (outcome `timeout`), never a hang."""
    user.config('prunable = ["echo"]\n[proxy]\nbasis = "argument"\n')
    jev = StallingJev()
    try:
        s = stack(toolprune, user, everything(tools), env=jev_env(jev.port))
        message = long_message()
        async with Client(s.params, mode="legacy") as client:
            await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
            started = time.monotonic()
            with anyio.fail_after(40):
                result = await client.call_tool("echo", {"message": message, "user_request": REQUEST})
            waited = time.monotonic() - started
            assert text_of(result) == "Echo: " + message
        assert 19 < waited < 35, waited
        call_ids = {json.dumps(m["id"]) for m in s.outer.messages("c2s") if m.get("method") == "tools/call"}
        inner = [l for l in s.inner.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
        outer = [l for l in s.outer.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
        assert inner == outer
        assert any("outcome=timeout" in l for l in s.log_lines()), s.log_lines()
    finally:
        jev.close()
