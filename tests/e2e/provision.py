"""Install the e2e toolchain into a cache outside the repository: idempotent, fast when cached.

- The Claude Code CLI from npm, ``@anthropic-ai/claude-code`` at `CLAUDE_CODE_VERSION`,
  into ``CACHE/claude-code-<version>/`` (``npm install --prefix``; the package's
  postinstall links the native binary for this platform).
- A venv with ``requirements.txt`` (mcp-server-fetch, the ``mcp`` SDK,
  markdown-it-py, pytest; pinned) into ``CACHE/venv-<hash of requirements.txt>/``.

``CACHE`` is ``$TOOLPRUNE_E2E_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/toolprune-e2e``.
Each part is built in a temporary folder and renamed into place only when it
works (a ``.ok`` stamp inside), under a lock file, so an interrupted or
concurrent run never leaves a half-installed toolchain that looks finished.

A registry that cannot be reached is a `ProvisionError` naming the command and
the tail of its output — never a skip.

As a script, ``python provision.py`` installs what is missing and prints the
toolchain as JSON (``claude``, ``claude_version``, ``python``, ``fetch_server``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

#: The pinned Claude Code release (npm ``@anthropic-ai/claude-code``). FACTS.md was
#: established with this version; change both together.
CLAUDE_CODE_VERSION = "2.1.332"

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"

__all__ = ["CLAUDE_CODE_VERSION", "ProvisionError", "Toolchain", "cache_dir", "ensure_toolchain"]


class ProvisionError(RuntimeError):
    """The toolchain could not be installed (registry unreachable, bad pin, …)."""


@dataclass(frozen=True)
class Toolchain:
    """Paths of the installed tools (all absolute)."""

    claude: str
    claude_version: str
    python: str
    fetch_server: str


def cache_dir() -> Path:
    """``$TOOLPRUNE_E2E_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/toolprune-e2e``."""
    explicit = os.environ.get("TOOLPRUNE_E2E_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "toolprune-e2e"


def _run(cmd: list[str], what: str, timeout: float, cwd: Path | None = None) -> str:
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ProvisionError(f"{what}: `{' '.join(cmd)}` did not finish in {timeout:.0f} s (registry unreachable?)") from e
    except FileNotFoundError as e:
        raise ProvisionError(f"{what}: `{cmd[0]}` is not installed") from e
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip()[-3000:]
        raise ProvisionError(f"{what}: `{' '.join(cmd)}` exited {p.returncode}:\n{tail}")
    return p.stdout


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _claude_bin(prefix: Path) -> Path:
    return prefix / "node_modules" / ".bin" / "claude"


def _claude_version(binary: Path) -> str:
    out = _run([str(binary), "--version"], "claude --version", 60)
    return out.split()[0] if out.split() else ""


def ensure_claude(cache: Path) -> tuple[Path, str]:
    """The ``claude`` binary of `CLAUDE_CODE_VERSION`, installed into the cache if missing."""
    prefix = cache / f"claude-code-{CLAUDE_CODE_VERSION}"
    if (prefix / ".ok").exists():
        return _claude_bin(prefix), CLAUDE_CODE_VERSION
    tmp = Path(tempfile.mkdtemp(prefix=".claude-code-", dir=cache))
    tmp.chmod(0o755)
    try:
        _run(
            ["npm", "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--no-save",
             "--fetch-timeout=60000", "--fetch-retries=1", f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"],
            f"npm install @anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}",
            900,
        )
        binary = _claude_bin(tmp)
        try:
            version = _claude_version(binary)
        except ProvisionError:
            # The postinstall (which links the native binary over the stub) did not
            # run: npm can be set to skip install scripts. Run it ourselves.
            pkg = tmp / "node_modules" / "@anthropic-ai" / "claude-code"
            _run(["node", "install.cjs"], "claude-code postinstall", 120, cwd=pkg)
            version = _claude_version(binary)
        if version != CLAUDE_CODE_VERSION:
            raise ProvisionError(f"installed claude reports {version!r}, expected {CLAUDE_CODE_VERSION}")
        (tmp / ".ok").write_text(version + "\n")
        if prefix.exists():
            shutil.rmtree(prefix)
        tmp.rename(prefix)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return _claude_bin(prefix), CLAUDE_CODE_VERSION


def _base_python() -> str:
    """An interpreter ≥ 3.10 to make the venv with: this one, else ``python3``."""
    if sys.version_info >= (3, 10):
        return sys.executable
    return shutil.which("python3") or "python3"


def ensure_venv(cache: Path) -> Path:
    """The venv of ``requirements.txt`` (its python), created in the cache if missing.

    A venv is not relocatable (its scripts name the interpreter by absolute path),
    so it is built where it lives; the ``.ok`` stamp, written last, marks it done,
    and a folder without one is an interrupted build, removed and made again.
    """
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    venv = cache / f"venv-{digest}"
    python = venv / "bin" / "python"
    if (venv / ".ok").exists():
        return python
    if venv.exists():
        shutil.rmtree(venv)
    try:
        _run([_base_python(), "-m", "venv", str(venv)], "python -m venv", 120)
        _run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--timeout", "60", "--retries", "1", "-r", str(REQUIREMENTS)],
            "pip install -r tests/e2e/requirements.txt",
            900,
        )
    except BaseException:
        shutil.rmtree(venv, ignore_errors=True)
        raise
    (venv / ".ok").write_text(digest + "\n")
    return python


def ensure_toolchain() -> Toolchain:
    """Install whatever is missing (under the cache's lock) and return the toolchain."""
    cache = cache_dir()
    with _locked(cache):
        claude, version = ensure_claude(cache)
        python = ensure_venv(cache)
    fetch = python.parent / "mcp-server-fetch"
    return Toolchain(str(claude), version, str(python), str(fetch))


if __name__ == "__main__":
    try:
        print(json.dumps(asdict(ensure_toolchain()), indent=1))
    except ProvisionError as e:
        print(f"provision: {e}", file=sys.stderr)
        sys.exit(1)
