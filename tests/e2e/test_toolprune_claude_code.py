"""toolprune in the real Claude Code CLI, end to end (issue 18).

The pinned ``claude`` (provision.py) runs offline in a scratch HOME against the scripted
Messages API; the real ``mcp-server-fetch`` (as ``docs``, via ``--mcp-config``) fetches
pages of ``../shared/corpus`` rendered to HTML from a loopback site; toolprune is
installed either way (issue 23), each module fixture and case (e) once per way:

- ``settings``: toolprune's own installer (``toolprune install claude-code --user``: hooks in
  ``~/.claude/settings.json``, the ``omitted`` MCP server in ``~/.claude.json``);
- ``plugin``: Claude Code's own commands on the marketplace folder ``toolprune plugin
  build`` writes (``claude plugin marketplace add DIR``, ``claude plugin install
  toolprune@toolprune``): the hooks run the plugin's ``bin/toolprune … --plugin``, the tool
  is ``mcp__plugin_toolprune_toolprune__omitted``.

A probe
hook in the project's settings only logs PostToolUse, so the test knows the page the MCP
server returned before toolprune replaced it.

What it asserts, from the requests the scripted API received:

(a) the fetch's tool_result carries toolprune's marker, and every kept piece is verbatim
    from the page the MCP server returned;
(b) the scripted model calls ``omitted`` with the marker's id and range and gets the
    dropped paragraphs verbatim (a piece of the page that is not in the body);
(c) every tool_result's bytes are the same in every later request (cache-stable);
(d) in a second prompt of the same session (``--continue``), ``omitted`` with turn 1's id
    never returns turn 2's document (it answers ``not_found``: the session's end dropped
    turn 1's records; ids count on, so turn 2's result is P2);
(e) with the store unusable (its root is a file), the original page reaches the model and
    the run still succeeds;
(f) ``toolprune stats`` on the scratch store counts the two pruned results, the characters
    (and estimated tokens) the model did not receive, and what ``omitted`` read back, all
    equal to what the scripted API received;
(g) a model that fetches the pruned page again with the same arguments gets it whole (the
    repeat gate), counted by stats as a repeat.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from docsite import Site, corpus_pages
from harness import (
    Claude,
    ClaudeResult,
    Omission,
    ProbeHook,
    Scratch,
    docs_server,
    find_omission,
    hooks_settings,
    page_path,
    tool_names_by_id,
    tool_result_text,
    tool_results_by_id,
    verbatim_pieces,
)
from provision import Toolchain
from scripted_anthropic import MessagesRequest, Reply, ScriptedAnthropic, text, tool_use

FETCH = "mcp__docs__fetch"
OMITTED = "mcp__toolprune__omitted"
#: The plugin's server is ``plugin:toolprune:toolprune``: its tools are named so.
PLUGIN_OMITTED = "mcp__plugin_toolprune_toolprune__omitted"
MODES = ("settings", "plugin")
DOC_1 = "rust-book-ch08-02-strings.md"
DOC_2 = "rust-blog-cargo-dev-cycle-1.90.md"
PROMPT_1 = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?"
PROMPT_2 = "What did the Cargo team discuss about moving Cargo's files to XDG base directory paths? Also, what is the status of a `cargo doc --serve` command?"
#: What the model reads for an id the store does not hold (the guest's not_found, SPEC §10).
NOT_FOUND = "There is no text with id="


class PruneAgent:
    """The scripted model: per prompt, fetch its page; on a pruned result call ``omitted``
    — first with every earlier turn's id and range, then with this result's; then answer.

    ``calls`` records each ``omitted`` call as ``(turn, arguments)`` and ``answers`` the
    text it got back, in order.
    """

    def __init__(self, turns: list[tuple[str, str]], omitted: str = OMITTED):
        self.turns = turns
        self.omitted = omitted
        self.turn = -1
        self.omissions: dict[int, Omission] = {}
        self.pending: list[dict[str, Any]] = []
        self.calls: list[tuple[int, dict[str, Any]]] = []
        self.answers: list[str] = []

    def _call_omitted(self) -> Reply:
        args = self.pending.pop(0)
        self.calls.append((self.turn, args))
        return tool_use(self.omitted, args)

    def __call__(self, req: MessagesRequest) -> Reply:
        for i, (prompt, url) in enumerate(self.turns):
            if any(t.strip() == prompt for t in req.user_texts()):
                self.turn = i
                return tool_use(FETCH, {"url": url, "max_length": 100000})
        results = req.tool_results()
        if not results:
            raise AssertionError(f"request {req.index}: neither a prompt nor a tool_result")
        last = results[-1]
        name = tool_names_by_id(req.messages).get(last["tool_use_id"], "")
        if name == FETCH:
            om = find_omission(tool_result_text(last))
            if om is None:
                return text("Answered from the whole page.")
            self.omissions[self.turn] = om
            earlier = [self.omissions[t] for t in sorted(self.omissions) if t < self.turn]
            self.pending = [{"id": o.id, "from": o.first, "to": o.last} for o in earlier + [om]]
            return self._call_omitted()
        if name == self.omitted:
            self.answers.append(tool_result_text(last))
            if self.pending:
                return self._call_omitted()
            return text("Answered from the page.")
        raise AssertionError(f"request {req.index}: unexpected tool_result of {name!r}")


def toolprune_env(scratch: Scratch) -> dict[str, str]:
    return {"PATH": scratch.env("http://127.0.0.1:9")["PATH"], "HOME": str(scratch.home), "LANG": "C.UTF-8"}


def claude_plugin(toolchain: Toolchain, scratch: Scratch, *args: str) -> str:
    """``claude plugin ARGS`` in the scratch HOME (offline); its stdout."""
    p = subprocess.run([toolchain.claude, "plugin", *args], cwd=scratch.project, env=scratch.env("http://127.0.0.1:9"),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"claude plugin {' '.join(args)}:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def install(toolprune: str, scratch: Scratch, mode: str = "settings", toolchain: Toolchain | None = None,
            plugins: Path | None = None) -> str:
    """toolprune into the scratch HOME — ``toolprune install claude-code --user``, or (mode
    ``plugin``) Claude Code's ``plugin marketplace add`` + ``plugin install`` — then
    ``doctor`` (which also compiles the component into the scratch HOME's cache)."""
    env = toolprune_env(scratch)
    if mode == "settings":
        p = subprocess.run([toolprune, "install", "claude-code", "--user"], cwd=scratch.project, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        out = p.stdout
    else:
        assert toolchain is not None and plugins is not None
        out = claude_plugin(toolchain, scratch, "marketplace", "add", str(plugins))
        out += claude_plugin(toolchain, scratch, "install", "toolprune@toolprune")
    d = subprocess.run([toolprune, "doctor", "claude-code"], cwd=scratch.project, env=env,
                       capture_output=True, text=True, timeout=300)
    assert d.returncode == 0, f"doctor:\n{d.stdout}\n{d.stderr}"
    if mode == "plugin":
        assert "the plugin is active" in d.stdout, d.stdout
    return out


def probe_post_tool_use(scratch: Scratch) -> ProbeHook:
    """A log-only PostToolUse hook on the fetch, in the project's settings."""
    probe = ProbeHook(scratch.root / "probe")
    Scratch.write_json(scratch.project_settings, hooks_settings(probe.command, events=("PostToolUse",), matcher=FETCH))
    return probe


@dataclass
class Conversation:
    scratch: Scratch
    installed: str
    pages: dict[str, str]
    turns: list[ClaudeResult]
    requests: list[dict[str, Any]]
    agent: PruneAgent
    originals: list[str]
    toolprune: str
    mode: str = "settings"
    seconds: list[float] = field(default_factory=list)


@pytest.fixture(scope="module", params=MODES)
def conversation(request: pytest.FixtureRequest, toolchain: Toolchain, corpus: Path, toolprune_bin: str,
                 plugin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    mode = request.param
    scratch = Scratch(tmp_path_factory.mktemp(f"toolprune-claude-{mode}"))
    installed = install(toolprune_bin, scratch, mode, toolchain, plugin_dir)
    probe = probe_post_tool_use(scratch)
    claude = Claude(toolchain, scratch)
    servers = {"docs": docs_server(toolchain)}
    env = {"MCP_CONNECTION_NONBLOCKING": "false"}
    with Site(corpus_pages(corpus, [DOC_1, DOC_2], toolchain.python)) as site:
        urls = [site.url + page_path(DOC_1), site.url + page_path(DOC_2)]
        agent = PruneAgent([(PROMPT_1, urls[0]), (PROMPT_2, urls[1])], PLUGIN_OMITTED if mode == "plugin" else OMITTED)
        with ScriptedAnthropic(agent) as api:
            turns = [claude.run(PROMPT_1, api.url, mcp_servers=servers, allowed_tools=[FETCH], env=env).check()]
            turns.append(claude.run(PROMPT_2, api.url, mcp_servers=servers, allowed_tools=[FETCH], env=env, continue_=True).check())
            assert not api.errors, api.errors
            requests = api.main_requests()
    originals = [e["tool_response"][0]["text"] for e in probe.events("PostToolUse")]
    return Conversation(scratch, installed, dict(zip(urls, originals)), turns, requests, agent, originals,
                        toolprune_bin, mode, [t.seconds for t in turns])


def fetch_results(conv: Conversation) -> list[str]:
    """The first occurrence of each fetch tool_result, in order (the model's view)."""
    out = []
    for tool_use_id, contents in tool_results_by_id(conv.requests).items():
        names = {}
        for body in conv.requests:
            names.update(tool_names_by_id(body["messages"]))
        if names.get(tool_use_id) == FETCH:
            out.append(json.loads(contents[0]))
    return out


def test_the_installer_registers_hooks_and_tool_and_the_tool_is_in_the_first_request(conversation: Conversation) -> None:
    settings = json.loads(conversation.scratch.user_settings.read_text())
    if conversation.mode == "settings":
        assert {"UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionEnd"} <= set(settings["hooks"])
        assert OMITTED in settings["permissions"]["allow"]
        servers = json.loads((conversation.scratch.home / ".claude.json").read_text())["mcpServers"]
        assert servers["toolprune"]["args"] == ["mcp"]
    else:
        # Claude Code's own install: the plugin enabled, no hook of ours in the settings.
        assert settings["enabledPlugins"] == {"toolprune@toolprune": True}
        assert "hooks" not in settings and "permissions" not in settings
    assert conversation.agent.omitted in [t["name"] for t in conversation.requests[0]["tools"]]
    print(f"{conversation.mode}: claude -p turns took {', '.join(f'{s:.1f} s' for s in conversation.seconds)}")


def test_a_the_fetch_result_is_pruned_and_its_kept_text_is_verbatim(conversation: Conversation) -> None:
    results = fetch_results(conversation)
    assert len(results) == 2 and len(conversation.originals) == 2
    for content, original in zip(results, conversation.originals):
        (block,) = content
        body = block["text"]
        assert body != original and len(body) < len(original)
        pieces = verbatim_pieces(body, original)
        assert len("".join(pieces)) > 1000
    assert "id=P1]" in results[0][0]["text"]
    assert "id=P2]" in results[1][0]["text"], "ids count on across the turns of a conversation"


def test_b_omitted_returns_the_dropped_paragraphs_verbatim(conversation: Conversation) -> None:
    agent = conversation.agent
    own = [(i, args) for i, (turn, args) in enumerate(agent.calls) if args["id"] == agent.omissions[turn].id]
    assert [agent.calls[i][0] for i, _ in own] == [0, 1], agent.calls
    for (i, args), original, content in zip(own, conversation.originals, fetch_results(conversation)):
        answer = agent.answers[i]
        assert answer and not answer.startswith(NOT_FOUND), answer
        assert answer in original, "the dropped paragraphs, verbatim and contiguous"
        assert answer.strip() not in content[0]["text"], "and they were not in the body"


def test_c_every_tool_result_repeats_byte_for_byte_in_later_requests(conversation: Conversation) -> None:
    per_id = tool_results_by_id(conversation.requests)
    assert len(per_id) == 5  # two fetches, three omitted calls
    for tool_use_id, contents in per_id.items():
        assert len(set(contents)) == 1, f"{tool_use_id} changed between requests"
    assert max(len(c) for c in per_id.values()) >= 5


def test_d_turn_one_id_never_returns_turn_two_document(conversation: Conversation) -> None:
    agent = conversation.agent
    (i,) = [i for i, (turn, args) in enumerate(agent.calls) if turn == 1 and args["id"] == agent.omissions[0].id]
    answer = agent.answers[i]
    assert answer.startswith(f"{NOT_FOUND}{agent.omissions[0].id} here"), answer
    assert answer not in conversation.originals[1]


@pytest.mark.parametrize("mode", MODES)
def test_e_an_unusable_store_passes_the_page_unchanged_and_the_run_succeeds(
    mode: str, toolchain: Toolchain, corpus: Path, toolprune_bin: str, plugin_dir: Path, tmp_path: Path
) -> None:
    scratch = Scratch(tmp_path)
    install(toolprune_bin, scratch, mode, toolchain, plugin_dir)
    probe = probe_post_tool_use(scratch)
    store = scratch.home / ".cache" / "toolprune" / "sessions"
    shutil.rmtree(store, ignore_errors=True)  # doctor made it
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text("not a directory\n")
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = PruneAgent([(PROMPT_1, site.url + page_path(DOC_1))])
        with ScriptedAnthropic(agent) as api:
            started = time.monotonic()
            run = Claude(toolchain, scratch).run(PROMPT_1, api.url, mcp_servers={"docs": docs_server(toolchain)},
                                                 allowed_tools=[FETCH], env={"MCP_CONNECTION_NONBLOCKING": "false"})
            run.check()
            requests = api.main_requests()
    assert run.stdout.strip() == "Answered from the whole page."
    assert "hook" not in run.stderr.lower(), run.stderr
    (original,) = [e["tool_response"][0]["text"] for e in probe.events("PostToolUse")]
    received = [json.loads(c[0]) for c in tool_results_by_id(requests).values()]
    assert received == [[{"type": "text", "text": original}]], "the original page reached the model"
    print(f"unusable store: claude -p took {time.monotonic() - started:.1f} s")


def toolprune_stats(conv: Conversation, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolprune stats`` on the scratch HOME's store (the hooks' and the MCP server's log)."""
    p = subprocess.run([conv.toolprune, "stats", *args], env={**toolprune_env(conv.scratch), "TZ": "UTC"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


def test_f_stats_counts_what_the_model_did_not_receive_and_what_it_read_back(conversation: Conversation) -> None:
    received = [content[0]["text"] for content in fetch_results(conversation)]
    removed = sum(len(original) - len(body) for original, body in zip(conversation.originals, received))
    report = json.loads(toolprune_stats(conversation, "--json", "--agent", "claude-code", "--tool", FETCH).stdout)
    total = report["total"]
    assert report["log"]["skipped"] == 0, report["log"]
    assert total["seen"] == total["pruned"] == len(received) == 2
    assert total["outcomes"] == {"ok": 2}
    assert total["chars"]["pruned"] == sum(len(o) for o in conversation.originals)
    assert total["chars"]["removed"] == removed, "the characters the model did not receive"
    assert report["tokens"] == {"estimate": True, "chars_per_token": 4.0}
    assert total["tokens_removed"] == int(removed / 4 + 0.5)
    # omitted: every call the model made, on the fetch's rows (turn 1's id asked again in
    # turn 2 answers not_found), and the characters it received back.
    agent = conversation.agent
    read_back = [a for a in agent.answers if not a.startswith(NOT_FOUND)]
    assert total["omitted"]["calls"] == len(agent.calls) == 3
    assert total["omitted"]["outcomes"] == {"ok": len(read_back), "not_found": len(agent.calls) - len(read_back)}
    assert total["omitted"]["chars_read_back"] == sum(len(a) for a in read_back)
    assert total["read_back_share"] == pytest.approx(sum(len(a) for a in read_back) / removed)
    table = toolprune_stats(conversation).stdout
    total_row = next(line for line in table.splitlines() if line.startswith("total "))
    assert f" {removed} " in total_row and f" {int(removed / 4 + 0.5)} " in total_row, table
    assert any(line.split()[1:3] == ["claude-code", FETCH] for line in table.splitlines()[1:]), table
    print(f"toolprune stats after the Claude Code run:\n{table}")


def one_fetch(toolchain: Toolchain, corpus: Path, scratch: Scratch, omitted: str = OMITTED) -> tuple[PruneAgent, list[dict[str, Any]], str]:
    """One ``claude -p`` turn fetching DOC_1 with a log-only probe on the fetch: the agent,
    the requests the API received, and the page the MCP server returned."""
    probe = probe_post_tool_use(scratch)
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = PruneAgent([(PROMPT_1, site.url + page_path(DOC_1))], omitted)
        with ScriptedAnthropic(agent) as api:
            Claude(toolchain, scratch).run(PROMPT_1, api.url, mcp_servers={"docs": docs_server(toolchain)},
                                           allowed_tools=[FETCH], env={"MCP_CONNECTION_NONBLOCKING": "false"}).check()
            requests = api.main_requests()
    (original,) = [e["tool_response"][0]["text"] for e in probe.events("PostToolUse")]
    return agent, requests, original


def doctor(toolprune: str, scratch: Scratch) -> subprocess.CompletedProcess[str]:
    return subprocess.run([toolprune, "doctor", "claude-code"], cwd=scratch.project, env=toolprune_env(scratch),
                          capture_output=True, text=True, timeout=300)


def test_the_plugin_uninstalled_by_claude_code_leaves_no_toolprune_hook(
    toolchain: Toolchain, corpus: Path, toolprune_bin: str, plugin_dir: Path, tmp_path: Path
) -> None:
    scratch = Scratch(tmp_path)
    install(toolprune_bin, scratch, "plugin", toolchain, plugin_dir)
    claude_plugin(toolchain, scratch, "uninstall", "toolprune@toolprune")
    settings = json.loads(scratch.user_settings.read_text())
    assert not settings.get("enabledPlugins") and "hooks" not in settings, settings
    assert json.loads((scratch.home / ".claude/plugins/installed_plugins.json").read_text())["plugins"] == {}
    d = doctor(toolprune_bin, scratch)
    assert d.returncode == 1 and "the plugin is active" not in d.stdout, d.stdout
    agent, requests, original = one_fetch(toolchain, corpus, scratch)
    received = [json.loads(c[0]) for c in tool_results_by_id(requests).values()]
    assert received == [[{"type": "text", "text": original}]], "no hook changed the page"
    assert PLUGIN_OMITTED not in [t["name"] for t in requests[0]["tools"]]
    assert not agent.calls


def test_installed_both_ways_a_result_is_pruned_once_and_doctor_names_the_active_one(
    toolchain: Toolchain, corpus: Path, toolprune_bin: str, plugin_dir: Path, tmp_path: Path
) -> None:
    scratch = Scratch(tmp_path)
    install(toolprune_bin, scratch, "settings")
    claude_plugin(toolchain, scratch, "marketplace", "add", str(plugin_dir))
    claude_plugin(toolchain, scratch, "install", "toolprune@toolprune")
    d = doctor(toolprune_bin, scratch)
    assert d.returncode == 0, d.stdout
    assert "installed both ways: the settings hooks are active" in d.stdout, d.stdout
    agent, requests, original = one_fetch(toolchain, corpus, scratch)
    fetched = [json.loads(c[0]) for i, c in tool_results_by_id(requests).items()
               if any(tool_names_by_id(r["messages"]).get(i) == FETCH for r in requests)]
    (content,) = fetched
    body = content[0]["text"]
    assert body.count("[Omitted by relevance:") == 1 and "id=P1]" in body, body[:300]
    verbatim_pieces(body, original)
    report = json.loads(subprocess.run([toolprune_bin, "stats", "--json", "--tool", FETCH], env={**toolprune_env(scratch), "TZ": "UTC"},
                                       capture_output=True, text=True, timeout=60).stdout)
    assert report["total"]["seen"] == report["total"]["pruned"] == 1, report["total"]
    # The settings' omitted answers (the plugin's PreToolUse stands back for it).
    assert agent.answers and not agent.answers[0].startswith(NOT_FOUND), agent.answers


class AskAgainAgent:
    """The scripted model that, given a pruned page, fetches it again with the same
    arguments (keys in another order) instead of calling ``omitted``; then answers."""

    def __init__(self, prompt: str, url: str):
        self.prompt, self.url = prompt, url
        self.fetched: list[str] = []

    def __call__(self, req: MessagesRequest) -> Reply:
        results = req.tool_results()
        if not results:
            assert any(t.strip() == self.prompt for t in req.user_texts()), f"request {req.index}: no prompt"
            return tool_use(FETCH, {"url": self.url, "max_length": 100000})
        self.fetched.append(tool_result_text(results[-1]))
        if len(self.fetched) == 1:
            return tool_use(FETCH, {"max_length": 100000, "url": self.url})
        return text("Answered from the page fetched again.")


def test_g_a_model_that_fetches_the_pruned_page_again_gets_it_whole(
    toolchain: Toolchain, corpus: Path, toolprune_bin: str, tmp_path: Path
) -> None:
    """The repeat gate (SPEC §2) in the real PostToolUse hook: the same call again after
    its result was pruned passes unchanged, and stats count it as a repeat."""
    scratch = Scratch(tmp_path)
    install(toolprune_bin, scratch)
    probe = probe_post_tool_use(scratch)
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = AskAgainAgent(PROMPT_1, site.url + page_path(DOC_1))
        with ScriptedAnthropic(agent) as api:
            Claude(toolchain, scratch).run(PROMPT_1, api.url, mcp_servers={"docs": docs_server(toolchain)},
                                           allowed_tools=[FETCH], env={"MCP_CONNECTION_NONBLOCKING": "false"}).check()
            assert not api.errors, api.errors
    first, second = [e["tool_response"][0]["text"] for e in probe.events("PostToolUse")]
    assert first == second, "the server answered the same page twice"
    assert len(agent.fetched) == 2, agent.fetched
    assert find_omission(agent.fetched[0]) is not None, "the first fetch was pruned"
    verbatim_pieces(agent.fetched[0], first)
    assert agent.fetched[1] == second, "the same call again reached the model whole"
    report = json.loads(subprocess.run([toolprune_bin, "stats", "--json"], env={**toolprune_env(scratch), "TZ": "UTC"},
                                       capture_output=True, text=True, timeout=60).stdout)
    assert report["total"]["pruned"] == 1 and report["total"]["skipped"]["repeated"] == 1, report["total"]
