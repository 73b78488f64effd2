"""The ContextForge end-to-end stack (docs/gateway.md), started once per session on
127.0.0.1 by :class:`Stack`:

    Redis (Debian's redis-server)
      ├── gateway A (mcpgateway, toolprune plugin) ─┐   one SQLite database,
      └── gateway B (mcpgateway, toolprune plugin) ─┤   one Redis
                                                    ├── "docs": fetch_pool.py (SDK, streamable HTTP) → 4 × (tap → mcp-server-fetch)
                                                    └── "toolprune": python -m toolprune.omitted_server (Redis)
    a loopback site serving ../shared/corpus pages

Each tap (tests/mcp-proxy/tap.py) records every line its mcp-server-fetch process
receives and sends: what the server was asked and what it answered, behind the
gateway. mcp-server-fetch runs without Node on its PATH, so readabilipy uses its
pure-Python mode (0.1 s a page instead of 1.5 s of Node's Readability.js: the
soak's 1,000 calls would take half an hour on 2 cores).

Users: ``admin@example.com`` (registers the servers, adds the basis argument to the
fetch tool's schema), ``alice@example.com`` in team ``alpha``, ``bob@example.com``
in team ``beta``; each gets a team-scoped JWT. The client is the official MCP
Python SDK (streamable HTTP).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from docsite import Site, corpus_pages  # noqa: E402

PY = sys.executable
FETCH_PYTHON = os.environ["TOOLPRUNE_FETCH_PYTHON"]  # the e2e venv (mcp-server-fetch), set by run
REDIS_SERVER = os.environ.get("TOOLPRUNE_REDIS_SERVER", "redis-server")
TAP = str(REPO / "tests" / "mcp-proxy" / "tap.py")

#: The corpus pages served, and the one the tests fetch.
DOC = "mcp-spec-2025-11-25-transports.mdx"
OTHER = "nvm-README.md"
MAX = 100000
PASSWORD = "Zq8-Mv3!Tx9-Lw2?Kp7-Rb5"

MARKER_HEADER = re.compile(r"\[Omitted by relevance: (?P<n>[\d,]+) of (?P<m>[\d,]+) (?:paragraphs|elements) \((?P<dc>[\d,]+) of (?P<tc>[\d,]+) characters\)\..*? id=(?P<id>P\d+)\]")
MARKER = re.compile(r"^\[… (?:paragraphs (?P<a>\d+)–(?P<b>\d+)|paragraph (?P<c>\d+)) omitted: [^\]]*…\]$", re.M)


def markers(body: str) -> tuple[str, list[tuple[int, int]], int, int]:
    """The header's id, every marker's paragraph range, the dropped and total characters."""
    h = MARKER_HEADER.search(body)
    assert h, f"no omission header in: {body[:300]!r}"
    ranges = [(int(m.group("a") or m.group("c")), int(m.group("b") or m.group("c"))) for m in MARKER.finditer(body)]
    return h.group("id"), ranges, int(h.group("dc").replace(",", "")), int(h.group("tc").replace(",", ""))


def kept_chunks(body: str) -> list[str]:
    """The pruned body's text between the header and the markers."""
    rest = body.split("\n", 1)[1]
    return [c.strip("\n") for c in MARKER.split(rest) if c and c.strip("\n") and not c.isdigit()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 120.0, log: Optional[Path] = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"{what} exited ({proc.returncode}): {tail}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {port} in {timeout} s")


def stop(proc: Optional[subprocess.Popen]) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and its children (KiB)."""
    total = 0
    pids = [pid]
    try:
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        pids += [int(k) for k in kids]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


@dataclass
class Gateway:
    name: str
    port: int
    proc: Optional[subprocess.Popen] = None
    log: Optional[Path] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self, prefix: str = "tool prune:") -> List[str]:
        """The gateway's log lines (JSON) whose message starts with ``prefix``."""
        out = []
        if self.log and self.log.exists():
            for raw in self.log.read_text(errors="replace").splitlines():
                try:
                    msg = json.loads(raw).get("message", "")
                except ValueError:
                    msg = raw
                if isinstance(msg, str) and msg.startswith(prefix):
                    out.append(msg)
        return out


