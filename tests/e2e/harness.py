"""Run the real Claude Code CLI offline, in a scratch HOME, and read what it sent.

The pieces a test combines (see test_claude_code_probe.py for each in use):

- `Scratch` — a scratch ``HOME``, project folder and ``TMPDIR`` for one
  conversation; writes settings files and the MCP config; `Scratch.env` is the
  minimal environment for a fully offline run (FACTS.md §Environment).
- `Claude` — runs ``claude -p PROMPT`` (or ``--continue``) there against a
  `scripted_anthropic.ScriptedAnthropic` and returns a `ClaudeResult`.
- `docs_server` / `probe_server` — MCP server entries (``mcp-server-fetch`` as
  ``docs``; probe_mcp_server.py, which logs what it receives).
- `ProbeHook` and `hooks_settings` — probe_hook.py registered for hook events,
  its log, and what it answers.
- `FetchOmittedAgent` — a script for the scripted API: fetch a page, read the
  omission marker from the tool_result, call ``omitted`` with its id and range,
  answer; again on the next prompt.
- `find_omission`, `tool_results_by_id`, `tool_result_text`, `tool_names_by_id` —
  read toolprune's markers and every tool_result across recorded requests.

Paths in these helpers are absolute; nothing here writes outside the scratch
folder it is given.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from provision import Toolchain
from scripted_anthropic import MessagesRequest, Reply, text, tool_use

HERE = Path(__file__).resolve().parent
PROBE_HOOK = HERE / "probe_hook.py"
PROBE_MCP_SERVER = HERE / "probe_mcp_server.py"

#: The hook events the probe registers for by default.
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
#: Events whose hook entries take a ``matcher`` (a tool-name pattern).
TOOL_EVENTS = ("PreToolUse", "PostToolUse")


# -- scratch folders and the environment ----------------------------------------


class Scratch:
    """A scratch ``home/``, ``project/`` and ``tmp/`` under ``root`` (created)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.tmp = self.root / "tmp"
        for d in (self.home, self.project, self.tmp):
            d.mkdir(parents=True, exist_ok=True)

    @property
    def user_settings(self) -> Path:
        """``~/.claude/settings.json`` of the scratch HOME."""
        return self.home / ".claude" / "settings.json"

    @property
    def project_settings(self) -> Path:
        """``<project>/.claude/settings.json``."""
        return self.project / ".claude" / "settings.json"

    @property
    def project_local_settings(self) -> Path:
        """``<project>/.claude/settings.local.json``."""
        return self.project / ".claude" / "settings.local.json"

    @property
    def project_mcp_json(self) -> Path:
        """``<project>/.mcp.json``."""
        return self.project / ".mcp.json"

    @staticmethod
    def write_json(path: Path, obj: Any) -> Path:
        """Write ``obj`` as JSON to ``path`` (parents created) and return the path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj, indent=1), encoding="utf-8")
        return path

    def env(self, api_url: str, *, tool_search: bool = False, extra: dict[str, str | None] | None = None) -> dict[str, str]:
        """The minimal environment of an offline run against ``api_url``.

        ``PATH`` is inherited (hooks and MCP servers are found through it); the rest
        is set: the scratch ``HOME`` and ``TMPDIR``, the loopback API with a dummy
        key, telemetry and non-essential traffic off, and ``ENABLE_TOOL_SEARCH=false``
        unless ``tool_search`` (without it, MCP tools are deferred behind ToolSearch
        and never appear in the request's ``tools``). ``extra`` adds variables; a
        ``None`` value removes one.
        """
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            "ANTHROPIC_BASE_URL": api_url,
            "ANTHROPIC_API_KEY": "sk-test",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        if not tool_search:
            env["ENABLE_TOOL_SEARCH"] = "false"
        for k, v in (extra or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env


# -- running the CLI --------------------------------------------------------------


@dataclass
class ClaudeResult:
    """One ``claude -p`` run: exit status, stdout, stderr, wall seconds, argv."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    argv: list[str]

    def check(self) -> "ClaudeResult":
        """Raise AssertionError with stdout/stderr unless the run exited 0."""
        if self.returncode != 0:
            raise AssertionError(f"claude exited {self.returncode}\nstdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}")
        return self


class Claude:
    """The pinned ``claude`` CLI run in a `Scratch` (cwd = its project folder)."""

    def __init__(self, toolchain: Toolchain, scratch: Scratch):
        self.toolchain = toolchain
        self.scratch = scratch

    def run(
        self,
        prompt: str,
        api_url: str,
        *,
        mcp_servers: dict[str, Any] | None = None,
        allowed_tools: Iterable[str] = (),
        continue_: bool = False,
        extra_args: Iterable[str] = (),
        env: dict[str, str | None] | None = None,
        tool_search: bool = False,
        timeout: float = 300,
    ) -> ClaudeResult:
        """Run ``claude -p [--continue] PROMPT`` against the API at ``api_url``.

        ``mcp_servers`` (``{name: {"command", "args", "env"}}``) is written to
        ``<root>/mcp.json`` and passed with ``--mcp-config``; ``allowed_tools``
        goes to ``--allowedTools`` (comma-joined); ``env`` adds to (``None``: removes
        from) `Scratch.env`.
        """
        argv = [self.toolchain.claude, "-p"]
        if continue_:
            argv.append("--continue")
        if mcp_servers is not None:
            cfg = Scratch.write_json(self.scratch.root / "mcp.json", {"mcpServers": mcp_servers})
            argv += ["--mcp-config", str(cfg)]
        tools = list(allowed_tools)
        if tools:
            argv += ["--allowedTools", ",".join(tools)]
        argv += list(extra_args)
        # `--` ends the options: a list option such as --allowedTools would
        # otherwise take the prompt as one more value.
        argv += ["--", prompt]
        started = time.monotonic()
        p = subprocess.run(
            argv,
            cwd=self.scratch.project,
            env=self.scratch.env(api_url, tool_search=tool_search, extra=env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return ClaudeResult(p.returncode, p.stdout, p.stderr, time.monotonic() - started, argv)


# -- MCP servers ------------------------------------------------------------------


def docs_server(toolchain: Toolchain) -> dict[str, Any]:
    """``mcp-server-fetch`` allowed to reach loopback pages (``--allow-private-ips``)
    and not reading robots.txt (``--ignore-robots-txt``)."""
    return {"command": toolchain.fetch_server, "args": ["--allow-private-ips", "--ignore-robots-txt"]}


def probe_server(toolchain: Toolchain, log: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """probe_mcp_server.py, logging to ``log`` (JSON lines), with ``env`` if given."""
    entry: dict[str, Any] = {"command": toolchain.python, "args": [str(PROBE_MCP_SERVER), str(log)]}
    if env:
        entry["env"] = env
    return entry


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of ``path`` ([] when it does not exist)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- hooks ------------------------------------------------------------------------


def hook_command(*argv: str) -> str:
    """A hook ``command`` string running ``argv`` (shell-quoted)."""
    return " ".join(shlex.quote(a) for a in argv)


def hooks_settings(
    command: str,
    events: Iterable[str] = HOOK_EVENTS,
    matcher: str = "*",
    timeout: float | None = None,
) -> dict[str, Any]:
    """A settings object ``{"hooks": …}`` running ``command`` on each of ``events``.

    Tool events (PreToolUse, PostToolUse) get ``matcher``; ``timeout`` (seconds)
    is set on each hook when given.
    """
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    hooks: dict[str, Any] = {}
    for ev in events:
        entry: dict[str, Any] = {"hooks": [hook]}
        if ev in TOOL_EVENTS:
            entry = {"matcher": matcher, **entry}
        hooks[ev] = [entry]
    return {"hooks": hooks}


class ProbeHook:
    """probe_hook.py with its config and log in ``folder``.

    `command` is the hook command line; `respond` sets what it answers per event
    (probe_hook.py's docstring has the rule form); `events` reads its log.
    """

    def __init__(self, folder: Path, python: str = sys.executable, tag: str = "probe"):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.config = self.folder / f"{tag}-config.json"
        self.log = self.folder / f"{tag}-log.jsonl"
        self.python = python
        self._responses: dict[str, list[dict[str, Any]]] = {}
        self._write()

    @property
    def command(self) -> str:
        return hook_command(self.python, str(PROBE_HOOK), str(self.config))

    def respond(self, event: str, *rules: dict[str, Any]) -> "ProbeHook":
        """Answer ``event`` by the first matching rule (replaces earlier rules for it)."""
        self._responses[event] = list(rules)
        self._write()
        return self

    def clear(self) -> None:
        """No answers (log only)."""
        self._responses = {}
        self._write()

    def _write(self) -> None:
        Scratch.write_json(self.config, {"log": str(self.log), "respond": self._responses})

    def calls(self, event: str | None = None) -> list[dict[str, Any]]:
        """The logged calls (``stdin``, ``argv``, ``cwd``, ``env``), optionally of one event."""
        calls = read_jsonl(self.log)
        return [c for c in calls if event is None or c["stdin"].get("hook_event_name") == event]

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        """The stdin JSON of each logged call, optionally of one event."""
        return [c["stdin"] for c in self.calls(event)]


def post_tool_use_replacement(tool: str, new_text: str, key: str = "updatedMCPToolOutput") -> dict[str, Any]:
    """A probe rule answering PostToolUse of ``tool`` with ``{key: [text block]}``.

    ``{{text}}`` in ``new_text`` stands for the original text (probe_hook.py).
    """
    return {
        "tool": tool,
        "stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse", key: [{"type": "text", "text": new_text}]}},
    }


def pre_tool_use_add_session(tool: str) -> dict[str, Any]:
    """A probe rule answering PreToolUse of ``tool``: allow, with ``session_id`` added to the input."""
    return {
        "tool": tool,
        "stdout": {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": {"{{tool_input}}": 1, "session_id": "{{session_id}}"},
            }
        },
    }


# -- reading the conversation -----------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", [])
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def tool_names_by_id(messages: list[dict[str, Any]]) -> dict[str, str]:
    """``{tool_use_id: tool name}`` from the assistant ``tool_use`` blocks of ``messages``."""
    names = {}
    for m in messages:
        if m.get("role") == "assistant":
            for b in _blocks(m):
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]
    return names


