"""The wasmtime side: the compiled component, one live instance, and the
conversions between wasmtime-py's component values and :mod:`toolprune.types`.

wasmtime-py (50.x) maps WIT values as follows (pinned by
``tests/test_wit_mapping.py``):

- ``record`` → :class:`wasmtime.component.Record` with the WIT field names as
  attributes (``getattr(r, "raw-chars")``); lowering reads the same attributes;
- ``enum`` → ``str`` (the WIT case name, kebab-case);
- ``list<T>`` → ``list``, ``tuple<…>`` → ``tuple``, integers → ``int``,
  ``f64`` → ``float`` (an ``int`` is refused);
- ``option<T>`` → ``None`` or the value; ``result<T, E>`` and ``variant`` are
  **untagged** when the Python classes of their cases do not overlap, else
  :class:`wasmtime.component.Variant`. In this WIT every one is untagged:
  ``scorer-choice`` is ``str`` (host) or ``None`` (offline); ``failure`` is
  ``int`` (http) or ``None`` (network); ``batch-answer`` is ``list`` (scores),
  ``str`` (jev-response) or a ``failure``; ``scoring-response.answers`` is a
  ``list`` (ok) or ``str`` (the stop);
- ``resource prune-job`` → :class:`wasmtime.component.ResourceAny` from the
  ``[constructor]prune-job`` export, passed to ``[method]prune-job.*``, freed
  with ``ResourceAny.drop(store)``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

from wasmtime import Config, Engine, Store, WasmtimeError
from wasmtime.component import Component, ExportIndex, Linker, Record, ResourceAny

from .types import (
    Batch,
    BatchAnswer,
    BatchFailure,
    Counts,
    Failed,
    GuestFailure,
    JevResponse,
    Lang,
    Limits,
    OmittedResult,
    ParagraphInfo,
    ParagraphReport,
    Report,
    Scores,
    ScoringRequest,
    ScoringResponse,
    StoredResult,
    ToolSpec,
    TransportPolicy,
)

INTERFACE = "toolprune:pruner/pruner@0.1.0"
SCORER_IMPORT = "toolprune:pruner/scorer@0.1.0"
EXPORTS = (
    "prune",
    "[constructor]prune-job",
    "[method]prune-job.scoring-request",
    "[method]prune-job.finish",
    "omitted",
    "omitted-tool",
    "paragraphs",
)
JUDGE_INTERFACE = "toolprune:pruner/judge@0.1.0"
JUDGE_EXPORTS = (
    "route",
    "[static]judge-job.load",
    "[method]judge-job.scoring-request",
    "[method]judge-job.finish",
)
ENV_WASM = "TOOLPRUNE_WASM"


def find_component(path: Union[str, os.PathLike[str], None] = None) -> Path:
    """Where the component is: ``path``, else ``$TOOLPRUNE_WASM``, else the
    copy inside the installed package, else ``dist/toolprune.wasm`` of a
    source checkout this file lives in (editable installs).

    Raises :class:`FileNotFoundError` naming every place that was tried.
    """
    tried: List[str] = []
    if path is not None:
        return Path(path)
    env = os.environ.get(ENV_WASM)
    if env:
        return Path(env)
    tried.append(f"${ENV_WASM} (unset)")
    here = Path(__file__).resolve().parent
    packaged = here / "toolprune.wasm"
    if packaged.is_file():
        return packaged
    tried.append(str(packaged))
    for parent in here.parents:
        candidate = parent / "dist" / "toolprune.wasm"
        if (parent / "wit" / "pruner.wit").is_file() and candidate.is_file():
            return candidate
    tried.append("dist/toolprune.wasm of a source checkout")
    raise FileNotFoundError(
        "toolprune.wasm not found (tried "
        + ", ".join(tried)
        + "); build it with `cargo run -p toolprune-artifacts --bin toolprune-dist` "
        "and pass its path, or set TOOLPRUNE_WASM"
    )


# --- the scorer import -----------------------------------------------------------

ScoreCall = Callable[[ScoringRequest], ScoringResponse]


class _CallContext(threading.local):
    """What the ``scorer.score`` import does on this thread, during one export call."""

    score: Optional[ScoreCall] = None
    error: Optional[BaseException] = None


_context = _CallContext()


def _score_import(_store: Any, request: Record) -> Record:
    """The host function behind ``scorer.score``. The guest calls it on the
    thread that called the export, so a thread-local tells which turn's
    scorer answers. Any exception becomes a trap (the turn fails open)."""
    call = _context.score
    try:
        if call is None:
            # An instance that must never score (inspection, prune-job): stop.
            return lower_response(ScoringResponse.stopped("cancelled", 0))
        return lower_response(call(lift_request(request)))
    except BaseException as err:  # noqa: BLE001 - a scorer must never unwind into wasm
        _context.error = err
        raise WasmtimeError("the scorer raised; the call fails open") from None


# --- conversions -------------------------------------------------------------------


def _record(**fields: Any) -> Record:
    """A :class:`Record` whose attributes are the WIT names (``_`` → ``-``)."""
    rec = Record()
    for name, value in fields.items():
        setattr(rec, name.replace("_", "-"), value)
    return rec


def _get(rec: Any, name: str) -> Any:
    return getattr(rec, name)


def _snake(name: str) -> Any:
    return name.replace("-", "_")


def lift_request(rec: Any) -> ScoringRequest:
    policy = _get(rec, "policy")
    return ScoringRequest(
        basis=_get(rec, "basis"),
        batches=[
            Batch(
                paragraphs=list(_get(b, "paragraphs")),
                chunks=list(_get(b, "chunks")),
                jev_body=_get(b, "jev-body"),
            )
            for b in _get(rec, "batches")
        ],
        policy=TransportPolicy(
            max_in_flight=_get(policy, "max-in-flight"),
            deadline_ms=_get(policy, "deadline-ms"),
            max_retries=_get(policy, "max-retries"),
            retry_on=[(int(lo), int(hi)) for lo, hi in _get(policy, "retry-on")],
            retry_backoff_ms=_get(policy, "retry-backoff-ms"),
        ),
    )


def _u32(value: int) -> int:
    return max(0, min(int(value), 0xFFFF_FFFF))


def _lower_answer(answer: BatchAnswer) -> Any:
    if isinstance(answer, Scores):
        return [None if v is None else float(v) for v in answer.values]
    if isinstance(answer, JevResponse):
        if not isinstance(answer.body, str):
            raise TypeError("JevResponse.body must be a str")
        return answer.body
    if isinstance(answer, Failed):
        if answer.status is None:
            return None
        status = int(answer.status)
        if not 0 <= status <= 0xFFFF:
            raise ValueError(f"HTTP status out of range: {status}")
        return status
    raise TypeError(f"not a batch answer: {type(answer).__name__}")


def lower_response(response: ScoringResponse) -> Record:
    if not isinstance(response, ScoringResponse):
        raise TypeError(f"a scorer must return a ScoringResponse, not {type(response).__name__}")
    if response.stop is not None:
        if response.stop not in ("timeout", "cancelled"):
            raise ValueError(f"not a scoring stop: {response.stop!r}")
        answers: Any = response.stop
    else:
        answers = [_lower_answer(a) for a in (response.answers or [])]
    return _record(answers=answers, elapsed_ms=_u32(response.elapsed_ms))


def lower_input(
    *,
    request: str,
    text: str,
    enabled: bool,
    succeeded: bool,
    prunable: bool,
    threshold: float,
    lang: Lang,
    sequence: int,
    scorer: Optional[str],
    jev_model: Optional[str],
    agent: str,
    tool: str,
) -> Record:
    """A ``prune-input``; ``scorer=None`` is the guest's offline scorer."""
    return _record(
        request=request,
        text=text,
        enabled=bool(enabled),
        succeeded=bool(succeeded),
        prunable=bool(prunable),
        threshold=float(threshold),
        lang=lang,
        sequence=_u32(sequence),
        scorer=scorer,
        jev_model=jev_model,
        agent=agent,
        tool=tool,
    )


