"""toolprune inside the real ContextForge gateway (issue 24; docs/gateway.md): two
gateway instances on one Redis, mcp-server-fetch behind them serving a corpus page
from a loopback site, the official MCP Python SDK as the client.

The tests run in file order on one stack (the soak and Redis' stop come last).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import urllib.request
from typing import Any, Dict, List

import pytest

from conftest import DOC, MAX, OTHER, Stack, client, kept_chunks, markers, rss_kib, text_of

pytestmark = pytest.mark.anyio

FETCH = "docs-fetch"
OMITTED = "toolprune-omitted"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def page_url(stack: Stack, doc: str = DOC, call: Any = None) -> str:
    """The page's URL; ``call`` adds a query the site ignores, so that calls
    meant to be pruned each are another call (the repeat gate, SPEC §2, lets
    the same call with the same arguments pass unpruned once it was pruned)."""
    assert stack.site is not None
    url = stack.site.url + "/docs/" + doc.rsplit(".", 1)[0] + ".html"
    return url if call is None else f"{url}?call={call}"


def server_text(stack: Stack) -> str:
    """What mcp-server-fetch answered to the last call."""
    return stack.last_exchange()[1]


async def test_the_tool_list_carries_the_basis_argument_and_omitted(stack: Stack) -> None:
    async with client(stack, "alice") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert FETCH in tools and OMITTED in tools
    schema = tools[FETCH].inputSchema
    assert "user_request" in schema["properties"], "the registry's schema carries the basis argument"
    assert "user_request" not in schema.get("required", []), "optional"
    assert set(tools[OMITTED].inputSchema["properties"]) >= {"id", "from", "to"}
    assert "toolprune_scope" not in tools[OMITTED].inputSchema["properties"], "the scope is the plugin's, not the model's"


async def test_a_page_pruned_through_one_instance_is_read_back_through_the_other_and_never_by_another_team(stack: Stack, manifest: Dict[str, Any]) -> None:
    request = manifest[DOC]["request_en"]
    url = page_url(stack)
    async with client(stack, "alice", gw=0) as s:
        result = await s.call_tool(FETCH, {"url": url, "max_length": MAX, "user_request": request})
    assert not result.isError
    body = text_of(result)
    # The argument never reached the server; the rest of the call did, unchanged.
    call, raw = stack.last_exchange()
    assert call["params"]["arguments"] == {"url": url, "max_length": MAX}, call["params"]
    assert all("user_request" not in c["params"].get("arguments", {}) for c in stack.fetch_calls())
    pid, ranges, dropped_chars, total_chars = markers(body)
    assert total_chars == len(raw), "the header counts the page the server returned"
    assert ranges and len(body) < len(raw)
    at = 0
    for chunk in kept_chunks(body):
        found = raw.find(chunk, at)
        assert found >= 0, f"kept text is not verbatim and in order: {chunk[:120]!r}"
        at = found + len(chunk)
    # omitted through the OTHER instance: every dropped run, verbatim.
    got = 0
    async with client(stack, "alice", gw=1) as s:
        for a, b in ranges:
            back = text_of(await s.call_tool(OMITTED, {"id": pid, "from": a, "to": b}))
            assert back and back in raw, f"omitted returns the page's own text: {back[:200]!r}"
            got += len(back)
        forged = text_of(await s.call_tool(OMITTED, {"id": pid, "from": ranges[0][0], "to": ranges[0][1], "toolprune_scope": "0" * 32}))
        assert forged in raw, "a scope the client sends is replaced by its own"
    assert got == dropped_chars
    # Another team's user, through either instance, with the same id (even with alice's scope guessed): not_found.
    for gw in (0, 1):
        async with client(stack, "bob", gw=gw) as s:
            other = text_of(await s.call_tool(OMITTED, {"id": pid, "from": ranges[0][0], "to": ranges[0][1]}))
        assert f"There is no text with id={pid}" in other, other
    # Counts, never text, in the gateways' logs.
    lines = stack.gateways[0].lines() + stack.gateways[1].lines("tool omitted:")
    assert any("outcome=ok" in l and "agent=contextforge" in l for l in lines), lines
    logs = "".join(gw.log.read_text(errors="replace") for gw in stack.gateways if gw.log)
    sample = max(raw.split("\n\n"), key=len)[:80]
    assert sample not in logs, "the page's text never reaches the gateway's log"


async def test_ids_are_unique_across_instances(stack: Stack, manifest: Dict[str, Any]) -> None:
    request = manifest[DOC]["request_en"]
    ids = []
    for n, gw in enumerate((0, 1, 0)):
        async with client(stack, "alice", gw=gw) as s:
            url = page_url(stack, call=f"ids-{n}")
            body = text_of(await s.call_tool(FETCH, {"url": url, "max_length": MAX, "user_request": request}))
        ids.append(markers(body)[0])
    assert len(set(ids)) == 3, ids


async def test_the_same_call_again_passes_unpruned_with_a_repeated_line(stack: Stack, manifest: Dict[str, Any]) -> None:
    """Issue 25 §4 at the gateway door: the model calls the same tool with the
    same arguments again (through either instance: the call keys are in
    Redis) after its result was pruned: it gets the server's text unchanged,
    and a counts-only line says so. Another user's same call still prunes."""
    request = manifest[DOC]["request_en"]
    url = page_url(stack, call="repeat")
    async with client(stack, "alice", gw=0) as s:
        first = text_of(await s.call_tool(FETCH, {"url": url, "max_length": MAX, "user_request": request}))
    assert markers(first)[0]
    async with client(stack, "alice", gw=1) as s:
        again = text_of(await s.call_tool(FETCH, {"max_length": MAX, "url": url, "user_request": request + " Again."}))
    assert again == server_text(stack), "the same call again: the server's text, unchanged"
    lines = [l for l in stack.gateways[1].lines() if "outcome=skipped" in l]
    assert lines and " name=docs-fetch outcome=skipped gate=repeated " in lines[-1], lines
    assert "call=repeat" not in lines[-1] and url not in lines[-1], "the line carries no arguments"
    async with client(stack, "bob", gw=1) as s:
        other = text_of(await s.call_tool(FETCH, {"url": url, "max_length": MAX, "user_request": request}))
    assert markers(other)[0], "another scope: not a repeat"