@dataclass
class Stack:
    root: Path
    redis_port: int = field(default_factory=free_port)
    fetch_port: int = field(default_factory=free_port)
    omitted_port: int = field(default_factory=free_port)
    procs: Dict[str, subprocess.Popen] = field(default_factory=dict)
    gateways: List[Gateway] = field(default_factory=list)
    tokens: Dict[str, str] = field(default_factory=dict)
    tools: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    site: Optional[Site] = None

    # --- processes -----------------------------------------------------------------

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def spawn(self, name: str, argv: List[str], env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None) -> Path:
        log = self.root / f"{name}.log"
        out = open(log, "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or os.environ.copy(),
                                            cwd=str(cwd or self.root), start_new_session=True)
        return log

    def start_redis(self) -> None:
        log = self.spawn("redis", [REDIS_SERVER, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--protected-mode", "yes"])
        wait_port(self.redis_port, self.procs["redis"], "redis-server", 30, log)

    def stop_redis(self) -> None:
        stop(self.procs.pop("redis", None))

    def gateway_env(self, gw: Gateway) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLPRUNE_", "PLUGINS_"))}
        env.update({
            "HOST": "127.0.0.1", "PORT": str(gw.port),
            "DATABASE_URL": f"sqlite:///{self.root}/gateway.db",
            "CACHE_TYPE": "redis", "REDIS_URL": self.redis_url,
            "JWT_SECRET_KEY": "toolprune-e2e-jwt-secret-0123456789-abcdefghij",
            "AUTH_ENCRYPTION_SECRET": "toolprune-e2e-encryption-secret-0123456789-abcdef",
            "PLATFORM_ADMIN_EMAIL": "admin@example.com", "PLATFORM_ADMIN_PASSWORD": PASSWORD,
            "BASIC_AUTH_PASSWORD": PASSWORD,
            "MCPGATEWAY_UI_ENABLED": "false", "MCPGATEWAY_ADMIN_API_ENABLED": "true",
            "SSRF_ALLOW_LOCALHOST": "true", "SSRF_ALLOW_PRIVATE_NETWORKS": "true",
            "REQUIRE_STRONG_SECRETS": "false", "LOG_LEVEL": "INFO",
            # The soak sends 1,000 calls as one user in a minute or two: over the
            # per-user limits (100 calls a minute), which are not what it measures.
            "RATE_LIMITING_ENABLED": "false", "TOOL_RATE_LIMIT": "1000000",
            "PLUGINS_ENABLED": "true", "PLUGINS_CONFIG_FILE": str(self.root / "plugins.yaml"),
            "TOOLPRUNE_CACHE_DIR": str(self.root / "component-cache"),
            "HOME": str(self.root / "home"),
            "XDG_CONFIG_HOME": str(self.root / "home" / ".config"),
        })
        return env

    def start_gateway(self, gw: Gateway) -> None:
        (self.root / gw.name).mkdir(exist_ok=True)
        gw.log = self.spawn(gw.name, [PY, "-m", "mcpgateway.cli", "--host", "127.0.0.1", "--port", str(gw.port)],
                            env=self.gateway_env(gw), cwd=self.root / gw.name)
        gw.proc = self.procs[gw.name]
        wait_port(gw.port, gw.proc, f"gateway {gw.name}", 240, gw.log)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(gw.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise RuntimeError(f"gateway {gw.name} is not healthy")

    # --- the admin API -------------------------------------------------------------

    def api(self, method: str, path: str, body: Any = None, token: Optional[str] = None, gw: int = 0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.gateways[gw].url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + (token or self.tokens["admin"]))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from None
        return json.loads(raw) if raw else None

    def jwt(self, email: str, teams: Optional[List[str]] = None, admin: bool = False) -> str:
        argv = [PY, "-m", "mcpgateway.utils.create_jwt_token", "--username", email, "--exp", "120",
                "--secret", self.gateway_env(self.gateways[0])["JWT_SECRET_KEY"]]
        if teams:
            argv += ["--teams", ",".join(teams)]
        if admin:
            argv += ["--admin"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=self.gateway_env(self.gateways[0]),
                             cwd=str(self.root))
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip().splitlines()[-1]

    # --- the taps ------------------------------------------------------------------

    def tap_records(self, path: Path) -> List[Dict[str, Any]]:
        """One tap's lines in order, each ``{"dir": "c2s" | "s2c", "t": seconds, "msg": <the JSON-RPC message>}``."""
        out: List[Dict[str, Any]] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("dir") in ("c2s", "s2c"):
                try:
                    out.append({"dir": rec["dir"], "t": rec["t"], "msg": json.loads(rec["line"].encode("latin-1").decode("utf-8"))})
                except ValueError:
                    pass
        return out

    def fetch_calls(self) -> List[Dict[str, Any]]:
        """The ``tools/call`` requests the mcp-server-fetch processes received."""
        return [call for call, _ in self.fetch_exchanges(answered=False)]

    def fetch_exchanges(self, answered: bool = True) -> List[tuple]:
        """``(call, answer text)`` for each ``tools/call`` an mcp-server-fetch process
        received (and answered), in the order they were received."""
        out = []
        for path in sorted(self.root.glob("fetch-tap-*.jsonl")):
            pending: Dict[str, Any] = {}
            for r in self.tap_records(path):
                m = r["msg"]
                key = json.dumps(m.get("id"))
                if r["dir"] == "c2s" and m.get("method") == "tools/call":
                    pending[key] = (r["t"], m)
                    if not answered:
                        out.append((r["t"], m, None))
                elif answered and r["dir"] == "s2c" and key in pending and ("result" in m or "error" in m):
                    t, call = pending.pop(key)
                    text = "".join(b.get("text", "") for b in m.get("result", {}).get("content", []) if b.get("type") == "text")
                    out.append((t, call, text))
        return [(call, text) for _, call, text in sorted(out, key=lambda x: x[0])]

    def last_exchange(self) -> tuple:
        found = self.fetch_exchanges()
        assert found, "mcp-server-fetch answered no call"
        return found[-1]

    def close(self) -> None:
        for name in list(self.procs)[::-1]:
            stop(self.procs.pop(name))
        if self.site is not None:
            self.site.__exit__(None, None, None)


PLUGINS_YAML = """\
plugins:
  - name: "toolprune"
    kind: "toolprune.contextforge.ToolprunePlugin"
    description: "Prunes large tool results to the paragraphs relevant to the user's request"
    version: "0.3.0"
    author: "toolprune"
    hooks: ["tool_pre_invoke", "tool_post_invoke"]
    mode: "transform"
    priority: 900
    config:
      prunable: ["fetch", "*-fetch"]
      threshold: 0.5
      max_records: 100
      omitted_tools: ["toolprune-omitted"]
      redis_url: "{redis}"

plugin_settings:
  plugin_timeout: 60
  fail_on_plugin_error: false
"""


@pytest.fixture(scope="session")
def manifest() -> Dict[str, Any]:
    docs = json.loads((SHARED / "corpus" / "manifest.json").read_text(encoding="utf-8"))
    docs = docs["documents"] if isinstance(docs, dict) and "documents" in docs else docs
    return {d["file"]: d for d in docs}


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("gateway")
    (root / "home").mkdir()
    s = Stack(root)
    try:
        s.site = Site(corpus_pages(SHARED / "corpus", [DOC, OTHER], FETCH_PYTHON))
        s.site.__enter__()
        s.start_redis()
        (root / "plugins.yaml").write_text(PLUGINS_YAML.format(redis=s.redis_url), encoding="utf-8")
        log = s.spawn("fetch", [PY, str(HERE / "fetch_pool.py"), "--port", str(s.fetch_port), "--size", "4", "--taps", str(root),
                                "--python", FETCH_PYTHON, "--", str(Path(FETCH_PYTHON).parent / "mcp-server-fetch"),
                                "--ignore-robots-txt", "--allow-private-ips"])
        wait_port(s.fetch_port, s.procs["fetch"], "fetch_pool.py (mcp-server-fetch)", 120, log)
        log = s.spawn("omitted", [PY, "-m", "toolprune.omitted_server", "--redis", s.redis_url, "--port", str(s.omitted_port)],
                      env={**os.environ, "TOOLPRUNE_CACHE_DIR": str(root / "component-cache")})
        wait_port(s.omitted_port, s.procs["omitted"], "toolprune.omitted_server", 120, log)
        for name in ("gw-a", "gw-b"):
            gw = Gateway(name, free_port())
            s.gateways.append(gw)
            s.start_gateway(gw)  # A first: it creates the database
        s.tokens["admin"] = s.jwt("admin@example.com", admin=True)
        # Calling a tool over /mcp needs tools.execute in a global role (a team
        # role counts only where the request names the team): the admin gives it.
        role = s.api("POST", "/rbac/roles", {"name": "tool_user", "description": "calls tools", "scope": "global",
                                             "permissions": ["tools.read", "tools.execute"]})
        teams = {}
        for team, user in (("alpha", "alice"), ("beta", "bob")):
            s.api("POST", "/auth/email/admin/users", {"email": f"{user}@example.com", "password": PASSWORD, "full_name": user, "is_admin": False})
            made = s.api("POST", "/teams/", {"name": team, "visibility": "private"})
            teams[team] = made["id"]
            s.api("POST", f"/teams/{made['id']}/members", {"email": f"{user}@example.com", "role": "member"})
            s.api("POST", f"/rbac/users/{user}@example.com/roles", {"role_id": role["id"], "scope": "global"})
            s.tokens[user] = s.jwt(f"{user}@example.com", teams=[made["id"]])
        s.api("POST", "/gateways", {"name": "docs", "url": f"http://127.0.0.1:{s.fetch_port}/mcp", "transport": "STREAMABLEHTTP", "visibility": "public"})
        s.api("POST", "/gateways", {"name": "toolprune", "url": f"http://127.0.0.1:{s.omitted_port}/mcp", "transport": "STREAMABLEHTTP", "visibility": "public"})
        added = subprocess.run([PY, "-m", "toolprune.gateway", "add-basis", "--gateway", s.gateways[0].url, "--prunable", "fetch", "*-fetch"],
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, "TOOLPRUNE_GATEWAY_TOKEN": s.tokens["admin"], "TOOLPRUNE_CACHE_DIR": str(root / "component-cache")})
        assert added.returncode == 0 and added.stdout.split() == ["docs-fetch"], (added.stdout, added.stderr[-2000:])
        for tool in s.api("GET", "/tools"):
            s.tools[tool["name"]] = tool
        yield s
    finally:
        s.close()


@asynccontextmanager
async def client(stack: Stack, user: str, gw: int = 0) -> AsyncIterator[Any]:
    """An MCP SDK session through gateway ``gw`` as ``user``."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    url = stack.gateways[gw].url + "/mcp/"
    async with streamablehttp_client(url, headers={"Authorization": "Bearer " + stack.tokens[user]}, timeout=120) as (r, w, _):
        async with ClientSession(r, w) as session:
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "".join(b.text for b in result.content if b.type == "text")
