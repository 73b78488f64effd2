"""The Python host of the toolprune component (WIT ``toolprune:pruner@0.2``):
:class:`Pruner` (the compiled component), :class:`Conversation` (one agent
conversation: its store of pruned results, its id counter, its instance)
and :class:`Turn` (one user message: the request and its cancellation).

Every rule is the guest's; this module is mechanism (SPEC §14): it runs each
tool result through a ``prune-job`` (``new`` → ``scoring-request`` → the
host scores → ``finish``), keeps the store bounded by the guest's limits,
drops an instance after a trap (SPEC §11: the raw text comes back), and
writes the guest's log lines (SPEC §12).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

if TYPE_CHECKING:  # imported where used (see scorers.py)
    import asyncio

from . import _convert, _engine
from ._convert import get
from ._engine import CallLimits, Compiled, Instance, Trapped
from .scorers import (
    OFFLINE,
    STUB,
    CancelToken,
    Scored,
    check_scorer,
    elapsed_ms,
    run_async,
    run_sync,
    scorer_name,
)
from .settings import Settings, clean, surrogates, utf8_len
from .store import MemoryStore, Store
from .types import (
    Config,
    GuestError,
    HostFailure,
    Inspection,
    Limits,
    OmittedAnswer,
    PruneResult,
    ScoringRequest,
    ScoringResponse,
    StoredResult,
    StoreLimits,
    snake,
)

LogSink = Callable[[str], None]
"""Receives complete log lines (``tool prune: …``), without a newline."""

ScorerLike = Any
"""``"offline"``, ``"stub"``, ``"jev"`` (:meth:`JevScorer.from_env`), or a scorer object."""


def stderr_log(line: str) -> None:
    """The default log sink: each line to stderr."""
    print(line, file=sys.stderr, flush=True)


def _require_str(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


class Pruner:
    """The toolprune component, compiled once per process (and cached on
    disk), version-checked, with a default scorer. Cheap to share between
    threads and conversations. Made by :meth:`load`."""

    def __init__(self, compiled: Compiled, *, limits: Optional[Limits] = None, log: Optional[LogSink] = None) -> None:
        self._compiled = compiled
        self.settings = Settings(compiled)
        self.limits = limits or Limits()
        self.log: LogSink = log or stderr_log
        self.scorer: Any = OFFLINE
        self._inspect_lock = threading.Lock()
        self._inspector: Optional[Instance] = None

    @classmethod
    def load(
        cls,
        scorer: ScorerLike = OFFLINE,
        *,
        wasm: Union[str, "os.PathLike[str]", None] = None,
        limits: Optional[Limits] = None,
        log: Optional[LogSink] = None,
        cache_dir: Union[str, "os.PathLike[str]", None, bool] = None,
    ) -> "Pruner":
        """Loads the component: compiled once per process and path, and the
        compiled code cached on disk between processes.

        ``scorer``: ``"offline"`` (default: the guest's BM25, nothing leaves
        the machine), ``"stub"``, ``"jev"`` (:meth:`JevScorer.from_env`:
        :class:`ValueError` when Jev is not configured) or a scorer object.
        ``wasm``: the ``toolprune.wasm`` path (default ``$TOOLPRUNE_WASM``,
        else the copy installed with the package). ``limits``: overrides of
        the guest's per-call limits (tests). ``log``: where log lines go
        (stderr). ``cache_dir``: the compile cache's folder (default
        :func:`~toolprune._engine.default_cache_dir`); ``False`` compiles in
        memory only.

        Raises :class:`FileNotFoundError` (no component) or
        :class:`~toolprune._engine.ComponentError` (not a toolprune component,
        or one of another contract version: the message names both).
        """
        path = _engine.find_component(wasm)
        if cache_dir is False:
            cache: Optional[Path] = None
        elif cache_dir is None or cache_dir is True:
            cache = _engine.default_cache_dir()  # None: in memory
        else:
            cache = Path(cache_dir)
        pruner = cls(_engine.compiled(path, cache), limits=limits, log=log)
        pruner.scorer = pruner._resolve_scorer(scorer)
        return pruner

    # --- facts ------------------------------------------------------------------------

    @property
    def wasm_path(self) -> Path:
        return self._compiled.path

    @property
    def cache(self) -> str:
        """How the compiled code was obtained: ``hit``, ``miss``, ``unwritable``, ``untrusted`` (the cache folder is another user's or a link: not used) or ``off``."""
        return self._compiled.cache

    @property
    def version(self) -> str:
        """The component's contract version (``settings.version``)."""
        return self.settings.version()

    @property
    def langs(self) -> List[str]:
        """The languages the component knows (its ``lang`` enum)."""
        return list(self._compiled.langs)

    @property
    def dialects(self) -> List[str]:
        """The tool-definition dialects the component writes (its ``dialect`` enum)."""
        return list(self._compiled.dialects)

    def _resolve_scorer(self, scorer: ScorerLike) -> Any:
        if scorer == "jev":
            from .jev import JevScorer

            return JevScorer.from_env(pruner=self)
        return check_scorer(scorer)

    def _lang(self, lang: Optional[str]) -> str:
        if lang is None:
            return self.settings.defaults().lang
        if lang not in self._compiled.langs:
            raise ValueError(f"lang must be one of {', '.join(self._compiled.langs)}, not {lang!r}")
        return lang

    # --- conversations ---------------------------------------------------------------------

    def conversation(
        self,
        *,
        enabled: bool = False,
        threshold: Union[str, float, None] = None,
        lang: Optional[str] = None,
        agent: str = "agent",
        scorer: Optional[ScorerLike] = None,
        jev_model: Optional[str] = None,
        log: Optional[LogSink] = None,
        store: Union[StoreLimits, Mapping[str, int], None] = None,
        limits: Optional[Limits] = None,
        report: bool = False,
        deadline_cap_ms: Optional[int] = None,
        backend: Optional[Store] = None,
    ) -> "Conversation":
        """A new conversation: one per agent conversation (ids ``P1``, ``P2``, …
        are unique within it, SPEC §10).

        Pruning is **off** unless ``enabled=True`` (SPEC §2). ``threshold``:
        a number or its text, checked by the guest (``settings.threshold``):
        anything but 0.1 / 0.2 / 0.3 / 0.5 raises :class:`ValueError` with the
        guest's message; default the guest's. ``lang``: ``en`` / ``ja``
        (default the guest's). ``agent``: the log label. ``scorer``: as in
        :meth:`load` (default the pruner's). ``jev_model``: the model named in
        Jev bodies (default the scorer's ``jev_model``). ``store``: bounds of
        the store, a :class:`StoreLimits` or a mapping of some of its fields
        (the others: the guest's). ``limits``: per-call limit overrides
        (default the pruner's). ``report``: fill ``PruneResult.paragraphs``
        (lifting ~300 paragraph records costs ~10 ms, so it is off by
        default). ``deadline_cap_ms``: **test-only**, the deadline used is
        ``min(policy.deadline_ms, deadline_cap_ms)`` (never raised).
        ``backend``: where pruned results are kept for ``omitted``, a
        :class:`toolprune.store.Store` (default a
        :class:`~toolprune.store.MemoryStore` bounded by ``store``; e.g.
        :class:`toolprune.redis_store.RedisStore`, shared by a gateway's
        instances). A store that fails makes the result pass raw (outcome
        ``failed``, reason ``store``) and ``omitted`` answer "try again".

        Raises :class:`TypeError` / :class:`ValueError` on bad arguments.
        """
        _require_str("agent", agent)
        if threshold is None:
            checked = self.settings.defaults().threshold
        else:
            if isinstance(threshold, bool):
                raise TypeError("threshold must be a number or its text, not a bool")
            checked = self.settings.threshold(threshold if isinstance(threshold, str) else str(threshold))
        chosen = self.scorer if scorer is None else self._resolve_scorer(scorer)
        if jev_model is not None:
            _require_str("jev_model", jev_model)
        cap = deadline_cap_ms
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ValueError("deadline_cap_ms must be a non-negative int")
        defaults = self.settings.defaults().store
        if store is None:
            bounds = defaults
        elif isinstance(store, StoreLimits):
            bounds = store
        else:
            unknown = set(store) - {"max_records", "max_chars", "max_age_s"}
            if unknown:
                raise ValueError(f"unknown store limits: {', '.join(sorted(unknown))}")
            bounds = dataclasses.replace(defaults, **{k: int(v) for k, v in store.items()})
        return Conversation(
            self,
            enabled=bool(enabled),
            threshold=checked,
            lang=self._lang(lang),
            agent=agent,
            scorer=chosen,
            jev_model=jev_model,
            log=log or self.log,
            store=bounds,
            limits=limits or self.limits,
            report=bool(report),
            deadline_cap_ms=cap,
            backend=backend,
        )

    # --- stateless calls ----------------------------------------------------------------------

    def _limits(self, text_bytes: int, override: Limits) -> CallLimits:
        base = self.settings.call_limits_for(text_bytes)
        return CallLimits(
            fuel=base.fuel if override.fuel is None else override.fuel,
            wall_ms=base.wall_ms,
            memory_bytes=base.memory_bytes if override.memory_bytes is None else override.memory_bytes,
        )

    def _stateless(self, text_bytes: int, name: str, *args: Any) -> Any:
        """One call on the pruner's own instance (replaced after a trap).
        Raises :class:`GuestError`."""
        limits = self._limits(text_bytes, self.limits)
        with self._inspect_lock:
            try:
                if self._inspector is None:
                    self._inspector = Instance(self._compiled, limits.memory_bytes)
                return self._inspector.call(limits, name, *args)
            except Trapped as err:
                self._inspector = None
                raise GuestError(HostFailure("guest_trap", err.limit, err.message)) from None

    def inspect(self, text: str) -> Inspection:
        """How pruning splits ``text`` (SPEC §14): its shape, a wrapper's span,
        each unit's byte and character span and kind. Raises
        :class:`TypeError` (not a ``str``), :class:`ValueError` (surrogate code
        points: a WIT ``string`` cannot carry them, and the answer would
        describe another text) or :class:`GuestError`."""
        _require_str("text", text)
        size = utf8_len(text)
        if size is None:
            raise ValueError(
                f"toolprune: text holds {surrogates(text)} surrogate code point(s); a WIT string cannot carry them"
            )
        return _convert.lift_inspection(self._stateless(size, "inspect", text))

    def is_prunable(self, tool: Union[str, Sequence[str]], globs: Optional[Sequence[str]] = None) -> bool:
        """Whether results of ``tool`` may be pruned: ``tool`` is its name or
        every name the caller knows for it (``mcp__fetch__read_file``,
        ``mcp_fetch_read_file``, …); a name matches one of ``globs`` (default:
        the guest's defaults, web-fetch tools) and no name is a file reader,
        shell, editor or ``omitted`` (SPEC §2, §15)."""
        return self.settings.is_prunable(tool, self.settings.defaults().prunable if globs is None else list(globs))

    def stub_scores(self, request: ScoringRequest) -> ScoringResponse:
        """The guest's word-overlap stub scores for ``request`` (its ``elapsed_ms`` is 0)."""
        size = sum(len(c) for b in request.batches for c in b.chunks) * 4 + len(request.basis) * 4
        return _convert.lift_response(self._stateless(size, "stub-scores", _convert.lower_request(request)))

    def config(self, environ: Optional[Mapping[str, str]] = None) -> Config:
        """The user's configuration (``settings.resolve`` of the variables the
        guest names and the config file). Raises
        :class:`~toolprune.settings.ConfigError`."""
        return self.settings.config(environ)

    def omitted_tool(self, dialect: str = "plain", lang: Optional[str] = None) -> Dict[str, Any]:
        """The ``omitted`` tool definition in ``dialect``'s shape (``plain``,
        ``openai``, ``anthropic``, ``mcp``), parsed from the guest's JSON.
        Static (SPEC §10): present it whenever pruning is on."""
        if dialect not in self._compiled.dialects:
            raise ValueError(f"dialect must be one of {', '.join(self._compiled.dialects)}, not {dialect!r}")
        text = self._stateless(0, "tool", self._lang(lang), dialect)
        return json.loads(text)  # type: ignore[no-any-return]

    @property
    def omitted_tool_name(self) -> str:
        """The name of the ``omitted`` tool, as the guest defines it."""
        return str(self.omitted_tool("plain")["name"])

    def request_argument(self, lang: Optional[str] = None) -> Dict[str, Any]:
        """The optional argument a door that never sees the user's message
        (an MCP proxy, a gateway) adds to each prunable tool's schema for the
        argument basis (SPEC §15): ``{"name": "user_request", "schema":
        {"type": "string", "description": …}}``, parsed from the guest's
        JSON, in ``lang`` (default the guest's). The door removes the
        argument before the call reaches the server."""
        return json.loads(self._stateless(0, "request-argument", self._lang(lang)))  # type: ignore[no-any-return]

    # --- the judge ------------------------------------------------------------------------

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
    ) -> Any:
        """The judge router: where ``message`` goes by the rules file's text
        ``rules`` (see :mod:`toolprune.judge`)."""
        from .judge import Judge

        return Judge(self, rules, message, answers, scorer, jev_model, log, rules_file).route()

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
    ) -> Any:
        """:meth:`route` without blocking the event loop."""
        from .judge import Judge

        return await Judge(self, rules, message, answers, scorer, jev_model, log, rules_file).route_async()