def tool_result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block (string content, or its text blocks joined)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def tool_results_by_id(bodies: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Every tool_result across request ``bodies``, per ``tool_use_id``.

    Values are the result's ``content`` serialized canonically (JSON, sorted keys,
    no spaces, non-ASCII kept), one entry per request that carries the result,
    in request order — equal entries mean the request repeated the same bytes
    (what the prompt cache needs). ``cache_control`` is not part of ``content``.
    """
    out: dict[str, list[str]] = {}
    for body in bodies:
        for m in body.get("messages", []):
            if m.get("role") != "user":
                continue
            for b in _blocks(m):
                if b.get("type") == "tool_result":
                    out.setdefault(b["tool_use_id"], []).append(
                        json.dumps(b.get("content"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                    )
    return out


@dataclass(frozen=True)
class Omission:
    """toolprune's header id and its first marker's range (inclusive), from a pruned text."""

    id: str
    first: int
    last: int


_HEADER = re.compile(r"(?:\[Omitted by relevance:|【関連度で)[^\n]*?id=(?P<id>[A-Za-z0-9_-]+)[\]】]")
_MARKER = re.compile(
    r"[\[［]… (?:(?:paragraphs?|elements?) (?P<a>\d+)(?:–(?P<b>\d+))? omitted"
    r"|(?:段落|要素) (?P<ja>\d+)(?:〜(?P<jb>\d+))?・)"
)


def page_path(doc: str) -> str:
    """The loopback site's path of a corpus document (``docsite.corpus_pages``): ``/docs/<stem>.html``."""
    return f"/docs/{doc.rsplit('.', 1)[0]}.html"