async def test_without_a_basis_and_on_an_error_the_result_is_the_servers(stack: Stack, manifest: Dict[str, Any]) -> None:
    url = page_url(stack, call="no-basis")  # not the call the first test pruned: no repeat here
    async with client(stack, "alice", gw=1) as s:
        plain = text_of(await s.call_tool(FETCH, {"url": url, "max_length": MAX}))
        raw = server_text(stack)
        short = text_of(await s.call_tool(FETCH, {"url": url, "max_length": MAX, "user_request": "ok"}))
        raw_short = server_text(stack)
        missing = await s.call_tool(FETCH, {"url": stack.site.url + "/nope.html", "user_request": manifest[DOC]["request_en"]})
    assert plain == raw, "no basis: the server's text, unchanged"
    assert short == raw_short, "a basis under 20 characters: unchanged"
    assert missing.isError and "404" in text_of(missing), "an error result passes unchanged"
    assert any("outcome=no_basis" in l for l in stack.gateways[1].lines()), stack.gateways[1].lines()


async def test_a_soak_of_1000_calls_16_in_flight_loses_nothing_and_memory_stays_bounded(stack: Stack, manifest: Dict[str, Any], record_property: Any) -> None:
    request = manifest[DOC]["request_en"]
    url = page_url(stack)
    total, in_flight = int(os.environ.get("TOOLPRUNE_SOAK_CALLS", "1000")), 16
    before_calls = len(stack.fetch_calls())
    results: List[Any] = [None] * total
    latencies: List[float] = [0.0] * total
    rss: Dict[str, List[int]] = {gw.name: [] for gw in stack.gateways}
    queue: "asyncio.Queue[int]" = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)

    async def worker(n: int) -> None:
        gw = n % 2
        async with client(stack, "alice", gw=gw) as s:
            while True:
                try:
                    i = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                t0 = time.monotonic()
                res = await s.call_tool(FETCH, {"url": f"{url}?soak={i}", "max_length": MAX, "user_request": request})
                latencies[i] = time.monotonic() - t0
                results[i] = text_of(res)
                if i % 250 == 0:
                    for g in stack.gateways:
                        rss[g.name].append(rss_kib(g.proc.pid))

    start = time.monotonic()
    await asyncio.gather(*(worker(n) for n in range(in_flight)))
    elapsed = time.monotonic() - start
    for g in stack.gateways:
        rss[g.name].append(rss_kib(g.proc.pid))
    assert all(r is not None for r in results), "every call answered"
    ids = [markers(r)[0] for r in results]
    assert len(set(ids)) == total, "every result pruned, each with its own id"
    assert len(stack.fetch_calls()) - before_calls == total, "every call reached the server once"
    # The store stays within its bound: the scope's records and the Redis keys.
    import redis

    r = redis.Redis.from_url(stack.redis_url)
    keys = [k for k in r.scan_iter("toolprune:*:r:*", count=1000)]
    per_scope: Dict[bytes, int] = {}
    for k in keys:  # toolprune:{scope}:r:{id}; other tests' users have their own scopes
        per_scope[k.split(b":")[1]] = per_scope.get(k.split(b":")[1], 0) + 1
    assert 0 < max(per_scope.values()) <= 100, f"max_records: 100 per scope (plugins.yaml), {per_scope}"
    for name, samples in rss.items():
        # After the first quarter the gateway's memory no longer grows with the calls.
        assert samples[-1] <= samples[1] * 1.25 + 64 * 1024, (name, samples)
    summary = {
        "calls": total, "in_flight": in_flight, "seconds": round(elapsed, 1), "calls_per_s": round(total / elapsed, 1),
        "latency_ms_p50": round(statistics.median(latencies) * 1000), "latency_ms_p95": round(sorted(latencies)[int(total * 0.95)] * 1000),
        "rss_kib": rss, "redis_records": len(keys),
    }
    print("soak:", json.dumps(summary))
    record_property("soak", summary)