# --- one tool result on its way ---------------------------------------------------------------


@dataclass
class _Job:
    """A ``prune-job`` between its scoring request and ``finish``."""

    tool: str
    text: str
    scorer: Any
    input: Any
    """The lowered ``prune-input`` (kept to make the job again on a fresh instance)."""
    limits: CallLimits
    generation: int
    handle: Any
    request: Any
    """The raw ``scoring-request`` record, or None (no call due)."""


class _StoreFailed(Exception):
    """The store could not read a record (``omitted`` answers "try again")."""


class Conversation:
    """One agent conversation: settings, the store of pruned results (bounded,
    oldest evicted first), the id counter, and an instance of the component
    (dropped after a trap, re-created for the next call). Made by
    :meth:`Pruner.conversation`. Thread-safe; results may be pruned
    concurrently (threads or asyncio): ids go in the order results finish,
    unique and without gaps.

    No call raises on a guest failure: pruning returns the raw text,
    ``omitted`` the guest's "try again" text.
    """

    def __init__(
        self,
        pruner: Pruner,
        *,
        enabled: bool,
        threshold: float,
        lang: str,
        agent: str,
        scorer: Any,
        jev_model: Optional[str],
        log: LogSink,
        store: StoreLimits,
        limits: Limits,
        report: bool,
        deadline_cap_ms: Optional[int],
        backend: Optional[Store] = None,
    ) -> None:
        self.pruner = pruner
        self._compiled = pruner._compiled
        self._settings = pruner.settings
        self.enabled = enabled
        self.threshold = threshold
        self.lang = lang
        self.agent = agent
        self.scorer = scorer
        self.jev_model = jev_model
        """The model named in Jev bodies; None: the scorer's own ``jev_model``."""
        self.log = log
        self.store_limits = store
        self.limits = limits
        self.report = report
        self.deadline_cap_ms = deadline_cap_ms
        self._lock = threading.RLock()  # the instance, the store and the counter
        self._instance: Optional[Instance] = None
        self._generation = 0
        self._count = 0
        self._backend: Store = MemoryStore(store) if backend is None else backend

    # --- turns and state ----------------------------------------------------------------

    def turn(self, request: str, cancel: Optional[CancelToken] = None) -> "Turn":
        """A new turn for the user's ``request`` (the raw message text; the
        guest takes the basis from it). ``cancel``: a token to cancel its
        scoring from elsewhere (default: the turn's own, see :meth:`Turn.cancel`)."""
        _require_str("request", request)
        if cancel is not None and not isinstance(cancel, CancelToken):
            raise TypeError("cancel must be a toolprune.CancelToken")
        return Turn(self, request, cancel or CancelToken())

    @property
    def count(self) -> int:
        """The number of the last result this conversation stored (never
        decremented; its id is ``P{count}``; with a shared store numbers may
        skip those given to other conversations)."""
        with self._lock:
            return self._count

    @property
    def stored(self) -> List[StoredResult]:
        """The results the store holds now, oldest first (a store without
        ``records()``, such as a shared one, lists none)."""
        records = getattr(self._backend, "records", None)
        return list(records()) if callable(records) else []

    # --- mechanism -----------------------------------------------------------------------

    def _call_limits(self, text_bytes: int) -> CallLimits:
        return self.pruner._limits(text_bytes, self.limits)

    def _live(self, limits: CallLimits) -> Instance:
        """The live instance (made if needed). Caller holds the lock."""
        if self._instance is None:
            self._generation += 1
            self._instance = Instance(self._compiled, limits.memory_bytes)
        return self._instance

    def _trapped(self, err: Trapped, limits: CallLimits, replay: _engine.Replay) -> HostFailure:
        """Drops the instance after a trap; the failure, its limit named. Caller holds the lock."""
        self._instance = None
        err = _engine.explain(self._compiled, err, limits, replay)
        return HostFailure("guest_trap", err.limit, err.message)

    def _host_failure(self, tool: str, text: str, failure: HostFailure) -> PruneResult:
        try:
            line = self._settings.failure_line("prune", self.agent, tool, failure.reason, failure.limit)
        except GuestError:
            line = "tool prune: outcome=failed reason=instantiate"
        self.log(line)
        return PruneResult(
            body=text,
            raw=text,
            outcome="failed",
            gate=None,
            id=None,
            shape=None,
            counts=None,
            ratio=None,
            threshold=None,
            log_line=line,
            served_model=None,
            failure=failure,
        )

    def _input(
        self, request: str, tool: str, text: str, ok: bool, prunable: bool, report: bool, scorer: Any, model: Optional[str], *, cleaned: bool = False
    ) -> Any:
        fix: Callable[[Any], Any] = (lambda s: None if s is None else clean(s)) if cleaned else (lambda s: s)
        return _convert.record(
            request=fix(request),
            text=fix(text),
            enabled=self.enabled,
            succeeded=ok,
            prunable=prunable,
            threshold=self.threshold,
            lang=self.lang,
            scorer=fix(scorer_name(scorer)),
            jev_model=fix(model),
            agent=fix(self.agent),
            tool=fix(tool),
            report=report,
        )

    def _prepare(
        self, request: str, tool: Any, text: Any, ok: Any, prunable: Any, report: Optional[bool], scorer: Any
    ) -> Union[_Job, PruneResult]:
        """Checks the arguments and starts the job. Raises :class:`TypeError`
        for a non-``str`` text or tool (before any guest call)."""
        _require_str("text", text)
        _require_str("tool", tool)
        ok, prunable = bool(ok), bool(prunable)
        report = self.report if report is None else bool(report)
        chosen = self.scorer if scorer is None else self.pruner._resolve_scorer(scorer)
        model = self.jev_model if self.jev_model is not None else getattr(chosen, "jev_model", None)
        if model is not None:
            _require_str("jev_model", model)
        size = utf8_len(text)
        invalid: Optional[HostFailure] = None
        if size is None:
            invalid = HostFailure(
                "invalid_text", None, f"the tool result text holds {surrogates(text)} surrogate code point(s); the guest was not called"
            )
        else:
            for what, value in (
                ("the request", request),
                ("the tool name", tool),
                ("the agent", self.agent),
                ("the scorer name", scorer_name(chosen)),
                ("the Jev model", model),
            ):
                if value is not None and utf8_len(value) is None:
                    invalid = HostFailure(
                        "invalid_input", None, f"{what} holds {surrogates(value)} surrogate code point(s); the guest was not called"
                    )
                    break
        if invalid is not None:
            return self._ill_formed(request, tool, text, ok, prunable, chosen, model, invalid)
        record = self._input(request, tool, text, ok, prunable, report, chosen, model)
        return self._start(tool, text, chosen, record, size or 0)

    def _ill_formed(
        self, request: str, tool: str, text: str, ok: bool, prunable: bool, scorer: Any, model: Optional[str], invalid: HostFailure
    ) -> PruneResult:
        """A prune input that cannot cross a WIT ``string`` (surrogates). When
        a cheap gate this host knows fails (pruning off, the call failed, the
        tool not prunable), the guest answers for a copy whose surrogates are
        U+FFFD, and the original ``str`` comes back: ``skipped``, no line
        (SPEC §12). Otherwise the guest is not called: outcome ``failed``,
        reason ``invalid_text`` / ``invalid_input``, the guest's failure line."""
        if self.enabled and ok and prunable:
            return self._host_failure(tool, text, invalid)
        record = self._input(request, tool, text, ok, prunable, False, scorer, model, cleaned=True)
        job = self._start(tool, text, scorer, record, len(clean(text).encode("utf-8")))
        if isinstance(job, PruneResult):
            return job
        pruned = self._finish_raw(job, None)
        if isinstance(pruned, HostFailure):
            return self._host_failure(tool, text, pruned)
        if get(pruned, "outcome") != "skipped":  # never: a host-known gate failed
            return self._host_failure(tool, text, invalid)
        return self._result(text, pruned)

    def _start(self, tool: str, text: str, scorer: Any, record: Any, text_bytes: int) -> Union[_Job, PruneResult]:
        """``prune-job.new`` and its ``scoring-request``."""
        limits = self._call_limits(text_bytes)

        def replay(i: Instance, l: CallLimits) -> Any:
            return i.call(l, "[method]prune-job.scoring-request", i.call(l, "[constructor]prune-job", record))

        with self._lock:
            try:
                instance = self._live(limits)
                handle = instance.call(limits, "[constructor]prune-job", record)
                request = instance.call(limits, "[method]prune-job.scoring-request", handle)
                return _Job(tool, text, scorer, record, limits, self._generation, handle, request)
            except Trapped as err:
                failure = self._trapped(err, limits, replay)
        return self._host_failure(tool, text, failure)

    def _stub(self, job: _Job) -> Union[Scored, HostFailure]:
        """The guest's stub scores for ``job``, on this conversation's
        instance, passed on as the guest made them (``elapsed-ms`` 0: nothing
        was waited for)."""
        with self._lock:
            try:
                instance = self._live(job.limits)  # a fresh one if the job's was dropped: the request is a plain value
                response = instance.call(job.limits, "stub-scores", job.request)
            except Trapped as err:
                return self._trapped(err, job.limits, lambda i, l: i.call(l, "stub-scores", job.request))
        return Scored(get(response, "answers"), get(response, "elapsed-ms"))

    def _deadline(self, request: ScoringRequest) -> int:
        ms = request.policy.deadline_ms
        if self.deadline_cap_ms is not None:
            ms = min(ms, self.deadline_cap_ms)
        return ms

    def _score_sync(self, job: _Job, cancel: CancelToken) -> Union[Scored, HostFailure, None]:
        if job.request is None:
            return None
        if job.scorer == STUB:
            return Scored("cancelled", 0) if cancel.cancelled else self._stub(job)
        request = _convert.lift_request(job.request)
        return run_sync(job.scorer, request, cancel, self._deadline(request))

    async def _score_async(self, job: _Job, cancel: CancelToken) -> Union[Scored, HostFailure, None]:
        if job.request is None:
            return None
        import asyncio

        if job.scorer == STUB:
            return Scored("cancelled", 0) if cancel.cancelled else await asyncio.to_thread(self._stub, job)
        request = _convert.lift_request(job.request)
        return await run_async(job.scorer, request, cancel, self._deadline(request))

    def _finish_raw(self, job: _Job, scored: Optional[Scored]) -> Any:
        """``finish`` with the next id; stores the record; writes the guest's
        line. Returns the raw ``pruned`` record or a :class:`HostFailure`. If
        the job's instance was dropped while it was being scored, the job is
        made again on the live one (the guest is deterministic: the same
        plan), so a trap in one result never fails another."""
        response = None if scored is None else _convert.lower_response(scored.answers, scored.elapsed_ms)
        with self._lock:
            # The guest writes the id into the markers, so the number comes
            # first (a result that is not stored leaves a gap in a shared store).
            try:
                number = int(self._backend.next_number())
                if not 1 <= number <= 0xFFFF_FFFF:
                    raise ValueError("the store's id number is out of range")
            except Exception as err:  # any store failure: fail open
                self._discard_locked(job)
                return HostFailure("store", None, f"next_number: {type(err).__name__}")

            def replay(i: Instance, l: CallLimits) -> Any:
                return i.call(l, "[method]prune-job.finish", i.call(l, "[constructor]prune-job", job.input), response, number)

            try:
                instance = self._live(job.limits)
                if job.generation != self._generation:
                    job.handle = instance.call(job.limits, "[constructor]prune-job", job.input)
                    job.generation = self._generation
                pruned = instance.call(job.limits, "[method]prune-job.finish", job.handle, response, number)
                instance.drop(job.limits, job.handle)
            except Trapped as err:
                return self._trapped(err, job.limits, replay)
            stored = get(pruned, "record")
            if stored is not None:
                try:
                    self._backend.put(_convert.lift_stored(stored))
                except Exception as err:  # any store failure: fail open
                    return HostFailure("store", None, f"put: {type(err).__name__}")
                self._count = number
            line = get(pruned, "log-line")
            if line is not None:
                self.log(line)
        return pruned

    def _finish(self, job: _Job, scored: Union[Scored, HostFailure, None]) -> PruneResult:
        if isinstance(scored, HostFailure):
            self._discard(job)
            return self._host_failure(job.tool, job.text, scored)
        pruned = self._finish_raw(job, scored)
        if isinstance(pruned, HostFailure):
            return self._host_failure(job.tool, job.text, pruned)
        return self._result(job.text, pruned)

    def _discard(self, job: _Job) -> None:
        """Frees a job that will not be finished."""
        with self._lock:
            self._discard_locked(job)

    def _discard_locked(self, job: _Job) -> None:
        """:meth:`_discard`; the caller holds the lock."""
        if job.generation == self._generation and self._instance is not None:
            try:
                self._instance.drop(job.limits, job.handle)
            except Trapped:
                self._instance = None

    def _result(self, text: str, pruned: Any) -> PruneResult:
        body = get(pruned, "body")
        stored = get(pruned, "record")
        shape = get(pruned, "shape")
        gate = get(pruned, "gate")
        return PruneResult(
            body=text if body is None else body,
            raw=text,
            outcome=snake(get(pruned, "outcome")),
            gate=None if gate is None else snake(gate),
            id=None if stored is None else get(stored, "id"),
            shape=None if shape is None else snake(shape),
            counts=_convert.lift_counts(get(pruned, "counts")),
            ratio=get(pruned, "ratio"),
            threshold=get(pruned, "threshold"),
            log_line=get(pruned, "log-line"),
            served_model=get(pruned, "served-model"),
            paragraphs=_convert.lift_paragraphs(get(pruned, "paragraphs")),
            failures=_convert.lift_failures(get(pruned, "failures")),
        )

    # --- the way back ----------------------------------------------------------------------

    def omitted(self, arguments: Union[str, Mapping[str, Any]]) -> OmittedAnswer:
        """Answers one call of the model's ``omitted`` tool (SPEC §10):
        ``arguments`` is the model's JSON text (a mapping is encoded first).
        ``answer.text`` goes back to the model as the tool result, whatever
        the outcome. Writes the ``tool omitted:`` line. Never raises on a
        guest failure: outcome ``failed`` and the guest's "try again" text."""
        if isinstance(arguments, Mapping):
            arguments = json.dumps(dict(arguments), ensure_ascii=False)
        _require_str("arguments", arguments)
        size = utf8_len(arguments)
        if size is None:
            # Surrogates: not JSON text, and a WIT string cannot carry them. An
            # empty text gets the guest's own `invalid` answer (argument `arguments`).
            arguments, size = "", 0
        args = arguments
        agent = clean(self.agent)
        failure: Optional[HostFailure] = None
        store_failure: Optional[HostFailure] = None
        with self._lock:
            limits = self._call_limits(size)
            found: Any = None

            def replay(i: Instance, l: CallLimits) -> Any:
                i.call(l, "requested-id", args)
                return i.call(l, "answer", args, self.lang, agent, found)

            try:
                instance = self._live(limits)
                wanted = instance.call(limits, "requested-id", args)
                if wanted is not None:
                    try:
                        held = self._backend.get(wanted)
                    except Exception as err:  # any store failure: "try again"
                        store_failure = HostFailure("store", None, f"get: {type(err).__name__}")
                        held = None
                    if store_failure is not None:
                        raise _StoreFailed()
                    found = None if held is None else _convert.record(id=held.id, chars=held.chars, data=held.data)
                if found is not None:
                    limits = self._call_limits(size + 4 * get(found, "chars"))
                answer = instance.call(limits, "answer", args, self.lang, agent, found)
            except Trapped as err:
                failure = self._trapped(err, limits, replay)
            except _StoreFailed:
                failure = store_failure
        if failure is not None:
            return self._omitted_failure(failure)
        result = OmittedAnswer(outcome=snake(get(answer, "outcome")), text=get(answer, "text"), log_line=get(answer, "log-line"))
        self.log(result.log_line)
        return result

    def _omitted_failure(self, failure: HostFailure) -> OmittedAnswer:
        try:
            line = self._settings.failure_line("omitted", self.agent, "", failure.reason, failure.limit)
        except GuestError:
            line = "tool omitted: outcome=failed reason=instantiate"
        try:
            text = self.pruner._stateless(0, "unavailable", self.lang)
        except GuestError:
            text = ""
        self.log(line)
        return OmittedAnswer(outcome="failed", text=text, log_line=line, failure=failure)

    def omitted_tool(self, dialect: str = "plain", lang: Optional[str] = None) -> Dict[str, Any]:
        """The ``omitted`` tool definition in ``dialect``'s shape, in the
        conversation's language unless ``lang`` is given (see :meth:`Pruner.omitted_tool`)."""
        return self.pruner.omitted_tool(dialect, self.lang if lang is None else lang)

    @property
    def omitted_tool_name(self) -> str:
        """The name of the ``omitted`` tool, as the guest defines it."""
        return self.pruner.omitted_tool_name


