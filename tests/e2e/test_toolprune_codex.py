"""toolprune in the real Codex CLI, end to end (issue 26).

The pinned ``codex`` (codex_harness.py) runs ``codex exec`` headless in a scratch
``CODEX_HOME`` against the scripted loopback Responses API (scripted_responses.py); the real
``mcp-server-fetch`` (server ``docs``) fetches corpus pages from a loopback site; toolprune
is installed with ``toolprune install codex`` (hooks in ``hooks.json``, the ``omitted``
server and the hooks' trust records in ``config.toml``) and checked by ``toolprune doctor
codex``. Nothing bypasses Codex's hook trust: ``codex app-server``'s ``hooks/list`` must
report toolprune's hooks as trusted, and they must run. A log-only probe hook on the
fetch's PostToolUse (trusted with the hash Codex reports) records the page the MCP server
returned.

Asserted from the requests the scripted API received: (a) the fetch's output is the pruned
body (marker, kept text verbatim from the page); (b) ``omitted`` with the marker's id and
range returns the dropped paragraphs verbatim; (c) every tool output of turn 1 is resent
byte for byte in every later request, also after ``codex exec resume --last``; (d) in the
resumed conversation ``omitted`` with turn 1's id answers ``not_found`` (the session's end
dropped the records; ids count on), never turn 2's document; (e) with the store unusable
the original page reaches the model and the run succeeds. (f) ``toolprune stats`` on that
store counts the pruned results, the characters and tokens removed and the ``omitted``
read-back exactly as the scripted API received them.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import codex_harness as cx
from docsite import Site, corpus_pages
from gemini_harness import ensure_fetch_venv
from harness import Omission, find_omission, page_path, verbatim_pieces
from provision import Toolchain
from scripted_responses import ScriptedResponses, function_call, message

FETCH = "mcp__docs__fetch"
DOC_1 = "rust-book-ch08-02-strings.md"
DOC_2 = "rust-blog-cargo-dev-cycle-1.90.md"
PROMPT_1 = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?"
PROMPT_2 = "What did the Cargo team discuss about moving Cargo's files to XDG base directory paths? Also, what is the status of a `cargo doc --serve` command?"
NOT_FOUND = "There is no text with id="
PROBE = Path(__file__).resolve().parent / "probe_hook.py"


def output_text(output: Any) -> str:
    """What the model read of a tool output: a string (a hook's block), or the text items
    after Codex's ``Wall time: …`` header."""
    if isinstance(output, str):
        return output
    texts = [o.get("text", "") for o in output if isinstance(o, dict)]
    return "\n".join(t for t in texts if not t.startswith("Wall time:"))


def user_texts(body: dict) -> list[str]:
    return [c.get("text", "") for item in body["input"] if item.get("type") == "message" and item.get("role") == "user"
            for c in item.get("content", []) if c.get("type") == "input_text"]


class Agent:
    """The scripted model: per prompt, fetch its page; on a pruned output call ``omitted``
    with every earlier turn's id and range, then this one's; then answer."""

    def __init__(self, turns: list[tuple[str, str]]):
        self.turns = turns
        self.turn = -1
        self.omissions: dict[int, Omission] = {}
        self.pending: list[dict[str, Any]] = []
        self.calls: list[tuple[int, dict[str, Any]]] = []
        self.answers: list[str] = []
        self.fetched: list[str] = []
        self.n = 0

    def _call(self, namespace: str, name: str, args: dict) -> list[dict]:
        self.n += 1
        return [function_call(namespace, name, args, f"call_{self.turn}_{self.n}")]

    def _omitted(self) -> list[dict]:
        args = self.pending.pop(0)
        self.calls.append((self.turn, args))
        return self._call("mcp__toolprune", "omitted", args)

    def __call__(self, body: dict) -> list[dict]:
        last = body["input"][-1]
        if last.get("type") != "function_call_output":
            texts = user_texts(body)
            for i, (prompt, url) in enumerate(self.turns):
                if texts and texts[-1].strip() == prompt:
                    self.turn = i
                    return self._call("mcp__docs", "fetch", {"url": url, "max_length": 100000})
            raise AssertionError(f"neither a prompt nor a tool output: {json.dumps(last)[:300]}")
        calls = {i["call_id"]: i for i in body["input"] if i.get("type") == "function_call"}
        call = calls[last["call_id"]]
        text = output_text(last["output"])
        if call["name"] == "fetch":
            self.fetched.append(text)
            om = find_omission(text)
            if om is None:
                return [message("Answered from the whole page.")]
            self.omissions[self.turn] = om
            earlier = [self.omissions[t] for t in sorted(self.omissions) if t < self.turn]
            self.pending = [{"id": o.id, "from": o.first, "to": o.last} for o in earlier + [om]]
            return self._omitted()
        if call["name"] == "omitted":
            self.answers.append(text)
            return self._omitted() if self.pending else [message("Answered from the page.")]
        raise AssertionError(f"unexpected call {call['name']}")


@dataclass
class Home:
    home: Path
    codex_home: Path
    project: Path
    probe_log: Path
    hooks: list[dict] = field(default_factory=list)


def setup_home(toolprune: str, exe: Path, root: Path, api_url: str, fetch_bin: Path) -> Home:
    """Scratch HOME with the offline config, toolprune installed by its installer and
    checked by doctor, then a log-only probe on the fetch's PostToolUse, trusted with the
    hash Codex itself reports."""
    home, project = root / "home", root / "project"
    codex_home = home / ".codex"
    project.mkdir(parents=True)
    config = cx.write_config(codex_home, api_url, fetch_bin)
    # Codex cuts a hook's output past 2,500 tokens, and toolprune then passes the page
    # unchanged (FACTS-codex.md): at threshold 0.5 both pages' bodies fit.
    (home / ".config" / "toolprune").mkdir(parents=True)
    (home / ".config" / "toolprune" / "config.toml").write_text("threshold = 0.5\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CODEX_HOME": str(codex_home), "LANG": "C.UTF-8"}
    p = subprocess.run([toolprune, "install", "codex"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    d = subprocess.run([toolprune, "doctor", "codex"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert d.returncode == 0, f"doctor:\n{d.stdout}\n{d.stderr}"
    assert "is trusted by Codex" in d.stdout, d.stdout
    hooks = cx.hooks_list(exe, home=home, codex_home=codex_home, cwd=project)
    # The probe, after toolprune's hook, trusted as Codex's /hooks review would.
    log = root / "probe.jsonl"
    hooks_json = codex_home / "hooks.json"
    installed = json.loads(hooks_json.read_text())
    probe = shlex.join([sys.executable, str(PROBE), str(root / "probe-config.json")])
    installed["hooks"]["PostToolUse"].append({"matcher": f"^{FETCH}$", "hooks": [{"type": "command", "command": probe, "timeout": 30}]})
    hooks_json.write_text(json.dumps(installed, indent=2))
    (root / "probe-config.json").write_text(json.dumps({"log": str(log)}))
    listed = cx.hooks_list(exe, home=home, codex_home=codex_home, cwd=project)
    (entry,) = [h for h in listed if h["command"] == probe]
    with config.open("a") as f:
        f.write(f'\n[hooks.state."{entry["key"]}"]\ntrusted_hash = "{entry["currentHash"]}"\n')
    return Home(home, codex_home, project, log, hooks)


def originals(log: Path) -> list[str]:
    events = [json.loads(line)["stdin"] for line in log.read_text().splitlines() if line.strip()]
    return ["\n\n".join(b["text"] for b in e["tool_response"]["content"]) for e in events
            if e.get("hook_event_name") == "PostToolUse" and e.get("tool_name") == FETCH]


@dataclass
class Run:
    home: Home
    agent: Agent
    originals: list[str]
    requests: list[list[dict]]
    runs: list[cx.CodexRun]
    seconds: list[float]


@pytest.fixture(scope="module")
def resumed(toolchain: Toolchain, corpus: Path, toolprune_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    exe, fetch_bin = cx.ensure_codex_cli(), ensure_fetch_venv()
    root = tmp_path_factory.mktemp("toolprune-codex")
    with Site(corpus_pages(corpus, [DOC_1, DOC_2], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1)), (PROMPT_2, site.url + page_path(DOC_2))])
        with ScriptedResponses(agent) as api:
            home = setup_home(toolprune_bin, exe, root, api.url, fetch_bin)
            requests, runs, seconds = [], [], []
            for prompt, resume in ((PROMPT_1, False), (PROMPT_2, True)):
                before = len(api.requests)
                started = time.monotonic()
                runs.append(cx.run_codex(exe, prompt, home=home.home, codex_home=home.codex_home, cwd=home.project, resume=resume))
                seconds.append(time.monotonic() - started)
                requests.append(api.requests[before:])
            assert not api.errors, api.errors
    return Run(home, agent, originals(home.probe_log), requests, runs, seconds)


def test_toolprune_hooks_are_trusted_by_codex_and_both_runs_succeed(resumed: Run) -> None:
    ours = [h for h in resumed.home.hooks if h["command"].endswith("hook codex")]
    assert {h["eventName"] for h in ours} == {"userPromptSubmit", "preToolUse", "postToolUse", "sessionEnd"}, ours
    assert all(h["trustStatus"] == "trusted" for h in ours), ours
    assert [r.returncode for r in resumed.runs] == [0, 0], [r.stderr[-2000:] for r in resumed.runs]
    tools = [t.get("name") for t in resumed.requests[0][0]["tools"]]
    assert "mcp__toolprune" in tools and "mcp__docs" in tools, tools
    print(f"codex exec runs took {', '.join(f'{s:.1f} s' for s in resumed.seconds)}")


def test_a_the_fetch_output_is_the_pruned_body_and_its_kept_text_is_verbatim(resumed: Run) -> None:
    assert len(resumed.originals) == 2 and len(resumed.agent.fetched) == 2
    for body, original in zip(resumed.agent.fetched, resumed.originals):
        assert len(body) < len(original)
        assert len("".join(verbatim_pieces(body, original))) > 1000
        assert "tokens truncated" not in body, "Codex's own cut did not touch the pruned body"
    assert "id=P1]" in resumed.agent.fetched[0] and "id=P2]" in resumed.agent.fetched[1]


def test_b_omitted_returns_the_dropped_paragraphs_verbatim(resumed: Run) -> None:
    agent = resumed.agent
    own = [i for i, (turn, args) in enumerate(agent.calls) if args["id"] == agent.omissions[turn].id]
    assert [agent.calls[i][0] for i in own] == [0, 1], agent.calls
    for i, original, fetched in zip(own, resumed.originals, agent.fetched):
        answer = agent.answers[i]
        assert answer and not answer.startswith(NOT_FOUND), answer
        assert answer in original, "the dropped paragraphs, verbatim and contiguous"
        assert answer.strip() not in fetched


def test_c_every_tool_output_repeats_byte_for_byte_in_later_requests(resumed: Run) -> None:
    outputs: dict[str, set[str]] = {}
    for body in [b for run in resumed.requests for b in run]:
        for item in body["input"]:
            if item.get("type") == "function_call_output":
                outputs.setdefault(item["call_id"], set()).add(json.dumps(item["output"], sort_keys=True, ensure_ascii=False))
    assert len(outputs) == 5, sorted(outputs)  # two fetches, three omitted calls
    for call_id, seen in outputs.items():
        assert len(seen) == 1, f"{call_id} changed between requests"
    turn1 = [i for i in resumed.requests[0][-1]["input"] if i.get("type") == "function_call_output"]
    later = json.dumps(resumed.requests[1][0]["input"], ensure_ascii=False)
    for item in turn1:
        assert json.dumps(item, ensure_ascii=False) in later, "turn 1's outputs are resent as they were"


def test_d_turn_one_id_never_returns_turn_two_document(resumed: Run) -> None:
    agent = resumed.agent
    (i,) = [i for i, (turn, args) in enumerate(agent.calls) if turn == 1 and args["id"] == agent.omissions[0].id]
    answer = agent.answers[i]
    assert answer.startswith(f"{NOT_FOUND}{agent.omissions[0].id} here"), answer
    assert answer not in resumed.originals[1]


def toolprune_stats(toolprune: str, home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolprune stats`` on the scratch HOME's store (the hooks' and the MCP server's log)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home.home), "CODEX_HOME": str(home.codex_home), "LANG": "C.UTF-8", "TZ": "UTC"}
    p = subprocess.run([toolprune, "stats", *args], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def test_f_stats_counts_what_the_model_did_not_receive_and_what_it_read_back(resumed: Run, toolprune_bin: str) -> None:
    # What the scripted Responses API received: the fetch outputs (the pruned bodies Codex's
    # block put there) and the omitted answers.
    received = resumed.agent.fetched
    removed = sum(len(original) - len(body) for original, body in zip(resumed.originals, received))
    report = json.loads(toolprune_stats(toolprune_bin, resumed.home, "--json", "--agent", "codex", "--tool", FETCH).stdout)
    total = report["total"]
    assert report["log"]["skipped"] == 0, report["log"]
    assert total["seen"] == total["pruned"] == len(received) == 2
    assert total["outcomes"] == {"ok": 2}
    assert total["chars"]["pruned"] == sum(len(o) for o in resumed.originals)
    assert total["chars"]["removed"] == removed, "the characters the model did not receive"
    assert report["tokens"] == {"estimate": True, "chars_per_token": 4.0}
    assert total["tokens_removed"] == int(removed / 4 + 0.5)
    # omitted: every call the model made, on the fetch's rows (turn 1's id asked again after
    # the resume answers not_found), and the characters it received back.
    agent = resumed.agent
    read_back = [a for a in agent.answers if not a.startswith(NOT_FOUND)]
    assert total["omitted"]["calls"] == len(agent.calls) == 3
    assert total["omitted"]["outcomes"] == {"ok": len(read_back), "not_found": len(agent.calls) - len(read_back)}
    assert total["omitted"]["chars_read_back"] == sum(len(a) for a in read_back)
    assert total["read_back_share"] == pytest.approx(sum(len(a) for a in read_back) / removed)
    table = toolprune_stats(toolprune_bin, resumed.home).stdout
    total_row = next(line for line in table.splitlines() if line.startswith("total "))
    assert f" {removed} " in total_row and f" {int(removed / 4 + 0.5)} " in total_row, table
    assert any(line.split()[1:3] == ["codex", FETCH] for line in table.splitlines()[1:]), table
    print(f"toolprune stats after the Codex CLI run:\n{table}")


def test_e_an_unusable_store_passes_the_page_unchanged_and_the_run_succeeds(
    toolchain: Toolchain, corpus: Path, toolprune_bin: str, tmp_path: Path
) -> None:
    exe, fetch_bin = cx.ensure_codex_cli(), ensure_fetch_venv()
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1))])
        with ScriptedResponses(agent) as api:
            home = setup_home(toolprune_bin, exe, tmp_path, api.url, fetch_bin)
            store = home.home / ".cache" / "toolprune" / "sessions"
            shutil.rmtree(store, ignore_errors=True)  # doctor made it
            store.parent.mkdir(parents=True, exist_ok=True)
            store.write_text("not a directory\n")
            run = cx.run_codex(exe, PROMPT_1, home=home.home, codex_home=home.codex_home, cwd=home.project)
            assert not api.errors, api.errors
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Answered from the whole page." in run.stdout
    assert "PostToolUse Blocked" not in run.stderr and "PostToolUse Failed" not in run.stderr, run.stderr[-2000:]
    (original,) = originals(home.probe_log)
    assert agent.fetched == [original], "the original page reached the model"
