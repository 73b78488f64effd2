"""Fail-open (SPEC §11): a trap, panic or resource limit in the guest gives
the raw text back with outcome `failed` and the guest's failure line
(`settings.failure-line`, naming the limit); the instance is dropped and
the next call gets a fresh one; the store and the id counter survive. A
scorer that raises is not a host failure: every batch failed(network), the
guest's own outcome and line."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolprune import Limits, Pruner, ScoringRequest, ScoringResponse, ScriptedScorer

from conftest import REQUEST, Log, headings_text, note_text

SMALL_MEMORY = Limits(memory_bytes=4 << 20)


def big_text() -> str:
    return headings_text() * 400  # ~2 MB: more than 4 MiB of guest memory to prune


def drop_odd() -> ScriptedScorer:
    return ScriptedScorer().default_score(0.9).scores(range(1, 10_000, 2), 0.05).elapsed_ms(7)


def test_a_memory_limit_fails_open_names_the_limit_and_the_next_call_is_fresh(pruner: Pruner) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), agent="a b", limits=SMALL_MEMORY, log=log)
    turn = conversation.turn(REQUEST)
    assert turn.on_tool_result(tool="f", text=note_text(), prunable=True).id == "P1"
    big = big_text()
    failed = turn.on_tool_result(tool="big one", text=big, prunable=True)
    assert (failed.outcome, failed.body is big, failed.raw is big, failed.counts, failed.threshold) == (
        "failed",
        True,
        True,
        None,
        None,
    )
    assert failed.failure is not None and (failed.failure.reason, failed.failure.limit) == ("guest_trap", "memory")
    line = pruner.settings.failure_line("prune", "a b", "big one", "guest_trap", "memory")
    assert failed.log_line == line == "tool prune: agent=a_b name=big_one outcome=failed reason=guest_trap limit=memory"
    assert log.lines[-1] == line
    assert conversation._instance is None  # noqa: SLF001 - dropped
    again = turn.on_tool_result(tool="f", text=note_text(word="B"), prunable=True)
    assert again.id == "P2", "the counter and the store survive the dropped instance"
    assert conversation.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def test_running_out_of_fuel_fails_open_with_limit_fuel(pruner: Pruner) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer="offline", agent="a", limits=Limits(fuel=200_000), log=log)
    text = note_text()
    failed = conversation.turn(REQUEST).on_tool_result(tool="f", text=text, prunable=True)
    assert (failed.outcome, failed.body is text, failed.id) == ("failed", True, None)
    assert failed.failure is not None and (failed.failure.reason, failed.failure.limit) == ("guest_trap", "fuel")
    assert "fuel" in failed.failure.message
    assert log.lines == ["tool prune: agent=a name=f outcome=failed reason=guest_trap limit=fuel"]
    fine = pruner.conversation(enabled=True, scorer="offline", log=Log())
    assert fine.turn(REQUEST).on_tool_result(tool="f", text=text, prunable=True).failure is None


def test_a_panic_is_not_called_a_memory_limit(pruner: Pruner) -> None:
    """The probe that names `limit=memory` replays the call with more memory:
    a trap that does not depend on memory stays without a limit."""
    from toolprune import _engine

    compiled = pruner._compiled  # noqa: SLF001
    limits = _engine.CallLimits(fuel=10**9, wall_ms=0, memory_bytes=64 << 20)
    original = _engine.Trapped(None, "unreachable")

    def always_traps(_i: Any, _l: Any) -> Any:
        raise _engine.Trapped(None, "unreachable again")

    def answers(i: Any, l: Any) -> Any:
        return i.call(l, "version")

    assert _engine.explain(compiled, original, limits, always_traps).limit is None
    assert _engine.explain(compiled, original, limits, answers).limit == "memory"
    fuel = _engine.Trapped("fuel", "all fuel consumed")
    assert _engine.explain(compiled, fuel, limits, answers).limit == "fuel"


def test_an_instance_that_cannot_even_start_fails_open(pruner: Pruner) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), limits=Limits(memory_bytes=64 << 10), log=log)
    text = note_text()
    failed = conversation.turn(REQUEST).on_tool_result(tool="f", text=text, prunable=True)
    assert failed.outcome == "failed" and failed.body is text
    assert failed.failure is not None and failed.failure.limit == "memory"
    assert "exceeds memory limits" in failed.failure.message
    assert log.lines == [failed.log_line]


def test_the_async_form_fails_open_too(pruner: Pruner) -> None:
    turn = pruner.conversation(enabled=True, scorer=drop_odd(), limits=SMALL_MEMORY, log=Log()).turn(REQUEST)
    big = big_text()
    failed = asyncio.run(turn.on_tool_result_async(tool="f", text=big, prunable=True))
    assert (failed.outcome, failed.body is big) == ("failed", True)
    assert asyncio.run(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True)).outcome == "ok"


def test_a_job_waiting_while_its_instance_is_dropped_is_made_again(pruner: Pruner) -> None:
    """Two results in flight; the second traps while the first is being
    scored. The first is finished on the fresh instance (the guest is
    deterministic: the same plan), so one result's trap never fails another."""
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=drop_odd().delay(0.3), limits=SMALL_MEMORY, log=log)
    turn = conversation.turn(REQUEST)
    small, big = headings_text(), big_text()

    async def main() -> "tuple[Any, Any]":
        first = asyncio.ensure_future(turn.on_tool_result_async(tool="f", text=small, prunable=True))
        await asyncio.sleep(0.1)
        second = await turn.on_tool_result_async(tool="big", text=big, prunable=True)
        return await first, second

    first, second = asyncio.run(main())
    assert second.outcome == "failed"
    assert (first.outcome, first.id) == ("ok", "P1")
    assert conversation.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def test_omitted_after_a_trap_answers_try_again(pruner: Pruner) -> None:
    log = Log()
    conversation = pruner.conversation(agent="a", log=log, limits=Limits(fuel=10))
    answer = conversation.omitted('{"id": "P1", "from": 0, "to": 1}')
    assert answer.outcome == "failed" and answer.failure is not None and answer.failure.limit == "fuel"
    assert answer.text == pruner._stateless(0, "unavailable", "en")  # noqa: SLF001
    assert answer.text and answer.log_line == "tool omitted: agent=a outcome=failed reason=guest_trap limit=fuel"
    assert log.lines == [answer.log_line]


