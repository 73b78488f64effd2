"""Pins how wasmtime-py (50.x) maps this WIT to Python values, the facts
`toolprune._engine` and `toolprune._convert` rely on. The shared vectors and
the conformance suite prove the round trips; these tests name the mapping."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Dict

import wasmtime.component as wc
from wasmtime.component import Record, Variant

from toolprune import Failed, JevResponse, Pruner, Scores, ScriptedScorer
from toolprune import _convert, _engine
from toolprune.scorers import convert
from toolprune.types import Batch, ScoringRequest, TransportPolicy

from conftest import note_text


def test_wasmtime_is_the_major_version_these_mappings_were_verified_on() -> None:
    assert version("wasmtime").split(".")[0] == "50"


def func(pruner: Pruner, name: str) -> Any:
    return pruner._compiled.funcs[name]  # noqa: SLF001


def test_the_exports_are_read_from_the_components_type(pruner: Pruner) -> None:
    compiled = pruner._compiled  # noqa: SLF001
    names = list(compiled.component.type.exports(compiled.engine))
    assert names == [
        f"toolprune:pruner/{i}@{compiled.version}" for i in ("types", "settings", "pruner", "omitted", "judge", "report")
    ]
    imports = compiled.component.type.imports(compiled.engine)
    assert list(imports) == [f"toolprune:pruner/scorer@{compiled.version}"], "the scorer is the only import"
    score = dict(imports[f"toolprune:pruner/scorer@{compiled.version}"].ty.exports(compiled.engine))["score"].ty
    ((_, request),) = score.params
    assert isinstance(request, wc.RecordType) and [n for n, _ in request.fields] == ["basis", "batches", "policy"]
    assert isinstance(score.result, wc.RecordType) and [n for n, _ in score.result.fields] == ["answers", "elapsed-ms"]
    assert compiled.langs == ["ja", "en"] and compiled.dialects == ["plain", "openai", "anthropic", "mcp", "mcp-hooked"]


def test_scoring_response_is_a_result_of_untagged_variants(pruner: Pruner) -> None:
    finish = func(pruner, "[method]prune-job.finish")
    (_, job), (_, response), (_, id_number) = finish.params
    assert isinstance(job, wc.BorrowType) and isinstance(id_number, wc.U32)
    assert isinstance(response, wc.OptionType)  # option<scoring-response>: None or the record
    record = response.payload
    assert isinstance(record, wc.RecordType)
    fields: Dict[str, Any] = dict(record.fields)
    assert list(fields) == ["answers", "elapsed-ms"]  # WIT names, kebab-case
    answers = fields["answers"]
    assert isinstance(answers, wc.ResultType) and isinstance(answers.err, wc.EnumType)
    batch_answer = answers.ok.element  # type: ignore[union-attr]
    cases = dict(batch_answer.cases)
    assert list(cases) == ["scores", "jev-response", "failed"]
    assert isinstance(cases["jev-response"], wc.String)
    assert [name for name, _ in cases["failed"].cases] == ["http", "network"]
    # The classes of the cases do not overlap, so none of these is tagged:
    # list → scores, str → jev-response, int → failed(http), None → failed(network); ok(list) vs err(str).
    request = ScoringRequest("b", [Batch([0], ["x"], "{}")] * 4, TransportPolicy(4, 20_000))
    scored = convert(request, [Scores([1, None]), JevResponse("{}"), Failed.http(503), Failed.network()], 7)
    lowered = _convert.lower_response(scored.answers, scored.elapsed_ms)
    assert isinstance(lowered, Record)
    assert getattr(lowered, "answers") == [[1.0, None], "{}", 503, None]
    assert isinstance(getattr(lowered, "answers")[0][0], float)  # f64 refuses an int
    assert getattr(lowered, "elapsed-ms") == 7
    assert getattr(_convert.lower_response("timeout", 3), "answers") == "timeout"


def test_prune_input_carries_the_scorer_choice_as_a_tagged_variant(pruner: Pruner) -> None:
    (_, prune_input), = func(pruner, "[constructor]prune-job").params
    fields = dict(prune_input.fields)
    assert list(fields) == [
        "request", "text", "enabled", "succeeded", "prunable", "threshold", "lang", "scorer", "jev-model", "agent", "tool", "report",
        "arguments", "pruned-calls", "work-budget",
    ]
    choice = fields["scorer"]
    assert isinstance(choice, wc.VariantType)
    assert [(name, type(ty).__name__ if ty else None) for name, ty in choice.cases] == [
        ("host", "String"), ("offline", None), ("stub", None),
    ]
    assert choice._tagged(), "offline and stub both carry nothing: Variant(tag)"  # noqa: SLF001
    ((_, same_input), (_, number)) = func(pruner, "prune").params
    assert same_input == prune_input and isinstance(number, wc.U32)
    assert isinstance(fields["lang"], wc.EnumType) and isinstance(fields["jev-model"], wc.OptionType)


def test_settings_results_are_untagged(pruner: Pruner) -> None:
    threshold = func(pruner, "threshold").result
    assert isinstance(threshold, wc.ResultType) and isinstance(threshold.ok, wc.F64) and isinstance(threshold.err, wc.String)
    resolve = func(pruner, "resolve").result
    assert isinstance(resolve, wc.ResultType) and isinstance(resolve.ok, wc.RecordType)
    jev = dict(resolve.ok.fields)["jev"]
    assert isinstance(jev, wc.ResultType) and isinstance(jev.err, wc.String)
    # so a float / a Record is ok, a str is the error:
    assert pruner.settings.threshold("0.2") == 0.2


def test_the_judge_verdict_is_tagged(pruner: Pruner) -> None:
    decision = func(pruner, "route").result.ok
    verdict = dict(decision.fields)["verdict"]
    assert isinstance(verdict, wc.VariantType) and verdict._tagged()  # noqa: SLF001 - option<string> and an enum share str


def test_prune_job_is_a_resource_handle_and_a_lifted_record_lowers_again(pruner: Pruner) -> None:
    conversation = pruner.conversation(
        enabled=True, scorer=ScriptedScorer().default_score(0.9).scores(range(1, 12, 2), 0.0), log=lambda _l: None, form="jobs"
    )
    conversation.turn("How do I configure the retry limit for the upload client?").on_tool_result(
        tool="f", text=note_text(), prunable=True, arguments='{"url": "u"}'
    )
    instance = conversation._instance  # noqa: SLF001
    assert instance is not None
    stored = conversation._backend.get("P1")  # noqa: SLF001 - the stored-result, lifted into the store
    assert stored is not None and stored.id == "P1" and isinstance(stored.data, str)
    assert stored.call is not None and len(stored.call) == 32, "the call's key (a digest), never the arguments"
    record = _convert.lower_stored(stored)  # as the host lowers it for `answer`
    assert isinstance(record, Record)
    limits = pruner.settings.call_limits_for(10_000)
    answer = instance.call(limits, "answer", '{"id":"P1","from":1,"to":1}', "en", "a", record)
    assert getattr(answer, "outcome") == "ok" and getattr(answer, "text").startswith("Note 2.")
    handle = instance.call(limits, "[constructor]prune-job", _convert.record(
        request="a request long enough to be a basis", text="short", enabled=True, succeeded=True, prunable=True,
        threshold=0.2, lang="en", scorer=Variant("offline"), jev_model=None, agent="a", tool="t", report=False,
        arguments=None, pruned_calls=[], work_budget=None,
    ))
    assert isinstance(handle, wc.ResourceAny) and handle.owned
    assert instance.call(limits, "[method]prune-job.scoring-request", handle) is None  # below 4,000 characters
    pruned = instance.call(limits, "[method]prune-job.finish", handle, None, 1)
    assert (getattr(pruned, "outcome"), getattr(pruned, "gate"), getattr(pruned, "body")) == ("skipped", "too-short", None)
    instance.drop(limits, handle)


def test_the_engine_counts_fuel_per_call(pruner: Pruner) -> None:
    compiled = pruner._compiled  # noqa: SLF001
    instance = _engine.Instance(compiled)
    tiny = _engine.CallLimits(fuel=10, wall_ms=0, memory_bytes=None)
    try:
        instance.call(tiny, "version")
    except _engine.Trapped as err:
        assert err.limit == "fuel"
    else:  # pragma: no cover
        raise AssertionError("10 fuel cannot run a call")
