#!/usr/bin/env python3
"""Benchmark (not a test): what one call through the Python host's public API
costs on a 100 KB tool result, timed exactly as the Rust host's rows of
``hosts/rust/examples/bench.rs`` ("Rust host: per call through
`Turn::on_tool_result`"): a new turn per call, a prunable ``fetch`` result made
of the first 100,000 characters (Unicode scalar values) of
``../shared/corpus/pep-0817-wheel-variants.rst``, bench.rs's ``REQUEST``,
pruning enabled, the default threshold; median of ``BENCH_RUNS`` (default 30)
calls after one warm-up. Prints Markdown rows in bench.rs's column layout.

    hosts/python/scripts/install.sh && hosts/python/.venv/bin/python hosts/python/scripts/bench.py

(``scripts/bench`` runs it.) Calls: ``turn.on_tool_result`` (blocking) and
``await turn.on_tool_result_async`` (guest steps in a worker thread, one
event loop for every call), each with the offline scorer and the stub. Every call makes a new conversation
(and so its own instance), as in the Rust host.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable, List

from toolprune import Pruner

ROOT = Path(__file__).resolve().parents[3]
BENCH_RS = ROOT / "hosts" / "rust" / "examples" / "bench.rs"
PEP = ROOT.parent / "shared" / "corpus" / "pep-0817-wheel-variants.rst"


def bench_request() -> str:
    """bench.rs's REQUEST constant: one copy of the request for every host's bench."""
    m = re.search(r'const REQUEST: &str = "((?:[^"\\]|\\.)*)";', BENCH_RS.read_text(encoding="utf-8"))
    if m is None or "\\" in m.group(1):
        sys.exit(f"bench: no plain REQUEST constant in {BENCH_RS}")
    return m.group(1)


def median(samples: List[float]) -> float:
    """As bench.rs: the sorted samples' element len / 2 (the upper median)."""
    return sorted(samples)[len(samples) // 2]


def row(label: str, seconds: float) -> str:
    return f"| Python host: {label}, first 100,000 chars | {seconds * 1e3:.2f} ms | | | | — |"


def main() -> None:
    runs = int(os.environ.get("BENCH_RUNS", "30"))
    if runs <= 0:
        sys.exit("bench: BENCH_RUNS must be a positive integer")
    request = bench_request()
    text = PEP.read_text(encoding="utf-8")[:100_000]
    quiet: Callable[[str], None] = lambda _line: None  # noqa: E731

    def call_blocking(pruner: Pruner) -> str:
        turn = pruner.conversation(enabled=True, log=quiet).turn(request)
        return turn.on_tool_result(tool="fetch", text=text, prunable=True).outcome

    async def call_async(pruner: Pruner) -> str:
        turn = pruner.conversation(enabled=True, log=quiet).turn(request)
        return (await turn.on_tool_result_async(tool="fetch", text=text, prunable=True)).outcome

    def time_blocking(fn: Callable[[], str]) -> float:
        check(fn())  # warm-up
        samples = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t)
        return median(samples)

    async def time_async(fn: Callable[[], Awaitable[str]]) -> float:
        check(await fn())  # warm-up
        samples = []
        for _ in range(runs):
            t = time.perf_counter()
            await fn()
            samples.append(time.perf_counter() - t)
        return median(samples)

    for scorer in ("offline", "stub"):
        pruner = Pruner.load(scorer=scorer, log=quiet)
        blocking = time_blocking(lambda: call_blocking(pruner))
        print(row(f"per call through `turn.on_tool_result` (blocking, new conversation + instance), {scorer} scorer", blocking))
        asynchronous = asyncio.run(time_async(lambda: call_async(pruner)))
        print(
            row(
                f"per call through `await turn.on_tool_result_async` (asyncio, new conversation + instance), {scorer} scorer",
                asynchronous,
            )
        )
        sys.stdout.flush()


def check(outcome: str) -> None:
    if outcome == "failed":
        sys.exit("bench: the call failed open")


if __name__ == "__main__":
    main()
