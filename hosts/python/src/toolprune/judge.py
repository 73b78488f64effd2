"""The judge router from Python (``docs/judge.md``, ``wit/judge.wit``).

Every rule is the guest's (the TOML, its validation, the grammar, the Jev
body, the reading of Jev's answer, the log line). This module passes texts,
makes the one Jev call with the host's scorer under the host's deadline
(the same mechanism as pruning: :func:`toolprune.scorers.run_sync` /
:func:`~toolprune.scorers.run_async`), and converts the guest's values.
Blocking, the guest's ``judge.decide`` calls the ``scorer.score`` import
once and the host scores inside it (the import form); asyncio (or
``form="jobs"``) goes through a ``judge-job``: load, score its request,
finish. With fixed answers the guest's ``route`` decides without any call.
Each live judgement runs on a fresh instance of the component.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from . import _convert
from . import _engine
from ._convert import get
from ._engine import CallLimits, Instance, Trapped
from ._log import write_line
from .scorers import OFFLINE, STUB, CancelToken, Scored, run_async, run_sync
from .settings import surrogates, utf8_len
from .types import GuestError, HostFailure, snake

if TYPE_CHECKING:  # pragma: no cover
    from .pruner import Pruner


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
    """failed: the failure class (``http_5xx``, ``timeout``, ``cancelled``,
    ``undecodable``, ``no_answer``, …)."""
    rule: Optional[int]
    """1-based number of the matching ``[[rules]]`` entry; None for ``[otherwise]`` and ``failed``."""
    answers: List[JudgeAnswer]
    jev_tokens: int
    log_line: str
    _guest: Any = field(default=None, repr=False, compare=False)
    """The guest's ``decision`` record as it came (for ``report.route-json``)."""


def lift_decision(rec: Any) -> Decision:
    verdict = get(rec, "verdict")
    tag, payload = verdict.tag, verdict.payload
    return Decision(
        verdict=tag,
        to=list(payload) if tag == "routed" else None,
        note=payload if tag == "returned" else None,
        reason=snake(payload) if tag == "failed" else None,
        rule=get(rec, "rule"),
        answers=[
            JudgeAnswer(
                question=get(a, "question"),
                kind=snake(get(a, "kind")),
                value=get(a, "value"),
                p=get(a, "p"),
                margin=get(a, "margin"),
                mean=get(a, "mean"),
            )
            for a in get(rec, "answers")
        ],
        jev_tokens=get(rec, "jev-tokens"),
        log_line=get(rec, "log-line"),
        _guest=rec,
    )


def _load_errors(value: Any) -> Optional[List[LoadError]]:
    """``result<_, list<load-error>>`` arrives untagged: a list is the error."""
    if isinstance(value, list):
        return [LoadError(line=get(e, "line"), column=get(e, "column"), message=get(e, "message")) for e in value]
    return None


