"""The Python API of contract 0.2: Pruner → conversation → turn →
on_tool_result; the store, ids, omitted, the tool definition, inspection,
thresholds, argument checks, the opt-in report, the scorer protocol, and the
asyncio flavour that does not block the loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, List

import pytest

from toolprune import (
    CancelToken,
    Failed,
    JevResponse,
    Pruner,
    Scores,
    ScoringRequest,
    ScoringResponse,
    ScriptedScorer,
    StoreLimits,
)

from conftest import REQUEST, Log, headings_text, note_text


def drop_odd() -> ScriptedScorer:
    """Odd paragraphs score 0.05 (dropped), the rest 0.9: `ok` on headings.md and note_text()."""
    return ScriptedScorer().default_score(0.9).scores(range(1, 400, 2), 0.05).elapsed_ms(7)


# --- gates, outcomes, ids ------------------------------------------------------------


def test_pruning_is_off_unless_enabled_and_says_skipped_disabled(pruner: Pruner, log: Log) -> None:
    scorer = drop_odd()
    turn = pruner.conversation(scorer=scorer, log=log).turn(REQUEST)
    text = headings_text()
    result = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    assert (result.outcome, result.gate, result.id, result.log_line) == ("skipped", "disabled", None, None)
    assert result.body is text and result.raw is text, "the very same str"
    assert scorer.calls == 0 and log.lines == []


@pytest.mark.parametrize(
    "ok, prunable, text, gate",
    [(False, True, None, "tool_failed"), (True, False, None, "not_prunable"), (True, True, "short " * 10, "too_short")],
)
def test_each_cheap_gate_is_named(pruner: Pruner, log: Log, ok: bool, prunable: bool, text: Any, gate: str) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=log)
    body = text or headings_text()
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=body, ok=ok, prunable=prunable)
    assert (result.outcome, result.gate, result.id, result.body is body) == ("skipped", gate, None, True)
    assert log.lines == [] and result.counts is not None


def test_tools_are_not_prunable_by_default(pruner: Pruner) -> None:
    result = pruner.conversation(enabled=True, scorer=drop_odd(), log=Log()).turn(REQUEST).on_tool_result(
        tool="read_file", text=headings_text()
    )
    assert (result.outcome, result.gate) == ("skipped", "not_prunable")


def test_ids_are_unique_across_turns_and_read_back_later(pruner: Pruner, log: Log) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), agent="a", log=log)
    first = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=note_text(word="Alpha"), prunable=True)
    second = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=note_text(word="Bravo"), prunable=True)
    assert (first.outcome, first.id, second.id) == ("ok", "P1", "P2")
    assert "id=P2]" in second.body and len(second.body) < len(note_text())
    for _ in range(3):
        conversation.turn(REQUEST)
    back = conversation.omitted({"id": "P1", "from": 1, "to": 1})
    assert back.outcome == "ok" and back.text.startswith("Alpha 2.")
    assert back.log_line.startswith("tool omitted: agent=a id=P1 from=1 to=1 chars=")
    assert log.lines[-1] == back.log_line
    assert conversation.omitted('{"id":"P3","from":0,"to":1}').outcome == "not_found"
    assert [s.id for s in conversation.stored] == ["P1", "P2"] and conversation.count == 2
    stored = conversation.stored[0]
    # The record is the guest's: the host keeps it as it is and never reads `data`.
    assert stored.chars > 0 and isinstance(stored.data, str) and "Alpha 2." in stored.data


def test_a_result_that_is_not_ok_takes_no_id_and_every_result_carries_the_field(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, scorer=ScriptedScorer().default_score(1.0), log=Log())
    turn = conversation.turn(REQUEST)
    kept = turn.on_tool_result(tool="f", text=note_text(), prunable=True)
    assert (kept.outcome, kept.id, kept.body is kept.raw) == ("nothing_dropped", None, True)
    assert turn.on_tool_result(tool="f", text=note_text(), prunable=True, scorer=drop_odd()).id == "P1"


def test_concurrent_results_get_ids_in_the_order_they_finish_without_gaps(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=Log())
    turn = conversation.turn(REQUEST)

    async def main() -> List[Any]:
        return list(
            await asyncio.gather(
                turn.on_tool_result_async(tool="f", text=note_text(word="A"), prunable=True, scorer=drop_odd().delay(0.6)),
                turn.on_tool_result_async(tool="f", text=note_text(word="B"), prunable=True),
                turn.on_tool_result_async(tool="f", text=note_text(word="C"), prunable=False),
                turn.on_tool_result_async(tool="f", text=note_text(word="D"), prunable=True, scorer=drop_odd().delay(0.3)),
            )
        )

    results = asyncio.run(main())
    assert [r.id for r in results] == ["P3", "P1", None, "P2"]
    assert conversation.omitted({"id": "P3", "from": 1, "to": 1}).text.startswith("A 2.")
    assert turn.on_tool_result(tool="f", text=note_text(word="E"), prunable=True).id == "P4"


def test_threads_pruning_at_once_get_every_id_once(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd().delay(0.05), log=Log())
    turn = conversation.turn(REQUEST)
    ids: List[Any] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        r = turn.on_tool_result(tool="f", text=note_text(word=f"T{n}"), prunable=True)
        with lock:
            ids.append(r.id)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(ids, key=lambda i: int(i[1:])) == [f"P{n}" for n in range(1, 9)]


def test_the_store_is_bounded_and_an_evicted_id_is_not_found(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=Log(), store={"max_records": 2})
    assert conversation.store_limits.max_chars == pruner.settings.defaults().store.max_chars
    turn = conversation.turn(REQUEST)
    for word in ("A", "B", "C"):
        turn.on_tool_result(tool="f", text=note_text(word=word), prunable=True)
    assert [s.id for s in conversation.stored] == ["P2", "P3"] and conversation.count == 3
    assert [conversation.omitted({"id": i, "from": 0, "to": 99}).outcome for i in ("P1", "P2", "P3")] == [
        "not_found",
        "ok",
        "ok",
    ]
    by_chars = pruner.conversation(enabled=True, scorer=drop_odd(), log=Log(), store=StoreLimits(256, 3000, 60))
    turn = by_chars.turn(REQUEST)
    first = turn.on_tool_result(tool="f", text=note_text(word="D"), prunable=True)
    assert by_chars.stored[0].chars > 1500  # two records weigh more than 3,000 characters
    turn.on_tool_result(tool="f", text=note_text(word="E"), prunable=True)
    assert first.id == "P1" and [s.id for s in by_chars.stored] == ["P2"]
    assert by_chars.omitted({"id": "P1", "from": 0, "to": 99}).outcome == "not_found"
    with pytest.raises(ValueError):
        pruner.conversation(store={"max_things": 1})


# --- omitted and the tool definition -------------------------------------------------


def test_the_omitted_tool_is_the_guests_object_in_each_dialect(pruner: Pruner) -> None:
    assert pruner.dialects == ["plain", "openai", "anthropic", "mcp", "mcp-hooked"]
    conversation = pruner.conversation(lang="ja")
    plain = conversation.omitted_tool()
    assert plain == json.loads(pruner._stateless(0, "tool", "ja", "plain"))
    assert set(plain) == {"name", "description", "parameters"} and isinstance(plain["parameters"], dict)
    assert set(plain["parameters"]["properties"]) == {"id", "from", "to"}
    openai = conversation.omitted_tool("openai", "en")
    assert openai["type"] == "function" and openai["function"]["name"] == plain["name"]
    assert set(conversation.omitted_tool("anthropic")) == {"name", "description", "input_schema"}
    assert set(conversation.omitted_tool("mcp")) == {"name", "description", "inputSchema"}
    assert conversation.omitted_tool_name == pruner.omitted_tool_name == plain["name"]
    assert conversation.omitted_tool()["description"] != conversation.omitted_tool(lang="en")["description"]
    with pytest.raises(ValueError, match="plain, openai, anthropic, mcp, mcp-hooked"):
        conversation.omitted_tool("gemini")
    with pytest.raises(ValueError, match="ja, en"):
        conversation.omitted_tool("plain", "fr")


def test_omitted_arguments_are_the_models_text_or_a_mapping(pruner: Pruner, log: Log) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=log, agent="a")
    conversation.turn(REQUEST).on_tool_result(tool="f", text=note_text(), prunable=True)
    huge = conversation.omitted('{"id": "P1", "from": 0, "to": 99999999999999999999}')
    assert huge.outcome == "ok" and huge.text.count("Note ") == 6
    assert conversation.omitted({"id": "p1", "from": "3", "to": 3.0}).text.startswith("Note 4.")
    kept = conversation.omitted({"id": "P1", "from": 2, "to": 2})
    assert kept.outcome == "not_dropped"
    for bad in ("[", "{}", '{"id": 1}', "not json"):
        answer = conversation.omitted(bad)
        assert answer.outcome == "invalid" and answer.text
    assert len(log.lines) == 1 + 3 + 4
    with pytest.raises(TypeError):
        conversation.omitted(42)  # type: ignore[arg-type]


# --- inspection and the settings ------------------------------------------------------


def test_inspect_shows_shape_spans_and_kinds(pruner: Pruner) -> None:
    text = "é" * 130 + "\n\n" + "b" * 130
    inspection = pruner.inspect(text)
    assert inspection.shape == "text" and inspection.wrapper_span is None
    assert [(u.index, u.kind) for u in inspection.units] == [(0, "scored"), (1, "scored")]
    assert inspection.units[0].byte_start == 0 and inspection.units[-1].byte_end == len(text.encode())
    assert inspection.units[-1].char_end == len(text)
    structured = pruner.inspect('{"a": 1, "b": [1, 2, 3]}')
    assert structured.shape is None
    wrapper = pruner.inspect(json.dumps({"content": note_text()}))
    assert wrapper.shape == "json_wrapper" and wrapper.wrapper_span is not None
    with pytest.raises(TypeError):
        pruner.inspect(b"bytes")  # type: ignore[arg-type]


def test_is_prunable_follows_the_guests_globs_and_exclusions(pruner: Pruner) -> None:
    assert pruner.is_prunable("WebFetch") and pruner.is_prunable("mcp__fetch__fetch")
    assert not pruner.is_prunable("Read", ["*"]) and not pruner.is_prunable("omitted", ["*"])
    assert pruner.is_prunable("my_tool", ["my_*"]) and not pruner.is_prunable("my_tool", ["other"])
    # Every name a door knows: never prunable under any name wins (SPEC §2).
    assert not pruner.is_prunable(["read_file", "mcp_fetch_read_file"], ["mcp_fetch_*"])
    assert pruner.is_prunable(["fetch", "mcp__fetch__fetch"], ["mcp__fetch__*"])
    with pytest.raises(TypeError):
        pruner.is_prunable([1], ["*"])  # type: ignore[list-item]


def test_the_contract_version_and_settings_come_from_the_guest(pruner: Pruner) -> None:
    assert pruner.version.startswith("0.3.")
    defaults = pruner.settings.defaults()
    assert defaults.threshold in (0.1, 0.2, 0.3, 0.5) and defaults.lang in pruner.langs
    assert pruner.settings.variables() and defaults.token_variable not in pruner.settings.variables()
    limits = pruner.settings.call_limits_for(100_000)
    assert limits.fuel > pruner.settings.call_limits_for(0).fuel > 0 and limits.memory_bytes


# --- thresholds and argument checks -----------------------------------------------------


@pytest.mark.parametrize("value", ["0.25", -1, "NaN", 0.25, "0.2.0", 1, "", float("nan")])
def test_a_threshold_outside_the_four_is_refused_with_the_guests_message(pruner: Pruner, value: Any) -> None:
    with pytest.raises(ValueError) as info:
        pruner.conversation(threshold=value)
    with pytest.raises(ValueError) as direct:
        pruner.settings.threshold(str(value))
    assert str(info.value) == str(direct.value) and "0.1" in str(info.value)


@pytest.mark.parametrize("value, expected", [("0.30", 0.3), (0.5, 0.5), (" 0.1 ", 0.1), (0.1 + 0.2, 0.3), (None, 0.2)])
def test_written_forms_of_the_four_are_accepted(pruner: Pruner, value: Any, expected: float) -> None:
    conversation = pruner.conversation(enabled=True, threshold=value, scorer=drop_odd(), log=Log())
    assert conversation.threshold == expected
    assert conversation.turn(REQUEST).on_tool_result(tool="f", text=note_text(), prunable=True).threshold == expected


def test_a_bool_threshold_is_a_type_error(pruner: Pruner) -> None:
    with pytest.raises(TypeError):
        pruner.conversation(threshold=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [b"bytes", None, 42, ["a"]])
def test_a_text_that_is_not_a_str_is_a_type_error_before_any_guest_call(pruner: Pruner, bad: Any) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=Log())
    turn = conversation.turn(REQUEST)
    with pytest.raises(TypeError, match="text must be a str"):
        turn.on_tool_result(tool="f", text=bad, prunable=True)
    with pytest.raises(TypeError, match="text must be a str"):
        asyncio.run(turn.on_tool_result_async(tool="f", text=bad, prunable=True))
    assert conversation._instance is None, "the guest was never called"  # noqa: SLF001
    with pytest.raises(TypeError):
        turn.on_tool_result(tool=1, text="x", prunable=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        conversation.turn(b"request")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pruner.conversation(agent=None)  # type: ignore[arg-type]
    assert turn.on_tool_result(tool="f", text=note_text(), prunable=True).id == "P1"


def test_scorers_by_name_and_bad_arguments(pruner: Pruner) -> None:
    with pytest.raises(ValueError):
        pruner.conversation(scorer="jev-please")
    with pytest.raises(TypeError):
        pruner.conversation(scorer=object())
    with pytest.raises(ValueError):
        pruner.conversation(lang="fr")
    with pytest.raises(TypeError):
        pruner.conversation().turn(REQUEST, cancel=threading.Event())  # type: ignore[arg-type]


# --- the report --------------------------------------------------------------------------


def test_the_paragraph_report_is_opt_in(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=Log())
    turn = conversation.turn(REQUEST)
    plain = turn.on_tool_result(tool="f", text=note_text(), prunable=True)
    assert plain.paragraphs == [] and plain.counts is not None and plain.counts.paragraphs == 12
    full = turn.on_tool_result(tool="f", text=note_text(), prunable=True, report=True)
    assert "".join(p.fate[0] for p in full.paragraphs) == "kd" * 6
    assert [p.score for p in full.paragraphs[:2]] == [0.9, 0.05]
    assert pruner.conversation(report=True, enabled=True, scorer=drop_odd(), log=Log()).turn(REQUEST).on_tool_result(
        tool="f", text=note_text(), prunable=True
    ).paragraphs


def test_the_result_carries_every_field(pruner: Pruner, log: Log) -> None:
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), agent="a", log=log)
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=note_text(), prunable=True)
    assert (result.outcome, result.gate, result.id, result.shape) == ("ok", None, "P1", "text")
    assert result.counts is not None and (result.counts.dropped, result.counts.calls, result.counts.ms) == (6, 1, 7)
    assert result.threshold == 0.2 and result.ratio is not None and 0.25 < result.ratio < 1
    assert result.served_model is None and result.failures == [] and result.failure is None
    assert log.lines == [result.log_line]
    assert result.log_line == (
        "tool prune: agent=a name=fetch outcome=ok shape=text raw_chars=4465 kept_chars=2719 paragraphs=12 "
        "dropped=6 calls=1 jev_tokens=0 ms=7 threshold=0.2 ratio=0.391 scorer=scripted"
    )


# --- the scorer protocol ---------------------------------------------------------------------


def test_a_scorer_sees_the_guests_request_and_may_answer_a_plain_list(pruner: Pruner) -> None:
    seen: List[ScoringRequest] = []

    class Listing:
        name = "listing"

        def score(self, request: ScoringRequest) -> List[Any]:
            seen.append(request)
            return [Scores([0.9 if p % 2 == 0 else 0.05 for p in b.paragraphs]) for b in request.batches]

    conversation = pruner.conversation(enabled=True, scorer=Listing(), log=Log())
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=headings_text(), prunable=True)
    assert result.outcome == "ok" and "scorer=listing" in (result.log_line or "")
    assert result.counts is not None and result.counts.ms is not None  # measured by the host
    (request,) = seen
    assert request.basis == REQUEST
    assert request.policy.max_in_flight == 4 and request.policy.deadline_ms == 20_000
    assert all(json.loads(b.jev_body)["state"]["request"] == REQUEST for b in request.batches)
    assert all(len(b.paragraphs) == len(b.chunks) for b in request.batches)


def test_a_scorer_may_answer_with_jev_bodies_and_failures(pruner: Pruner) -> None:
    def body(request: ScoringRequest) -> str:
        chunks = json.loads(request.batches[0].jev_body)["questions"]
        answers = {k: {"type": "noul", "noul": 0.9 if int(k[1:]) % 2 == 0 else 0.05} for k in chunks}
        return json.dumps({"model": "jev-x", "answers": answers, "usage": {"input_tokens": 42}})

    class Mixed:
        name = "mixed"

        def score(self, request: ScoringRequest) -> ScoringResponse:
            return ScoringResponse.answered([JevResponse(body(request))] + [Failed.http(503)] * (len(request.batches) - 1))

    result = pruner.conversation(enabled=True, scorer=Mixed(), log=Log()).turn(REQUEST).on_tool_result(
        tool="f", text=note_text(24), prunable=True
    )
    assert result.outcome == "ok" and result.served_model == "jev-x"
    assert [(f.batch, f.status, f.klass) for f in result.failures] == [(1, 503, "http_5xx")]
    assert result.counts is not None and result.counts.jev_tokens == 42


@pytest.mark.parametrize("form", ["import", "jobs"])
def test_the_stub_scores_inside_the_guest_without_a_host_call(pruner: Pruner, form: str) -> None:
    conversation = pruner.conversation(enabled=True, scorer="stub", log=Log(), form=form)
    text = headings_text()
    result = conversation.turn(REQUEST).on_tool_result(tool="f", text=text, prunable=True, report=True)
    assert "scorer=stub" in (result.log_line or "")
    assert result.scorer_calls == 0 and result.counts is not None and (result.counts.calls, result.counts.ms) == (0, None)
    assert any(p.score is not None for p in result.paragraphs), "the guest scored it"
    again = asyncio.run(conversation.turn(REQUEST).on_tool_result_async(tool="f", text=text, prunable=True, report=True))
    assert (again.outcome, again.paragraphs, again.scorer_calls) == (result.outcome, result.paragraphs, 0)


# --- asyncio -----------------------------------------------------------------------------


async def _ticks_while(coro: Any) -> "tuple[Any, int]":
    ticks = 0
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.ensure_future(ticker())
    try:
        result = await coro
    finally:
        stop = True
        await task
    return result, ticks


def test_async_scoring_does_not_block_the_event_loop(pruner: Pruner) -> None:
    turn = pruner.conversation(enabled=True, scorer=drop_odd().delay(0.4), log=Log()).turn(REQUEST)
    result, ticks = asyncio.run(_ticks_while(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True)))
    assert result.outcome == "ok"
    assert ticks >= 15, ticks


def test_a_blocking_scorer_runs_in_a_thread_under_asyncio(pruner: Pruner) -> None:
    class Blocking:
        name = "blocking"

        def score(self, request: ScoringRequest) -> ScoringResponse:
            time.sleep(0.4)
            return drop_odd().answer(request)

    turn = pruner.conversation(enabled=True, scorer=Blocking(), log=Log()).turn(REQUEST)
    result, ticks = asyncio.run(_ticks_while(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True)))
    assert result.outcome == "ok"
    assert ticks >= 15, ticks


def test_an_async_only_scorer_serves_the_blocking_path(pruner: Pruner) -> None:
    class OnlyAsync:
        name = "only-async"

        async def score_async(self, request: ScoringRequest) -> ScoringResponse:
            await asyncio.sleep(0.01)
            return drop_odd().answer(request)

    turn = pruner.conversation(enabled=True, scorer=OnlyAsync(), log=Log()).turn(REQUEST)
    assert turn.on_tool_result(tool="f", text=note_text(), prunable=True).outcome == "ok"


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_cancelling_the_turn_returns_the_raw_text_at_once(pruner: Pruner, flavour: str) -> None:
    log = Log()
    cancel = CancelToken()
    turn = pruner.conversation(enabled=True, scorer=drop_odd().delay(10), agent="a", log=log).turn(REQUEST, cancel)
    text = note_text()
    timer = threading.Timer(0.1, cancel.cancel)
    timer.start()
    start = time.monotonic()
    if flavour == "sync":
        result = turn.on_tool_result(tool="f", text=text, prunable=True)
    else:
        result = asyncio.run(turn.on_tool_result_async(tool="f", text=text, prunable=True))
    assert time.monotonic() - start < 1.5
    assert (result.outcome, result.body is text, result.id) == ("cancelled", True, None)
    assert "outcome=cancelled" in log.lines[0]
    # Later results of a cancelled turn are not scored either.
    scorer = drop_odd()
    assert turn.on_tool_result(tool="f", text=text, prunable=True, scorer=scorer).outcome == "cancelled"
    assert scorer.calls == 0


def test_cancelling_the_task_logs_cancelled_and_reraises(pruner: Pruner) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=drop_odd().delay(10), log=log)
    turn = conversation.turn(REQUEST)

    async def main() -> None:
        task = asyncio.ensure_future(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(log.lines) == 1 and "outcome=cancelled" in log.lines[0]
    assert turn.on_tool_result(tool="f", text=headings_text(), prunable=True, scorer=drop_odd()).outcome == "ok"


def test_a_task_cancelled_while_the_guest_works_is_finished_as_cancelled(pruner: Pruner) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=drop_odd(), log=log)
    turn = conversation.turn(REQUEST)

    async def main() -> None:
        task = asyncio.ensure_future(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True))
        await asyncio.sleep(0)  # the guest's first step is now running in its thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(200):
            if log.lines:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert len(log.lines) == 1 and "outcome=cancelled" in log.lines[0]
    assert conversation.stored == []


# --- the deadline ------------------------------------------------------------------------------


class Hangs:
    """A custom scorer that never answers (the conformance suite's `hangs`)."""

    name = "scripted"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        time.sleep(3600)
        raise AssertionError("unreachable")

    async def score_async(self, request: ScoringRequest) -> ScoringResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class SyncHangs:
    name = "scripted"

    def score(self, request: ScoringRequest) -> ScoringResponse:
        time.sleep(3600)
        raise AssertionError("unreachable")


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("scorer", [Hangs(), SyncHangs(), drop_odd().delay(1.5)], ids=["hangs", "sync-hangs", "late"])
def test_the_deadline_holds_exactly_for_every_scorer_in_both_paths(pruner: Pruner, flavour: str, scorer: Any) -> None:
    log = Log()
    turn = pruner.conversation(enabled=True, scorer=scorer, log=log, deadline_cap_ms=300).turn(REQUEST)
    text = note_text()
    start = time.monotonic()
    if flavour == "sync":
        result = turn.on_tool_result(tool="f", text=text, prunable=True)
    else:
        result = asyncio.run(turn.on_tool_result_async(tool="f", text=text, prunable=True))
    took = time.monotonic() - start
    assert 0.29 <= took < 0.9, took  # the deadline itself, not the deadline + 1 s
    assert (result.outcome, result.body is text, result.id) == ("timeout", True, None)
    assert result.counts is not None and result.counts.ms is not None and result.counts.ms >= 290
    assert log.lines == [result.log_line] and "outcome=timeout" in (result.log_line or "")


def test_cancellation_wins_over_the_deadline(pruner: Pruner) -> None:
    cancel = CancelToken()
    turn = pruner.conversation(enabled=True, scorer=Hangs(), log=Log(), deadline_cap_ms=300).turn(REQUEST, cancel)
    threading.Timer(0.25, cancel.cancel).start()
    assert turn.on_tool_result(tool="f", text=note_text(), prunable=True).outcome == "cancelled"


def test_the_deadline_cap_never_raises_the_guests_deadline(pruner: Pruner) -> None:
    scorer = ScriptedScorer()
    conversation = pruner.conversation(enabled=True, scorer=scorer, log=Log(), deadline_cap_ms=10**9)
    conversation.turn(REQUEST).on_tool_result(tool="f", text=note_text(), prunable=True)
    assert conversation._deadline(scorer.requests[0]) == 20_000  # noqa: SLF001
    with pytest.raises(ValueError):
        pruner.conversation(deadline_cap_ms=-1)
