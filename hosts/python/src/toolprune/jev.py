"""The Jev transport (SPEC §5, §11, §14): POST each batch's ``jev_body``
unchanged, with the Bearer token added as a header, and hand the raw 2xx
bodies back to the guest as ``JevResponse``. This module never parses or
builds Jev JSON; the guest decodes the bare body and the Cloudflare envelope.

Mechanism only, numbers from the guest's ``TransportPolicy``: up to
``max_in_flight`` requests in flight, ``deadline_ms`` for the whole result
(past it: ``timeout``, finished batches discarded), one retry on a status in
``retry_on`` (429, 5xx; never 402 or other 4xx), cancellation (``cancelled``,
stop waiting at once). Errors carry the status, never the body.

Built on the standard library only (``urllib.request`` in daemon worker
threads, results as ``concurrent.futures.Future``): no HTTP dependency to
install or keep in step, and one implementation serves both the blocking
``score`` (which the guest calls through the import) and the asyncio
``score_async`` (which awaits the same futures with ``asyncio.wrap_future``,
so the event loop never blocks). A request that is abandoned (deadline,
cancellation) cannot be aborted inside ``urllib``; its thread ends by itself
at the socket timeout, which is the time left to the deadline, and being a
daemon thread it never holds the process open.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import ipaddress
import os
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Dict, List, Literal, Mapping, Optional, Tuple

from .scorers import CancelToken
from .types import BatchAnswer, Failed, JevResponse, ScoringRequest, ScoringResponse, TransportPolicy

Route = Literal["cloudflare", "typesafe", "vercel"]

DEFAULT_MODEL = "jev-1.13.0"
"""The model pinned on the native and Vercel routes unless configured."""
BASE_URLS: Dict[str, str] = {
    "cloudflare": "https://api.cloudflare.com",
    "typesafe": "https://api.typesafe.ai",
    "vercel": "https://ai-gateway.vercel.sh/typesafe",
}
"""Default base URLs; ``base_url=`` replaces them (a gateway, a test server)."""
ENV_VARS = (
    "TOOLPRUNE_JEV_ROUTE",
    "TOOLPRUNE_JEV_ACCOUNT_ID",
    "TOOLPRUNE_JEV_TOKEN",
    "TOOLPRUNE_JEV_BASE_URL",
    "TOOLPRUNE_JEV_MODEL",
)
"""The environment variables read by :meth:`JevScorer.from_env` (as the Rust host)."""
USER_AGENT = "toolprune-python/0.1.0"


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def route_url(route: str, base_url: Optional[str] = None, account_id: Optional[str] = None) -> str:
    """The endpoint of ``route`` under ``base_url`` (default: the route's):
    Cloudflare ``{base}/client/v4/accounts/{account_id}/ai/run/typesafe/jev``,
    TypeSafe and Vercel ``{base}/v1/systemone``.

    Raises :class:`ValueError`: unknown route, a base URL that is not
    ``https://`` (``http://`` only to a loopback host) or has a query, a
    missing or malformed account id on Cloudflare.
    """
    if route not in BASE_URLS:
        raise ValueError(f"unknown route {route!r}; expected cloudflare, typesafe or vercel")
    base = (base_url or BASE_URLS[route]).strip().rstrip("/")
    parts = urllib.parse.urlsplit(base)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"bad base URL: {base!r} is not an http(s) URL with a host")
    if scheme == "http" and not _is_loopback(parts.hostname):
        raise ValueError(
            f"bad base URL: {base!r}: plain http is allowed to a loopback host only "
            "(the token would travel in clear)"
        )
    if parts.query or parts.fragment or "?" in base or "#" in base:
        raise ValueError(f"bad base URL: {base!r} has a query or fragment")
    if route == "cloudflare":
        account = (account_id or "").strip()
        if not account:
            raise ValueError("no account id: the cloudflare route needs TOOLPRUNE_JEV_ACCOUNT_ID")
        if not all(c.isascii() and (c.isalnum() or c in "-_") for c in account):
            raise ValueError("the account id may hold only letters, digits, '-' and '_'")
        return f"{base}/client/v4/accounts/{account}/ai/run/typesafe/jev"
    return f"{base}/v1/systemone"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the token elsewhere: report the 3xx instead."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _elapsed_ms(since: float) -> int:
    return min(int((time.monotonic() - since) * 1000), 0xFFFF_FFFF)


class _Run:
    """The batches of one scoring request, run by up to ``max_in_flight``
    daemon threads; ends when every batch answered or when stopped."""

    def __init__(self, scorer: "JevScorer", request: ScoringRequest, deadline_s: float, start: float) -> None:
        self.scorer = scorer
        self.request = request
        self.start = start
        self.deadline = self.start + deadline_s
        self.stopped = threading.Event()
        self.done = concurrent.futures.Future()  # type: concurrent.futures.Future[None]
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

    def stop(self) -> None:
        self.stopped.set()

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
                answer = self.scorer._score_batch(self.request.batches[i].jev_body, self.request.policy, self)
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
    """Scores through Jev over HTTPS: Cloudflare Workers AI (the default
    route), TypeSafe's native API, or the Vercel AI Gateway. Name ``jev``.

    - Up to ``policy.max_in_flight`` requests at once (that many daemon
      threads per call, fewer when there are fewer batches).
    - One deadline for the whole call, ``policy.deadline_ms``: past it the
      answer is ``timeout`` and finished batches are discarded.
    - ``cancel`` (the turn's :class:`CancelToken`): cancelling stops waiting at
      once (``cancelled``) and wins over the deadline; a token cancelled
      before the call sends nothing.
    - A status in ``policy.retry_on`` is retried up to ``policy.max_retries``
      times, after ``Retry-After`` seconds when given and when the wait ends
      before the deadline (else no retry); without it after 250 ms. Any other
      non-2xx (402, 401, 422, …) is final.
    - A final non-2xx → ``Failed.http(status)``; no status (refused, DNS,
      TLS, reset, a request's timeout) → ``Failed.network()``. The body of a
      non-2xx answer is never read; a 2xx body goes to the guest unread.

    ``token`` (required): sent only as ``Authorization: Bearer …`` to this
    scorer's own endpoint (redirects are not followed, the token is never
    shown by ``repr``, never passed to the guest). ``base_url``: replaces the
    route's (``http://`` only to a loopback host, which also bypasses
    proxies). ``model``: named in the body on the TypeSafe and Vercel routes.
    ``deadline_cap_ms``: **test-only knob**, lowers the policy's deadline
    (never raises it) so a stalled-server test need not wait 20 s.
    """

    name = "jev"

    def __init__(
        self,
        route: Route = "cloudflare",
        *,
        token: str,
        account_id: Optional[str] = None,
        base_url: Optional[str] = None,
        model: Optional[str] = None,
        deadline_cap_ms: Optional[int] = None,
    ) -> None:
        secret = (token or "").strip()
        if not secret:
            raise ValueError("no token: set TOOLPRUNE_JEV_TOKEN (a Cloudflare API token, or a TypeSafe / Vercel key)")
        if not all(0x21 <= ord(c) <= 0x7E for c in secret):
            raise ValueError("the token has spaces or characters an HTTP header cannot carry")
        if model is not None and not model.strip():
            raise ValueError("the model name is empty")
        self.url = route_url(route, base_url, account_id)
        self.route: Route = route
        self.model = (model or DEFAULT_MODEL).strip()
        self._authorization = f"Bearer {secret}"
        self.deadline_cap_ms = deadline_cap_ms
        host = urllib.parse.urlsplit(self.url).hostname or ""
        handlers: List[urllib.request.BaseHandler] = [_NoRedirect()]
        if _is_loopback(host):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "JevScorer":
        """A scorer from ``TOOLPRUNE_JEV_ROUTE`` (default cloudflare),
        ``TOOLPRUNE_JEV_TOKEN``, ``TOOLPRUNE_JEV_ACCOUNT_ID``,
        ``TOOLPRUNE_JEV_BASE_URL`` and ``TOOLPRUNE_JEV_MODEL``.
        Raises :class:`ValueError` saying what to set."""
        env = os.environ if environ is None else environ

        def var(name: str) -> Optional[str]:
            value = env.get(name)
            return value.strip() if value and value.strip() else None

        route = (var("TOOLPRUNE_JEV_ROUTE") or "cloudflare").lower()
        if route not in BASE_URLS:
            raise ValueError(f"TOOLPRUNE_JEV_ROUTE is {route!r}; expected cloudflare, typesafe or vercel")
        return cls(
            route,  # type: ignore[arg-type]
            token=var("TOOLPRUNE_JEV_TOKEN") or "",
            account_id=var("TOOLPRUNE_JEV_ACCOUNT_ID"),
            base_url=var("TOOLPRUNE_JEV_BASE_URL"),
            model=var("TOOLPRUNE_JEV_MODEL"),
        )

    def __repr__(self) -> str:  # never the token
        return f"JevScorer(route={self.route!r}, url={self.url!r}, token=<redacted>)"

    @property
    def jev_model(self) -> Optional[str]:
        """What the guest is told to put in the body's ``model``: the pinned
        model on the TypeSafe and Vercel routes, none on Cloudflare (it takes
        the model from the URL)."""
        return None if self.route == "cloudflare" else self.model

    # --- one batch ------------------------------------------------------------

    def _post(self, body: bytes, timeout: float) -> Tuple[Optional[int], Optional[str], Optional[str]]:
        """(status, 2xx body, Retry-After); status None = no HTTP answer."""
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
                return response.status, data.decode("utf-8", errors="replace"), None
        except urllib.error.HTTPError as err:
            # A non-2xx answer: keep the status and Retry-After, never read the body.
            retry_after = err.headers.get("Retry-After") if err.headers is not None else None
            err.close()
            return err.code, None, retry_after
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
            return None, None, None

    @staticmethod
    def _retry_wait(retry_after: Optional[str], policy: TransportPolicy) -> float:
        if retry_after is not None and retry_after.strip().isdigit():
            return float(int(retry_after.strip()))
        return policy.retry_backoff_ms / 1000

    def _score_batch(self, jev_body: str, policy: TransportPolicy, run: _Run) -> BatchAnswer:
        body = jev_body.encode("utf-8")
        retries = 0
        last: Optional[int] = None
        while True:
            left = run.time_left()
            if left <= 0 or run.stopped.is_set():
                return Failed.network() if last is None else Failed.http(last)
            status, text, retry_after = self._post(body, left)
            if status is None:
                return Failed.network()
            if 200 <= status < 300:
                return JevResponse(text or "")
            last = status
            if retries >= policy.max_retries or not policy.retryable(status):
                return Failed.http(status)
            wait = self._retry_wait(retry_after, policy)
            if wait >= run.time_left() or run.stopped.wait(wait):
                return Failed.http(status)
            retries += 1

    # --- one request ------------------------------------------------------------

    def _deadline_s(self, request: ScoringRequest) -> float:
        ms = request.policy.deadline_ms
        if self.deadline_cap_ms is not None:
            ms = min(ms, self.deadline_cap_ms)
        return ms / 1000.0

    def score(self, request: ScoringRequest, cancel: Optional[CancelToken] = None) -> ScoringResponse:
        """Blocking (the ``scorer`` import): runs every batch and waits for all
        of them, the deadline, or ``cancel``, whichever comes first."""
        start = time.monotonic()
        if cancel is not None and cancel.cancelled:
            return ScoringResponse.stopped("cancelled", 0)
        run = _Run(self, request, self._deadline_s(request), start)
        wake = threading.Event()
        run.done.add_done_callback(lambda _f: wake.set())
        remove: Callable[[], None] = cancel.on_cancel(wake.set) if cancel is not None else (lambda: None)
        try:
            wake.wait(max(run.time_left(), 0.0))
        finally:
            remove()
        return self._conclude(run, cancel)

    async def score_async(self, request: ScoringRequest, cancel: Optional[CancelToken] = None) -> ScoringResponse:
        """Non-blocking: the same run, awaited on the event loop. Cancelling
        the awaiting task stops the run and re-raises."""
        start = time.monotonic()
        if cancel is not None and cancel.cancelled:
            return ScoringResponse.stopped("cancelled", 0)
        loop = asyncio.get_running_loop()
        run = _Run(self, request, self._deadline_s(request), start)
        waiters: "set[asyncio.Future[None]]" = {asyncio.wrap_future(run.done, loop=loop)}
        if cancel is not None:
            waiters.add(cancel.future(loop))
        try:
            await asyncio.wait(waiters, timeout=max(run.time_left(), 0.0), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            run.stop()
            raise
        finally:
            for waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
        return self._conclude(run, cancel)

    def _conclude(self, run: _Run, cancel: Optional[CancelToken]) -> ScoringResponse:
        elapsed = _elapsed_ms(run.start)
        finished = run.done.done() and not run.done.cancelled()
        run.stop()
        if cancel is not None and cancel.cancelled and not finished:
            return ScoringResponse.stopped("cancelled", elapsed)
        if finished:
            return ScoringResponse.answered(run.answers(), elapsed)
        # Cancellation wins over the deadline (SPEC §11).
        if cancel is not None and cancel.cancelled:
            return ScoringResponse.stopped("cancelled", elapsed)
        return ScoringResponse.stopped("timeout", elapsed)


__all__ = ["BASE_URLS", "DEFAULT_MODEL", "ENV_VARS", "JevScorer", "Route", "route_url"]
