"""The Python host of the toolprune component: :class:`Pruner` (the compiled
component and a default scorer) and :class:`Turn` (one user turn: a live
instance, the turn store, fail-open calls).

SPEC §10 (the turn store: memory only, lifetime = the turn), §11 (a trap,
panic or limit in the guest → the raw text, and go on), §12 (the host writes
the guest's log lines), §14 (the host is mechanism only: it never parses the
text, counts characters or decides a gate).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import re
import sys
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Mapping, Optional, Set, Union

from . import _engine
from ._engine import CallError, Compiled, Instance
from .judge import Decision, Judge
from .scorers import CancelToken, OfflineScorer, Scorer, StubScorer
from .types import (
    GuestError,
    GuestFailure,
    Lang,
    Limits,
    OmittedResult,
    ParagraphInfo,
    Pruned,
    Report,
    ScoringRequest,
    ScoringResponse,
    StoredResult,
    ToolSpec,
)

LogSink = Callable[[str], None]
"""Receives complete log lines (``tool prune: …``), without a newline."""

ScorerLike = Union[str, Any]
"""``"offline"``, ``"stub"``, or an object with ``name`` and ``score(request)``."""

THRESHOLDS = (0.1, 0.2, 0.3, 0.5)


def log_label(name: str) -> str:
    """A label for the host's own log lines as the guest writes its labels:
    whitespace, ``=`` and control characters become ``_``, empty is ``-``."""
    if not name:
        return "-"
    # "Cs": a surrogate (the guest never sees one) is written ``_`` too.
    return "".join("_" if c.isspace() or c == "=" or unicodedata.category(c) in ("Cc", "Cs") else c for c in name)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _ill_formed(s: object) -> bool:
    """True for a ``str`` holding surrogate code points (U+D800–U+DFFF, e.g.
    from ``errors="surrogateescape"``): a WIT ``string`` carries Unicode
    scalar values only, so wasmtime-py cannot pass it to the guest.
    ``isascii`` is O(1); ``encode`` costs ≈ 70–140 µs on 100 KB."""
    if not isinstance(s, str) or s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _surrogates(what: str, s: str) -> CallError:
    """The failure for a string that cannot reach the guest: a count, never text."""
    reason = "invalid_text" if what == "the tool result text" else "invalid_input"
    n = len(_SURROGATE.findall(s))
    return CallError(GuestFailure(reason, f"{what} holds {n} surrogate code point(s); the guest was not called"))


def _clean(s: Any) -> Any:
    """``s`` with every surrogate code point replaced by U+FFFD (a ``str``), else ``s``."""
    return _SURROGATE.sub("\ufffd", s) if _ill_formed(s) else s


def _well_formed(what: str, s: object) -> None:
    """Raise :class:`ValueError` when ``s`` holds surrogate code points
    (``paragraphs`` and ``route`` would otherwise fail as a guest error;
    pruning fails open instead, see ``Turn._ill_formed_input``)."""
    if _ill_formed(s):
        n = len(_SURROGATE.findall(str(s)))
        raise ValueError(f"toolprune: {what} holds {n} surrogate code point(s); a WIT string cannot carry them")


def stderr_log(line: str) -> None:
    """The default log sink: each line to stderr."""
    print(line, file=sys.stderr, flush=True)


def _resolve_scorer(scorer: ScorerLike) -> Any:
    if isinstance(scorer, str):
        if scorer == "offline":
            return OfflineScorer()
        if scorer == "stub":
            return StubScorer()
        raise ValueError(f"unknown scorer {scorer!r}: use 'offline', 'stub' or a scorer object")
    if not isinstance(getattr(scorer, "name", None), str) or not callable(getattr(scorer, "score", None)):
        raise TypeError("a scorer needs a `name` (str) and a `score(request)` method")
    return scorer


def _takes_cancel(fn: Any) -> bool:
    try:
        return "cancel" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class Pruner:
    """The toolprune component, compiled once per process, and the settings
    every turn starts from. Cheap to share between threads and turns."""

    def __init__(
        self,
        compiled: Compiled,
        scorer: ScorerLike = "offline",
        *,
        limits: Optional[Limits] = None,
        log: Optional[LogSink] = None,
    ) -> None:
        self._compiled = compiled
        self.scorer = _resolve_scorer(scorer)
        self.limits = limits or Limits()
        self.log: LogSink = log or stderr_log

    @classmethod
    def load(
        cls,
        scorer: ScorerLike = "offline",
        *,
        wasm: Union[str, "os.PathLike[str]", None] = None,
        limits: Optional[Limits] = None,
        log: Optional[LogSink] = None,
    ) -> "Pruner":
        """Loads (and compiles, once per process and path) the component.

        ``wasm``: the ``toolprune.wasm`` path; default ``$TOOLPRUNE_WASM``, else
        the copy installed with the package. ``scorer``: ``"offline"`` (the
        guest's BM25, no network), ``"stub"``, or a scorer object such as
        :class:`toolprune.jev.JevScorer`. ``log``: where log lines go (stderr).

        Raises :class:`FileNotFoundError` (no component) or :class:`ValueError`
        (not a toolprune component of this WIT).
        """
        path = _engine.find_component(wasm)
        return cls(_engine.compiled(path), scorer, limits=limits, log=log)

    @property
    def wasm_path(self) -> Path:
        return self._compiled.path

    def begin_turn(
        self,
        request: str,
        *,
        enabled: bool = False,
        threshold: float = 0.2,
        lang: Lang = "en",
        agent: str = "agent",
        scorer: Optional[ScorerLike] = None,
        jev_model: Optional[str] = None,
        limits: Optional[Limits] = None,
        log: Optional[LogSink] = None,
    ) -> "Turn":
        """A new turn for the user's ``request`` (the raw message text, without
        attachments or quoted copies; the guest takes the basis from it).

        Pruning is **off** unless ``enabled=True`` (SPEC §2). ``threshold``:
        0.1 / 0.2 / 0.3 / 0.5 (the guest maps anything else to 0.2).
        ``jev_model``: model named in the Jev body (default: the scorer's
        ``jev_model`` attribute, if any).
        """
        if lang not in ("ja", "en"):
            raise ValueError(f"lang must be 'ja' or 'en', not {lang!r}")
        chosen = self.scorer if scorer is None else _resolve_scorer(scorer)
        return Turn(
            self._compiled,
            request,
            scorer=chosen,
            enabled=enabled,
            threshold=threshold,
            lang=lang,
            agent=agent,
            jev_model=jev_model if jev_model is not None else getattr(chosen, "jev_model", None),
            limits=limits or self.limits,
            log=log or self.log,
        )

    def _throwaway(self) -> Instance:
        try:
            return Instance(self._compiled, Limits())
        except Exception as err:  # noqa: BLE001
            raise GuestError(GuestFailure("instantiate", f"{type(err).__name__}: {err}")) from err

    def _inspect(self, body: Callable[[Instance], Any]) -> Any:
        answer = _engine.run_guarded(self._throwaway(), None, body)
        if isinstance(answer, CallError):
            raise GuestError(answer.failure)
        return answer

    def omitted_tool(self, lang: Lang = "en") -> ToolSpec:
        """The ``omitted`` tool as the model sees it (SPEC §10). Static:
        present it whenever pruning is on. Raises :class:`GuestError`."""
        return _engine.lift_tool_spec(self._inspect(lambda i: i.call("omitted-tool", lang)))

    def paragraphs(self, text: str) -> List[ParagraphInfo]:
        """The paragraphs of ``text`` exactly as pruning splits it (SPEC §4).
        Raises :class:`GuestError`, or :class:`ValueError` for a text holding
        surrogate code points (a WIT ``string`` cannot carry them)."""
        _well_formed("text", text)
        answer = self._inspect(lambda i: i.call("paragraphs", text))
        return [_engine.lift_paragraph_info(p) for p in answer]

    def route(
        self,
        rules: str,
        message: str,
        answers: Optional[str] = None,
        scorer: Optional[ScorerLike] = None,
        *,
        jev_model: Optional[str] = None,
        log: Optional[LogSink] = None,
        rules_file: str = "rules",
    ) -> Decision:
        """The judge router (README "Judge router"): where ``message`` goes by
        the rules file's text ``rules``. With ``answers`` (the text of a Jev
        response) no call is made; else the guest makes the one Jev call
        through ``scorer`` (default: the pruner's; the offline scorer cannot
        judge: :class:`TypeError`). Blocks while the scorer runs. Writes the
        ``judge:`` line to ``log``.

        Raises :class:`RulesError` (an invalid rules file: every problem, as
        ``FILE:LINE:COL: message`` with ``rules_file``) or :class:`GuestError`.
        """
        judge, chosen, model = self._judge(rules, message, answers, scorer, jev_model, log, rules_file)
        return judge.route(rules, message, answers, chosen, model)

    async def route_async(
        self,
        rules: str,
        message: str,
        answers: Optional[str] = None,
        scorer: Optional[ScorerLike] = None,
        *,
        jev_model: Optional[str] = None,
        log: Optional[LogSink] = None,
        rules_file: str = "rules",
    ) -> Decision:
        """:meth:`route` without blocking the event loop: the ``judge-job``
        resource (load, the scorer's ``score_async`` awaited, finish); the
        guest's steps run in a worker thread. Same decisions and log line."""
        judge, chosen, model = self._judge(rules, message, answers, scorer, jev_model, log, rules_file)
        return await judge.route_async(rules, message, answers, chosen, model)

    def _judge(
        self,
        rules: str,
        message: str,
        answers: Optional[str],
        scorer: Optional[ScorerLike],
        jev_model: Optional[str],
        log: Optional[LogSink],
        rules_file: str,
    ) -> Any:
        if not isinstance(rules, str):
            raise TypeError("rules must be a str (the TOML text)")
        if not isinstance(message, str):
            raise TypeError("message must be a str")
        if answers is not None and not isinstance(answers, str):
            raise TypeError("answers must be a str (the text of a Jev response)")
        for what, value in (("rules", rules), ("message", message), ("answers", answers), ("jev_model", jev_model)):
            _well_formed(what, value)
        chosen = self.scorer if scorer is None else _resolve_scorer(scorer)
        model = jev_model if jev_model is not None else getattr(chosen, "jev_model", None)
        _well_formed("jev_model", model)  # the scorer's own, once resolved
        return Judge(self._compiled, self.limits, log or self.log, rules_file), chosen, model


@dataclass
class _Job:
    """A ``prune-job`` between its scoring request and ``finish``."""

    instance: Instance
    handle: Any
    request: Optional[ScoringRequest]


class Turn:
    """One user turn: its request and settings, the turn store, and an
    instance of the component that lives as long as the turn (or until it
    traps). Made by :meth:`Pruner.begin_turn`.

    No call raises on a guest failure except :meth:`omitted` and
    :meth:`omitted_tool`; no call loses the text. Thread-safe; the asyncio
    methods may run concurrently for several results of one turn.
    """

    def __init__(
        self,
        compiled: Compiled,
        request: str,
        *,
        scorer: Any,
        enabled: bool,
        threshold: float,
        lang: Lang,
        agent: str,
        jev_model: Optional[str],
        limits: Limits,
        log: LogSink,
    ) -> None:
        self._compiled = compiled
        self.request = request
        self.scorer = scorer
        self.enabled = enabled
        self.threshold = threshold
        self.lang: Lang = lang
        self.agent = agent
        self.jev_model = jev_model
        self.limits = limits
        self.log = log
        self._cancel = CancelToken()
        self._guest = threading.RLock()  # one call into the instance at a time
        self._state = threading.Lock()  # the store and the sequence numbers
        self._instance: Optional[Instance] = None
        self._stored: List[StoredResult] = []
        self._stored_seq: List[int] = []
        self._pending: Set[int] = set()

    # --- settings and state ---------------------------------------------------

    @property
    def stored(self) -> List[StoredResult]:
        """The turn store: every ``ok`` result pruned in this turn, in order
        (``P1``, ``P2``, …). Memory only; gone with the turn."""
        with self._state:
            return list(self._stored)

    def cancel(self) -> None:
        """Cancels the turn: a scorer waiting now stops at once (outcome
        ``cancelled``, raw text), and later results of this turn are not scored."""
        self._cancel.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.cancelled

    @property
    def cancel_token(self) -> CancelToken:
        return self._cancel

    def set_limits(self, limits: Limits) -> None:
        """Limits for the following calls; the live instance is replaced."""
        with self._guest:
            self.limits = limits
            self._instance = None

    # --- pruning --------------------------------------------------------------

    def on_tool_result(self, *, tool: str, text: str, ok: bool = True, prunable: bool = False) -> Pruned:
        """Prunes one tool result (the ``prune`` export; the guest calls the
        scorer at most once, on this thread). Stores the record of an ``ok``
        result and writes the guest's log line. Fails open: on any guest
        failure the raw text comes back, outcome ``failed``, with the line
        ``tool prune: agent=… name=… outcome=failed reason=guest_trap``.

        ``ok``: the tool call succeeded (error texts are never pruned).
        ``prunable``: the host declared the tool prunable (default not).
        """
        seq = self._reserve()
        invalid = self._ill_formed_input(tool, text)
        if invalid is not None:
            return self._ill_formed(tool, text, ok, prunable, seq, invalid)
        record = self._input(tool, text, ok, prunable, seq)
        answer = self._call(lambda i: i.call("prune", record), self._sync_score)
        return self._settle(tool, text, seq, answer)

    async def on_tool_result_async(
        self, *, tool: str, text: str, ok: bool = True, prunable: bool = False
    ) -> Pruned:
        """:meth:`on_tool_result` without blocking the event loop: the
        ``prune-job`` form. The guest's steps run in a worker thread; the
        scorer's ``score_async`` is awaited on the loop (``score`` runs in a
        thread when there is none). Same results, store and log lines.

        Cancelling the awaiting task finishes the job as ``cancelled`` (log
        line written) and re-raises :class:`asyncio.CancelledError`;
        :meth:`cancel` instead returns the raw text with outcome ``cancelled``.
        """
        seq = self._reserve()
        invalid = self._ill_formed_input(tool, text)
        if invalid is not None:
            return self._ill_formed(tool, text, ok, prunable, seq, invalid)
        record = self._input(tool, text, ok, prunable, seq)
        starting = asyncio.ensure_future(asyncio.to_thread(self._start_job, record))
        try:
            started = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # The guest step goes on in its thread: finish it as cancelled then.
            starting.add_done_callback(lambda f: self._finish_cancelled(tool, text, seq, f.result(), 0))
            raise
        if isinstance(started, CallError):
            return self._settle(tool, text, seq, started)
        response: Optional[ScoringResponse] = None
        if started.request is not None:
            start = time.monotonic()
            try:
                response = await self._score_async(started.request)
            except asyncio.CancelledError:
                elapsed = min(int((time.monotonic() - start) * 1000), 0xFFFF_FFFF)
                self._finish_cancelled(tool, text, seq, started, elapsed)
                raise
            except Exception as err:  # noqa: BLE001 - a scorer error fails open
                self._drop_job(started)
                failure = GuestFailure("scorer_error", f"{type(err).__name__}: {err}")
                return self._settle(tool, text, seq, CallError(failure))
        finishing = asyncio.ensure_future(asyncio.to_thread(self._finish_job, started, response))
        try:
            answer = await asyncio.shield(finishing)
        except asyncio.CancelledError:
            # Too late to cancel: the result is stored and logged when the guest is done.
            finishing.add_done_callback(lambda f: self._settle(tool, text, seq, f.result()))
            raise
        return self._settle(tool, text, seq, answer)

    def _finish_cancelled(self, tool: str, text: str, seq: int, started: Any, elapsed_ms: int) -> None:
        """A task cancelled before its job finished: finish it as ``cancelled``
        (the log line is written, nothing is stored)."""
        if isinstance(started, CallError):
            self._settle(tool, text, seq, started)
            return
        stop = None if started.request is None else ScoringResponse.stopped("cancelled", elapsed_ms)
        self._settle(tool, text, seq, self._finish_job(started, stop))

    def on_tool_result_via_job(
        self, *, tool: str, text: str, ok: bool = True, prunable: bool = False
    ) -> Pruned:
        """The ``prune-job`` form, blocking (create, score with the turn's
        scorer, finish): the same bytes as :meth:`on_tool_result`."""
        seq = self._reserve()
        invalid = self._ill_formed_input(tool, text)
        if invalid is not None:
            return self._ill_formed(tool, text, ok, prunable, seq, invalid)
        record = self._input(tool, text, ok, prunable, seq)
        started = self._start_job(record)
        if isinstance(started, CallError):
            return self._settle(tool, text, seq, started)
        response = None
        if started.request is not None:
            try:
                response = self._sync_score(started.request)
            except Exception as err:  # noqa: BLE001
                self._drop_job(started)
                failure = GuestFailure("scorer_error", f"{type(err).__name__}: {err}")
                return self._settle(tool, text, seq, CallError(failure))
        return self._settle(tool, text, seq, self._finish_job(started, response))

    # --- the way back -----------------------------------------------------------

    def omitted(self, arguments: Union[str, Mapping[str, Any]]) -> OmittedResult:
        """The ``omitted`` tool (SPEC §10): ``arguments`` is the model's JSON
        text (a mapping is encoded first), passed on unparsed with the whole
        turn store. Writes the guest's ``tool omitted:`` line.

        Raises :class:`GuestError` when the guest failed (logged as
        ``tool omitted: agent=… outcome=failed reason=guest_trap``): tell the
        model the tool failed.
        """
        if not isinstance(arguments, str):
            arguments = json.dumps(dict(arguments), ensure_ascii=False)
        args = arguments
        if _ill_formed(args):
            # Surrogates: not JSON text, and wasmtime-py could not pass it. An
            # empty text gets the guest's own `invalid` answer (argument
            # `arguments`), in the turn's language, with its log line.
            args = ""
        agent = _SURROGATE.sub("\ufffd", self.agent) if _ill_formed(self.agent) else self.agent
        stored = _engine.lower_stored(self.stored)
        answer = self._call(lambda i: i.call("omitted", args, self.lang, agent, stored), None)
        if isinstance(answer, CallError):
            self.log(f"tool omitted: agent={log_label(self.agent)} outcome=failed reason={answer.failure.reason}")
            raise GuestError(answer.failure)
        result = _engine.lift_omitted(answer)
        self.log(result.log_line)
        return result

    def omitted_tool(self) -> ToolSpec:
        """The ``omitted`` tool's name, description and schema in the turn's language."""
        answer = self._call(lambda i: i.call("omitted-tool", self.lang), None)
        if isinstance(answer, CallError):
            raise GuestError(answer.failure)
        return _engine.lift_tool_spec(answer)

    # --- mechanism ----------------------------------------------------------------

    def _reserve(self) -> int:
        """The next sequence number: ``stored + 1`` when results come one after
        another (as in every other host); results pruned concurrently get
        distinct numbers (a number reserved by a result that was not stored may
        then be skipped, never reused)."""
        with self._state:
            seq = max([len(self._stored), *self._stored_seq, *self._pending]) + 1
            self._pending.add(seq)
            return seq

    def _scorer_choice(self) -> Optional[str]:
        """The ``scorer-choice``: ``None`` (offline) or the ``host(name)`` label."""
        return None if getattr(self.scorer, "choice", None) == "offline" else self.scorer.name  # type: ignore[no-any-return]

    def _input(self, tool: str, text: str, ok: bool, prunable: bool, seq: int, *, clean: bool = False) -> Any:
        """The ``prune-input``; ``clean``: every surrogate code point of its
        strings replaced by U+FFFD (for :meth:`_ill_formed`)."""
        fix: Callable[[Any], Any] = _clean if clean else (lambda s: s)
        return _engine.lower_input(
            request=fix(self.request),
            text=fix(text),
            enabled=self.enabled,
            succeeded=ok,
            prunable=prunable,
            threshold=self.threshold,
            lang=self.lang,
            sequence=seq,
            scorer=fix(self._scorer_choice()),
            jev_model=fix(self.jev_model),
            agent=fix(self.agent),
            tool=fix(tool),
        )

    def _ill_formed_input(self, tool: str, text: str) -> Optional[CallError]:
        """A failure when a string of the prune input holds surrogates (it
        cannot cross the WIT ``string``): ``invalid_text`` for the tool result
        text, ``invalid_input`` for the request, tool name, agent, scorer name
        (the ``host(name)`` label) or Jev model. See :meth:`_ill_formed`."""
        fields = (
            ("the tool result text", text),
            ("the request", self.request),
            ("the tool name", tool),
            ("the agent", self.agent),
            ("the scorer name", self._scorer_choice()),
            ("the Jev model", self.jev_model),
        )
        for what, value in fields:
            if isinstance(value, str) and _ill_formed(value):
                return _surrogates(what, value)
        return None

    def _ill_formed(self, tool: str, text: str, ok: bool, prunable: bool, seq: int, invalid: CallError) -> Pruned:
        """A prune input that cannot cross the WIT ``string``. When a
        host-known cheap gate fails (pruning off, the call failed, the tool not
        prunable) the answer is the guest's own, as for a well-formed text
        (SPEC §12: no ``tool prune:`` line): the guest skips a copy whose
        surrogates are U+FFFD (it cannot call a scorer then; none is behind the
        import anyway) and the original ``str`` is put back as body and raw.
        Otherwise, or if the guest did anything but pass the copy through, the
        call fails open without calling the guest (``invalid_text`` /
        ``invalid_input`` and the host's line). The 4,000-character gate is
        the guest's to count."""
        if self.enabled and ok and prunable:
            return self._settle(tool, text, seq, invalid)
        answer = self._call(lambda i: i.call("prune", self._input(tool, text, ok, prunable, seq, clean=True)), None)
        if isinstance(answer, CallError):
            return self._settle(tool, text, seq, answer)
        report = _engine.lift_report(answer)
        if report.record is not None or report.log_line is not None or report.body != _clean(text):
            return self._settle(tool, text, seq, invalid)
        with self._state:
            self._pending.discard(seq)
        report = dataclasses.replace(report, body=text, raw=text)
        return Pruned(text, text, report.outcome, report, None)

    def _sync_score(self, request: ScoringRequest) -> ScoringResponse:
        if self._cancel.cancelled:  # a cancelled turn scores nothing more
            return ScoringResponse.stopped("cancelled", 0)
        if _takes_cancel(self.scorer.score):
            return self.scorer.score(request, cancel=self._cancel)  # type: ignore[no-any-return]
        return self.scorer.score(request)  # type: ignore[no-any-return]

    async def _score_async(self, request: ScoringRequest) -> ScoringResponse:
        """Awaits the scorer; the turn's cancellation wins, and a scorer that
        overruns the policy's deadline by a second is stopped as ``timeout``."""
        start = time.monotonic()
        score_async = getattr(self.scorer, "score_async", None)
        coro: Any
        if score_async is not None:
            if _takes_cancel(score_async):
                coro = score_async(request, cancel=self._cancel)
            else:
                coro = score_async(request)
        else:
            coro = asyncio.to_thread(self._sync_score, request)
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(coro)
        cancelled = self._cancel.future(loop)
        limit = request.policy.deadline_ms / 1000.0 + 1.0
        try:
            done, _ = await asyncio.wait({task, cancelled}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if not cancelled.done():
                cancelled.cancel()
        elapsed = min(int((time.monotonic() - start) * 1000), 0xFFFF_FFFF)
        if cancelled in done:  # cancellation wins, even over an answer in the same instant
            task.cancel()
            return ScoringResponse.stopped("cancelled", elapsed)
        if task in done:
            return task.result()  # type: ignore[no-any-return]
        task.cancel()
        return ScoringResponse.stopped("timeout", elapsed)

    def _call(self, body: Callable[[Instance], Any], score: Optional[_engine.ScoreCall]) -> Any:
        """One export call on the live instance (made if needed); drops the
        instance on any error. Returns the value or a :class:`CallError`."""
        with self._guest:
            instance = self._instance
            if instance is None:
                try:
                    instance = self._instance = Instance(self._compiled, self.limits)
                except Exception as err:  # noqa: BLE001
                    return CallError(GuestFailure("instantiate", f"{type(err).__name__}: {err}"))
            answer = _engine.run_guarded(instance, score, body)
            if isinstance(answer, CallError):
                self._instance = None
                if answer.fatal is not None:
                    raise answer.fatal
            return answer

    def _start_job(self, record: Any) -> Union[_Job, CallError]:
        def start(instance: Instance) -> _Job:
            handle = instance.call("[constructor]prune-job", record)
            raw = instance.call("[method]prune-job.scoring-request", handle)
            request = None if raw is None else _engine.lift_request(raw)
            return _Job(instance, handle, request)

        return self._call(start, None)  # type: ignore[no-any-return]

    def _finish_job(self, job: _Job, response: Optional[ScoringResponse]) -> Any:
        with self._guest:
            if job.instance is not self._instance:
                return CallError(GuestFailure("guest_trap", "the instance was discarded while the job waited"))
            try:
                lowered = None if response is None else _engine.lower_response(response)
            except Exception as err:  # noqa: BLE001 - a malformed answer is a scorer error
                self._drop_job(job)
                return CallError(GuestFailure("scorer_error", f"{type(err).__name__}: {err}"))

            def finish(instance: Instance) -> Any:
                pruned = instance.call("[method]prune-job.finish", job.handle, lowered)
                instance.drop(job.handle)
                return pruned

            return self._call(finish, None)

    def _drop_job(self, job: _Job) -> None:
        with self._guest:
            if job.instance is self._instance:
                self._call(lambda i: i.drop(job.handle), None)

    def _settle(self, tool: str, text: str, seq: int, answer: Any) -> Pruned:
        if isinstance(answer, CallError):
            with self._state:
                self._pending.discard(seq)
            reason = answer.failure.reason
            line = f"tool prune: agent={log_label(self.agent)} name={log_label(tool)} outcome=failed reason={reason}"
            self.log(line)
            return Pruned(text, text, "failed", None, line, answer.failure)
        report: Report = _engine.lift_report(answer)
        with self._state:
            self._pending.discard(seq)
            if report.record is not None:
                self._stored.append(report.record)
                self._stored_seq.append(seq)
        if report.log_line is not None:
            self.log(report.log_line)
        return Pruned(report.body, text, report.outcome, report, report.log_line)


__all__ = ["LogSink", "Pruner", "Turn", "stderr_log", "THRESHOLDS"]
