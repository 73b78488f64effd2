"""Every shared vector (tests/vectors/vectors.json), byte for byte, through
the blocking and the asyncio paths of the public API.

The committed vectors were generated for contract 0.1; where contract 0.2
changed an answer on purpose, the expectation is read the 0.2 way and
nothing else is relaxed (:func:`expectation`):

- a cheap gate is ``skipped`` with its gate (0.1: ``ok`` without a line);
- a threshold outside the four is refused at construction (0.1: replaced
  by 0.2) — those cases assert the refusal and the 0.2 result with 0.2;
- failure classes are snake_case; ``counts.ms`` is None when not measured;
- a stored result holds its dropped units (0.1: the whole text), so the
  record is checked by id and dropped indices, and ``omitted`` checks the text;
- ``not_found`` says the id may have expired (SPEC §10's revised text): its
  text is checked to name the id, everything else of the answer exactly.

Vectors regenerated for 0.2 (no 0.1 markers) are checked as they are.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any, Dict

import pytest

from toolprune import Failed, PruneResult, Pruner, ScriptedScorer

from conftest import Log, load_vectors, shared_text

VECTORS = load_vectors()
pytestmark = pytest.mark.skipif(
    not VECTORS, reason="tests/vectors moved into tests/conformance (scenario `vectors`, run by test_conformance.py)"
)


def scripted(spec: Dict[str, Any]) -> ScriptedScorer:
    """The scripted scorer a vector describes (tests/vectors/README.md)."""
    s = ScriptedScorer().default_score(spec["default"]).elapsed_ms(spec["elapsed_ms"])
    for paragraph, score in spec["scores"].items():
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


def expectation(v: Dict[str, Any], measured: bool) -> Dict[str, Any]:
    """The vector's ``expect`` read the 0.2 way (see the module docstring)."""
    e = dict(v["expect"])
    if "gate" not in e:  # a 0.1 vector
        gated = e["outcome"] == "ok" and e["log_line"] is None and e["shape"] is None
        e["gate"] = None
        if gated:
            e["outcome"] = "skipped"
            e["gate"] = (
                "disabled" if not v["enabled"] else "tool_failed" if not v["succeeded"] else "not_prunable" if not v["prunable"] else "too_short"
            )
        e["failures"] = [dict(f, **{"class": f["class"].replace("-", "_")}) for f in e["failures"]]
        counts = dict(e["counts"])
        if not measured:
            counts["ms"] = None
        e["counts"] = counts
    return e


def check(v: Dict[str, Any], text: str, r: PruneResult, log: Log, conversation: Any) -> None:
    measured = v["scorer"]["kind"] != "offline" and v["expect"]["log_line"] is not None and "ms=-" not in v["expect"]["log_line"]
    e = expectation(v, measured)
    assert r.failure is None, r.failure
    assert r.raw is text
    assert (r.outcome, r.gate, r.shape) == (e["outcome"], e["gate"], e["shape"])
    assert r.counts is not None and vars(r.counts) == e["counts"]
    assert (r.ratio, r.threshold, r.log_line) == (e["ratio"], e["threshold"], e["log_line"])
    assert len(r.body) == e["body_chars"] and sha256(r.body) == e["body_sha256"]
    if "body" in e:
        assert r.body == e["body"]
    if sha256(text) == e["body_sha256"]:
        assert r.body is text, "an unchanged text is the input str itself"
    record = e["record"]
    assert r.id == (None if record is None else record["id"])
    if record is not None:
        assert [d.index for d in conversation.stored[-1].dropped] == record["dropped"]
    if r.outcome != "skipped":
        assert "".join(p.fate[0] for p in r.paragraphs) == e["fates"]
    assert [{"batch": f.batch, "status": f.status, "class": f.klass} for f in r.failures] == e["failures"]
    assert log.lines == ([] if e["log_line"] is None else [e["log_line"]])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("v", VECTORS or [{}], ids=[v["name"] for v in VECTORS] or ["none"])
def test_vector(pruner: Pruner, v: Dict[str, Any], mode: str) -> None:
    text = v["text"] if "text" in v else shared_text(v["text_file"])
    spec = v["scorer"]
    scorer: Any = "offline" if spec["kind"] == "offline" else scripted(spec)
    log = Log()
    threshold = v["threshold"]
    if threshold not in (0.1, 0.2, 0.3, 0.5):
        with pytest.raises(ValueError, match="is not one of"):
            pruner.conversation(threshold=threshold)
        assert v["expect"]["threshold"] == 0.2
        threshold = 0.2  # what 0.1 did with it; the rest of the case is unchanged
    conversation = pruner.conversation(
        enabled=v["enabled"], threshold=threshold, lang=v["lang"], agent=v["agent"], scorer=scorer, log=log, report=True
    )
    turn = conversation.turn(v["request"])
    kwargs = dict(tool=v["tool"], text=text, ok=v["succeeded"], prunable=v["prunable"])
    if mode == "sync":
        r = turn.on_tool_result(**kwargs)
    else:
        r = asyncio.run(turn.on_tool_result_async(**kwargs))
    check(v, text, r, log, conversation)
    if isinstance(scorer, ScriptedScorer):
        assert scorer.calls <= 1
    lines = list(log.lines)
    for asked in v["omitted"]:
        assert asked["lang"] == v["lang"]
        answer = conversation.omitted(asked["arguments"])
        want = asked["expect"]
        assert (answer.outcome, answer.log_line) == (want["outcome"], want["log_line"]), asked["arguments"]
        if want["outcome"] == "not_found" and answer.text != want["text"]:  # the 0.1 wording
            wanted = want["log_line"].split(" id=")[1].split(" ")[0]
            assert f"id={wanted}" in answer.text
        else:
            assert answer.text == want["text"]
        lines.append(want["log_line"])
    assert log.lines == lines


def test_the_vectors_cover_every_outcome_and_both_languages() -> None:
    outcomes = {expectation(v, True)["outcome"] for v in VECTORS}
    assert outcomes == {
        "ok", "skipped", "structured", "no_basis", "all_dropped", "nothing_dropped",
        "below_floor", "timeout", "failed", "cancelled",
    }
    assert {v["lang"] for v in VECTORS} == {"ja", "en"}
    assert {a["expect"]["outcome"] for v in VECTORS for a in v["omitted"]} == {
        "ok", "not_dropped", "not_found", "too_large", "invalid",
    }