def verbatim_pieces(body: str, page: str) -> list[str]:
    """The kept paragraphs of a pruned ``body`` (after its header, markers skipped), each
    asserted to occur in ``page`` byte for byte and in order."""
    header, _, rest = body.partition("\n\n")
    assert header.startswith("[Omitted by relevance:"), header[:300]
    pieces, at = [], 0
    for piece in rest.split("\n\n"):
        if not piece or piece.startswith("[… paragraph"):
            continue
        found = page.find(piece, at)
        assert found >= 0, f"not verbatim from the page: {piece[:200]!r}"
        at = found + len(piece)
        pieces.append(piece)
    return pieces


def find_omission(text: str) -> Omission | None:
    """The header's id and the first marker's range in a pruned text (SPEC §9), or None.

    Reads both languages and both units: ``[Omitted by relevance: … id=P1]`` /
    ``【関連度で…id=P1】``, then ``[… paragraphs 8–14 omitted: …]``, ``[… paragraph
    20 omitted: …]``, ``[… elements 0–1 omitted: …]``, ``［… 段落 8〜14・…］``.
    None when there is no header or no marker after it.
    """
    h = _HEADER.search(text)
    if not h:
        return None
    m = _MARKER.search(text, h.start())
    if not m:
        return None
    a = m.group("a") or m.group("ja")
    b = m.group("b") or m.group("jb") or a
    return Omission(h.group("id"), int(a), int(b))


