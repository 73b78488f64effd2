"""The Python host of the toolprune component (WIT ``toolprune:pruner@0.3``):
:class:`Pruner` (the compiled component), :class:`Conversation` (one agent
conversation: its store of pruned results, its id counter, its instances)
and :class:`Turn` (one user message: the request and its cancellation).

Every rule is the guest's; this module is mechanism (SPEC §14). A tool
result is pruned in one of two forms that give the same bytes:

- **import** (the blocking API's default): one ``pruner.prune`` call; the
  guest calls the host's ``scorer.score`` import at most once in the
  middle, and the host scores there (deadline, cancellation, retries) on
  the calling thread. Each call runs on an instance of its own (taken from
  a small pool), so concurrent results of one conversation score at once.
- **jobs** (the asyncio API, or ``conversation(form="jobs")``): ``prune-job``
  ``new`` → ``scoring-request`` → the host scores → ``finish``.

Either way it keeps the store bounded by the guest's limits, hands ids out
in the order results finish, drops an instance after a trap (SPEC §11: the
raw text comes back), and writes the guest's log lines (SPEC §12).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
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
from ._log import LogSink, stderr_log, write_line
from .scorers import (
    OFFLINE,
    CancelToken,
    Scored,
    check_scorer,
    elapsed_ms,
    internal,
    run_async,
    run_sync,
    scorer_choice,
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
    StoredResult,
    StoreLimits,
    kebab,
    snake,
)

ScorerLike = Any
"""``"offline"``, ``"stub"``, ``"jev"`` (:meth:`JevScorer.from_env`), or a scorer object."""

FORMS = ("import", "jobs")
"""How a conversation's blocking API prunes (:meth:`Pruner.conversation`'s ``form``)."""

Arguments = Union[str, Mapping[str, Any], Sequence[Any], None]
"""A tool call's arguments: the JSON text the door received, or a mapping or
list of JSON values (encoded as JSON); see :func:`_arguments_text`."""

ARGUMENTS_MAX_DEPTH = 128
"""How deep ``arguments`` may nest (mappings and lists), in every host: deeper gives no arguments."""


def _require_str(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


class _NotJson(Exception):
    """A value in ``arguments`` that is not a JSON value."""


def _json_text(value: Any, depth: int) -> str:
    """``value`` (a JSON value: see :func:`_arguments_text`) as compact JSON
    text, as the Node host writes it; raises :class:`_NotJson` for anything else."""
    if isinstance(value, str):
        if utf8_len(value) is None:
            raise _NotJson
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson
        return json.dumps(float(value))
    if depth > ARGUMENTS_MAX_DEPTH:
        raise _NotJson
    if isinstance(value, Mapping):
        members = []
        for key, member in value.items():
            if not isinstance(key, str):
                raise _NotJson
            members.append(f"{_json_text(key, depth)}:{_json_text(member, depth + 1)}")
        return "{" + ",".join(members) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json_text(item, depth + 1) for item in value) + "]"
    raise _NotJson


def _arguments_text(arguments: Any) -> Optional[str]:
    """A tool call's arguments as the text the repeat gate keys on (SPEC §2;
    the guest canonicalizes JSON: key order and spacing do not matter), or
    None: no arguments, no repeat detected. The same rule in every host: a
    ``str`` is the JSON text the door received, taken as it is; a mapping,
    a ``list`` or a ``tuple`` is encoded when every value in it is a JSON
    value — ``str``, ``int``, a finite ``float``, ``bool``, ``None``, a
    mapping with ``str`` keys, a list — at most :data:`ARGUMENTS_MAX_DEPTH`
    levels deep. Anything else — a set, bytes, another object, a scalar,
    NaN, ±inf, a cycle, or a surrogate code point anywhere (a WIT string
    cannot carry it) — gives None: never an exception, never a failed
    result (the arguments are only hashed)."""
    if isinstance(arguments, str):
        return arguments if utf8_len(arguments) is not None else None
    if not isinstance(arguments, (Mapping, list, tuple)):
        return None
    try:
        return _json_text(arguments, 1)
    except Exception:  # noqa: BLE001 - _NotJson, or what a mapping's own methods raise
        return None


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
        (stderr; what the sink raises is dropped). ``cache_dir``: the compile cache's folder (default
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
        form: str = "import",
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
        ``form``: how :meth:`Turn.on_tool_result` (the blocking API) prunes —
        ``"import"`` (default: one ``pruner.prune`` call, the guest calling
        this host's ``scorer.score`` import, the scorer run on the calling
        thread; use it wherever the caller blocks anyway) or ``"jobs"``
        (``prune-job``: create, score the request, finish; the same bytes,
        for tests that compare the forms and for callers that want the
        asyncio API's mechanism). :meth:`Turn.on_tool_result_async` always
        uses jobs: an event loop must not block inside a guest call.

        Raises :class:`TypeError` / :class:`ValueError` on bad arguments.
        """
        _require_str("agent", agent)
        if form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
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
            form=form,
        )

    # --- stateless calls ----------------------------------------------------------------------

    def _limits(self, text_bytes: int, override: Limits) -> CallLimits:
        """The guest's limits for a text of ``text_bytes`` bytes, with ``override``'s fields."""
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

    # --- what the CLIs print (the guest's `report` interface) ---------------------------------

    def prune_json(self, result: PruneResult, scorer: str) -> str:
        """``prune --json``: the report of ``result`` as every CLI prints it
        (``report.prune-json``: pretty-printed JSON, keys in the guest's
        order, no newline at the end). ``scorer``: the scorer's label.
        Raises :class:`GuestError`."""
        _require_str("scorer", scorer)
        failure = None
        if result.failure is not None:
            limit = result.failure.limit
            failure = (kebab(result.failure.reason), None if limit is None else kebab(limit))
        size = 65_536 + 256 * len(result.paragraphs) + 64 * len(result.failures)
        return self._stateless(size, "prune-json", result._pruned, failure, clean(scorer))  # type: ignore[no-any-return]

    def split_json(self, text: str) -> str:
        """``split --json``: how pruning splits ``text`` (``report.split-json``;
        no newline at the end). Raises :class:`TypeError`, :class:`ValueError`
        (surrogates) or :class:`GuestError`."""
        return self._stateless(self._checked_size(text) * 4 + 65_536, "split-json", text)  # type: ignore[no-any-return]

    def split_table(self, text: str) -> str:
        """``split``: the same as a table for people (``report.split-table``;
        ends with a newline). Raises as :meth:`split_json`."""
        return self._stateless(self._checked_size(text) * 4 + 65_536, "split-table", text)  # type: ignore[no-any-return]

    def route_report(self, decision: Any, json: bool = False) -> str:
        """``route --json`` (``json=True``: pretty-printed JSON, keys sorted,
        no newline at the end) or the ``route`` summary line, as every CLI
        prints them (``report.route-json``, ``report.route-summary``, rendered
        by the guest). ``decision``: one :meth:`route` gave. Raises
        :class:`TypeError` or :class:`GuestError`."""
        guest = getattr(decision, "_guest", None)
        if guest is None:
            raise TypeError("toolprune: pass a decision that route() gave")
        size = 65_536 + 4 * len(decision.log_line)
        return self._stateless(size, "route-json" if json else "route-summary", guest)  # type: ignore[no-any-return]

    def rules_errors(self, file: str, errors: Any) -> str:
        """A rules file's problems (a :class:`RulesError`'s ``errors``) as every
        CLI prints them (``report.rules-errors``): ``FILE:LINE:COLUMN:
        MESSAGE`` lines. Raises :class:`GuestError`."""
        _require_str("file", file)
        records = [_convert.record(line=e.line, column=e.column, message=clean(e.message)) for e in errors]
        size = 65_536 + sum(4 * len(e.message) for e in errors)
        return self._stateless(size, "rules-errors", clean(file), records)  # type: ignore[no-any-return]

    def _checked_size(self, text: str) -> int:
        _require_str("text", text)
        size = utf8_len(text)
        if size is None:
            raise ValueError(
                f"toolprune: text holds {surrogates(text)} surrogate code point(s); a WIT string cannot carry them"
            )
        return size

    def is_prunable(self, tool: Union[str, Sequence[str]], globs: Optional[Sequence[str]] = None) -> bool:
        """Whether results of ``tool`` may be pruned: ``tool`` is its name or
        every name the caller knows for it (``mcp__fetch__read_file``,
        ``mcp_fetch_read_file``, …); a name matches one of ``globs`` (default:
        the guest's defaults, web-fetch tools) and no name is a file reader,
        shell, editor or ``omitted`` (SPEC §2, §15)."""
        return self.settings.is_prunable(tool, self.settings.defaults().prunable if globs is None else list(globs))

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
        form: str = "import",
    ) -> Any:
        """The judge router: where ``message`` goes by the rules file's text
        ``rules`` (see :mod:`toolprune.judge`). Blocking. ``form``:
        ``import`` (``judge.decide``, the guest calling this host's
        ``scorer.score`` import once) or ``jobs`` (``judge-job``); the same
        decision either way."""
        from .judge import Judge

        return Judge(self, rules, message, answers, scorer, jev_model, log, rules_file, form).route()

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