class Turn:
    """One user message in a conversation: its request and cancellation. Made
    by :meth:`Conversation.turn`."""

    def __init__(self, conversation: Conversation, request: str, cancel: CancelToken) -> None:
        self.conversation = conversation
        self.request = request
        self.cancel_token = cancel

    def cancel(self) -> None:
        """Cancels the turn: a scorer waiting now stops at once (outcome
        ``cancelled``, raw text), and later results of this turn are not scored."""
        self.cancel_token.cancel()

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.cancelled

    def on_tool_result(
        self,
        *,
        tool: str,
        text: str,
        ok: bool = True,
        prunable: bool = False,
        report: Optional[bool] = None,
        scorer: Optional[ScorerLike] = None,
    ) -> PruneResult:
        """Prunes one tool result, blocking while it is scored. Stores an
        ``ok`` result and writes the guest's log line. Fails open: on any
        guest failure the input text comes back, outcome ``failed``.

        ``ok``: the tool call succeeded (error texts are never pruned).
        ``prunable``: the tool was declared prunable (default not; see
        :meth:`Pruner.is_prunable`). ``report``: fill ``paragraphs``
        (default: the conversation's). ``scorer``: this result's scorer
        (default: the conversation's). Raises :class:`TypeError` when
        ``text`` or ``tool`` is not a ``str``.
        """
        conv = self.conversation
        job = conv._prepare(self.request, tool, text, ok, prunable, report, scorer)
        if isinstance(job, PruneResult):
            return job
        return conv._finish(job, conv._score_sync(job, self.cancel_token))

    async def on_tool_result_async(
        self,
        *,
        tool: str,
        text: str,
        ok: bool = True,
        prunable: bool = False,
        report: Optional[bool] = None,
        scorer: Optional[ScorerLike] = None,
    ) -> PruneResult:
        """:meth:`on_tool_result` without blocking the event loop: the guest's
        steps run in a worker thread (wasmtime releases the GIL while wasm
        runs) and the scorer is awaited on the loop (its ``score_async``, else
        its ``score`` in a thread). Several results may be pruned
        concurrently (``asyncio.gather``). Cancelling the awaiting task
        finishes the job as ``cancelled`` (its log line is written) and
        re-raises :class:`asyncio.CancelledError`."""
        import asyncio

        conv = self.conversation
        _require_str("text", text)
        _require_str("tool", tool)
        starting = asyncio.ensure_future(
            asyncio.to_thread(conv._prepare, self.request, tool, text, ok, prunable, report, scorer)
        )
        try:
            job = await asyncio.shield(starting)
        except asyncio.CancelledError:
            starting.add_done_callback(self._finish_started_cancelled)
            raise
        if isinstance(job, PruneResult):
            return job
        start = time.monotonic()
        try:
            scored = await conv._score_async(job, self.cancel_token)
        except asyncio.CancelledError:
            self._finish_cancelled(job, elapsed_ms(start))
            raise
        # Once finishing, a cancelled task still stores and logs its result.
        return await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(conv._finish, job, scored)))

    def _finish_started_cancelled(self, started: "asyncio.Future[Any]") -> None:
        if not started.cancelled() and started.exception() is None:
            self._finish_cancelled(started.result(), 0)

    def _finish_cancelled(self, job: Any, elapsed: int) -> None:
        """A task cancelled before its job finished: finish it as ``cancelled``
        (the log line is written, nothing is stored)."""
        if isinstance(job, PruneResult):
            return
        self.conversation._finish(job, None if job.request is None else Scored("cancelled", elapsed))


__all__ = ["Conversation", "LogSink", "Pruner", "Turn", "stderr_log"]
