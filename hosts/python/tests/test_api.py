"""The Python API: turns, the turn store, the `omitted` tool, inspection,
component discovery, and the asyncio flavour that does not block the loop."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from toolprune import (
    GuestError,
    Pruner,
    ScoringRequest,
    ScoringResponse,
    ScriptedScorer,
    StubScorer,
)
from toolprune._engine import find_component

from conftest import REQUEST, Log, headings_text


def drop_odd(_pruner: Pruner) -> ScriptedScorer:
    """Odd paragraphs score 0.05 (dropped), the rest 0.9: `ok` on headings.md."""
    return ScriptedScorer().default_score(0.9).scores(range(1, 200, 2), 0.05).elapsed_ms(7)


def test_pruning_is_off_unless_enabled(pruner: Pruner, log: Log) -> None:
    scorer = ScriptedScorer().default_score(0.0)
    turn = pruner.begin_turn(REQUEST, scorer=scorer, log=log)
    text = headings_text()
    result = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    assert (result.body, result.raw, result.outcome, result.log_line) == (text, text, "ok", None)
    assert scorer.calls == 0 and log.lines == []


def test_tools_are_not_prunable_by_default(pruner: Pruner, log: Log) -> None:
    scorer = ScriptedScorer().default_score(0.0)
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, log=log)
    text = headings_text()
    assert turn.on_tool_result(tool="read_file", text=text).body == text
    assert scorer.calls == 0 and log.lines == []


def test_an_ok_result_is_stored_and_read_back_in_a_later_round(pruner: Pruner, log: Log) -> None:
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(pruner), agent="a", log=log)
    text = headings_text()
    first = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    second = turn.on_tool_result(tool="fetch", text=text, prunable=True)
    assert (first.outcome, first.id, second.id) == ("ok", "P1", "P2")
    assert "id=P2]" in second.body and len(second.body) < len(text)
    assert [s.id for s in turn.stored] == ["P1", "P2"]
    back = turn.omitted({"id": "P2", "from": 1, "to": 1})
    assert back.outcome == "ok"
    assert back.text in text
    assert back.log_line.startswith("tool omitted: agent=a id=P2 from=1 to=1 chars=")
    assert log.lines[-1] == back.log_line
    assert turn.omitted('{"id":"P3","from":0,"to":1}').outcome == "not_found"


def test_a_result_that_is_not_ok_takes_no_id(pruner: Pruner) -> None:
    scorer = ScriptedScorer().default_score(1.0)
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, log=Log())
    assert turn.on_tool_result(tool="f", text=headings_text(), prunable=True).outcome == "nothing_dropped"
    turn.scorer = drop_odd(pruner)
    assert turn.on_tool_result(tool="f", text=headings_text(), prunable=True).id == "P1"


def test_the_omitted_tool_is_static_in_both_languages(pruner: Pruner) -> None:
    for lang in ("en", "ja"):
        spec = pruner.omitted_tool(lang)
        assert spec.name == "omitted"
        schema = json.loads(spec.input_schema)
        assert set(schema["properties"]) == {"id", "from", "to"}
    assert pruner.omitted_tool("en").description != pruner.omitted_tool("ja").description
    turn = pruner.begin_turn(REQUEST, lang="ja")
    assert turn.omitted_tool() == pruner.omitted_tool("ja")


def test_paragraphs_show_the_split_with_byte_and_char_spans(pruner: Pruner) -> None:
    text = "é" * 130 + "\n\n" + "b" * 130
    paragraphs = pruner.paragraphs(text)
    assert [(p.index, p.kind) for p in paragraphs] == [(0, "scored"), (1, "scored")]
    assert paragraphs[0].byte_start == 0 and paragraphs[-1].byte_end == len(text.encode())
    assert paragraphs[-1].char_end == len(text)


def test_scorers_by_name_and_bad_arguments(pruner: Pruner) -> None:
    assert pruner.begin_turn("x", scorer="stub").scorer.name == "stub"
    assert pruner.begin_turn("x", scorer="offline").scorer.name == "offline"
    with pytest.raises(ValueError):
        pruner.begin_turn("x", scorer="jev-please")
    with pytest.raises(TypeError):
        pruner.begin_turn("x", scorer=object())
    with pytest.raises(ValueError):
        pruner.begin_turn("x", lang="fr")  # type: ignore[arg-type]


def test_the_stub_scores_the_share_of_basis_words_doubled_and_capped() -> None:
    basis = "How to resume a broken SSE stream?"
    assert StubScorer.score_chunk(basis, "Nothing related.") == 0.0
    assert StubScorer.score_chunk(basis, "A STREAM can break.") == 2.0 / 3.0
    assert StubScorer.score_chunk(basis, "Resume the stream.") == 1.0
    assert StubScorer.score_chunk("a b c", "anything") is None


def test_the_component_is_found_by_argument_env_or_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_component(tmp_path / "x.wasm") == tmp_path / "x.wasm"
    monkeypatch.setenv("TOOLPRUNE_WASM", str(tmp_path / "y.wasm"))
    assert find_component() == tmp_path / "y.wasm"
    monkeypatch.delenv("TOOLPRUNE_WASM")
    assert find_component().is_file()
    with pytest.raises(FileNotFoundError):
        Pruner.load(wasm=tmp_path / "missing.wasm")
    bogus = tmp_path / "bogus.wasm"
    bogus.write_bytes(b"\0asm\x01\0\0\0")
    with pytest.raises(Exception):
        Pruner.load(wasm=bogus)


def test_the_sync_scorer_sees_the_guest_request(pruner: Pruner) -> None:
    seen: list[ScoringRequest] = []

    class Recording:
        name = "recording"

        def score(self, request: ScoringRequest) -> ScoringResponse:
            seen.append(request)
            return ScriptedScorer().default_score(0.9).scores(range(1, 200, 2), 0.05).elapsed_ms(3).score(request)

    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=Recording(), log=Log())
    result = turn.on_tool_result(tool="fetch", text=headings_text(), prunable=True)
    assert result.outcome == "ok" and "scorer=recording" in (result.log_line or "")
    (request,) = seen
    assert request.basis == REQUEST
    assert request.policy.max_in_flight == 4 and request.policy.deadline_ms == 20_000
    assert request.policy.max_retries == 1 and request.policy.retry_on == [(429, 429), (500, 599)]
    assert all(json.loads(b.jev_body)["state"]["request"] == REQUEST for b in request.batches)
    assert all(len(b.paragraphs) == len(b.chunks) for b in request.batches)


# --- asyncio -----------------------------------------------------------------


async def _ticks_while(coro: "asyncio.Future[object] | object") -> "tuple[object, int]":
    ticks = 0
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.ensure_future(ticker())
    try:
        result = await coro  # type: ignore[misc]
    finally:
        stop = True
        await task
    return result, ticks


def test_async_scoring_does_not_block_the_event_loop(pruner: Pruner) -> None:
    scorer = drop_odd(pruner).delay(0.4)  # awaited with asyncio.sleep
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, log=Log())
    result, ticks = asyncio.run(_ticks_while(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True)))
    assert result.outcome == "ok"  # type: ignore[attr-defined]
    assert ticks >= 15, ticks


def test_a_blocking_scorer_runs_in_a_thread_under_asyncio(pruner: Pruner) -> None:
    class Blocking:
        name = "blocking"

        def score(self, request: ScoringRequest) -> ScoringResponse:
            time.sleep(0.4)
            return ScriptedScorer().default_score(0.9).scores(range(1, 200, 2), 0.05).score(request)

    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=Blocking(), log=Log())
    result, ticks = asyncio.run(_ticks_while(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True)))
    assert result.outcome == "ok"  # type: ignore[attr-defined]
    assert ticks >= 15, ticks


def test_turn_cancel_returns_the_raw_text_at_once(pruner: Pruner) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(pruner).delay(10), agent="a", log=log)
    text = headings_text()

    async def main() -> object:
        asyncio.get_running_loop().call_later(0.1, turn.cancel)
        return await turn.on_tool_result_async(tool="f", text=text, prunable=True)

    start = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - start < 2
    assert (result.outcome, result.body) == ("cancelled", text)  # type: ignore[attr-defined]
    assert "outcome=cancelled" in log.lines[0]
    # Later results of a cancelled turn are not scored either.
    assert asyncio.run(turn.on_tool_result_async(tool="f", text=text, prunable=True)).outcome == "cancelled"


def test_cancelling_the_task_logs_cancelled_and_reraises(pruner: Pruner) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(pruner).delay(10), log=log)

    async def main() -> None:
        task = asyncio.ensure_future(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(log.lines) == 1 and "outcome=cancelled" in log.lines[0]
    # The instance is still good.
    turn2 = turn
    turn2.scorer = drop_odd(pruner)
    assert turn2.on_tool_result(tool="f", text=headings_text(), prunable=True).outcome == "ok"


def test_results_pruned_concurrently_in_one_turn_get_distinct_ids(pruner: Pruner) -> None:
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(pruner).delay(0.1), log=Log())

    async def main() -> "list[object]":
        return list(
            await asyncio.gather(*(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True) for _ in range(3)))
        )

    results = asyncio.run(main())
    ids = sorted(r.id for r in results)  # type: ignore[attr-defined]
    assert ids == ["P1", "P2", "P3"]
    assert sorted(s.id for s in turn.stored) == ids
    for rid in ids:
        assert turn.omitted({"id": rid, "from": 1, "to": 1}).outcome == "ok"


def test_omitted_raises_guest_error_only_on_a_guest_failure(pruner: Pruner) -> None:
    from toolprune import Limits

    log = Log()
    turn = pruner.begin_turn(REQUEST, agent="a", log=log, limits=Limits(fuel=10))
    with pytest.raises(GuestError) as info:
        turn.omitted("{}")
    assert info.value.failure.reason in ("guest_trap", "instantiate")
    assert log.lines == [f"tool omitted: agent=a outcome=failed reason={info.value.failure.reason}"]


def test_a_task_cancelled_while_the_guest_works_is_finished_as_cancelled(pruner: Pruner) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=drop_odd(pruner), log=log)

    async def main() -> None:
        task = asyncio.ensure_future(turn.on_tool_result_async(tool="f", text=headings_text(), prunable=True))
        await asyncio.sleep(0)  # the guest's first step is now running in its thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):
            if log.lines:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert len(log.lines) == 1 and "outcome=cancelled" in log.lines[0]
    assert turn.stored == []