def lower_stored(stored: List[StoredResult]) -> List[Record]:
    return [_record(id=s.id, text=s.text, dropped=list(s.dropped)) for s in stored]


def lift_stored(rec: Any) -> StoredResult:
    return StoredResult(id=_get(rec, "id"), text=_get(rec, "text"), dropped=list(_get(rec, "dropped")))


def lift_report(rec: Any) -> Report:
    counts = _get(rec, "counts")
    record = _get(rec, "record")
    shape = _get(rec, "shape")
    return Report(
        body=_get(rec, "body"),
        raw=_get(rec, "raw"),
        outcome=_snake(_get(rec, "outcome")),
        shape=None if shape is None else _snake(shape),
        counts=Counts(
            raw_chars=_get(counts, "raw-chars"),
            kept_chars=_get(counts, "kept-chars"),
            paragraphs=_get(counts, "paragraphs"),
            dropped=_get(counts, "dropped"),
            calls=_get(counts, "calls"),
            jev_tokens=_get(counts, "jev-tokens"),
            ms=_get(counts, "ms"),
        ),
        ratio=_get(rec, "ratio"),
        threshold=_get(rec, "threshold"),
        log_line=_get(rec, "log-line"),
        record=None if record is None else lift_stored(record),
        paragraphs=[
            ParagraphReport(
                index=_get(p, "index"),
                chars=_get(p, "chars"),
                score=_get(p, "score"),
                fate=_snake(_get(p, "fate")),
            )
            for p in _get(rec, "paragraphs")
        ],
        failures=[
            BatchFailure(batch=_get(f, "batch"), status=_get(f, "status"), klass=_get(f, "class"))
            for f in _get(rec, "failures")
        ],
    )


def lift_omitted(rec: Any) -> OmittedResult:
    return OmittedResult(
        outcome=_snake(_get(rec, "outcome")),
        text=_get(rec, "text"),
        log_line=_get(rec, "log-line"),
    )


def lift_tool_spec(rec: Any) -> ToolSpec:
    return ToolSpec(
        name=_get(rec, "name"),
        description=_get(rec, "description"),
        input_schema=_get(rec, "input-schema"),
    )


