"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe``.

Chromium reads commands from its fd 3 and writes answers and events to its fd 4, each
message JSON ended by a NUL byte: no websocket, no package, nothing listening on a
port. ``Browser`` starts headless Chromium with a fresh profile, opens one page and
records every console message, exception, log entry and network request of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: Flags that work here (headless, no sandbox as root, nothing phoning home).
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
]


def chromium() -> str:
    """Debian's ``chromium`` (``$CHROMIUM`` overrides)."""
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise RuntimeError("chromium is not installed (tests/stats/run installs Debian's package)")
    return path


class CdpError(RuntimeError):
    pass


class Browser:
    """Headless Chromium driven over its DevTools pipe; one page (``session``)."""

    def __init__(self, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="toolprune-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        # Chromium's own chatter goes to a file (a full pipe would stall it).
        self.stderr_path = Path(self.profile) / "stderr.txt"
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                [chromium(), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                preexec_fn=fds, close_fds=False,
            )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise CdpError("no answer from chromium in time")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise CdpError(f"chromium closed its pipe: {self.stderr_path.read_text(errors='replace')[-2000:]}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        """Sends one command and returns its result; events met meanwhile are kept."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The first event ``method`` of the page (already received or next)."""
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + self.timeout
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def open(self, url: str) -> None:
        """Navigates the page to ``url`` and waits for its load event."""
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired")
        # Let late console messages and CSP reports arrive.
        self.evaluate("new Promise(r => setTimeout(r, 200))", wait=True)

    def evaluate(self, expression: str, wait: bool = False) -> Any:
        """The value of a JavaScript expression in the page (DevTools evaluates it; the
        page itself runs no script)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": wait}, session=True)
        if "exceptionDetails" in result:
            raise CdpError(f"evaluate: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self, page_url: str) -> list[str]:
        """Console messages, exceptions, log entries, and requests other than the page."""
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')} {p['exceptionDetails'].get('exception', {}).get('description', '')}")
            elif method == "Runtime.consoleAPICalled":
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
            elif method == "Log.entryAdded":
                entry = p["entry"]
                out.append(f"log {entry['level']} ({entry.get('source')}): {entry.get('text')}")
            elif method == "Network.requestWillBeSent" and p["request"]["url"] != page_url:
                out.append(f"request: {p['request']['url']}")
            elif method == "Network.loadingFailed":
                out.append(f"failed to load: {p.get('errorText')} {p.get('blockedReason', '')}")
        return out

    def screenshot(self, path: Path) -> None:
        import base64
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
