"""Every shared vector (tests/vectors/vectors.json), byte for byte, through
the three ways this host prunes: the `prune` export (blocking, the scorer
behind the import), the `prune-job` form (blocking), and the asyncio form."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from typing import Any, Dict

import pytest

from toolprune import Failed, Pruned, Pruner, ScriptedScorer
from toolprune.scorers import OfflineScorer

from conftest import Log, load_vectors, shared_text

VECTORS = load_vectors()


def scripted(spec: Dict[str, Any]) -> ScriptedScorer:
    """The scripted scorer a vector describes (tests/vectors/README.md)."""
    s = ScriptedScorer().default_score(spec["default"]).elapsed_ms(spec["elapsed_ms"])
    for paragraph, score in spec["scores"].items():
        if score is None:
            s.unscored(int(paragraph))
        else:
            s.score_paragraph(int(paragraph), score)
    for batch, fail in spec["fail_batches"].items():
        s.fail_batch(int(batch), Failed.network() if fail == "network" else Failed.http(fail["http"]))
    for batch, body in spec["jev_responses"].items():
        s.jev_response(int(batch), body)
    if spec["stop"] is not None:
        s.stop(spec["stop"])
    return s


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_pruned(v: Dict[str, Any], text: str, pruned: Pruned) -> None:
    e = v["expect"]
    assert pruned.failure is None, pruned.failure
    report = pruned.report
    assert report is not None
    assert pruned.raw == text
    assert pruned.outcome == e["outcome"]
    assert report.shape == e["shape"]
    c = report.counts
    assert dataclasses.asdict(c) == e["counts"]
    assert report.ratio == e["ratio"]
    assert report.threshold == e["threshold"]
    assert pruned.log_line == e["log_line"]
    assert len(pruned.body) == e["body_chars"]
    assert sha256(pruned.body) == e["body_sha256"]
    if "body" in e:
        assert pruned.body == e["body"]
    if e["record"] is None:
        assert report.record is None
    else:
        r = report.record
        assert r is not None
        assert (r.id, r.dropped, len(r.text), sha256(r.text)) == (
            e["record"]["id"],
            e["record"]["dropped"],
            e["record"]["text_chars"],
            e["record"]["text_sha256"],
        )
    assert "".join(p.fate[0] for p in report.paragraphs) == e["fates"]
    assert [{"batch": f.batch, "status": f.status, "class": f.klass} for f in report.failures] == e["failures"]


@pytest.mark.parametrize("mode", ["prune", "job", "async"])
@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(pruner: Pruner, v: Dict[str, Any], mode: str) -> None:
    text = v["text"] if "text" in v else shared_text(v["text_file"])
    spec = v["scorer"]
    scorer = OfflineScorer() if spec["kind"] == "offline" else scripted(spec)
    log = Log()
    turn = pruner.begin_turn(
        v["request"],
        enabled=v["enabled"],
        threshold=v["threshold"],
        lang=v["lang"],
        agent=v["agent"],
        scorer=scorer,
        log=log,
    )
    kwargs = dict(tool=v["tool"], text=text, ok=v["succeeded"], prunable=v["prunable"])
    if mode == "prune":
        pruned = turn.on_tool_result(**kwargs)
    elif mode == "job":
        pruned = turn.on_tool_result_via_job(**kwargs)
    else:
        pruned = asyncio.run(turn.on_tool_result_async(**kwargs))
    check_pruned(v, text, pruned)
    if isinstance(scorer, ScriptedScorer):
        assert scorer.calls <= 1
    expected_log = [] if v["expect"]["log_line"] is None else [v["expect"]["log_line"]]
    assert log.lines == expected_log
    for asked in v["omitted"]:
        assert asked["lang"] == v["lang"]
        answer = turn.omitted(asked["arguments"])
        assert (answer.outcome, answer.text, answer.log_line) == (
            asked["expect"]["outcome"],
            asked["expect"]["text"],
            asked["expect"]["log_line"],
        ), asked["arguments"]
        expected_log.append(asked["expect"]["log_line"])
    assert log.lines == expected_log


def test_the_vectors_cover_every_outcome_and_both_languages() -> None:
    outcomes = {v["expect"]["outcome"] for v in VECTORS}
    assert outcomes == {
        "ok", "structured", "no_basis", "all_dropped", "nothing_dropped",
        "below_floor", "timeout", "failed", "cancelled",
    }
    assert {v["lang"] for v in VECTORS} == {"ja", "en"}
    assert {a["expect"]["outcome"] for v in VECTORS for a in v["omitted"]} == {
        "ok", "not_dropped", "not_found", "too_large", "invalid",
    }
