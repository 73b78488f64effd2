"""Run the real Gemini CLI offline: installs, a scratch HOME, a loopback site, one CLI run.

Everything a test needs, installed on demand into a cache outside the repository (CI starts
from a clean clone, so the tests install what they use; each install is idempotent and
guarded by a lock):

- ``ensure_gemini_cli()``: ``@google/gemini-cli@GEMINI_CLI_VERSION`` from npm into
  ``<cache>/gemini-cli-<version>/``; returns the ``gemini`` executable.
- ``ensure_fetch_venv()``: a venv with ``mcp-server-fetch==MCP_SERVER_FETCH_VERSION`` from
  PyPI in ``<cache>/mcp-fetch-<version>/``; returns the venv's ``bin`` directory (it also has
  ``python`` with the ``mcp`` package, which the probe's echo server uses).

``<cache>`` is ``$TOOLPRUNE_E2E_CACHE`` or ``~/.cache/toolprune-e2e``.

The offline recipe (FACTS-gemini-cursor.md §Offline run, Gemini CLI 0.61.0):
``GEMINI_API_KEY=<any>``, ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT`` and, in
``$HOME/.gemini/settings.json``, ``security.auth.selectedType = "gemini-api-key"`` (without
it the base URL selects auth type "gateway", which the headless auth check rejects with
"Invalid auth method selected." and exit 41), plus an explicit ``-m MODEL`` (with the
default "auto" model the CLI first asks a classifier model through generateContent and
retries ~100 s when the answer is not its JSON).

Every server here binds 127.0.0.1; the CLI gets a minimal environment (no proxy variables).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

GEMINI_CLI_VERSION = "0.61.0"
MCP_SERVER_FETCH_VERSION = "2026.10.24"
#: The model name passed with ``-m``; the scripted server accepts any.
MODEL = "gemini-2.5-flash"

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parent.parent


class SetupError(RuntimeError):
    """An install step failed (npm / pip / venv); the message carries the tool's output."""


def cache_dir() -> Path:
    """The install cache: ``$TOOLPRUNE_E2E_CACHE`` or ``~/.cache/toolprune-e2e`` (created)."""
    d = Path(os.environ.get("TOOLPRUNE_E2E_CACHE") or Path.home() / ".cache" / "toolprune-e2e")
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    with open(cache_dir() / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_install(cmd: list[str], timeout: int = 900) -> None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{cmd[0]} failed: {exc}") from exc
    if p.returncode != 0:
        raise SetupError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")


def ensure_gemini_cli(version: str = GEMINI_CLI_VERSION) -> Path:
    """Install ``@google/gemini-cli@version`` (npm) into the cache once; return ``gemini``.

    Raises SetupError when npm is missing or the install fails.
    """
    dest = cache_dir() / f"gemini-cli-{version}"
    exe = dest / "node_modules" / ".bin" / "gemini"
    pkg = dest / "node_modules" / "@google" / "gemini-cli" / "package.json"
    with _locked(f"gemini-cli-{version}"):
        if exe.exists() and pkg.exists() and json.loads(pkg.read_text())["version"] == version:
            return exe
        npm = shutil.which("npm")
        if npm is None:
            raise SetupError("npm not found (Gemini CLI needs Node >= 20 and npm)")
        tmp = Path(tempfile.mkdtemp(prefix=f"gemini-cli-{version}.", dir=cache_dir()))
        _run_install([npm, "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--loglevel=error",
                      f"@google/gemini-cli@{version}"])
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        return exe


def ensure_fetch_venv(version: str = MCP_SERVER_FETCH_VERSION) -> Path:
    """Create a venv with ``mcp-server-fetch==version`` (PyPI) once; return its ``bin`` dir.

    Raises SetupError when the venv or pip install fails.
    """
    dest = cache_dir() / f"mcp-fetch-{version}"
    bindir = dest / "bin"
    stamp = dest / ".installed"
    with _locked(f"mcp-fetch-{version}"):
        if stamp.exists() and (bindir / "mcp-server-fetch").exists():
            return bindir
        shutil.rmtree(dest, ignore_errors=True)
        _run_install([sys.executable, "-m", "venv", str(dest)])
        _run_install([str(bindir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      f"mcp-server-fetch=={version}"])
        stamp.write_text(version)
        return bindir


class LoopbackSite:
    """A static HTTP site on 127.0.0.1 serving ``pages`` (name → HTML); context manager.

    ``url(name)`` gives ``http://127.0.0.1:PORT/name``. ``requests`` lists the paths fetched.
    """

    def __init__(self, pages: dict[str, str]):
        self._dir = tempfile.mkdtemp(prefix="gemini-site.")
        for name, html in pages.items():
            Path(self._dir, name).write_text(html, encoding="utf-8")
        self.requests: list[str] = []
        owner = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, *_a):
                pass

            def do_GET(self):
                owner.requests.append(self.path)
                super().do_GET()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=self._dir))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/{name}"

    def __enter__(self) -> "LoopbackSite":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)


def base_settings() -> dict:
    """Settings for an offline, quiet run: API-key auth, no telemetry, no update checks."""
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }


def fetch_server_config(fetch_bin: Path) -> dict:
    """The ``mcpServers`` entry for mcp-server-fetch reaching loopback pages.

    ``trust: true`` skips the per-call confirmation (mcp-tool.js getConfirmationDetails:
    trusted folder + trusted server → no confirmation).
    """
    return {
        "command": str(fetch_bin / "mcp-server-fetch"),
        "args": ["--allow-private-ips", "--ignore-robots-txt"],
        "trust": True,
    }


def hooks_for(events: list[str], command: str, matcher: str = "*") -> dict:
    """A ``hooks`` settings object running ``command`` for each event in ``events``."""
    return {ev: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "name": "probe"}]}]
            for ev in events}


@dataclass
class GeminiRun:
    """One finished ``gemini -p`` run: exit code, stdout, stderr."""

    returncode: int
    stdout: str
    stderr: str


def write_settings(home: Path, settings: dict) -> Path:
    """Write ``home/.gemini/settings.json`` (user scope); return its path."""
    d = home / ".gemini"
    d.mkdir(parents=True, exist_ok=True)
    p = d / "settings.json"
    p.write_text(json.dumps(settings, indent=2))
    return p


def run_gemini(exe: Path, prompt: str, *, home: Path, cwd: Path, base_url: str,
               extra_args: list[str] = (), timeout: int = 240) -> GeminiRun:
    """Run ``gemini -p PROMPT -m MODEL --skip-trust [extra_args]`` headless against ``base_url``.

    The environment is minimal: PATH, HOME (scratch), TERM=dumb, GEMINI_API_KEY=test,
    GOOGLE_GEMINI_BASE_URL, GEMINI_CLI_NO_RELAUNCH=true (one node process instead of a
    relaunched child). ``--skip-trust`` trusts ``cwd`` for this run (stdio MCP servers and
    project hooks need a trusted folder).
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "dumb",
        "GEMINI_API_KEY": "test",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    cmd = [str(exe), "-p", prompt, "-m", MODEL, "--skip-trust", *extra_args]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return GeminiRun(p.returncode, p.stdout, p.stderr)