@dataclass
class _Ready:
    """A checked tool result, its ``prune-input`` lowered, not yet pruned."""

    tool: str
    text: str
    scorer: Any
    record: Any
    text_bytes: int


class _StoreFailed(Exception):
    """The store could not read a record (``omitted`` answers "try again")."""


class _ImportScorer:
    """Answers the ``scorer.score`` import for one ``pruner.prune`` call: the
    scorer runs under the host's deadline and cancellation
    (:func:`~toolprune.scorers.run_sync`; its retries ask
    ``settings.retry-delay`` on the settings' own instance, never the one
    inside ``prune``). Every scorer failure, the deadline and cancellation
    become answers, never a trap. A ``KeyboardInterrupt`` (any
    ``BaseException`` that is not an ``Exception``) while it scores is
    answered ``cancelled`` and kept in :attr:`interrupt`, for the caller to
    raise once the guest call has returned. The response is kept: a result
    whose id moved while it was scored is finished again from it, and the
    scorer is never asked twice."""

    def __init__(self, scorer: Any, cancel: CancelToken, deadline: Callable[[ScoringRequest], int]) -> None:
        self.scorer = scorer
        self.cancel = cancel
        self.deadline = deadline
        self.calls = 0
        """Import calls answered by asking the scorer (0 or 1)."""
        self.response: Any = None
        """The ``scoring-response`` record given to the guest, once it was asked."""
        self.interrupt: Optional[BaseException] = None
        """A Ctrl-C (``KeyboardInterrupt``) that stopped the scoring, to raise after the call."""

    def __call__(self, request: Any) -> Any:
        if self.response is not None:  # the guest asks once; never the scorer twice
            return self.response
        self.calls += 1
        start = time.monotonic()
        try:
            lifted = _convert.lift_request(request)
            scored = run_sync(self.scorer, lifted, self.cancel, self.deadline(lifted))
            self.response = _convert.lower_response(scored.answers, scored.elapsed_ms)
        except Exception:  # noqa: BLE001 - never a trap: every batch failed(network)
            self.response = _convert.lower_response([None] * len(get(request, "batches")), 0)
        except BaseException as err:  # Ctrl-C: the scoring stopped (the guest's `cancelled`)
            self.interrupt = err
            self.response = _convert.lower_response("cancelled", elapsed_ms(start))
        return self.response

    def replay(self, _request: Any) -> Any:
        """For a replay after a trap (:func:`toolprune._engine.explain`): the
        captured response, or a stop; never the scorer again."""
        return self.response if self.response is not None else _convert.lower_response("cancelled", 0)


