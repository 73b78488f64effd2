"""toolprune in the real Gemini CLI, end to end (issue 18).

The pinned ``gemini`` (gemini_harness.py) runs headless in a scratch HOME against the
scripted loopback Gemini API (scripted_gemini.py); the real ``mcp-server-fetch`` (as
``fetch``, trusted) fetches corpus pages from a loopback site; toolprune is installed with
``toolprune install gemini --user`` into the scratch ``~/.gemini/settings.json`` (which
already holds the offline settings: the installer edits it in place). A log-only probe
hook (gemini_probe_hook.py, mode ``none``) on the fetch's AfterTool records the page the
MCP server returned.

Each module fixture and case (e) run once per install mode (issue 23): ``settings``
(``toolprune install gemini --user``) and ``plugin`` (``gemini extensions install
DIR/gemini --consent`` on the folder ``toolprune plugin build`` writes, plus the one rule an
extension cannot give itself: the user policy ``~/.gemini/policies/toolprune.toml`` allowing
``omitted`` — Gemini CLI drops an extension's ``trust`` and its ALLOW policy rules, and
headless runs deny a tool not allowed; ``mcp.allowed`` would do too but disables every
server it does not name).

Gemini CLI replaces a result only through an AfterTool *tail call*: toolprune's hook asks
for ``mcp_toolprune_omitted`` with ``body: true`` and its MCP server returns the pruned
body, which the model receives under the fetch's name and id (FACTS-gemini-cursor.md).

Asserted from the requests the scripted API received: (a) the fetch's functionResponse
carries the marker and its kept text is verbatim from the page; (b) ``omitted`` with the
marker's id and range returns the dropped paragraphs verbatim (nothing appended); (c) the
functionResponse parts of turn 1 are resent byte for byte after ``--resume``; (d) in the
resumed second prompt, ``omitted`` with turn 1's id answers ``not_found``, never turn 2's
document; (e) with the store unusable the original page reaches the model and the run
succeeds; (f) ``toolprune stats`` on the scratch store counts the pruned results, the
characters (and estimated tokens) the model did not receive, and what ``omitted`` read back,
all equal to what the scripted API received.
"""

from __future__ import annotations

import json
import os
import shutil
import shlex
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import gemini_harness as h
from docsite import Site, corpus_pages
from harness import Omission, find_omission, page_path, verbatim_pieces
from provision import Toolchain
from scripted_gemini import ScriptedGemini, function_call_chunk, function_responses, last_user_text, text_chunk

FETCH = "mcp_fetch_fetch"
OMITTED = "mcp_toolprune_omitted"
DOC_1 = "rust-book-ch08-02-strings.md"
DOC_2 = "rust-blog-cargo-dev-cycle-1.90.md"
PROMPT_1 = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?"
PROMPT_2 = "What did the Cargo team discuss about moving Cargo's files to XDG base directory paths? Also, what is the status of a `cargo doc --serve` command?"
NOT_FOUND = "There is no text with id="
MODES = ("settings", "plugin")
#: The user policy docs/plugins.md gives (agents/gemini.rs POLICY).
POLICY = '[[rule]]\nmcpName = "toolprune"\ntoolName = "omitted"\ndecision = "allow"\npriority = 100\n'

OPEN, CLOSE = "<untrusted_context>\n", "\n</untrusted_context>"


def unwrap(output: str) -> str:
    assert output.startswith(OPEN) and output.endswith(CLOSE), output[:200]
    return output[len(OPEN):-len(CLOSE)]


