"""A bounded soak: 2,000 ``tools/call`` through one proxy (around the real
server-everything), 16 in flight at a time, every result pruned, with an
``omitted`` read-back of a just-pruned result every 20 calls; then the store's
bound and the bookkeeping are checked on the raw JSON-RPC stream.

Raw JSON-RPC (not the SDK) on purpose: the SDK drops a duplicate or unknown
response silently, and this test counts every line the proxy writes.
Asserted: each request answered exactly once, no line for an id never sent; every
result pruned with a distinct id; every read-back that finds its id returns that
call's own text (an id means one text); the store holds exactly the newest
``max_records`` results (the one before them answers ``not_found``); the proxy's
resident memory after 2,000 calls is within 64 MiB of what it was after 100.
Bounded: ``SOAK_SECONDS`` for the whole test.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter

import pytest

from test_everything import REQUEST, everything, long_message

CALLS = 2000
IN_FLIGHT = 16
MAX_RECORDS = 24
SOAK_SECONDS = 150


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_a_thousand_concurrent_calls_are_each_answered_once_and_the_store_stays_bounded(tools, toolprune, user):
    user.config(f'prunable = ["echo"]\nthreshold = 0.3\n[store]\nmax_records = {MAX_RECORDS}\n[proxy]\nbasis = "argument"\n')
    asyncio.run(asyncio.wait_for(soak(tools, toolprune, user), SOAK_SECONDS))


async def soak(tools, toolprune, user) -> None:
    proc = await asyncio.create_subprocess_exec(
        toolprune, "mcp-proxy", "--", *everything(tools),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=user.env(), cwd=str(user.project), limit=1 << 24,
    )
    answers: Counter[int] = Counter()
    bodies: dict[int, dict] = {}
    waiters: dict[int, asyncio.Future] = {}
    stray: list[bytes] = []

    async def reader() -> None:
        while line := await proc.stdout.readline():
            m = json.loads(line)
            if "id" in m and "method" not in m:
                answers[m["id"]] += 1
                bodies[m["id"]] = m
                w = waiters.pop(m["id"], None)
                if w is not None and not w.done():
                    w.set_result(m)
                elif w is None:
                    stray.append(line)

    async def send(msg: dict) -> None:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        await proc.stdin.drain()

    async def request(id_: int, method: str, params: dict) -> dict:
        fut = asyncio.get_running_loop().create_future()
        waiters[id_] = fut
        await send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        return await fut

    read_task = asyncio.create_task(reader())
    started = time.monotonic()
    init = await request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}})
    assert "result" in init
    await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = await request(1, "tools/list", {})
    assert listed["result"]["tools"][-1]["name"] == "omitted"

    ids = list(range(100, 100 + CALLS))
    sem = asyncio.Semaphore(IN_FLIGHT)
    rss_after_100 = 0

    readbacks: list[tuple[int, str, str]] = []

    async def one(i: int) -> None:
        nonlocal rss_after_100
        async with sem:
            answer = await request(i, "tools/call", {"name": "echo", "arguments": {"message": long_message(i), "user_request": REQUEST}})
            if i == ids[100]:
                rss_after_100 = rss_kib(proc.pid)
            if i % 20 == 0:
                pid = answer["result"]["content"][0]["text"].split("id=")[1].split("]")[0]
                back = await request(100_000 + i, "tools/call", {"name": "omitted", "arguments": {"id": pid, "from": 3, "to": 3}})
                readbacks.append((i, pid, back["result"]["content"][0]["text"]))

    await asyncio.gather(*(one(i) for i in ids))
    elapsed = time.monotonic() - started
    rss_end = rss_kib(proc.pid)

    # Every request answered exactly once; nothing unasked.
    assert set(answers) == {0, 1, *ids, *(100_000 + i for i, _, _ in readbacks)}
    assert all(n == 1 for n in answers.values()), [i for i, n in answers.items() if n != 1][:10]
    assert not stray
    # Every result pruned, each with its own id.
    pruned_ids = []
    for i in ids:
        text = bodies[i]["result"]["content"][0]["text"]
        assert text.startswith("[Omitted by relevance:"), text[:120]
        pruned_ids.append(text.split("id=")[1].split("]")[0])
    assert len(set(pruned_ids)) == CALLS
    # Read-backs during the run: the call's own paragraph 3, or not_found once evicted.
    found = 0
    for i, pid, text in readbacks:
        if text.startswith("There is no text with id="):
            continue
        assert text.startswith(f"Paragraph 3 ({i}): dune0 "), (i, pid, text[:80])
        found += 1
    assert found >= len(readbacks) // 2, f"only {found} of {len(readbacks)} read-backs found their text"
    # The store holds the newest MAX_RECORDS results (ids in finishing order).
    by_number = sorted(pruned_ids, key=lambda p: int(p[1:]))
    newest, evicted = by_number[-MAX_RECORDS], by_number[-MAX_RECORDS - 1]
    kept = await request(5000, "tools/call", {"name": "omitted", "arguments": {"id": newest, "from": 0, "to": 11}})
    gone = await request(5001, "tools/call", {"name": "omitted", "arguments": {"id": evicted, "from": 0, "to": 11}})
    assert "lagoon0" in kept["result"]["content"][0]["text"]
    assert "There is no text with id=" + evicted in gone["result"]["content"][0]["text"]
    growth = (rss_end - rss_after_100) / 1024
    print(f"\nsoak: {CALLS} calls, {IN_FLIGHT} in flight, {elapsed:.1f} s ({CALLS / elapsed:.0f} calls/s); "
          f"{found}/{len(readbacks)} read-backs found; proxy RSS {rss_after_100 / 1024:.1f} MiB after 100 → {rss_end / 1024:.1f} MiB after {CALLS} (growth {growth:+.1f} MiB)")
    assert growth < 64
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), 15) == 0
    await read_task
