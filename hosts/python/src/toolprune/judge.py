"""The judge router from Python (README "Judge router", ``wit/judge.wit``).

Every rule is the guest's (the TOML, its validation, the grammar, the Jev
body, the reading of Jev's answer, the log line). This module passes texts,
makes the one Jev call with the host's scorer (the same transport as
pruning), and converts the guest's values. Each judgement runs on a fresh
instance of the component: it keeps nothing between calls.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from . import _engine
from ._engine import CallError, Compiled, Instance
from .types import Failed, GuestError, GuestFailure, Limits, ScoringRequest, ScoringResponse

@dataclass(frozen=True)
class LoadError:
    """One problem of a rules file: 1-based line and column (in characters)."""

    line: int
    column: int
    message: str


def render_load_errors(file: str, errors: List[LoadError]) -> str:
    """``FILE:LINE:COLUMN: message``, one line (with its newline) per problem."""
    return "".join(f"{file}:{e.line}:{e.column}: {e.message}\n" for e in errors)


class RulesError(ValueError):
    """An invalid rules file: ``errors`` holds every problem in line order;
    the message has one ``FILE:LINE:COL: message`` line per problem."""

    def __init__(self, file: str, errors: List[LoadError]) -> None:
        super().__init__(render_load_errors(file, errors).rstrip("\n"))
        self.file = file
        self.errors = errors


@dataclass(frozen=True)
class JudgeAnswer:
    """What Jev answered to one declared question (probabilities rounded to 0.01)."""

    question: str
    kind: str
    """``choice``, ``noul`` or ``score``."""
    value: Optional[str]
    """choice: the most probable option; score: the most probable level, 1-based (``"3"``); noul: None."""
    p: float
    margin: Optional[float]
    mean: Optional[float]


@dataclass(frozen=True)
class Decision:
    """The guest's decision."""

    verdict: str
    """``routed``, ``returned`` or ``failed``."""
    to: Optional[List[str]]
    """routed: the targets (one: hand over; several: fan out and gather)."""
    note: Optional[str]
    """returned: the rule's note, if any."""
    reason: Optional[str]
    """failed: ``http-4xx``, ``http-5xx``, ``rate-limited``, ``out-of-credit``,
    ``network``, ``timeout``, ``cancelled``, ``undecodable`` or ``no-answer``."""
    rule: Optional[int]
    """1-based number of the matching ``[[rules]]`` entry; None for ``[otherwise]`` and ``failed``."""
    answers: List[JudgeAnswer]
    jev_tokens: int
    log_line: str

    def to_json(self) -> dict:
        """The decision as ``toolprune route --json`` prints it."""
        return {
            "verdict": self.verdict,
            "to": self.to,
            "note": self.note,
            "reason": self.reason,
            "rule": self.rule,
            "answers": [
                {"question": a.question, "type": a.kind, "value": a.value, "p": a.p, "margin": a.margin, "mean": a.mean}
                for a in self.answers
            ],
            "jev_tokens": self.jev_tokens,
            "log": self.log_line,
        }


def summary(d: Decision) -> str:
    """``routed to agent_3 (rule 3)``, ``returned (otherwise)``, ``returned (rule 1): NOTE``, ``failed: REASON``."""
    rule = "otherwise" if d.rule is None else f"rule {d.rule}"
    if d.verdict == "routed":
        return f"routed to {', '.join(d.to or [])} ({rule})\n"
    if d.verdict == "returned":
        return f"returned ({rule})\n" if d.note is None else f"returned ({rule}): {d.note}\n"
    return f"failed: {d.reason}\n"


def lift_decision(rec: Any) -> Decision:
    verdict = rec.verdict
    tag, payload = verdict.tag, verdict.payload
    return Decision(
        verdict=tag,
        to=list(payload) if tag == "routed" else None,
        note=payload if tag == "returned" else None,
        reason=payload if tag == "failed" else None,
        rule=rec.rule,
        answers=[
            JudgeAnswer(question=a.question, kind=a.kind, value=a.value, p=a.p, margin=a.margin, mean=a.mean)
            for a in rec.answers
        ],
        jev_tokens=getattr(rec, "jev-tokens"),
        log_line=getattr(rec, "log-line"),
    )


