"""Scorers: what answers the guest's scoring request (SPEC §5, §14), and how
the host runs them.

A scorer is any object with a ``name`` (``str``, the log's ``scorer=``) and
``score(request)`` and/or ``async score_async(request)``, where ``request``
is a :class:`~toolprune.types.ScoringRequest` (``basis``, ``batches`` each
with ``paragraphs``, ``chunks`` and ``jev_body``, ``policy``). It answers one
:class:`~toolprune.types.BatchAnswer` per batch, in order —
:class:`~toolprune.types.Scores`, :class:`~toolprune.types.JevResponse` or
:class:`~toolprune.types.Failed` — as a list, or as a
:class:`~toolprune.types.ScoringResponse` (which may also carry the
scorer's own ``elapsed_ms`` or a stop). Either method may take a ``cancel``
keyword: a :class:`CancelToken` set when the turn is cancelled or the
deadline passes. An optional ``jev_model`` attribute names the model the
guest writes in Jev bodies.

The host, not the scorer, enforces the policy's deadline and cancellation
(:func:`run_sync`, :func:`run_async`), for every scorer: past the deadline
the result is ``timeout`` (finished batches discarded), a cancelled turn is
``cancelled`` (cancellation wins), and a scorer that raises or answers
something that is not an answer is a scorer failure: every batch
``failed(network)``, and the guest writes the ``failed`` line.

Built in: ``"offline"`` (the guest's own BM25 scorer: no request at all),
``"stub"`` (word overlap scored inside the guest, ``scorer-choice.stub``:
tests and demos, not a relevance model; no request either),
:class:`ScriptedScorer` (fixed answers, for tests) and
:class:`toolprune.jev.JevScorer` (``"jev"``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Protocol, Union, runtime_checkable

if TYPE_CHECKING:  # imported where used: asyncio alone costs ~0.1 s of a CLI's cold start
    import asyncio
    import concurrent.futures

from ._convert import lower_answer, u32
from .types import BatchAnswer, Failed, JevResponse, Scores, ScoringRequest, ScoringResponse

OFFLINE = "offline"
"""The guest's offline lexical scorer (``scorer-choice::offline``)."""
STUB = "stub"
"""The guest's word-overlap stub (``scorer-choice::stub``): scored inside the guest, no request."""


class CancelToken:
    """Set once, from any thread: stop scoring (SPEC §11).

    Scorers that wait check :attr:`cancelled`, block on :meth:`wait`, or
    register a callback with :meth:`on_cancel`.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: List[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until cancelled or ``timeout`` seconds passed; True if cancelled."""
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Calls ``callback`` once when cancelled (at once if already).
        Returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)

                def remove() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)

                return remove
        callback()
        return lambda: None

    def future(self, loop: "asyncio.AbstractEventLoop") -> "asyncio.Future[None]":
        """An asyncio future of ``loop`` that completes when cancelled."""
        fut: "asyncio.Future[None]" = loop.create_future()

        def wake() -> None:
            def settle() -> None:
                if not fut.done():
                    fut.set_result(None)

            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop is closed
                pass

        remove = self.on_cancel(wake)
        fut.add_done_callback(lambda _f: remove())
        return fut


@runtime_checkable
class Scorer(Protocol):
    """A blocking scorer (see the module docstring)."""

    @property
    def name(self) -> str: ...

    def score(self, request: ScoringRequest) -> Union[ScoringResponse, List[BatchAnswer]]: ...


@runtime_checkable
class AsyncScorer(Protocol):
    """A scorer for the asyncio flavour: ``score_async`` must not block the loop."""

    @property
    def name(self) -> str: ...

    async def score_async(self, request: ScoringRequest) -> Union[ScoringResponse, List[BatchAnswer]]: ...


def check_scorer(scorer: Any) -> Any:
    """``scorer`` if it is ``"offline"``, ``"stub"`` or a scorer object;
    :class:`ValueError` for another name, :class:`TypeError` for another object."""
    if isinstance(scorer, str):
        if scorer in (OFFLINE, STUB):
            return scorer
        raise ValueError(f"unknown scorer {scorer!r}: use 'offline', 'stub', 'jev' or a scorer object")
    name = getattr(scorer, "name", None)
    if not isinstance(name, str) or not (
        callable(getattr(scorer, "score", None)) or callable(getattr(scorer, "score_async", None))
    ):
        raise TypeError("a scorer needs a `name` (str) and a `score(request)` or `score_async(request)` method")
    return scorer


def scorer_name(scorer: Any) -> str:
    """The scorer's label (the log's ``scorer=``): ``offline``, ``stub`` or the object's ``name``."""
    if scorer in (OFFLINE, STUB):
        return scorer  # type: ignore[no-any-return]
    return scorer.name  # type: ignore[no-any-return]


def internal(scorer: Any) -> bool:
    """The guest scores itself (offline, stub): no request, no host call."""
    return scorer in (OFFLINE, STUB)