async def test_added_latency_per_call(stack: Stack, manifest: Dict[str, Any]) -> None:
    """Sequential calls through one instance: pruned (basis) against unpruned (no basis)."""
    request = manifest[DOC]["request_en"]
    url = page_url(stack)
    times: Dict[str, List[float]] = {"pruned": [], "no_basis": []}
    async with client(stack, "alice", gw=0) as s:
        for _ in range(2):
            await s.call_tool(FETCH, {"url": url, "max_length": MAX})
        for n in range(30):
            pruned = {"url": f"{url}?latency={n}", "max_length": MAX, "user_request": request}  # another call each time
            for kind, args in (("pruned", pruned), ("no_basis", {"url": url, "max_length": MAX})):
                t0 = time.monotonic()
                await s.call_tool(FETCH, args)
                times[kind].append(time.monotonic() - t0)
    med = {k: round(statistics.median(v) * 1000, 1) for k, v in times.items()}
    # The plugin's own work on one result (what it adds to a call), in this process:
    # the guest's split and offline scoring, the Redis INCR and the record's script.
    import redis

    from toolprune import Pruner
    from toolprune.gateway import GatewayPruner, GatewaySettings, Identity
    from toolprune.redis_store import RedisStore

    raw = server_text(stack)
    client_ = redis.Redis.from_url(stack.redis_url)
    g = GatewayPruner(Pruner.load(), GatewaySettings.from_mapping({"prunable": ["*-fetch"], "threshold": 0.5}),
                      store_for=lambda scope: RedisStore(client_, scope), environ={}, secret=b"latency")
    result = {"content": [{"type": "text", "text": raw}], "isError": False}
    plugin: List[float] = []
    for _ in range(30):
        t0 = time.monotonic()
        assert await g.prune([FETCH], result, request, Identity("latency@example.com")) is not None
        plugin.append(time.monotonic() - t0)
    summary = {"median_ms": med, "e2e_difference_ms": round(med["pruned"] - med["no_basis"], 1),
               "plugin_ms_median": round(statistics.median(plugin) * 1000, 1), "plugin_ms_max": round(max(plugin) * 1000, 1),
               "raw_chars": len(raw)}
    print("latency:", json.dumps(summary))


async def test_with_redis_stopped_pages_pass_unchanged_and_the_gateway_keeps_serving(stack: Stack, manifest: Dict[str, Any]) -> None:
    request = manifest[DOC]["request_en"]
    url = page_url(stack)
    stack.stop_redis()
    try:
        for gw in (0, 1):
            async with client(stack, "alice", gw=gw) as s:
                for _ in range(2):
                    result = await s.call_tool(FETCH, {"url": url, "max_length": MAX, "user_request": request})
                    assert not result.isError
                    assert text_of(result) == server_text(stack), "unchanged"
                back = text_of(await s.call_tool(OMITTED, {"id": "P1", "from": 0, "to": 3}))
                assert "could not be read" in back or "There is no text" in back, back
            with urllib.request.urlopen(stack.gateways[gw].url + "/health", timeout=30) as r:
                assert r.status == 200
        assert any("outcome=failed reason=store" in l for gw in stack.gateways for l in gw.lines()), "a counts-only line says why"
    finally:
        stack.start_redis()
    # And with Redis back, pruning resumes.
    async with client(stack, "alice", gw=0) as s:
        body = text_of(await s.call_tool(FETCH, {"url": page_url(stack, call="after-redis"), "max_length": MAX, "user_request": request}))
    assert markers(body)[0]
