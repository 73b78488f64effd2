"""Pins how wasmtime-py (50.x) maps this WIT to Python values, the facts
`toolprune._engine` relies on. The shared vectors prove the round trips
(scores with none, jev-response, failed(http)/failed(network), stops,
scorer-choice host/offline); these tests name the mapping itself."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Dict

import wasmtime.component as wc
from wasmtime.component import Record

from toolprune import Failed, JevResponse, Limits, Pruner, Scores, ScoringResponse
from toolprune import _engine


def test_wasmtime_is_the_major_version_these_mappings_were_verified_on() -> None:
    assert version("wasmtime").split(".")[0] == "50"


def test_scoring_response_is_a_result_of_untagged_variants(pruner: Pruner) -> None:
    instance = _engine.Instance(pruner._compiled, Limits())
    finish = instance.funcs["[method]prune-job.finish"].type(instance.store)
    (_, job), (_, response) = finish.params
    assert isinstance(job, wc.BorrowType)
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
    # list → scores, str → jev-response, int → failed(http), None → failed(network);
    # ok(list) vs err(str).
    lowered = _engine.lower_response(
        ScoringResponse.answered([Scores([1, None]), JevResponse("{}"), Failed.http(503), Failed.network()], 7)
    )
    assert isinstance(lowered, Record)
    assert getattr(lowered, "answers") == [[1.0, None], "{}", 503, None]
    assert isinstance(getattr(lowered, "answers")[0][0], float)  # f64 refuses an int
    assert getattr(lowered, "elapsed-ms") == 7
    assert getattr(_engine.lower_response(ScoringResponse.stopped("timeout", 3)), "answers") == "timeout"


def test_prune_input_carries_the_scorer_choice_as_str_or_none(pruner: Pruner) -> None:
    instance = _engine.Instance(pruner._compiled, Limits())
    (_, prune_input), = instance.funcs["prune"].type(instance.store).params
    fields = dict(prune_input.fields)
    choice = fields["scorer"]
    assert isinstance(choice, wc.VariantType)
    assert [(name, type(ty).__name__ if ty else None) for name, ty in choice.cases] == [
        ("host", "String"),
        ("offline", None),
    ]
    assert isinstance(fields["lang"], wc.EnumType) and fields["lang"].names == ["ja", "en"]
    assert isinstance(fields["jev-model"], wc.OptionType)


def test_prune_job_is_a_resource_handle(pruner: Pruner) -> None:
    instance = _engine.Instance(pruner._compiled, Limits())
    record = _engine.lower_input(
        request="a request long enough to be a basis", text="short", enabled=True, succeeded=True,
        prunable=True, threshold=0.2, lang="en", sequence=1, scorer=None, jev_model=None, agent="a", tool="t",
    )
    handle = instance.call("[constructor]prune-job", record)
    assert isinstance(handle, wc.ResourceAny) and handle.owned
    assert instance.call("[method]prune-job.scoring-request", handle) is None  # below 4,000 characters
    pruned = instance.call("[method]prune-job.finish", handle, None)
    assert getattr(pruned, "outcome") == "ok" and getattr(pruned, "log-line") is None
    instance.drop(handle)
