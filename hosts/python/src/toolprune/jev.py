"""The Jev transport (SPEC §5, §11, §14): POST each batch's ``jev_body``
unchanged to the endpoint the guest resolved, with the Bearer token added
as a header, and hand the raw 2xx bodies back to the guest as
:class:`~toolprune.types.JevResponse`. This module never parses or builds
Jev JSON, knows no route, URL, model or environment variable name, and
decides no retry: the guest's ``settings`` do (``resolve``,
``retry-delay``).

Mechanism only: up to ``policy.max_in_flight`` requests at once; after a
non-2xx or a network error, ``settings.retry_delay`` says whether and when
to try again (it reads ``Retry-After`` and ``retry-after-ms`` as received);
stop at once when the scorer's cancel token is set (the host sets it on
cancellation and at the deadline, which the host enforces). Errors carry
the status, never the body; redirects are not followed (the token would go
elsewhere); a loopback endpoint bypasses proxies.

Built on the standard library only (``urllib.request`` in daemon worker
threads, results as ``concurrent.futures.Future``): one implementation
serves the blocking ``score`` and the asyncio ``score_async``. A request
that is abandoned cannot be aborted inside ``urllib``; its thread ends by
itself at the socket timeout (the time left to the deadline) and, being a
daemon thread, never holds the process open.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import queue
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple

from .scorers import CancelToken
from .types import BatchAnswer, Failed, JevEndpoint, JevResponse, ScoringRequest, ScoringResponse

if TYPE_CHECKING:  # pragma: no cover
    from .pruner import Pruner
    from .settings import Settings

USER_AGENT = "toolprune-python/0.3"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the token elsewhere: report the 3xx instead."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _elapsed_ms(since: float) -> int:
    return min(int((time.monotonic() - since) * 1000), 0xFFFF_FFFF)


class _Run:
    """The batches of one scoring request, run by up to ``max_in_flight``
    daemon threads; ends when every batch answered or when stopped."""

    def __init__(self, scorer: "JevScorer", request: ScoringRequest, stop: CancelToken) -> None:
        self.scorer = scorer
        self.request = request
        self.start = time.monotonic()
        self.deadline = self.start + request.policy.deadline_ms / 1000.0
        self.stop = stop
        self.stopped = threading.Event()
        stop.on_cancel(self.stopped.set)
        self.done: "concurrent.futures.Future[None]" = concurrent.futures.Future()
        self._lock = threading.Lock()
        self._answers: List[Optional[BatchAnswer]] = [None] * len(request.batches)
        self._left = len(request.batches)
        self._queue: "queue.SimpleQueue[int]" = queue.SimpleQueue()
        for i in range(len(request.batches)):
            self._queue.put(i)
        if self._left == 0:
            self.done.set_result(None)
            return
        workers = max(1, min(request.policy.max_in_flight, len(request.batches)))
        for n in range(workers):
            threading.Thread(target=self._work, name=f"toolprune-jev-{n}", daemon=True).start()

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def answers(self) -> List[BatchAnswer]:
        with self._lock:
            return [a if a is not None else Failed.network() for a in self._answers]

    def _work(self) -> None:
        while not self.stopped.is_set():
            try:
                i = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                answer = self.scorer._score_batch(self.request.batches[i].jev_body, self)
            except Exception:  # noqa: BLE001 - a transport bug is a network failure
                answer = Failed.network()
            with self._lock:
                self._answers[i] = answer
                self._left -= 1
                finished = self._left == 0
            if finished:
                try:
                    self.done.set_result(None)
                except concurrent.futures.InvalidStateError:
                    pass


class JevScorer:
    """Scores through Jev at the endpoint the guest resolved from the
    configuration (Cloudflare Workers AI, TypeSafe's API or the Vercel AI
    Gateway). Name ``jev``. Make it with :meth:`from_env`.

    ``endpoint``: the guest's ``config.jev``. ``token``: sent only as
    ``Authorization: Bearer …`` to that endpoint (never shown by ``repr``,
    never passed to the guest). ``settings``: the guest's settings (the
    retry rule).
    """

    name = "jev"

    def __init__(self, endpoint: JevEndpoint, token: str, *, settings: "Settings") -> None:
        secret = (token or "").strip()
        if not secret:
            raise ValueError("no token for Jev")
        if not all(0x21 <= ord(c) <= 0x7E for c in secret):
            raise ValueError("the token has spaces or characters an HTTP header cannot carry")
        self.endpoint = endpoint
        self._authorization = f"Bearer {secret}"
        self._settings = settings
        handlers: List[urllib.request.BaseHandler] = [_NoRedirect()]
        if endpoint.loopback:
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None, *, pruner: Optional["Pruner"] = None) -> "JevScorer":
        """A scorer from the user's configuration: the guest resolves the
        variables it names (``settings.variables``) and the config file
        (``settings.config-path``) into an endpoint; the token is read from
        the variable the guest names (``config.token-variable``), here only.
        ``environ`` defaults to ``os.environ``; ``pruner`` to :meth:`Pruner.load`.

        Raises :class:`ValueError` saying what is missing or wrong (the
        guest's message for the configuration)."""
        if pruner is None:
            from .pruner import Pruner

            pruner = Pruner.load()
        import os

        source = os.environ if environ is None else environ
        config = pruner.settings.config(source)
        if isinstance(config.jev, str):
            raise ValueError(config.jev)
        token = source.get(config.token_variable)
        if not token or not token.strip():
            raise ValueError(f"no token: set {config.token_variable}")
        return cls(config.jev, token, settings=pruner.settings)

    def __repr__(self) -> str:  # never the token
        return f"JevScorer(route={self.route!r}, url={self.url!r}, token=<redacted>)"

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def route(self) -> str:
        return self.endpoint.route

    @property
    def jev_model(self) -> Optional[str]:
        """The model the guest names in request bodies (native routes), or None (Cloudflare: from the URL)."""
        return self.endpoint.model

    # --- one batch ------------------------------------------------------------

    def _post(self, body: bytes, timeout: float) -> Tuple[Optional[int], Optional[str], Optional[str], Optional[str]]:
        """(status, 2xx body, Retry-After, retry-after-ms); status None = no HTTP answer."""
        headers = {
            "Authorization": self._authorization,
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=max(timeout, 0.001)) as response:
                data = response.read()
                # The guest judges the text; bytes that are not UTF-8 cannot be Jev JSON anyway.
                return response.status, data.decode("utf-8", errors="replace"), None, None
        except urllib.error.HTTPError as err:
            # A non-2xx answer: keep the status and the retry headers, never read the body.
            h = err.headers
            retry_after = h.get("Retry-After") if h is not None else None
            retry_after_ms = h.get("retry-after-ms") if h is not None else None
            err.close()
            return err.code, None, retry_after, retry_after_ms
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
            return None, None, None, None

    def _score_batch(self, jev_body: str, run: _Run) -> BatchAnswer:
        body = jev_body.encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            left = run.time_left()
            if left <= 0 or run.stopped.is_set():
                return Failed.network()
            status, text, retry_after, retry_after_ms = self._post(body, left)
            if status is not None and 200 <= status < 300:
                return JevResponse(text or "")
            failed = Failed.network() if status is None else Failed.http(status)
            if run.stopped.is_set():
                return failed
            wait = self._settings.retry_delay(
                attempt=attempt,
                status=status,
                retry_after=retry_after,
                retry_after_ms=retry_after_ms,
                now_unix_ms=int(time.time() * 1000),
                remaining_ms=max(int(run.time_left() * 1000), 0),
            )
            if wait is None or run.stopped.wait(wait / 1000.0):
                return failed

    # --- one request ------------------------------------------------------------

    def score(self, request: ScoringRequest, cancel: Optional[CancelToken] = None) -> ScoringResponse:
        """Blocking: runs every batch and waits for all of them or ``cancel``."""
        stop = cancel or CancelToken()
        run = _Run(self, request, stop)
        wake = threading.Event()
        run.done.add_done_callback(lambda _f: wake.set())
        remove = stop.on_cancel(wake.set)
        try:
            wake.wait(max(run.time_left(), 0.0))
        finally:
            remove()
        return self._conclude(run)

    async def score_async(self, request: ScoringRequest, cancel: Optional[CancelToken] = None) -> ScoringResponse:
        """Non-blocking: the same run, awaited on the event loop."""
        stop = cancel or CancelToken()
        loop = asyncio.get_running_loop()
        run = _Run(self, request, stop)
        waiters: "set[asyncio.Future[Any]]" = {asyncio.wrap_future(run.done, loop=loop), stop.future(loop)}
        try:
            await asyncio.wait(waiters, timeout=max(run.time_left(), 0.0), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            stop.cancel()
            raise
        finally:
            for waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
        return self._conclude(run)

    def _conclude(self, run: _Run) -> ScoringResponse:
        elapsed = _elapsed_ms(run.start)
        finished = run.done.done() and not run.done.cancelled()
        run.stopped.set()
        if finished:
            return ScoringResponse.answered(run.answers(), elapsed)
        # Not finished: the host stopped it (cancel or deadline) and has its own answer.
        return ScoringResponse.stopped("cancelled" if run.stop.cancelled else "timeout", elapsed)


__all__ = ["JevScorer"]