def _never_asked(_request: Any) -> Any:
    """The import's answer when the guest scores itself (never called: a stop)."""
    return _convert.lower_response("cancelled", 0)


class Conversation:
    """One agent conversation: settings, the store of pruned results (bounded,
    oldest evicted first), the id counter, and instances of the component
    (dropped after a trap, re-created for the next call). Made by
    :meth:`Pruner.conversation`. Thread-safe; results may be pruned
    concurrently (threads or asyncio): ids go in the order results finish,
    unique and without gaps.

    No call raises on a guest failure: pruning returns the raw text,
    ``omitted`` the guest's "try again" text.
    """

    _IDLE_MAX = 2
    """Idle instances kept for the import form (each holds its linear memory)."""

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
        form: str = "import",
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
        self.form = form
        """``import`` or ``jobs``: how :meth:`Turn.on_tool_result` prunes."""
        self._lock = threading.RLock()  # the jobs' instance, the store, the counter, the pool
        self._instance: Optional[Instance] = None
        self._generation = 0
        self._idle: List[Instance] = []
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
        """The jobs' instance (made if needed). Caller holds the lock."""
        if self._instance is None:
            self._generation += 1
            self._instance = Instance(self._compiled, limits.memory_bytes)
        return self._instance

    def _take(self, limits: CallLimits) -> Instance:
        """An instance for one ``prune`` call, the caller's alone until
        :meth:`_give_back`: an idle one, else a new one. Raises :class:`Trapped`."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Instance(self._compiled, limits.memory_bytes)

    def _give_back(self, instance: Instance) -> None:
        """Keeps an instance that did not trap for the next call (a few at most)."""
        with self._lock:
            if len(self._idle) < self._IDLE_MAX:
                self._idle.append(instance)

    def _trapped(self, err: Trapped, limits: CallLimits, replay: _engine.Replay) -> HostFailure:
        """Drops the jobs' instance after a trap; the failure, its limit named. Caller holds the lock."""
        self._instance = None
        return self._explained(err, limits, replay)

    def _explained(self, err: Trapped, limits: CallLimits, replay: _engine.Replay) -> HostFailure:
        err = _engine.explain(self._compiled, err, limits, replay)
        return HostFailure("guest_trap", err.limit, err.message)

    def _host_failure(self, tool: str, text: str, failure: HostFailure, scorer_calls: int = 0) -> PruneResult:
        try:
            line = self._settings.failure_line("prune", self.agent, tool, failure.reason, failure.limit)
        except GuestError:
            line = "tool prune: outcome=failed reason=instantiate"
        write_line(self.log, line)
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
            scorer_calls=scorer_calls,
        )

    def _pruned_calls(self) -> List[str]:
        """The call keys of the results the store holds (for the repeat gate);
        a store without ``calls()`` has none. Raises what the store raises."""
        calls = getattr(self._backend, "calls", None)
        if not callable(calls):
            return []
        return [str(c) for c in calls()]

    def _input(
        self,
        request: str,
        tool: str,
        text: str,
        ok: bool,
        prunable: bool,
        report: bool,
        scorer: Any,
        model: Optional[str],
        arguments: Optional[str],
        pruned_calls: List[str],
        *,
        cleaned: bool = False,
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
            scorer=scorer_choice(scorer, fix),
            jev_model=fix(model),
            agent=fix(self.agent),
            tool=fix(tool),
            report=report,
            arguments=fix(arguments),
            pruned_calls=pruned_calls,
            work_budget=self.limits.work,
        )

    def _prepare(
        self,
        request: str,
        tool: Any,
        text: Any,
        ok: Any,
        prunable: Any,
        report: Optional[bool],
        scorer: Any,
        arguments: Arguments = None,
    ) -> Union[_Ready, PruneResult]:
        """Checks the arguments and lowers the input. Raises :class:`TypeError`
        for a non-``str`` text or tool (before any guest call)."""
        _require_str("text", text)
        _require_str("tool", tool)
        ok, prunable = bool(ok), bool(prunable)
        report = self.report if report is None else bool(report)
        chosen = self.scorer if scorer is None else self.pruner._resolve_scorer(scorer)
        model = self.jev_model if self.jev_model is not None else getattr(chosen, "jev_model", None)
        if model is not None:
            _require_str("jev_model", model)
        args = _arguments_text(arguments)
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
        try:
            calls = self._pruned_calls() if args is not None else []
        except Exception as err:  # any store failure: fail open
            return self._host_failure(tool, text, HostFailure("store", None, f"calls: {type(err).__name__}"))
        if invalid is not None:
            return self._ill_formed(request, tool, text, ok, prunable, chosen, model, args, calls, invalid)
        record = self._input(request, tool, text, ok, prunable, report, chosen, model, args, calls)
        return _Ready(tool, text, chosen, record, size or 0)

    def _ill_formed(
        self,
        request: str,
        tool: str,
        text: str,
        ok: bool,
        prunable: bool,
        scorer: Any,
        model: Optional[str],
        arguments: Optional[str],
        calls: List[str],
        invalid: HostFailure,
    ) -> PruneResult:
        """A prune input that cannot cross a WIT ``string`` (surrogates). When
        a cheap gate this host knows fails (pruning off, the call failed, the
        tool not prunable), the guest answers for a copy whose surrogates are
        U+FFFD, and the original ``str`` comes back: ``skipped``, no line
        (SPEC §12). Otherwise the guest is not called: outcome ``failed``,
        reason ``invalid_text`` / ``invalid_input``, the guest's failure line."""
        if self.enabled and ok and prunable:
            return self._host_failure(tool, text, invalid)
        record = self._input(request, tool, text, ok, prunable, False, scorer, model, arguments, calls, cleaned=True)
        job = self._start(_Ready(tool, text, scorer, record, len(clean(text).encode("utf-8"))))
        if isinstance(job, PruneResult):
            return job
        pruned = self._finish_raw(job, None)
        if isinstance(pruned, HostFailure):
            return self._host_failure(tool, text, pruned)
        if get(pruned, "outcome") != "skipped":  # never: a host-known gate failed
            return self._host_failure(tool, text, invalid)
        return self._result(text, pruned, 0)

    # --- the import form -----------------------------------------------------------------

    def _provisional_number(self) -> int:
        """The id number a result finishing now would get, without taking it:
        the store's ``peek_number()`` when it has one, else the last number
        this conversation stored + 1 (a guess: checked at commit)."""
        peek = getattr(self._backend, "peek_number", None)
        if callable(peek):
            try:
                return int(peek())
            except Exception:  # noqa: BLE001 - only a guess; the commit asks next_number()
                pass
        with self._lock:
            return self._count + 1

    def _prune_import(self, ready: _Ready, cancel: CancelToken) -> PruneResult:
        """One ``pruner.prune`` call on an instance of its own, the scorer
        answering the import on this thread, then the commit (:meth:`_commit`).
        A Ctrl-C while the scorer ran is raised once the ``cancelled`` result
        is committed (its line written)."""
        asker = None if internal(ready.scorer) else _ImportScorer(ready.scorer, cancel, self._deadline)
        result = self._prune_import_with(ready, asker)
        if asker is not None and asker.interrupt is not None:
            raise asker.interrupt
        return result

    def _prune_import_with(self, ready: _Ready, asker: Optional[_ImportScorer]) -> PruneResult:
        limits = self._call_limits(ready.text_bytes)
        answer: _engine.Responder = _never_asked if asker is None else asker
        provisional = min(max(self._provisional_number(), 1), 0xFFFF_FFFF)
        try:
            instance = self._take(limits)
        except Trapped as err:
            return self._host_failure(ready.tool, ready.text, HostFailure("guest_trap", err.limit, err.message))
        try:
            with _engine.scoring(answer):
                pruned = instance.call(limits, "prune", ready.record, provisional)
        except Trapped as err:

            def replay(i: Instance, l: CallLimits) -> Any:
                with _engine.scoring(_never_asked if asker is None else asker.replay):
                    return i.call(l, "prune", ready.record, provisional)

            calls = 0 if asker is None else asker.calls
            return self._host_failure(ready.tool, ready.text, self._explained(err, limits, replay), calls)
        calls = 0 if asker is None else asker.calls
        committed = self._commit(instance, limits, ready, pruned, provisional, None if asker is None else asker.response)
        if isinstance(committed, HostFailure):
            return self._host_failure(ready.tool, ready.text, committed, calls)
        self._give_back(instance)
        return self._result(ready.text, committed, calls)

    def _commit(self, instance: Instance, limits: CallLimits, ready: _Ready, pruned: Any, provisional: int, response: Any) -> Any:
        """Stores an ``ok`` result under the next id and writes the guest's
        line. When another result took ``provisional`` while this one was
        scored, the result is finished again through a ``prune-job`` with
        the captured ``response`` and the id it gets now (the guest is
        deterministic: the same decisions; no second scorer call). Returns
        the ``pruned`` record or a :class:`HostFailure`."""
        with self._lock:
            if get(pruned, "record") is not None:
                try:
                    number = int(self._backend.next_number())
                    if not 1 <= number <= 0xFFFF_FFFF:
                        raise ValueError("the store's id number is out of range")
                except Exception as err:  # any store failure: fail open
                    return HostFailure("store", None, f"next_number: {type(err).__name__}")
                if number != provisional:
                    try:
                        handle = instance.call(limits, "[constructor]prune-job", ready.record)
                        pruned = instance.call(limits, "[method]prune-job.finish", handle, response, number)
                        instance.drop(limits, handle)
                    except Trapped as err:
                        return HostFailure("guest_trap", err.limit, err.message)
                stored = get(pruned, "record")
                if stored is not None:
                    try:
                        self._backend.put(_convert.lift_stored(stored))
                    except Exception as err:  # any store failure: fail open
                        return HostFailure("store", None, f"put: {type(err).__name__}")
                    self._count = number
            line = get(pruned, "log-line")
            if line is not None:
                write_line(self.log, line)
        return pruned

    # --- the jobs form -------------------------------------------------------------------

    def _start(self, ready: _Ready) -> Union[_Job, PruneResult]:
        """``prune-job.new`` and its ``scoring-request``."""
        limits = self._call_limits(ready.text_bytes)
        record = ready.record

        def replay(i: Instance, l: CallLimits) -> Any:
            return i.call(l, "[method]prune-job.scoring-request", i.call(l, "[constructor]prune-job", record))

        with self._lock:
            try:
                instance = self._live(limits)
                handle = instance.call(limits, "[constructor]prune-job", record)
                request = instance.call(limits, "[method]prune-job.scoring-request", handle)
                return _Job(ready.tool, ready.text, ready.scorer, record, limits, self._generation, handle, request)
            except Trapped as err:
                failure = self._trapped(err, limits, replay)
        return self._host_failure(ready.tool, ready.text, failure)

    def _deadline(self, request: ScoringRequest) -> int:
        ms = request.policy.deadline_ms
        if self.deadline_cap_ms is not None:
            ms = min(ms, self.deadline_cap_ms)
        return ms

    def _score_sync(self, job: _Job, cancel: CancelToken) -> Optional[Scored]:
        if job.request is None:
            return None
        request = _convert.lift_request(job.request)
        return run_sync(job.scorer, request, cancel, self._deadline(request))

    async def _score_async(self, job: _Job, cancel: CancelToken) -> Optional[Scored]:
        if job.request is None:
            return None
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
                write_line(self.log, line)
        return pruned

    def _finish(self, job: _Job, scored: Optional[Scored]) -> PruneResult:
        """Finishes a job with what its scorer answered (None: no request was due)."""
        calls = 0 if job.request is None or scored is None else 1
        pruned = self._finish_raw(job, scored)
        if isinstance(pruned, HostFailure):
            return self._host_failure(job.tool, job.text, pruned, calls)
        return self._result(job.text, pruned, calls)

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

    def _result(self, text: str, pruned: Any, scorer_calls: int) -> PruneResult:
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
            scorer_calls=scorer_calls,
            _pruned=pruned,
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
                    found = None if held is None else _convert.lower_stored(held)
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
        write_line(self.log, result.log_line)
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
        write_line(self.log, line)
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
        arguments: Arguments = None,
    ) -> PruneResult:
        """Prunes one tool result, blocking while it is scored. Stores an
        ``ok`` result and writes the guest's log line. Fails open: on any
        guest failure the input text comes back, outcome ``failed``.

        ``ok``: the tool call succeeded (error texts are never pruned).
        ``prunable``: the tool was declared prunable (default not; see
        :meth:`Pruner.is_prunable`). ``report``: fill ``paragraphs``
        (default: the conversation's). ``scorer``: this result's scorer
        (default: the conversation's). ``arguments``: the tool call's
        arguments (the JSON text the door received, or a mapping or list
        of JSON values) for the repeat gate (SPEC §2): the same tool called
        again with the same arguments after its result was pruned passes
        unpruned (outcome ``skipped``, gate ``repeated``, with a log line);
        None, or anything that is not JSON (see ``_arguments_text``): no
        repeat is detected. Never sent, logged or stored (only a digest of
        them).

        By the conversation's ``form``: ``import`` (one ``pruner.prune``
        call; the scorer runs on this thread inside the guest's
        ``scorer.score`` import) or ``jobs``. Safe from several threads at
        once. Raises :class:`TypeError` when ``text`` or ``tool`` is not a
        ``str``.
        """
        conv = self.conversation
        ready = conv._prepare(self.request, tool, text, ok, prunable, report, scorer, arguments)
        if isinstance(ready, PruneResult):
            return ready
        if conv.form == "import":
            return conv._prune_import(ready, self.cancel_token)
        job = conv._start(ready)
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
        arguments: Arguments = None,
    ) -> PruneResult:
        """:meth:`on_tool_result` without blocking the event loop, always
        through jobs (whatever the conversation's ``form``: a guest call
        must not wait for a scorer on the loop): the guest's steps run in a
        worker thread (wasmtime releases the GIL while wasm runs) and the
        scorer is awaited on the loop (its ``score_async``, else its
        ``score`` in a thread). Several results may be pruned concurrently
        (``asyncio.gather``). Cancelling the awaiting task finishes the job
        as ``cancelled`` (its log line is written) and re-raises
        :class:`asyncio.CancelledError`."""
        import asyncio

        conv = self.conversation
        _require_str("text", text)
        _require_str("tool", tool)

        def begin() -> Union[_Job, PruneResult]:
            ready = conv._prepare(self.request, tool, text, ok, prunable, report, scorer, arguments)
            return ready if isinstance(ready, PruneResult) else conv._start(ready)

        starting = asyncio.ensure_future(asyncio.to_thread(begin))
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
