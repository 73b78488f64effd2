"""The judge router from Python: ``Pruner.route`` / ``route_async`` with the
fixed answers of tests/conformance/judge (copies of examples/judge plus
variations), the ``judge-job`` resource with a scorer (under the host's
deadline; a scorer that raises is a failed call) and load errors. The CLI's
``route`` output against the Rust CLI's is the conformance scenario
``judge-cli`` (test_conformance.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from toolprune import (
    Decision,
    Failed,
    JevResponse,
    JudgeAnswer,
    LoadError,
    Pruner,
    RulesError,
    ScoringRequest,
    ScoringResponse,
)

from conftest import REPO, Log

FIXTURES = REPO / "tests" / "conformance" / "judge"
"""The judge's rules and answers files."""
RUST = Path(os.environ["TOOLPRUNE_RUST_CLI"]) if os.environ.get("TOOLPRUNE_RUST_CLI") else None
MESSAGE = "Compare the pricing of three CI services"
def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


RULES = fixture("rules.toml")


def route(pruner: Pruner, answers_file: str, log: Log) -> Decision:
    d = pruner.route(RULES, MESSAGE, fixture(answers_file), log=log)
    assert log.lines == [d.log_line]
    return d


def test_the_fixture_is_examples_judge() -> None:
    assert RULES == (REPO / "examples" / "judge" / "rules.toml").read_text(encoding="utf-8")
    assert fixture("answers.json") == (REPO / "examples" / "judge" / "answers.json").read_text(encoding="utf-8")


def test_routed(pruner: Pruner, log: Log) -> None:
    d = route(pruner, "answers.json", log)
    assert d == Decision(
        verdict="routed",
        to=["agent_3"],
        note=None,
        reason=None,
        rule=3,
        answers=[
            JudgeAnswer("risky", "noul", None, 0.03, None, None),
            JudgeAnswer("kind", "choice", "research", 0.99, 0.98, None),
            JudgeAnswer("size", "score", "1", 0.8, 0.65, 1.25),
        ],
        jev_tokens=534,
        log_line="judge: risky=0.03 kind=research/0.99/0.98 size=1/0.80/0.65 size.mean=1.25 rule=3 routed to=agent_3",
    )


def test_routed_to_several_targets(pruner: Pruner, log: Log) -> None:
    d = route(pruner, "fanout.json", log)
    assert (d.verdict, d.to, d.rule) == ("routed", ["agent_3", "agent_10"], 2)


def test_returned_with_the_rules_note(pruner: Pruner, log: Log) -> None:
    d = route(pruner, "returned.json", log)
    assert (d.verdict, d.rule, d.to) == ("returned", 1, None)
    assert d.note == "Contains an operation that cannot be undone: not routed"


def test_otherwise(pruner: Pruner, log: Log) -> None:
    d = route(pruner, "otherwise.json", log)
    assert (d.verdict, d.rule, d.note) == ("returned", None, None)
    assert d.log_line.endswith(" rule=otherwise returned")


def test_failed_is_never_otherwise(pruner: Pruner, log: Log) -> None:
    d = route(pruner, "no-answer.json", log)
    assert (d.verdict, d.reason, d.rule, d.answers) == ("failed", "no_answer", None, [])
    assert d.log_line == "judge: rule=- failed reason=no-answer"  # the guest's line


def test_a_load_error_lists_each_file_line_col_message(pruner: Pruner, log: Log) -> None:
    with pytest.raises(RulesError) as caught:
        pruner.route(fixture("invalid.toml"), MESSAGE, fixture("answers.json"), log=log, rules_file="invalid.toml")
    assert caught.value.errors[0] == LoadError(7, 17, "rule 1: `kind` has no option `c` (options: a, b)")
    assert len(caught.value.errors) == 2
    assert str(caught.value) == "\n".join(f"invalid.toml:{e.line}:{e.column}: {e.message}" for e in caught.value.errors)
    assert log.lines == []