class Agent:
    """Per prompt: fetch its page; on a pruned result call ``omitted`` with every earlier
    turn's id and range, then this one's; then answer. Records calls and answers."""

    def __init__(self, turns: list[tuple[str, str]]):
        self.turns = turns
        self.turn = -1
        self.omissions: dict[int, Omission] = {}
        self.pending: list[dict[str, Any]] = []
        self.calls: list[tuple[int, dict[str, Any]]] = []
        self.answers: list[str] = []
        self.fetched: list[str] = []

    def _omitted(self) -> list[dict]:
        args = self.pending.pop(0)
        self.calls.append((self.turn, args))
        return [function_call_chunk(OMITTED, args)]

    def __call__(self, call) -> list[dict]:
        last = call.body["contents"][-1]
        responses = [p["functionResponse"] for p in last.get("parts", []) if "functionResponse" in p]
        if not responses:
            # The first prompt of a session comes after Gemini CLI's <session_context> block.
            prompt = last_user_text(call.body).strip()
            for i, (p, url) in enumerate(self.turns):
                if prompt == p or prompt.endswith(f"</session_context>{p}"):
                    self.turn = i
                    return [function_call_chunk(FETCH, {"url": url, "max_length": 100000})]
            raise AssertionError(f"unknown prompt {prompt!r}")
        response = responses[-1]
        output = response["response"].get("output", "")
        if response["name"] == FETCH:
            self.fetched.append(output)
            om = find_omission(output)
            if om is None:
                return [text_chunk("Answered from the whole page.")]
            self.omissions[self.turn] = om
            earlier = [self.omissions[t] for t in sorted(self.omissions) if t < self.turn]
            self.pending = [{"id": o.id, "from": o.first, "to": o.last} for o in earlier + [om]]
            return self._omitted()
        if response["name"] == OMITTED:
            self.answers.append(output)
            return self._omitted() if self.pending else [text_chunk("Answered from the page.")]
        raise AssertionError(f"unexpected functionResponse {response['name']}")


