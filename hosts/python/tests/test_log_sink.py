"""Fail-open for the log sink (SPEC §11, §12): a ``log`` that raises, or a
stderr that is closed, never reaches a result. The line is dropped; the
result is returned as the guest computed it (its body, its id, its stored
record), ``omitted`` answers, the judge decides."""

from __future__ import annotations

import asyncio
import io
import sys
from typing import Any, Optional

import pytest

from toolprune import Pruner, ScriptedScorer, StoredResult, stderr_log
from toolprune.store import MemoryStore
from toolprune.types import StoreLimits

from conftest import REPO, REQUEST, note_text

JUDGE = REPO / "tests" / "conformance" / "judge"


class Throwing:
    """A sink that raises on every call, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, line: str) -> None:
        self.calls += 1
        raise RuntimeError("the log sink is broken")


def drop_odd() -> ScriptedScorer:
    return ScriptedScorer().default_score(0.9).scores(range(1, 400, 2), 0.05)


@pytest.mark.parametrize("form", ["import", "jobs", "asyncio"])
def test_a_log_that_raises_the_pruned_result_comes_back_with_its_id_and_omitted_serves_it(pruner: Pruner, form: str) -> None:
    log = Throwing()
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=log, form="jobs" if form == "jobs" else "import")
    turn = conversation.turn(REQUEST)

    def prune(**kwargs: Any) -> Any:
        if form == "asyncio":
            return asyncio.run(turn.on_tool_result_async(tool="fetch", prunable=True, **kwargs))
        return turn.on_tool_result(tool="fetch", prunable=True, **kwargs)

    text = note_text()
    r = prune(text=text, arguments='{"url": "a"}')
    assert (r.outcome, r.id, r.body != text, r.log_line is not None) == ("ok", "P1", True, True)
    assert "id=P1]" in r.body
    assert log.calls == 1, "the sink was asked once"
    back = conversation.omitted('{"id": "P1", "from": 1, "to": 1}')
    assert back.outcome == "ok" and back.text.startswith("Note 2.")
    assert log.calls == 2
    # A skipped result with a line (the repeat gate) and a failed one (the guest's failure line) too.
    again = prune(text=text, arguments='{"url": "a"}')
    assert (again.outcome, again.gate, again.body) == ("skipped", "repeated", text)
    bad = prune(text=text + "\n\n\udcff")
    assert (bad.outcome, bad.failure and bad.failure.reason, bad.log_line is not None) == ("failed", "invalid_text", True)
    assert log.calls == 4


class _Unreadable(MemoryStore):
    def get(self, id: str) -> Optional[StoredResult]:
        raise OSError("store down")


def test_a_log_that_raises_an_omitted_call_the_guest_could_not_answer_still_answers_try_again(pruner: Pruner) -> None:
    log = Throwing()
    store = _Unreadable(StoreLimits(max_records=10, max_chars=1_000_000, max_age_s=60))
    conversation = pruner.conversation(enabled=True, log=log, backend=store)
    back = conversation.omitted('{"id": "P1", "from": 0, "to": 0}')
    assert back.outcome == "failed" and back.failure is not None and back.failure.reason == "store"
    assert back.text
    assert log.calls == 1


def test_a_log_that_raises_the_judge_still_decides(pruner: Pruner) -> None:
    rules = (JUDGE / "rules.toml").read_text(encoding="utf-8")
    answers = (JUDGE / "answers.json").read_text(encoding="utf-8")
    message = "Compare the pricing of three CI services"
    d = pruner.route(rules, message, answers, log=Throwing())
    assert (d.verdict, d.to) == ("routed", ["agent_3"])
    d = asyncio.run(pruner.route_async(rules, message, answers, log=Throwing()))
    assert (d.verdict, d.to) == ("routed", ["agent_3"])


class _ClosedStderr(io.TextIOBase):
    """A stderr whose descriptor was closed: every write raises."""

    def write(self, s: str) -> int:
        raise OSError(9, "Bad file descriptor")

    def flush(self) -> None:
        raise OSError(9, "Bad file descriptor")


def test_the_default_sink_on_a_closed_stderr_drops_the_line_and_the_result_comes_back(pruner: Pruner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _ClosedStderr())
    stderr_log("tool prune: a line")  # dropped
    r = pruner.conversation(enabled=True, scorer=drop_odd()).turn(REQUEST).on_tool_result(tool="fetch", text=note_text(), prunable=True)
    assert (r.outcome, r.id) == ("ok", "P1")


def test_the_default_sink_without_a_stderr_writes_nothing_anywhere(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Python sets sys.stderr to None when descriptor 2 was closed at start;
    # print(file=None) would write to stdout (a protocol channel for an MCP server).
    monkeypatch.setattr(sys, "stderr", None)
    stderr_log("tool prune: a line")
    assert capsys.readouterr().out == ""