def scorer_choice(scorer: Any, fix: Callable[[str], str] = lambda s: s) -> Any:
    """The WIT ``scorer-choice`` (a tagged variant in wasmtime-py):
    ``offline``, ``stub`` or ``host(name)`` (the name through ``fix``)."""
    from wasmtime.component import Variant

    if scorer == OFFLINE:
        return Variant("offline")
    if scorer == STUB:
        return Variant("stub")
    return Variant("host", fix(scorer.name))


def _takes_cancel(fn: Any) -> bool:
    import inspect

    try:
        return "cancel" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


# --- running a scorer under the host's deadline -------------------------------------


@dataclass(frozen=True)
class Scored:
    """What the host hands ``finish``: the WIT ``answers`` value (a list of
    lowered batch answers, or a stop name) and the elapsed ms."""

    answers: Any
    elapsed_ms: int


def elapsed_ms(since: float) -> int:
    return u32(int((time.monotonic() - since) * 1000))


def network_failure(request: ScoringRequest, elapsed: int) -> Scored:
    """A scorer failure: every batch ``failed(network)``."""
    return Scored([None] * len(request.batches), elapsed)


def convert(request: ScoringRequest, value: Any, elapsed: int) -> Scored:
    """A scorer's return value as the WIT answer; anything that is not one
    (another type, a malformed answer, not one answer per batch) is a scorer
    failure."""
    try:
        if isinstance(value, ScoringResponse):
            own = elapsed if value.elapsed_ms is None else u32(value.elapsed_ms)
            if value.stop is not None:
                if value.stop not in ("timeout", "cancelled"):
                    raise ValueError(f"not a scoring stop: {value.stop!r}")
                return Scored(value.stop, own)
            if value.answers is None:
                raise ValueError("a ScoringResponse needs answers or a stop")
            answers, elapsed = value.answers, own
        elif isinstance(value, (list, tuple)):
            answers = list(value)
        else:
            raise TypeError(f"a scorer must return a list of answers or a ScoringResponse, not {type(value).__name__}")
        if len(answers) != len(request.batches):
            raise ValueError(f"{len(answers)} answers for {len(request.batches)} batches")
        return Scored([lower_answer(a) for a in answers], elapsed)
    except (TypeError, ValueError):
        return network_failure(request, elapsed)


def _start_daemon(fn: Callable[[], Any]) -> "concurrent.futures.Future[Any]":
    """Runs ``fn`` in a daemon thread (a hung scorer never holds the process
    or an event loop's executor open). Its outcome as a future."""
    import concurrent.futures

    fut: "concurrent.futures.Future[Any]" = concurrent.futures.Future()

    def work() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn())
        except BaseException as err:  # noqa: BLE001 - reported to the waiting side
            fut.set_exception(err)

    threading.Thread(target=work, name="toolprune-scorer", daemon=True).start()
    return fut


def _blocking_call(scorer: Any, request: ScoringRequest, stop: CancelToken) -> Callable[[], Any]:
    score = scorer.score
    if _takes_cancel(score):
        return lambda: score(request, cancel=stop)
    return lambda: score(request)


def run_sync(scorer: Any, request: ScoringRequest, cancel: CancelToken, deadline_ms: int) -> Scored:
    """Runs a scorer object from a blocking caller: the scorer runs in a
    daemon thread, the caller waits for its answer, the deadline or the
    cancellation, whichever comes first. A scorer with only ``score_async``
    runs on a private event loop in that thread."""
    start = time.monotonic()
    if cancel.cancelled:
        return Scored("cancelled", 0)
    stop = CancelToken()  # told to the scorer at the deadline or on cancellation
    if callable(getattr(scorer, "score", None)):
        call = _blocking_call(scorer, request, stop)
    else:
        import asyncio

        call = lambda: asyncio.run(_async_call(scorer, request, stop))  # noqa: E731
    wake = threading.Event()
    unlink = cancel.on_cancel(wake.set)
    fut = _start_daemon(call)
    fut.add_done_callback(lambda _f: wake.set())
    try:
        wake.wait(max(deadline_ms / 1000.0 - (time.monotonic() - start), 0.0))
    except BaseException:  # Ctrl-C (KeyboardInterrupt) while waiting: the scorer stops too
        stop.cancel()
        raise
    finally:
        unlink()
    elapsed = elapsed_ms(start)
    if cancel.cancelled:  # cancellation wins, also over an answer in the same instant
        stop.cancel()
        return Scored("cancelled", elapsed)
    if not fut.done():
        stop.cancel()
        return Scored("timeout", elapsed)
    if fut.exception() is not None:
        return network_failure(request, elapsed)
    return convert(request, fut.result(), elapsed)


async def _async_call(scorer: Any, request: ScoringRequest, stop: CancelToken) -> Any:
    score_async = scorer.score_async
    if _takes_cancel(score_async):
        return await score_async(request, cancel=stop)
    return await score_async(request)


