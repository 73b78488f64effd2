"""Install what the MCP proxy tests run against, into the e2e cache (idempotent, fast when cached).

- The e2e venv of ``tests/e2e/requirements.txt`` (the Python ``mcp`` SDK 2.3.0 —
  the tests' **client** — ``mcp-server-fetch`` 2026.10.24, markdown-it-py,
  pytest), made by ``tests/e2e/provision.py``'s `ensure_venv` in
  ``CACHE/venv-<hash>/`` (shared with the e2e suite: one venv, one install).
- ``@modelcontextprotocol/server-everything`` at `EVERYTHING_VERSION` from npm
  into ``CACHE/mcp-proxy/everything-<version>/`` (``npm install --prefix``,
  built in a temporary folder and renamed into place with a ``.ok`` stamp,
  under the cache's lock).

``CACHE`` is the e2e cache (``$TOOLPRUNE_E2E_CACHE``, else
``${XDG_CACHE_HOME:-~/.cache}/toolprune-e2e``). A registry that cannot be
reached is a `ProvisionError` naming the command — never a skip.

As a script: installs what is missing and prints the paths as JSON
(``python``, ``fetch_server``, ``everything``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "e2e"))

import provision as e2e  # noqa: E402  (tests/e2e/provision.py)

ProvisionError = e2e.ProvisionError

#: The pinned server-everything release (npm). Its SDK (TypeScript 1.x) speaks the
#: initialize era; mcp-server-fetch (Python SDK 2.x) speaks both eras.
EVERYTHING_VERSION = "2026.8.31"


@dataclass(frozen=True)
class Tools:
    """Absolute paths of what the tests start."""

    python: str
    fetch_server: str
    everything: str


def ensure_everything(cache: Path) -> Path:
    """``dist/index.js`` of server-everything, installed into the cache if missing."""
    prefix = cache / "mcp-proxy" / f"everything-{EVERYTHING_VERSION}"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if (prefix / ".ok").exists() and entry.exists():
        return entry
    prefix.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".everything-", dir=prefix.parent))
    try:
        e2e._run(
            ["npm", "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--no-save",
             "--fetch-timeout=60000", "--fetch-retries=1",
             f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"],
            f"npm install @modelcontextprotocol/server-everything@{EVERYTHING_VERSION}",
            600,
        )
        (tmp / ".ok").write_text(EVERYTHING_VERSION + "\n")
        if prefix.exists():
            shutil.rmtree(prefix)
        tmp.rename(prefix)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


def ensure_tools() -> Tools:
    """Install whatever is missing (under the cache's lock) and return the paths."""
    cache = e2e.cache_dir()
    with e2e._locked(cache):
        python = e2e.ensure_venv(cache)
        everything = ensure_everything(cache)
    return Tools(str(python), str(python.parent / "mcp-server-fetch"), str(everything))


if __name__ == "__main__":
    try:
        print(json.dumps(asdict(ensure_tools()), indent=1))
    except ProvisionError as e:
        print(f"provision: {e}", file=sys.stderr)
        sys.exit(1)