class Raising:
    name = "raising"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        raise RuntimeError("the scorer broke")


class Garbage:
    name = "garbage"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        return "not a response"  # type: ignore[return-value]


class TooFew:
    name = "too-few"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        return ScoringResponse.answered([])


class BadScore:
    name = "bad-score"

    def score(self, request: ScoringRequest) -> Any:
        from toolprune import Scores

        return [Scores(["high"]) for _ in request.batches]  # type: ignore[list-item]


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("scorer", [Raising(), Garbage(), TooFew(), BadScore()], ids=["raises", "garbage", "too-few", "bad-score"])
def test_a_scorer_failure_is_every_batch_failed_network_with_the_guests_line(pruner: Pruner, scorer: Any, flavour: str) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=scorer, agent="a", log=log)
    turn = conversation.turn(REQUEST)
    text = note_text(40)
    if flavour == "sync":
        failed = turn.on_tool_result(tool="f", text=text, prunable=True)
    else:
        failed = asyncio.run(turn.on_tool_result_async(tool="f", text=text, prunable=True))
    assert (failed.outcome, failed.body is text, failed.failure) == ("failed", True, None)
    assert [(f.status, f.klass) for f in failed.failures] == [(None, "network")] * 3
    assert failed.log_line is not None and failed.log_line.startswith("tool prune: agent=a name=f outcome=failed shape=text")
    assert f"scorer={scorer.name}" in failed.log_line and log.lines == [failed.log_line]
    assert turn.on_tool_result(tool="f", text=text, prunable=True, scorer=drop_odd()).outcome == "ok"
