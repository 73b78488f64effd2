"""Scorers: what answers the guest's scoring request (SPEC §5, §14).

A scorer is any object with a ``name`` and ``score(request) -> ScoringResponse``
(:class:`Scorer`). It may also take a ``cancel`` keyword (a
:class:`CancelToken`, set when the turn is cancelled), and may offer
``async score_async(request[, cancel=])`` for the asyncio flavour
(:class:`AsyncScorer`); without it, ``score`` runs in a worker thread.

Here: :class:`OfflineScorer` (the guest's own BM25 scorer: no call at all),
:class:`StubScorer` (word overlap, for tests) and :class:`ScriptedScorer`
(fixed answers, for tests). The Jev transport is :class:`toolprune.jev.JevScorer`.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Callable, Dict, List, Optional, Protocol, Set, runtime_checkable

from .types import (
    BatchAnswer,
    Failed,
    JevResponse,
    Scores,
    ScoringRequest,
    ScoringResponse,
    Stop,
)


class CancelToken:
    """Set once, from any thread: the turn was cancelled (SPEC §11).

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

    def future(self, loop: asyncio.AbstractEventLoop) -> "asyncio.Future[None]":
        """An asyncio future of ``loop`` that completes when cancelled."""
        fut: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            def settle() -> None:
                if not fut.done():
                    fut.set_result(None)

            loop.call_soon_threadsafe(settle)

        remove = self.on_cancel(wake)
        fut.add_done_callback(lambda _f: remove())
        return fut


@runtime_checkable
class Scorer(Protocol):
    """Answers the guest's scoring requests: one call per tool result,
    carrying every batch. Measures ``elapsed_ms`` itself (the log's ``ms=``)."""

    @property
    def name(self) -> str: ...

    def score(self, request: ScoringRequest) -> ScoringResponse: ...


@runtime_checkable
class AsyncScorer(Protocol):
    """A scorer for the asyncio flavour: ``score_async`` must not block the loop."""

    @property
    def name(self) -> str: ...

    async def score_async(self, request: ScoringRequest) -> ScoringResponse: ...


def _elapsed_ms(since: float) -> int:
    return min(int((time.monotonic() - since) * 1000), 0xFFFF_FFFF)


class OfflineScorer:
    """The guest's offline lexical scorer (BM25 over the document's own
    paragraphs, compiled into the component): the guest never calls the
    ``scorer`` import, nothing leaves the machine, and every host gives the
    same bytes. ``calls=0``, ``jev_tokens=0`` in the log."""

    name = "offline"
    choice = "offline"
    """Tells the turn to pass ``scorer-choice::offline`` to the guest."""

    def score(self, request: ScoringRequest) -> ScoringResponse:
        """Never called for an offline choice; answers like a scorer that could
        not score, so a misuse fails open."""
        return ScoringResponse.answered([Failed.network() for _ in request.batches], 0)


# A maximal run of characters for which str.isalnum() holds: ``\w`` of a str
# pattern is exactly ``str.isalnum() or "_"`` (CPython's _PyUnicode_IsAlpha,
# IsDecimalDigit, IsDigit, IsNumeric), so ``[^\W_]`` is ``str.isalnum()``.
# Rust's char::is_alphanumeric is Alphabetic || Numeric; str.isalnum is the
# closest the standard library has (it misses combining marks).
_WORD = re.compile(r"[^\W_]+")


class StubScorer:
    """**A stub, not a relevance model.** Deterministic, offline: scores a
    paragraph by the words it shares with the basis (the Rust host's
    ``StubScorer``).

    Words are maximal runs of alphanumeric characters, lowercased, of at least
    4 characters. With ``B`` the basis's distinct words and ``share`` the part
    of ``B`` that occurs in the chunk, the score is ``min(1, 2 × share)``; a
    basis without such words leaves every paragraph unscored (kept).
    """

    name = "stub"

    @staticmethod
    def words(text: str) -> Set[str]:
        return {w.lower() for w in _WORD.findall(text) if len(w) >= 4}

    @classmethod
    def score_chunk(cls, basis: str, chunk: str) -> Optional[float]:
        """The stub's score of one chunk against a basis, in [0, 1], or None."""
        return cls._score_words(cls.words(basis), chunk)

    @classmethod
    def _score_words(cls, basis: Set[str], chunk: str) -> Optional[float]:
        if not basis:
            return None
        words = cls.words(chunk)
        shared = len(basis & words)
        return min(1.0, 2.0 * shared / len(basis))

    def score(self, request: ScoringRequest) -> ScoringResponse:
        start = time.monotonic()
        basis = self.words(request.basis)
        answers: List[BatchAnswer] = [
            Scores([self._score_words(basis, chunk) for chunk in batch.chunks])
            for batch in request.batches
        ]
        return ScoringResponse.answered(answers, _elapsed_ms(start))