def gemini_extensions(exe: Path, home: Path, project: Path, *args: str) -> str:
    """``gemini extensions ARGS`` in the scratch HOME; its stdout and stderr. ``install`` asks whether
    to trust the extension's source folder (and exits 0 having installed nothing when not
    answered): the test answers ``y`` as a user would."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TERM": "dumb", "GEMINI_CLI_NO_RELAUNCH": "true"}
    p = subprocess.run([str(exe), "extensions", *args], cwd=project, env=env, capture_output=True, text=True, timeout=300,
                       input="y\n")
    assert p.returncode == 0, f"gemini extensions {' '.join(args)}:\n{p.stdout}\n{p.stderr}"
    return p.stdout + p.stderr


def setup_home(toolprune: str, root: Path, fetch_bin: Path, mode: str = "settings", plugins: Path | None = None,
               exe: Path | None = None) -> tuple[Path, Path, Path]:
    """Scratch HOME with the offline settings and the fetch server, toolprune installed
    into it — its installer, or (``plugin``) ``gemini extensions install`` and
    ``mcp.allowed`` — then ``doctor`` (which also fills the component cache), and a
    log-only probe on the fetch's AfterTool. Returns (home, project, probe log)."""
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    settings = h.base_settings()
    settings["mcpServers"] = {"fetch": h.fetch_server_config(fetch_bin)}
    path = h.write_settings(home, settings)
    if mode == "plugin":
        policies = home / ".gemini" / "policies"
        policies.mkdir(parents=True)
        (policies / "toolprune.toml").write_text(POLICY)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    if mode == "settings":
        p = subprocess.run([toolprune, "install", "gemini", "--user"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    else:
        assert plugins is not None and exe is not None
        out = gemini_extensions(exe, home, project, "install", str(plugins / "gemini"), "--consent")
        assert 'Extension "toolprune" installed successfully and enabled.' in out, out
    d = subprocess.run([toolprune, "doctor", "gemini"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert d.returncode == 0, f"doctor:\n{d.stdout}\n{d.stderr}"
    installed = json.loads(path.read_text())
    if mode == "settings":
        assert installed["mcpServers"]["toolprune"]["trust"] is True
    else:
        assert "the plugin is active" in d.stdout, d.stdout
        assert "toolprune" not in installed["mcpServers"] and "hooks" not in installed
    log = root / "probe.jsonl"
    probe = shlex.join([sys.executable, str(h.E2E_DIR / "gemini_probe_hook.py"), "--log", str(log), "--mode", "none"])
    installed.setdefault("hooks", {}).setdefault("AfterTool", []).append(
        {"matcher": f"^{FETCH}$", "hooks": [{"type": "command", "command": probe, "name": "probe"}]})
    path.write_text(json.dumps(installed, indent=2))
    return home, project, log


def originals(log: Path) -> list[str]:
    if not log.exists():
        return []
    events = [json.loads(line)["stdin"] for line in log.read_text().splitlines() if line.strip()]
    return [unwrap(e["tool_response"]["llmContent"][0]["text"]) for e in events
            if e.get("hook_event_name") == "AfterTool" and e.get("tool_name") == FETCH and not e.get("original_request_name")]


@dataclass
class Run:
    agent: Agent
    originals: list[str]
    generations: list[list[Any]]
    returncodes: list[int]
    stderr: list[str]
    seconds: list[float]
    home: Path
    toolprune: str
    mode: str = "settings"


@pytest.fixture(scope="module", params=MODES)
def resumed(request: pytest.FixtureRequest, toolchain: Toolchain, corpus: Path, toolprune_bin: str, plugin_dir: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Run:
    mode = request.param
    exe, fetch_bin = h.ensure_gemini_cli(), h.ensure_fetch_venv()
    root = tmp_path_factory.mktemp(f"toolprune-gemini-{mode}")
    home, project, log = setup_home(toolprune_bin, root, fetch_bin, mode, plugin_dir, exe)
    session = str(uuid.uuid4())
    generations, codes, errs, seconds = [], [], [], []
    with Site(corpus_pages(corpus, [DOC_1, DOC_2], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1)), (PROMPT_2, site.url + page_path(DOC_2))])
        with ScriptedGemini(agent) as model:
            for prompt, flag in ((PROMPT_1, "--session-id"), (PROMPT_2, "--resume")):
                before = len(model.generation_calls())
                started = time.monotonic()
                run = h.run_gemini(exe, prompt, home=home, cwd=project, base_url=model.url, extra_args=[flag, session])
                seconds.append(time.monotonic() - started)
                codes.append(run.returncode)
                errs.append(run.stderr)
                generations.append(model.generation_calls()[before:])
    return Run(agent, originals(log), generations, codes, errs, seconds, home, toolprune_bin, mode)


def test_both_runs_succeed_with_toolprune_installed(resumed: Run) -> None:
    assert resumed.returncodes == [0, 0], resumed.stderr
    for err in resumed.stderr:
        assert "Hook" not in err and "hook" not in err, err
    declared = [d["name"] for t in resumed.generations[0][0].body["tools"] for d in t.get("functionDeclarations", [])]
    assert OMITTED in declared
    print(f"{resumed.mode}: gemini -p runs took {', '.join(f'{s:.1f} s' for s in resumed.seconds)}")


def test_a_the_fetch_result_is_pruned_and_its_kept_text_is_verbatim(resumed: Run) -> None:
    assert len(resumed.originals) == 2 and len(resumed.agent.fetched) == 2
    for output, original in zip(resumed.agent.fetched, resumed.originals):
        body = unwrap(output)
        assert len(body) < len(original)
        assert len("".join(verbatim_pieces(body, original))) > 1000
    assert "id=P1]" in resumed.agent.fetched[0] and "id=P2]" in resumed.agent.fetched[1]


def test_b_omitted_returns_the_dropped_paragraphs_verbatim_with_nothing_appended(resumed: Run) -> None:
    agent = resumed.agent
    own = [i for i, (turn, args) in enumerate(agent.calls) if args["id"] == agent.omissions[turn].id]
    assert [agent.calls[i][0] for i in own] == [0, 1], agent.calls
    for i, original, fetched in zip(own, resumed.originals, agent.fetched):
        answer = unwrap(agent.answers[i])
        assert answer and not answer.startswith(NOT_FOUND), answer
        assert answer in original
        assert answer.strip() not in fetched


def test_c_turn_one_parts_are_resent_byte_for_byte_after_resume(resumed: Run) -> None:
    def parts(call) -> list[str]:
        return [json.dumps(p, sort_keys=True) for p in function_responses(call.body)]

    turn1_last = resumed.generations[0][-1]
    turn2_first = resumed.generations[1][0]
    for part in parts(turn1_last):
        assert part in parts(turn2_first)
        for later in resumed.generations[1]:
            assert part in parts(later)


def test_d_turn_one_id_never_returns_turn_two_document(resumed: Run) -> None:
    agent = resumed.agent
    (i,) = [i for i, (turn, args) in enumerate(agent.calls) if turn == 1 and args["id"] == agent.omissions[0].id]
    answer = unwrap(agent.answers[i])
    assert answer.startswith(f"{NOT_FOUND}{agent.omissions[0].id} here"), answer


@pytest.mark.parametrize("mode", MODES)
def test_e_an_unusable_store_passes_the_page_unchanged(mode: str, corpus: Path, toolchain: Toolchain, toolprune_bin: str,
                                                       plugin_dir: Path, tmp_path: Path) -> None:
    exe, fetch_bin = h.ensure_gemini_cli(), h.ensure_fetch_venv()
    home, project, log = setup_home(toolprune_bin, tmp_path, fetch_bin, mode, plugin_dir, exe)
    store = home / ".cache" / "toolprune" / "sessions"
    shutil.rmtree(store, ignore_errors=True)  # doctor made it
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text("not a directory\n")
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1))])
        with ScriptedGemini(agent) as model:
            run = h.run_gemini(exe, PROMPT_1, home=home, cwd=project, base_url=model.url)
    assert run.returncode == 0, run.stderr
    assert "Answered from the whole page." in run.stdout
    (original,) = originals(log)
    assert [unwrap(o) for o in agent.fetched] == [original]