class JudgeScorer:
    """A Jev stand-in: answers the one batch with a fixed Jev response."""

    name = "jev"
    jev_model = "jev-test"

    def __init__(self, body: str) -> None:
        self.body = body
        self.requests: List[ScoringRequest] = []

    def score(self, request: ScoringRequest) -> ScoringResponse:
        self.requests.append(request)
        return ScoringResponse.answered([JevResponse(self.body)], 3)


class AsyncJudgeScorer(JudgeScorer):
    async def score_async(self, request: ScoringRequest) -> ScoringResponse:
        await asyncio.sleep(0.005)
        return self.score(request)


def check_request(request: ScoringRequest) -> None:
    assert len(request.batches) == 1
    body = json.loads(request.batches[0].jev_body)
    assert body["state"] == {"message": MESSAGE}
    assert list(body["questions"]) == ["risky", "kind", "size"]
    assert body["model"] == "jev-test"


def test_a_scorer_through_the_route_export(pruner: Pruner, log: Log) -> None:
    scorer = JudgeScorer(fixture("answers.json"))
    d = pruner.route(RULES, MESSAGE, scorer=scorer, log=log)
    assert d == route(pruner, "answers.json", Log())
    check_request(scorer.requests[0])


def test_async_with_a_scorer_uses_the_judge_job(pruner: Pruner, log: Log) -> None:
    scorer = AsyncJudgeScorer(fixture("answers.json"))
    d = asyncio.run(pruner.route_async(RULES, MESSAGE, scorer=scorer, log=log))
    assert d == route(pruner, "answers.json", Log())
    assert log.lines == [d.log_line]
    assert len(scorer.requests) == 1
    check_request(scorer.requests[0])


def test_async_with_fixed_answers_and_failures(pruner: Pruner) -> None:
    async def run() -> List[Decision]:
        fixed = await pruner.route_async(RULES, MESSAGE, fixture("otherwise.json"), log=Log())

        class Down(JudgeScorer):
            def score(self, request: ScoringRequest) -> ScoringResponse:
                return ScoringResponse.answered([Failed.http(503)], 1)

        class Raises(JudgeScorer):
            def score(self, request: ScoringRequest) -> ScoringResponse:
                raise RuntimeError("down")

        down = await pruner.route_async(RULES, MESSAGE, scorer=Down(""), log=Log())
        raised = await pruner.route_async(RULES, MESSAGE, scorer=Raises(""), log=Log())
        return [fixed, down, raised]

    fixed, down, raised = asyncio.run(run())
    assert (fixed.verdict, fixed.rule) == ("returned", None)
    assert (down.verdict, down.reason) == ("failed", "http_5xx")
    assert (raised.verdict, raised.reason) == ("failed", "network")


def test_the_judge_call_has_the_hosts_deadline(pruner: Pruner) -> None:
    class Hangs(JudgeScorer):
        def score(self, request: ScoringRequest) -> ScoringResponse:
            time.sleep(3600)
            raise AssertionError("unreachable")

    from toolprune import judge

    scorer = Hangs("")
    j = judge.Judge(pruner, RULES, MESSAGE, None, scorer, None, Log(), "rules")
    started = j._load()  # noqa: SLF001
    instance, handle, request = started
    start = time.monotonic()
    scored = judge.run_sync(scorer, __import__("toolprune._convert", fromlist=["x"]).lift_request(request), judge.CancelToken(), 200)
    assert time.monotonic() - start < 1 and scored.answers == "timeout"
    decision = j._finish(instance, handle, scored)  # noqa: SLF001
    assert (decision.verdict, decision.reason) == ("failed", "timeout")


def test_async_load_error_before_any_call(pruner: Pruner) -> None:
    scorer = AsyncJudgeScorer("")
    with pytest.raises(RulesError):
        asyncio.run(pruner.route_async(fixture("invalid.toml"), MESSAGE, scorer=scorer, log=Log()))
    assert scorer.requests == []


def test_the_offline_scorer_and_the_stub_cannot_judge(pruner: Pruner) -> None:
    with pytest.raises(TypeError):
        pruner.route(RULES, MESSAGE, log=Log())
    with pytest.raises(TypeError):
        pruner.route(RULES, MESSAGE, scorer="stub", log=Log())
