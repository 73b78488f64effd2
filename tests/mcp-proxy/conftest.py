"""Fixtures for the MCP proxy tests: the provisioned servers, the `toolprune` binary,
a scratch user (HOME, config, session store), the loopback docs site, and `Stack`,
which starts ``tap → toolprune mcp-proxy → tap → server`` for the official Python
SDK client and reads both taps afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import proxy_provision as provision  # noqa: E402
from docsite import Site, corpus_pages  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

TAP = str(HERE / "tap.py")

#: The corpus page the fetch tests serve, and its request (shared/corpus/manifest.json).
DOC = "mcp-spec-2025-11-25-transports.mdx"


@pytest.fixture(scope="session")
def tools() -> provision.Tools:
    return provision.ensure_tools()


@pytest.fixture(scope="session")
def toolprune() -> str:
    path = os.environ.get("TOOLPRUNE_BIN") or str(REPO / "target" / "debug" / "toolprune")
    assert Path(path).exists(), f"build it first: cargo build -p toolprune-cli ({path})"
    return path


@pytest.fixture(scope="session")
def component_cache(tmp_path_factory: pytest.TempPathFactory, toolprune: str) -> str:
    """One compiled-component cache for every proxy of the session, filled once here
    (`toolprune split` compiles the component: seconds on this machine) so that no
    test pays for it."""
    cache = os.environ.get("TOOLPRUNE_CACHE_DIR") or str(tmp_path_factory.mktemp("component-cache"))
    subprocess.run([toolprune, "split", "-"], input=b"warm\n", capture_output=True, check=True, timeout=300,
                   env={**os.environ, "TOOLPRUNE_CACHE_DIR": cache})
    return cache


@pytest.fixture(scope="session")
def manifest() -> dict[str, Any]:
    docs = json.loads((SHARED / "corpus" / "manifest.json").read_text(encoding="utf-8"))
    docs = docs["documents"] if isinstance(docs, dict) and "documents" in docs else docs
    return {d["file"]: d for d in docs}


@pytest.fixture(scope="session")
def site(tools: provision.Tools) -> Iterator[Site]:
    pages = corpus_pages(SHARED / "corpus", [DOC, "nvm-README.md"], tools.python)
    with Site(pages) as s:
        yield s


@dataclass
class Tap:
    """One tap's log: the lines each way, as bytes, and the two pids."""

    path: Path

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(l) for l in self.path.read_text(encoding="utf-8").splitlines() if l.strip()]

    def lines(self, direction: str) -> list[bytes]:
        return [r["line"].encode("latin-1") for r in self.records() if r["dir"] == direction]

    def messages(self, direction: str) -> list[dict[str, Any]]:
        return [json.loads(l) for l in self.lines(direction)]

    def pids(self) -> dict[str, int]:
        return next(r for r in self.records() if r["dir"] == "pids")


@dataclass
class Stack:
    """``tap(outer) → toolprune mcp-proxy → tap(inner) → server``, as stdio parameters."""

    params: StdioServerParameters
    outer: Tap
    inner: Tap
    stderr: Path
    env: dict[str, str] = field(default_factory=dict)

    def log_lines(self, prefix: str = "tool ") -> list[str]:
        if not self.stderr.exists():
            return []
        return [l for l in self.stderr.read_text(encoding="utf-8", errors="replace").splitlines() if l.startswith(prefix)]


class User:
    """A scratch user: HOME, the config file, the session store (0700), the working folder."""

    def __init__(self, root: Path, component_cache: str):
        self.root = root
        self.home = root / "home"
        self.config_dir = root / "config"
        self.store = root / "store"
        self.project = root / "project"
        for d in (self.home, self.config_dir / "toolprune", self.project):
            d.mkdir(parents=True, exist_ok=True)
        self.store.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.store, 0o700)
        self.component_cache = component_cache

    def config(self, text: str) -> None:
        (self.config_dir / "toolprune" / "config.toml").write_text(text, encoding="utf-8")

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_dir),
            "TOOLPRUNE_STORE_DIR": str(self.store),
            "TOOLPRUNE_CACHE_DIR": self.component_cache,
            "LANG": "C.UTF-8",
        }
        env.update(extra)
        return env

    def record_prompt(self, session: str, request: str, *, agent_pid: int | None = None, cwd: str | None = None, at: float | None = None) -> None:
        """What toolprune's prompt hook writes (docs/mcp-proxy.md "Basis")."""
        import time

        d = self.store / session
        d.mkdir(mode=0o700, exist_ok=True)
        record: dict[str, Any] = {"request": request, "at": int(at if at is not None else time.time())}
        if agent_pid is not None:
            record["agent_pid"] = agent_pid
        if cwd is not None:
            record["cwd"] = cwd
        (d / "request.json").write_text(json.dumps(record), encoding="utf-8")


@pytest.fixture
def user(tmp_path: Path, component_cache: str) -> User:
    return User(tmp_path, component_cache)


def stack(toolprune: str, user: User, upstream: list[str], *, proxy_args: tuple[str, ...] = (), env: dict[str, str] | None = None, direct: bool = False) -> Stack:
    """The parameters that start the stack; ``direct=True`` leaves the proxy out (one tap)."""
    root = user.root
    n = len(list(root.glob("outer-*.jsonl")))
    outer, inner, stderr = root / f"outer-{n}.jsonl", root / f"inner-{n}.jsonl", root / f"stderr-{n}.log"
    py = sys.executable
    if direct:
        cmd = [py, TAP, str(outer), "--stderr", str(stderr), "--", *upstream]
    else:
        cmd = [py, TAP, str(outer), "--stderr", str(stderr), "--", toolprune, "mcp-proxy", *proxy_args, "--", py, TAP, str(inner), "--", *upstream]
    full_env = user.env(**(env or {}))
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=full_env, cwd=str(user.project))
    return Stack(params, Tap(outer), Tap(inner), stderr, full_env)


MARKER_HEADER = re.compile(r"\[Omitted by relevance: (?P<n>[\d,]+) of (?P<m>[\d,]+) (?:paragraphs|elements) \((?P<dc>[\d,]+) of (?P<tc>[\d,]+) characters\)\..*? id=(?P<id>P\d+)\]")
MARKER = re.compile(r"^\[… (?:paragraphs (?P<a>\d+)–(?P<b>\d+)|paragraph (?P<c>\d+)) omitted: [^\]]*…\]$", re.M)


def markers(body: str) -> tuple[str, list[tuple[int, int]], int, int]:
    """The header's id, every marker's paragraph range, the dropped and total characters."""
    h = MARKER_HEADER.search(body)
    assert h, f"no omission header in: {body[:300]!r}"
    ranges = []
    for m in MARKER.finditer(body):
        a = int(m.group("a") or m.group("c"))
        b = int(m.group("b") or m.group("c"))
        ranges.append((a, b))
    return h.group("id"), ranges, int(h.group("dc").replace(",", "")), int(h.group("tc").replace(",", ""))


def kept_chunks(body: str) -> list[str]:
    """The pruned body's text between the header and the markers."""
    rest = body.split("\n", 1)[1]
    return [c.strip("\n") for c in MARKER.split(rest) if c and c.strip("\n") and not c.isdigit()]


def shutil_which(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is not installed"
    return found