class Judge:
    """One judgement (the mechanism behind :meth:`Pruner.route` and
    :meth:`Pruner.route_async`). Raises :class:`TypeError` /
    :class:`ValueError` on bad arguments: the offline scorer and the stub
    cannot judge, and a text with surrogate code points cannot cross a WIT
    ``string``."""

    def __init__(
        self,
        pruner: "Pruner",
        rules: str,
        message: str,
        answers: Optional[str],
        scorer: Any,
        jev_model: Optional[str],
        log: Optional[Callable[[str], None]],
        rules_file: str,
        form: str = "import",
    ) -> None:
        for what, value in (("rules", rules), ("message", message), ("answers", answers), ("jev_model", jev_model)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{what} must be a str, not {type(value).__name__}")
        if form not in ("import", "jobs"):
            raise ValueError(f"form must be import or jobs, not {form!r}")
        self.form = form
        self.pruner = pruner
        self.rules, self.message, self.answers = rules, message, answers
        self.log = log or pruner.log
        self.rules_file = rules_file
        self.scorer: Any = None
        if answers is None:
            chosen = pruner.scorer if scorer is None else pruner._resolve_scorer(scorer)
            if chosen in (OFFLINE, STUB):
                raise TypeError("route needs `answers` or a Jev scorer (JevScorer); the offline scorer and the stub cannot judge")
            self.scorer = chosen
            if jev_model is None:
                jev_model = getattr(chosen, "jev_model", None)
        self.jev_model = jev_model
        size = 0
        for what, value in (("rules", rules), ("message", message), ("answers", answers), ("jev_model", jev_model)):
            if value is None:
                continue
            n = utf8_len(value)
            if n is None:
                raise ValueError(f"toolprune: {what} holds {surrogates(value)} surrogate code point(s); a WIT string cannot carry them")
            size += n
        self.size = size

    def _limits(self) -> CallLimits:
        return self.pruner._limits(self.size, self.pruner.limits)

    def _failed(self, err: Trapped) -> GuestError:
        failure = HostFailure("guest_trap", err.limit, err.message)
        try:
            line = self.pruner.settings.failure_line("judge", "", "", failure.reason, failure.limit)
        except GuestError:
            line = "judge: rule=- failed reason=instantiate"
        write_line(self.log, line)
        return GuestError(failure)

    def _decide(self, value: Any) -> Decision:
        errors = _load_errors(value)
        if errors is not None:
            raise RulesError(self.rules_file, errors)
        decision = lift_decision(value)
        write_line(self.log, decision.log_line)
        return decision

    def route(self) -> Decision:
        """The judgement, blocking. Raises :class:`RulesError` (every problem
        of the rules file) or :class:`GuestError` (the guest trapped; the
        ``judge:`` failure line is written)."""
        if self.answers is not None:
            return self._fixed()
        if self.form == "import":
            return self._decide_import()
        started = self._load()
        if isinstance(started, Decision):
            return started
        instance, handle, request = started
        scored = run_sync(self.scorer, _convert.lift_request(request), CancelToken(), request_deadline(request))
        return self._finish(instance, handle, scored)

    async def route_async(self) -> Decision:
        """The judgement without blocking the event loop: the guest's steps in
        a worker thread, the scorer awaited on the loop."""
        import asyncio

        if self.answers is not None:
            return await asyncio.to_thread(self._fixed)
        started = await asyncio.to_thread(self._load)
        if isinstance(started, Decision):
            return started
        instance, handle, request = started
        scored = await run_async(self.scorer, _convert.lift_request(request), CancelToken(), request_deadline(request))
        return await asyncio.to_thread(self._finish, instance, handle, scored)

    def _fixed(self) -> Decision:
        limits = self._limits()
        try:
            instance = Instance(self.pruner._compiled, limits.memory_bytes)
            value = instance.call(limits, "route", self.rules, self.message, self.jev_model, self.answers)
        except Trapped as err:
            raise self._failed(err) from None
        return self._decide(value)

    def _decide_import(self) -> Decision:
        """``judge.decide``: the guest calls the ``scorer.score`` import once,
        answered here with the scorer under the request's deadline (a
        scorer failure is an answer: the guest's ``failed`` verdict)."""
        limits = self._limits()
        scorer = self.scorer
        interrupts: List[BaseException] = []

        def answer(request: Any) -> Any:
            try:
                scored = run_sync(scorer, _convert.lift_request(request), CancelToken(), request_deadline(request))
                return _convert.lower_response(scored.answers, scored.elapsed_ms)
            except Exception:  # noqa: BLE001 - never a trap: the batch failed(network)
                return _convert.lower_response([None] * len(get(request, "batches")), 0)
            except BaseException as err:  # Ctrl-C: the scoring stopped; raised after the call
                interrupts.append(err)
                return _convert.lower_response("cancelled", 0)

        try:
            instance = Instance(self.pruner._compiled, limits.memory_bytes)
            with _engine.scoring(answer):
                value = instance.call(limits, "decide", self.rules, self.message, self.jev_model)
        except Trapped as err:
            if interrupts:
                raise interrupts[0] from None
            raise self._failed(err) from None
        try:
            return self._decide(value)  # its line written
        finally:
            if interrupts:
                raise interrupts[0]

    def _load(self) -> Any:
        limits = self._limits()
        try:
            instance = Instance(self.pruner._compiled, limits.memory_bytes)
            job = instance.call(limits, "[static]judge-job.load", self.rules, self.message, self.jev_model)
            errors = _load_errors(job)
            if errors is not None:
                raise RulesError(self.rules_file, errors)
            request = instance.call(limits, "[method]judge-job.scoring-request", job)
        except Trapped as err:
            raise self._failed(err) from None
        return instance, job, request

    def _finish(self, instance: Instance, handle: Any, scored: Scored) -> Decision:
        limits = self._limits()
        response = _convert.lower_response(scored.answers, scored.elapsed_ms)
        try:
            value = instance.call(limits, "[method]judge-job.finish", handle, response)
            instance.drop(limits, handle)
        except Trapped as err:
            raise self._failed(err) from None
        return self._decide(value)


def request_deadline(request: Any) -> int:
    return int(get(get(request, "policy"), "deadline-ms"))


__all__ = ["Decision", "JudgeAnswer", "LoadError", "RulesError", "render_load_errors"]