def toolprune_stats(run: Run, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolprune stats`` on the scratch HOME's store (the hooks' and the MCP server's log)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(run.home), "LANG": "C.UTF-8", "TZ": "UTC"}
    p = subprocess.run([run.toolprune, "stats", *args], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


def test_f_stats_counts_what_the_model_did_not_receive_and_what_it_read_back(resumed: Run) -> None:
    received = [unwrap(output) for output in resumed.agent.fetched]
    removed = sum(len(original) - len(body) for original, body in zip(resumed.originals, received))
    report = json.loads(toolprune_stats(resumed, "--json", "--agent", "gemini", "--tool", FETCH).stdout)
    total = report["total"]
    assert report["log"]["skipped"] == 0, report["log"]
    assert total["seen"] == total["pruned"] == len(received) == 2
    assert total["outcomes"] == {"ok": 2}
    assert total["chars"]["removed"] == removed, "the characters the model did not receive"
    assert total["tokens_removed"] == int(removed / 4 + 0.5)
    # omitted: the model's calls (the tail call that brings the pruned body is not one).
    agent = resumed.agent
    answers = [unwrap(a) for a in agent.answers]
    read_back = [a for a in answers if not a.startswith(NOT_FOUND)]
    assert total["omitted"]["calls"] == len(agent.calls) == 3
    assert total["omitted"]["outcomes"] == {"ok": len(read_back), "not_found": len(agent.calls) - len(read_back)}
    assert total["omitted"]["chars_read_back"] == sum(len(a) for a in read_back)
    table = toolprune_stats(resumed).stdout
    total_row = next(line for line in table.splitlines() if line.startswith("total "))
    assert f" {removed} " in total_row and f" {int(removed / 4 + 0.5)} " in total_row, table
    assert any(line.split()[1:3] == ["gemini", FETCH] for line in table.splitlines()[1:]), table
    print(f"toolprune stats after the Gemini CLI run:\n{table}")


def test_the_extension_uninstalled_by_gemini_cli_leaves_no_toolprune_hook(
    corpus: Path, toolchain: Toolchain, toolprune_bin: str, plugin_dir: Path, tmp_path: Path
) -> None:
    exe, fetch_bin = h.ensure_gemini_cli(), h.ensure_fetch_venv()
    home, project, log = setup_home(toolprune_bin, tmp_path, fetch_bin, "plugin", plugin_dir, exe)
    gemini_extensions(exe, home, project, "uninstall", "toolprune")
    assert not (home / ".gemini" / "extensions" / "toolprune").exists()
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert [g["hooks"][0]["name"] for g in settings["hooks"]["AfterTool"]] == ["probe"], "only the test's probe"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    d = subprocess.run([toolprune_bin, "doctor", "gemini"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert d.returncode == 1 and "the plugin is active" not in d.stdout, d.stdout
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1))])
        with ScriptedGemini(agent) as model:
            run = h.run_gemini(exe, PROMPT_1, home=home, cwd=project, base_url=model.url)
            declared = [d["name"] for t in model.generation_calls()[0].body["tools"] for d in t.get("functionDeclarations", [])]
    assert run.returncode == 0, run.stderr
    assert "Answered from the whole page." in run.stdout
    (original,) = originals(log)
    assert [unwrap(o) for o in agent.fetched] == [original], "no hook changed the page"
    assert OMITTED not in declared
