"""The blocking API prunes through the component's only import,
``scorer.score`` (issue 22 §2, contract 0.3): one ``pruner.prune`` call, the
scorer answering inside it, at most once per result; concurrent results of
one conversation score at once on instances of their own; a result whose
id moved while it was scored is finished again without a second scorer
call; a call of the import where this host scores through jobs traps and
fails open. (Both forms against the same expected bytes: the conformance
suite, ``test_conformance.py``.)"""

from __future__ import annotations

import threading
import time
from typing import Any, List

import pytest

from toolprune import Pruner, ScriptedScorer
from toolprune import _convert, _engine
from toolprune.scorers import scorer_choice

from conftest import REQUEST, Log, note_text


def spy(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The export names every guest call of this test uses, in order."""
    calls: List[str] = []
    real = _engine.Instance.call

    def call(self: Any, limits: Any, name: str, *args: Any) -> Any:
        calls.append(name)
        return real(self, limits, name, *args)

    monkeypatch.setattr(_engine.Instance, "call", call)
    return calls


def odd_drop() -> ScriptedScorer:
    return ScriptedScorer().default_score(1.0).scores(range(1, 12, 2), 0.0)


@pytest.mark.parametrize("form, exports", [("import", ["prune"]), ("jobs", ["[constructor]prune-job", "[method]prune-job.scoring-request", "[method]prune-job.finish"])])
def test_the_blocking_api_prunes_in_the_chosen_form_and_asks_the_scorer_once(
    pruner: Pruner, monkeypatch: pytest.MonkeyPatch, form: str, exports: List[str]
) -> None:
    scorer = odd_drop()
    conversation = pruner.conversation(enabled=True, scorer=scorer, log=Log(), form=form)
    calls = spy(monkeypatch)
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=note_text(), prunable=True)
    assert (result.outcome, result.id, result.scorer_calls, scorer.calls) == ("ok", "P1", 1, 1)
    assert [c for c in calls if "prune" in c] == exports


def test_the_form_is_checked(pruner: Pruner) -> None:
    with pytest.raises(ValueError, match="form must be one of import, jobs"):
        pruner.conversation(form="threads")


def test_concurrent_results_of_one_conversation_score_at_once_in_the_import_form(pruner: Pruner) -> None:
    """Each call runs on an instance of its own: three 0.6 s scorers take
    ≈ 0.6 s, not 1.8 s; ids in the order they finish, no gaps."""
    log = Log()
    conversation = pruner.conversation(enabled=True, log=log)
    turn = conversation.turn(REQUEST)
    scorers = [odd_drop().delay(0.6) for _ in range(3)]
    results: List[Any] = [None] * 3

    def work(i: int) -> None:
        results[i] = turn.on_tool_result(tool="fetch", text=note_text(word=f"Item{i}"), prunable=True, scorer=scorers[i])

    start = time.monotonic()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    assert sorted(r.id for r in results) == ["P1", "P2", "P3"]
    assert all(s.calls == 1 for s in scorers) and all(r.scorer_calls == 1 for r in results)
    assert elapsed < 1.5, f"the scoring was serialized: {elapsed:.2f} s"
    for r in results:
        assert f"id={r.id}" in r.body


def test_an_id_that_moved_while_scoring_is_finished_again_without_a_second_scorer_call(pruner: Pruner) -> None:
    """Slow and fast start together, both expecting P1; fast finishes first
    and takes it; slow is finished again as P2 from the response it already
    has: its markers say P2, its scorer was asked once, and the store's P2
    holds slow's paragraphs."""
    conversation = pruner.conversation(enabled=True, log=Log())
    turn = conversation.turn(REQUEST)
    slow_scorer, fast_scorer = odd_drop().delay(0.8), odd_drop()
    out: dict = {}
    slow = threading.Thread(
        target=lambda: out.__setitem__("slow", turn.on_tool_result(tool="fetch", text=note_text(word="Slow"), prunable=True, scorer=slow_scorer))
    )
    slow.start()
    time.sleep(0.2)  # slow is inside its import call, having guessed P1
    out["fast"] = turn.on_tool_result(tool="fetch", text=note_text(word="Fast"), prunable=True, scorer=fast_scorer)
    slow.join()
    assert out["fast"].id == "P1" and out["slow"].id == "P2"
    assert "id=P2" in out["slow"].body and "id=P1" not in out["slow"].body
    assert (slow_scorer.calls, out["slow"].scorer_calls) == (1, 1)
    back = conversation.omitted({"id": "P2", "from": 1, "to": 1})
    assert back.outcome == "ok" and back.text.startswith("Slow 2.")


def _host_input(text: str) -> Any:
    return _convert.record(
        request=REQUEST, text=text, enabled=True, succeeded=True, prunable=True, threshold=0.2, lang="en",
        scorer=scorer_choice(ScriptedScorer()), jev_model=None, agent="a", tool="t", report=False,
        arguments=None, pruned_calls=[], work_budget=None,
    )


def test_the_import_traps_where_no_scorer_was_set(pruner: Pruner) -> None:
    """The job form, settings and omitted run with no scorer set: a call of
    the import there traps (and the caller fails open), never hangs or
    answers something made up."""
    instance = _engine.Instance(pruner._compiled)  # noqa: SLF001
    limits = pruner.settings.call_limits_for(10_000)
    with pytest.raises(_engine.Trapped) as info:
        instance.call(limits, "prune", _host_input(note_text()), 1)
    assert "ImportRefused" in info.value.message


def test_an_error_raised_inside_the_import_is_a_trap_not_an_argument_error(pruner: Pruner) -> None:
    """A TypeError / ValueError from the host function (a response that
    cannot be lowered) is not mistaken for an argument that could not be
    lowered before the call: the guest ran, so it is a trap."""
    limits = pruner.settings.call_limits_for(10_000)
    for bad in (lambda _r: "not a response", lambda _r: (_ for _ in ()).throw(ValueError("boom"))):
        instance = _engine.Instance(pruner._compiled)  # noqa: SLF001
        with _engine.scoring(bad), pytest.raises(_engine.Trapped):
            instance.call(limits, "prune", _host_input(note_text()), 1)
    # An argument that cannot be lowered is still a TypeError, nothing ran.
    fresh = _engine.Instance(pruner._compiled)  # noqa: SLF001
    with pytest.raises(TypeError):
        fresh.call(limits, "prune", _host_input(note_text()), "one")


@pytest.mark.parametrize("form, export", [("import", "decide"), ("jobs", "[static]judge-job.load")])
def test_the_judge_decides_in_the_chosen_form_with_one_scorer_call(pruner: Pruner, monkeypatch: pytest.MonkeyPatch, form: str, export: str) -> None:
    from test_judge import MESSAGE, RULES, JudgeScorer, fixture, route

    calls = spy(monkeypatch)
    scorer = JudgeScorer(fixture("answers.json"))
    decision = pruner.route(RULES, MESSAGE, scorer=scorer, log=Log(), form=form)
    assert decision == route(pruner, "answers.json", Log()) and len(scorer.requests) == 1
    assert export in calls and ("decide" in calls) == (form == "import")


@pytest.mark.parametrize("form", ["import", "jobs", "asyncio"])
def test_the_work_budget_decides_the_same_in_every_form(pruner: Pruner, form: str) -> None:
    """SPEC §7: the guest's own budget, not the machine's speed, stops a
    result: `Limits(work=…)` reaches the guest as `work-budget`; past it the
    result is `failed`, raw, with `reason=budget`, and no scorer was asked."""
    import asyncio

    from toolprune import Limits

    text = note_text()
    scorer = odd_drop()
    done = pruner.conversation(enabled=True, scorer=odd_drop(), log=Log(), form="jobs" if form == "jobs" else "import")
    full = done.turn(REQUEST).on_tool_result(tool="fetch", text=text, prunable=True)
    assert full.outcome == "ok" and full.counts is not None and full.counts.work > len(text)
    log = Log()
    conversation = pruner.conversation(
        enabled=True, scorer=scorer, log=log, limits=Limits(work=len(text) - 1), form="jobs" if form == "jobs" else "import"
    )
    turn = conversation.turn(REQUEST)
    if form == "asyncio":
        result = asyncio.run(turn.on_tool_result_async(tool="fetch", text=text, prunable=True))
    else:
        result = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    assert (result.outcome, result.body, result.scorer_calls, scorer.calls) == ("failed", text, 0, 0)
    assert result.failure is None, "the guest decided, not a host limit"
    assert log.lines and "reason=budget" in log.lines[-1], log.lines