class ScriptedScorer:
    """A scripted scorer for tests: fixed answers, recorded requests (the
    Rust host's ``ScriptedScorer``). Chain the setters; batches are counted
    from 0 in the order of ``request.batches``. ``name`` is ``"scripted"``."""

    name = "scripted"

    def __init__(self) -> None:
        self._default: Optional[float] = 1.0
        self._scores: Dict[int, Optional[float]] = {}
        self._batches: Dict[int, BatchAnswer] = {}
        self._delay = 0.0
        self._stop: Optional[Stop] = None
        self._elapsed_ms: Optional[int] = None
        self._lock = threading.Lock()
        self._seen: List[ScoringRequest] = []

    def default_score(self, score: Optional[float]) -> "ScriptedScorer":
        """Score of every paragraph not listed; ``None`` answers "not scored"."""
        self._default = score
        return self

    def score_paragraph(self, paragraph: int, score: float) -> "ScriptedScorer":
        """Paragraph ``paragraph`` scores ``score`` (values outside [0, 1] are passed on)."""
        self._scores[paragraph] = score
        return self

    def scores(self, paragraphs: "list[int] | range", score: float) -> "ScriptedScorer":
        for p in paragraphs:
            self._scores[p] = score
        return self

    def unscored(self, paragraph: int) -> "ScriptedScorer":
        self._scores[paragraph] = None
        return self

    def fail_batch(self, batch: int, failure: Failed) -> "ScriptedScorer":
        self._batches[batch] = failure
        return self

    def jev_response(self, batch: int, body: str) -> "ScriptedScorer":
        self._batches[batch] = JevResponse(body)
        return self

    def delay(self, seconds: float) -> "ScriptedScorer":
        """Sleep this long before answering (a real wait on the calling thread)."""
        self._delay = seconds
        return self

    def stop(self, stop: Stop) -> "ScriptedScorer":
        self._stop = stop
        return self

    def elapsed_ms(self, ms: int) -> "ScriptedScorer":
        """Report this ``elapsed_ms`` instead of the measured wall time."""
        self._elapsed_ms = ms
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

    def _answer(self, request: ScoringRequest, start: float) -> ScoringResponse:
        elapsed = self._elapsed_ms if self._elapsed_ms is not None else _elapsed_ms(start)
        if self._stop is not None:
            return ScoringResponse.stopped(self._stop, elapsed)
        answers: List[BatchAnswer] = []
        for i, batch in enumerate(request.batches):
            scripted = self._batches.get(i)
            if scripted is not None:
                answers.append(scripted)
            else:
                answers.append(Scores([self._scores.get(p, self._default) for p in batch.paragraphs]))
        return ScoringResponse.answered(answers, elapsed)

    def score(self, request: ScoringRequest) -> ScoringResponse:
        start = time.monotonic()
        with self._lock:
            self._seen.append(request)
        if self._delay > 0:
            time.sleep(self._delay)
        return self._answer(request, start)

    async def score_async(self, request: ScoringRequest) -> ScoringResponse:
        """Like :meth:`score`, but the delay is an ``asyncio.sleep``."""
        start = time.monotonic()
        with self._lock:
            self._seen.append(request)
        if self._delay > 0:
            await asyncio.sleep(self._delay)
        return self._answer(request, start)


__all__ = [
    "AsyncScorer",
    "CancelToken",
    "OfflineScorer",
    "Scorer",
    "ScriptedScorer",
    "StubScorer",
]