def _lift_result(value: Any) -> Any:
    """``result<T, list<load-error>>`` arrives untagged: a list is the error."""
    if isinstance(value, list):
        return [LoadError(line=e.line, column=e.column, message=e.message) for e in value]
    return value


def _check_scorer(scorer: Any) -> Any:
    if getattr(scorer, "choice", None) == "offline" or not callable(getattr(scorer, "score", None)):
        raise TypeError("route needs `answers` or a Jev scorer (JevScorer); the offline scorer cannot judge")
    return scorer


class Judge:
    """The mechanism behind :meth:`Pruner.route` and :meth:`Pruner.route_async`."""

    def __init__(self, compiled: Compiled, limits: Limits, log: Callable[[str], None], rules_file: str) -> None:
        self._compiled = compiled
        self._limits = limits
        self._log = log
        self._rules_file = rules_file

    def _instance(self) -> Instance:
        try:
            return Instance(self._compiled, self._limits)
        except Exception as err:  # noqa: BLE001
            raise GuestError(GuestFailure("instantiate", f"{type(err).__name__}: {err}")) from err

    def _settle(self, answer: Any) -> Decision:
        if isinstance(answer, CallError):
            self._log(f"judge: rule=- failed reason={answer.failure.reason}")
            if answer.fatal is not None:
                raise answer.fatal
            raise GuestError(answer.failure)
        answer = _lift_result(answer)
        if isinstance(answer, list):
            raise RulesError(self._rules_file, answer)
        decision = lift_decision(answer)
        self._log(decision.log_line)
        return decision

    def route(self, rules: str, message: str, answers: Optional[str], scorer: Any, jev_model: Optional[str]) -> Decision:
        """The one-shot ``route`` export; without answers the guest calls the
        scorer through the ``scorer`` import, on this thread."""
        score = None
        if answers is None:
            chosen = _check_scorer(scorer)
            score = chosen.score
        instance = self._instance()
        return self._settle(_engine.run_guarded(instance, score, lambda i: i.call("route", rules, message, jev_model, answers)))

    async def route_async(
        self, rules: str, message: str, answers: Optional[str], scorer: Any, jev_model: Optional[str]
    ) -> Decision:
        """Fixed answers: the ``route`` export in a worker thread. Else the
        ``judge-job`` resource: load and ``finish`` in a worker thread, the
        scorer's ``score_async`` awaited on the loop (``score`` in a thread)."""
        if answers is not None:
            return await asyncio.to_thread(self.route, rules, message, answers, scorer, jev_model)
        chosen = _check_scorer(scorer)
        instance = await asyncio.to_thread(self._instance)

        def load(i: Instance) -> Any:
            job = _lift_result(i.call("[static]judge-job.load", rules, message, jev_model))
            if isinstance(job, list):
                return job
            return job, _engine.lift_request(i.call("[method]judge-job.scoring-request", job))

        started = await asyncio.to_thread(_engine.run_guarded, instance, None, load)
        if isinstance(started, CallError) or isinstance(started, list):
            return self._settle(started)
        handle, request = started
        response = await _score(chosen, request)

        def finish(i: Instance) -> Any:
            decision = i.call("[method]judge-job.finish", handle, _engine.lower_response(response))
            i.drop(handle)
            return decision

        return self._settle(await asyncio.to_thread(_engine.run_guarded, instance, None, finish))


async def _score(scorer: Any, request: ScoringRequest) -> ScoringResponse:
    """Awaits the scorer; one that overruns the policy's deadline by a second
    is stopped as ``timeout``; a scorer that raises answers ``network``."""
    score_async = getattr(scorer, "score_async", None)
    coro: Any = score_async(request) if score_async is not None else asyncio.to_thread(scorer.score, request)
    limit = request.policy.deadline_ms / 1000.0 + 1.0
    try:
        return await asyncio.wait_for(coro, timeout=limit)  # type: ignore[no-any-return]
    except asyncio.TimeoutError:
        return ScoringResponse.stopped("timeout", request.policy.deadline_ms)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - a scorer error is a failed call, never a crash
        return ScoringResponse(answers=[Failed(None) for _ in request.batches], elapsed_ms=0)


__all__ = ["Decision", "JudgeAnswer", "LoadError", "RulesError", "render_load_errors", "summary"]
