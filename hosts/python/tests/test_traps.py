"""Fail-open (SPEC §11): a trap, panic or resource limit in the guest — or a
scorer that raises — gives the raw text back with outcome `failed`, the
instance is discarded, and the next call gets a fresh one."""

from __future__ import annotations

import asyncio

import pytest

from toolprune import Limits, Pruner, ScoringRequest, ScoringResponse, ScriptedScorer

from conftest import REQUEST, Log, headings_text

SMALL_MEMORY = Limits(memory_bytes=4 << 20)


def big_text() -> str:
    return headings_text() * 400  # ~2 MB: more than 4 MiB of guest memory to prune


def drop_odd() -> ScriptedScorer:
    return ScriptedScorer().default_score(0.9).scores(range(1, 10_000, 2), 0.05).elapsed_ms(7)


def test_a_memory_limit_fails_open_and_the_next_call_is_fresh(pruner: Pruner) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(), agent="a", limits=SMALL_MEMORY, log=log)
    small = headings_text()
    assert turn.on_tool_result(tool="f", text=small, prunable=True).outcome == "ok"
    big = big_text()
    failed = turn.on_tool_result(tool="big", text=big, prunable=True)
    assert (failed.outcome, failed.body == big, failed.raw == big, failed.report) == ("failed", True, True, None)
    assert failed.failure is not None and failed.failure.reason == "guest_trap"
    assert failed.log_line == "tool prune: agent=a name=big outcome=failed reason=guest_trap"
    assert log.lines[-1] == failed.log_line
    again = turn.on_tool_result(tool="f", text=small, prunable=True)
    assert again.outcome == "ok"
    # The turn store survived the discarded instance: P1 is still readable.
    assert [s.id for s in turn.stored] == ["P1", "P2"]
    assert turn.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def test_running_out_of_fuel_fails_open(pruner: Pruner) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer="offline", agent="a", limits=Limits(fuel=50_000), log=log)
    text = headings_text()
    failed = turn.on_tool_result(tool="f", text=text, prunable=True)
    assert (failed.outcome, failed.body) == ("failed", text)
    assert failed.failure is not None and failed.failure.reason == "guest_trap"
    assert "fuel" in failed.failure.message
    turn.set_limits(Limits())
    again = turn.on_tool_result(tool="f", text=text, prunable=True)
    assert again.report is not None and again.failure is None


def test_the_async_form_fails_open_too(pruner: Pruner) -> None:
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(), limits=SMALL_MEMORY, log=Log())
    big = big_text()
    failed = asyncio.run(turn.on_tool_result_async(tool="f", text=big, prunable=True))
    assert (failed.outcome, failed.body == big) == ("failed", True)
    ok = asyncio.run(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True))
    assert ok.outcome == "ok"


def test_a_job_waiting_while_its_instance_is_discarded_fails_open(pruner: Pruner) -> None:
    """Two results in flight on one turn; the second traps while the first
    is still being scored: the first cannot finish on a dead instance."""
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd().delay(0.3), limits=SMALL_MEMORY, log=Log())
    small, big = headings_text(), big_text()

    async def main() -> "tuple[object, object]":
        first = asyncio.ensure_future(turn.on_tool_result_async(tool="f", text=small, prunable=True))
        await asyncio.sleep(0.1)
        second = await turn.on_tool_result_async(tool="big", text=big, prunable=True)
        return await first, second

    first, second = asyncio.run(main())
    assert second.outcome == "failed"  # type: ignore[attr-defined]
    assert (first.outcome, first.body) == ("failed", small)  # type: ignore[attr-defined]
    assert turn.on_tool_result(tool="f", text=small, prunable=True).outcome == "ok"


class Raising:
    name = "raising"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        raise RuntimeError("the scorer broke")


class Garbage:
    name = "garbage"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        return "not a response"  # type: ignore[return-value]


@pytest.mark.parametrize("scorer", [Raising(), Garbage()], ids=["raises", "returns-garbage"])
def test_a_scorer_that_raises_fails_open(pruner: Pruner, scorer: object) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, agent="a", log=log)
    text = headings_text()
    failed = turn.on_tool_result(tool="f", text=text, prunable=True)
    assert (failed.outcome, failed.body) == ("failed", text)
    assert failed.failure is not None and failed.failure.reason == "scorer_error"
    assert log.lines == ["tool prune: agent=a name=f outcome=failed reason=scorer_error"]
    via_async = asyncio.run(turn.on_tool_result_async(tool="f", text=text, prunable=True))
    assert (via_async.outcome, via_async.body) == ("failed", text)
    turn.scorer = drop_odd()
    assert turn.on_tool_result(tool="f", text=text, prunable=True).outcome == "ok"


def test_the_failure_line_writes_labels_as_the_guest_does(pruner: Pruner) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=Raising(), agent="my agent=x", log=log)
    turn.on_tool_result(tool="", text=headings_text(), prunable=True)
    assert log.lines == ["tool prune: agent=my_agent_x name=- outcome=failed reason=scorer_error"]