class FetchOmittedAgent:
    """A scripted model: per user prompt, fetch a page; read any omission back; answer.

    ``pages`` maps each prompt to the URL its turn fetches. On a request whose last
    user message carries one of the prompts as a text block (a new turn — with
    ``--continue`` that block shares the message with the previous turn's last
    tool_result), it calls ``fetch_tool`` with ``{"url", "max_length"}``. On the
    fetch's tool_result: if `find_omission` finds a marker, it calls
    ``omitted_tool`` with ``{"id", "from", "to"}``; otherwise it answers. On the
    ``omitted`` tool_result it answers ``answer``. ``decisions`` records each step
    (``(request index, action)``) for assertions.
    """

    def __init__(
        self,
        pages: dict[str, str],
        fetch_tool: str = "mcp__docs__fetch",
        omitted_tool: str = "mcp__toolprune__omitted",
        answer: str = "Answered from the page.",
        max_length: int = 100000,
    ):
        self.pages = dict(pages)
        self.fetch_tool = fetch_tool
        self.omitted_tool = omitted_tool
        self.answer = answer
        self.max_length = max_length
        self.decisions: list[tuple[int, str]] = []

    def __call__(self, req: MessagesRequest) -> Reply:
        for prompt, url in self.pages.items():
            if any(t.strip() == prompt for t in req.user_texts()):
                self.decisions.append((req.index, f"fetch {url}"))
                return tool_use(self.fetch_tool, {"url": url, "max_length": self.max_length})
        results = req.tool_results()
        if not results:
            raise AssertionError(f"request {req.index}: neither a known prompt nor a tool_result in the last message")
        names = tool_names_by_id(req.messages)
        last = results[-1]
        tool = names.get(last["tool_use_id"], "")
        if tool == self.fetch_tool:
            om = find_omission(tool_result_text(last))
            if om:
                self.decisions.append((req.index, f"omitted {om.id} {om.first}-{om.last}"))
                return tool_use(self.omitted_tool, {"id": om.id, "from": om.first, "to": om.last})
        self.decisions.append((req.index, "answer"))
        return text(self.answer)