def lift_paragraph_info(rec: Any) -> ParagraphInfo:
    return ParagraphInfo(
        index=_get(rec, "index"),
        byte_start=_get(rec, "byte-start"),
        byte_end=_get(rec, "byte-end"),
        char_start=_get(rec, "char-start"),
        char_end=_get(rec, "char-end"),
        kind=_get(rec, "kind"),
    )


# --- the compiled component and its instances -------------------------------------------


class Compiled:
    """The component compiled once (fuel metering on), and a linker that
    provides the ``scorer`` import. Shared by every turn of a process."""

    def __init__(self, path: Path) -> None:
        config = Config()
        config.consume_fuel = True
        self.path = path
        self.engine = Engine(config)
        self.component = Component.from_file(self.engine, str(path))
        self.linker = Linker(self.engine)
        with self.linker.root() as root:
            with root.add_instance(SCORER_IMPORT) as scorer:
                scorer.add_func("score", _score_import)
        iface = self.component.get_export_index(INTERFACE)
        if iface is None:
            raise ValueError(f"{path}: not a toolprune component (no export {INTERFACE})")
        self.exports: Dict[str, ExportIndex] = {}
        for name in EXPORTS:
            index = self.component.get_export_index(name, iface)
            if index is None:
                raise ValueError(f"{path}: the component does not export {INTERFACE}#{name}")
            self.exports[name] = index
        judge = self.component.get_export_index(JUDGE_INTERFACE)
        if judge is None:
            raise ValueError(f"{path}: the component does not export {JUDGE_INTERFACE}; rebuild it")
        for name in JUDGE_EXPORTS:
            index = self.component.get_export_index(name, judge)
            if index is None:
                raise ValueError(f"{path}: the component does not export {JUDGE_INTERFACE}#{name}")
            self.exports[name] = index
        self._check_contract()

    def _check_contract(self) -> None:
        """Fail at load, not at the first call, on a component built from
        another WIT (a stale ``dist/``)."""
        probe = Instance(self, Limits())
        params = probe.funcs["prune"].type(probe.store).params
        fields = [name for name, _ in params[0][1].fields]  # type: ignore[attr-defined]
        expected = [
            "request", "text", "enabled", "succeeded", "prunable", "threshold", "lang",
            "sequence", "scorer", "jev-model", "agent", "tool",
        ]
        if fields != expected:
            raise ValueError(
                f"{self.path}: prune-input has fields {fields}, this host expects {expected}; "
                "rebuild the component (`cargo run -p toolprune-artifacts --bin toolprune-dist`)"
            )


_compiled: Dict[str, Compiled] = {}
_compiled_lock = threading.Lock()


def compiled(path: Path) -> Compiled:
    """The process-wide compile of the component at ``path``."""
    key = str(path.resolve())
    with _compiled_lock:
        found = _compiled.get(key)
        if found is None:
            found = _compiled[key] = Compiled(path)
        return found


class Instance:
    """One live instance in its own store. After any error it must be dropped."""

    def __init__(self, compiled: Compiled, limits: Limits) -> None:
        self.limits = limits
        self.store = Store(compiled.engine)
        self.store.set_limits(memory_size=limits.memory_bytes)
        self.store.set_fuel(limits.fuel)
        self.instance = compiled.linker.instantiate(self.store, compiled.component)
        funcs = {}
        for name, index in compiled.exports.items():
            func = self.instance.get_func(self.store, index)
            if func is None:
                raise ValueError(f"export {name} is not a function")
            funcs[name] = func
        self.funcs = funcs

    def call(self, name: str, *args: Any) -> Any:
        """One export call with a full fuel budget."""
        self.store.set_fuel(self.limits.fuel)
        return self.funcs[name](self.store, *args)

    def drop(self, handle: ResourceAny) -> None:
        self.store.set_fuel(self.limits.fuel)
        handle.drop(self.store)


@dataclass
class CallError:
    """An export call that gave no answer (see :class:`GuestFailure`)."""

    failure: GuestFailure
    fatal: Optional[BaseException] = None
    """A KeyboardInterrupt or SystemExit raised by the scorer: re-raised after failing open."""


def run_guarded(
    instance: Instance, score: Optional[ScoreCall], body: Callable[[Instance], Any]
) -> Union[Any, CallError]:
    """Runs ``body(instance)`` with ``score`` behind the import; an exception
    becomes a :class:`CallError` (the caller discards the instance)."""
    previous = _context.score
    _context.score = score
    _context.error = None
    try:
        return body(instance)
    except Exception as err:  # noqa: BLE001 - every wasmtime failure fails open
        scorer_error = _context.error
        if scorer_error is not None:
            fatal = scorer_error if not isinstance(scorer_error, Exception) else None
            message = f"{type(scorer_error).__name__}: {scorer_error}"
            return CallError(GuestFailure("scorer_error", message), fatal)
        return CallError(GuestFailure("guest_trap", f"{type(err).__name__}: {err}"))
    finally:
        _context.score = previous
        _context.error = None