async def run_async(scorer: Any, request: ScoringRequest, cancel: CancelToken, deadline_ms: int) -> Scored:
    """Runs a scorer object on the event loop: ``score_async`` when it has
    one, else ``score`` in a daemon thread. Waits for the answer, the
    deadline or the cancellation. Cancelling the awaiting task stops the
    scorer and re-raises."""
    import asyncio

    start = time.monotonic()
    if cancel.cancelled:
        return Scored("cancelled", 0)
    loop = asyncio.get_running_loop()
    stop = CancelToken()
    if callable(getattr(scorer, "score_async", None)):
        task: "asyncio.Future[Any]" = asyncio.ensure_future(_async_call(scorer, request, stop))
    else:
        task = asyncio.wrap_future(_start_daemon(_blocking_call(scorer, request, stop)), loop=loop)
    cancelled = cancel.future(loop)
    try:
        await asyncio.wait(
            {task, cancelled},
            timeout=max(deadline_ms / 1000.0 - (time.monotonic() - start), 0.0),
            return_when=asyncio.FIRST_COMPLETED,
        )
    except asyncio.CancelledError:
        stop.cancel()
        task.cancel()
        raise
    finally:
        if not cancelled.done():
            cancelled.cancel()
    elapsed = elapsed_ms(start)
    if cancel.cancelled:
        stop.cancel()
        task.cancel()
        return Scored("cancelled", elapsed)
    if not task.done():
        stop.cancel()
        task.cancel()
        return Scored("timeout", elapsed)
    if task.cancelled() or task.exception() is not None:
        return network_failure(request, elapsed)
    return convert(request, task.result(), elapsed)


# --- a scorer for tests ----------------------------------------------------------------


class ScriptedScorer:
    """A scripted scorer for tests: fixed answers, recorded requests. Chain
    the setters; batches are counted from 0 in the order of
    ``request.batches``. ``name`` is ``"scripted"``."""

    name = "scripted"

    def __init__(self) -> None:
        self._default: Optional[float] = 1.0
        self._scores: Dict[int, Optional[float]] = {}
        self._batches: Dict[int, BatchAnswer] = {}
        self._delay = 0.0
        self._stop: Optional[str] = None
        self._elapsed_ms: Optional[int] = None
        self._raise: Optional[BaseException] = None
        self._lock = threading.Lock()
        self._seen: List[ScoringRequest] = []

    def default_score(self, score: Optional[float]) -> "ScriptedScorer":
        """Score of every paragraph not listed; ``None`` answers "not scored"."""
        self._default = score
        return self

    def score_paragraph(self, paragraph: int, score: Optional[float]) -> "ScriptedScorer":
        """Paragraph ``paragraph`` scores ``score`` (values outside [0, 1] are passed on; None: not scored)."""
        self._scores[paragraph] = score
        return self

    def scores(self, paragraphs: "list[int] | range", score: Optional[float]) -> "ScriptedScorer":
        for p in paragraphs:
            self._scores[p] = score
        return self

    def fail_batch(self, batch: int, failure: Failed) -> "ScriptedScorer":
        self._batches[batch] = failure
        return self

    def jev_response(self, batch: int, body: str) -> "ScriptedScorer":
        self._batches[batch] = JevResponse(body)
        return self

    def delay(self, seconds: float) -> "ScriptedScorer":
        """Wait this long before answering (``time.sleep`` / ``asyncio.sleep``)."""
        self._delay = seconds
        return self

    def stop(self, stop: str) -> "ScriptedScorer":
        """Answer with this stop (``timeout`` / ``cancelled``) instead of batch answers."""
        self._stop = stop
        return self

    def elapsed_ms(self, ms: Optional[int]) -> "ScriptedScorer":
        """Report this ``elapsed_ms`` (None: let the host measure)."""
        self._elapsed_ms = ms
        return self

    def raises(self, error: BaseException) -> "ScriptedScorer":
        """Raise ``error`` instead of answering."""
        self._raise = error
        return self

    @property
    def requests(self) -> List[ScoringRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._seen)

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self._seen)

    def answer(self, request: ScoringRequest) -> ScoringResponse:
        """The scripted answer to ``request``, without waiting or recording."""
        if self._raise is not None:
            raise self._raise
        if self._stop is not None:
            return ScoringResponse.stopped(self._stop, self._elapsed_ms)
        answers: List[BatchAnswer] = []
        for i, batch in enumerate(request.batches):
            scripted = self._batches.get(i)
            if scripted is not None:
                answers.append(scripted)
            else:
                answers.append(Scores([self._scores.get(p, self._default) for p in batch.paragraphs]))
        return ScoringResponse.answered(answers, self._elapsed_ms)

    def score(self, request: ScoringRequest) -> ScoringResponse:
        with self._lock:
            self._seen.append(request)
        if self._delay > 0:
            time.sleep(self._delay)
        return self.answer(request)

    async def score_async(self, request: ScoringRequest) -> ScoringResponse:
        """Like :meth:`score`, but the delay is an ``asyncio.sleep``."""
        import asyncio

        with self._lock:
            self._seen.append(request)
        if self._delay > 0:
            await asyncio.sleep(self._delay)
        return self.answer(request)


__all__ = [
    "AsyncScorer",
    "CancelToken",
    "OFFLINE",
    "STUB",
    "Scorer",
    "ScriptedScorer",
]
