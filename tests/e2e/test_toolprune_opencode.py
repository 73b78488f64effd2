"""toolprune in the real OpenCode, end to end (issue 26 §2–§3).

The pinned ``opencode`` (opencode_harness.py) runs ``opencode run`` headless in a scratch
HOME against the scripted loopback OpenAI-compatible chat API (scripted_chat.py); the real
``mcp-server-fetch`` (server ``docs``, tool ``docs_fetch``) fetches corpus pages from a
loopback site. toolprune is the npm package's OpenCode plugin (``hosts/js/src/opencode.js``,
``toolprune/opencode``), packed and npm-installed as the README says, loaded by a
``file://`` URL; OpenCode's config folder is seeded
with ``@opencode-ai/plugin`` from the registry beforehand and npm's registry is a closed
port, so nothing downloads at run time. A log-only probe plugin listed before toolprune
records the page the MCP server returned.

Asserted from the requests the scripted API received: (a) the fetch's tool message is the
pruned body (marker, kept text verbatim from the page); (b) the ``omitted`` tool (the
plugin's OpenCode tool) with the marker's id and range returns the dropped paragraphs
verbatim; (c) every tool message is resent byte for byte in every later request, also after
``opencode run --continue``; (d) in the continued conversation turn 1's id still answers
turn 1's text (the store is on disk, ids count on: turn 2's page is P2), never turn 2's;
(e) with the store unusable the original page reaches the model and the run succeeds;
(f) with ``omitted`` taken from the model in opencode.json, the page reaches it whole.
Then ``toolprune stats`` on that HOME shows the OpenCode results.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import opencode_harness as oc
from docsite import Site, corpus_pages
from gemini_harness import ensure_fetch_venv
from harness import Omission, find_omission, page_path, verbatim_pieces
from provision import Toolchain
from scripted_chat import ScriptedChat, tool_call

FETCH = "docs_fetch"
OMITTED = "omitted"
DOC_1 = "rust-book-ch08-02-strings.md"
DOC_2 = "rust-blog-cargo-dev-cycle-1.90.md"
PROMPT_1 = "Why can't I index a Rust String with s[0], and what is the right way to iterate over its characters?"
PROMPT_2 = "What did the Cargo team discuss about moving Cargo's files to XDG base directory paths? Also, what is the status of a `cargo doc --serve` command?"
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
JS = REPO / "hosts" / "js"
PROBE = HERE / "opencode_probe_plugin.js"


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return ""


def prompt_of(text: str) -> str:
    """``opencode run`` sends the prompt in double quotes (FACTS-opencode.md)."""
    t = text.strip()
    return t[1:-1] if len(t) >= 2 and t[0] == t[-1] == '"' else t


@pytest.fixture(scope="module")
def plugin_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The plugin as a user gets it (README "Use with OpenCode"): the npm package packed
    from hosts/js (its bindings built first when missing), installed with npm into a
    folder of its own, offline (it has no dependencies); its ``toolprune/opencode`` file."""
    if not (JS / "gen" / "toolprune.js").exists():
        for cmd in (["npm", "ci", "--no-audit", "--no-fund"], ["npm", "run", "build"]):
            p = subprocess.run(cmd, cwd=JS, capture_output=True, text=True, timeout=1800)
            assert p.returncode == 0, f"{' '.join(cmd)}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    where = tmp_path_factory.mktemp("toolprune-npm")
    p = subprocess.run(["npm", "pack", "--pack-destination", str(where), "--silent"], cwd=JS, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (tgz,) = where.glob("toolprune-*.tgz")
    prefix = where / "toolprune-opencode"
    p = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--offline", "--loglevel=error", str(tgz)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    plugin = prefix / "node_modules" / "toolprune" / "src" / "opencode.js"
    assert plugin.exists(), sorted(str(f) for f in prefix.rglob("*"))[:20]
    return plugin.as_uri()


class Agent:
    """The scripted model: per prompt, fetch its page; on a pruned result call ``omitted``
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

    def _call(self, name: str, args: dict) -> tuple[str, list[dict]]:
        self.n += 1
        return "", [tool_call(name, args, f"call_{self.turn}_{self.n}")]

    def _omitted(self) -> tuple[str, list[dict]]:
        args = self.pending.pop(0)
        self.calls.append((self.turn, args))
        return self._call(OMITTED, args)

    def __call__(self, body: dict) -> tuple[str, list[dict]]:
        messages = body["messages"]
        last = messages[-1]
        if last.get("role") == "user":
            said = prompt_of(content_text(last.get("content")))
            for i, (prompt, url) in enumerate(self.turns):
                if said == prompt:
                    self.turn = i
                    return self._call(FETCH, {"url": url, "max_length": 100000})
            raise AssertionError(f"an unknown prompt: {said[:300]!r}")
        if last.get("role") != "tool":
            raise AssertionError(f"neither a prompt nor a tool result: {json.dumps(last)[:300]}")
        calls = {c["id"]: c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []}
        name = calls[last["tool_call_id"]]["function"]["name"]
        text = content_text(last.get("content"))
        if name == FETCH:
            self.fetched.append(text)
            om = find_omission(text)
            if om is None:
                return "Answered from the whole page.", []
            self.omissions[self.turn] = om
            earlier = [self.omissions[t] for t in sorted(self.omissions) if t < self.turn]
            self.pending = [{"id": o.id, "from": o.first, "to": o.last} for o in earlier + [om]]
            return self._omitted()
        if name == OMITTED:
            self.answers.append(text)
            return self._omitted() if self.pending else ("Answered from the page.", [])
        raise AssertionError(f"unexpected call {name}")


@dataclass
class Home:
    home: Path
    project: Path
    probe_log: Path

    def env(self) -> dict[str, str]:
        return {"TOOLPRUNE_E2E_PROBE_LOG": str(self.probe_log)}


def setup_home(root: Path, api_url: str, fetch_bin: Path, plugin_url: str) -> Home:
    home, project = root / "home", root / "project"
    oc.seed_config(home, oc.ensure_plugin_seed())
    oc.write_config(project, api_url, fetch_bin, [PROBE.as_uri(), plugin_url])
    return Home(home, project, root / "probe.jsonl")


def originals(log: Path) -> list[str]:
    if not log.exists():
        return []
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return ["\n\n".join(e["texts"]) for e in events if e["tool"] == FETCH]


@dataclass
class Run:
    home: Home
    agent: Agent
    originals: list[str]
    requests: list[list[dict]]
    runs: list[oc.OpenCodeRun]


@pytest.fixture(scope="module")
def continued(toolchain: Toolchain, corpus: Path, plugin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    exe, fetch_bin = oc.ensure_opencode_cli(), ensure_fetch_venv()
    oc.ensure_readability(fetch_bin)
    root = tmp_path_factory.mktemp("toolprune-opencode")
    with Site(corpus_pages(corpus, [DOC_1, DOC_2], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1)), (PROMPT_2, site.url + page_path(DOC_2))])
        with ScriptedChat(agent) as api:
            home = setup_home(root, api.url, fetch_bin, plugin_url)
            requests, runs = [], []
            for prompt, resume in ((PROMPT_1, False), (PROMPT_2, True)):
                before = len(api.requests)
                runs.append(oc.run_opencode(exe, prompt, home=home.home, cwd=home.project, resume=resume, extra_env=home.env()))
                requests.append(api.requests[before:])
            assert not api.errors, api.errors
    return Run(home, agent, originals(home.probe_log), requests, runs)


def test_both_runs_succeed_with_the_plugins_omitted_tool_offered(continued: Run) -> None:
    assert [r.returncode for r in continued.runs] == [0, 0], [r.stderr[-2000:] for r in continued.runs]
    tools = [t["function"]["name"] for t in continued.requests[0][0]["tools"]]
    assert OMITTED in tools and FETCH in tools, tools
    (omitted,) = [t["function"] for t in continued.requests[0][0]["tools"] if t["function"]["name"] == OMITTED]
    assert set(omitted["parameters"]["properties"]) == {"id", "from", "to"}, omitted


def test_a_the_fetch_result_is_the_pruned_body_and_its_kept_text_is_verbatim(continued: Run) -> None:
    assert len(continued.originals) == 2 and len(continued.agent.fetched) == 2, (continued.originals, continued.agent.fetched)
    for body, original in zip(continued.agent.fetched, continued.originals):
        assert len(body) < len(original)
        assert len("".join(verbatim_pieces(body, original))) > 1000
    assert "id=P1]" in continued.agent.fetched[0] and "id=P2]" in continued.agent.fetched[1]


def test_b_omitted_returns_the_dropped_paragraphs_verbatim(continued: Run) -> None:
    agent = continued.agent
    own = [i for i, (turn, args) in enumerate(agent.calls) if args["id"] == agent.omissions[turn].id]
    assert [agent.calls[i][0] for i in own] == [0, 1], agent.calls
    for i, original, fetched in zip(own, continued.originals, agent.fetched):
        answer = agent.answers[i]
        assert answer and answer in original, "the dropped paragraphs, verbatim and contiguous"
        assert answer.strip() not in fetched


def test_c_every_tool_result_repeats_byte_for_byte_in_later_requests(continued: Run) -> None:
    seen: dict[str, set[str]] = {}
    for body in [b for run in continued.requests for b in run]:
        for m in body["messages"]:
            if m.get("role") == "tool":
                seen.setdefault(m["tool_call_id"], set()).add(json.dumps(m.get("content"), ensure_ascii=False))
    assert len(seen) == 5, sorted(seen)  # two fetches, three omitted calls
    for call_id, contents in seen.items():
        assert len(contents) == 1, f"{call_id} changed between requests"
    turn1 = [m for m in continued.requests[0][-1]["messages"] if m.get("role") == "tool"]
    later = json.dumps(continued.requests[1][0]["messages"], ensure_ascii=False)
    for m in turn1:
        assert json.dumps(m, ensure_ascii=False) in later, "turn 1's tool results are resent as they were"


def test_d_turn_one_id_in_the_continued_conversation_never_returns_turn_two_document(continued: Run) -> None:
    agent = continued.agent
    (i,) = [i for i, (turn, args) in enumerate(agent.calls) if turn == 1 and args["id"] == agent.omissions[0].id]
    answer = agent.answers[i]
    assert agent.omissions[0].id == "P1" and agent.omissions[1].id == "P2"
    assert answer and answer in continued.originals[0], "turn 1's id still names turn 1's text"
    assert answer not in continued.originals[1]


def test_stats_on_the_store_shows_the_opencode_results(continued: Run, toolprune_bin: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(continued.home.home), "LANG": "C.UTF-8"}
    p = subprocess.run([toolprune_bin, "stats", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    text = json.dumps(report)
    assert "opencode" in text and FETCH in text, p.stdout
    # Matching what the scripted chat API received (issue 25 "Done when"): the pruned
    # results, the characters and tokens the model did not receive, the omitted read-back.
    env["TZ"] = "UTC"
    p = subprocess.run([toolprune_bin, "stats", "--json", "--agent", "opencode", "--tool", FETCH], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    total = report["total"]
    received = continued.agent.fetched
    removed = sum(len(original) - len(body) for original, body in zip(continued.originals, received))
    assert report["log"]["skipped"] == 0, report["log"]
    assert total["seen"] == total["pruned"] == len(received) == 2, total
    assert total["outcomes"] == {"ok": 2}
    assert total["chars"]["removed"] == removed, "the characters the model did not receive"
    assert total["tokens_removed"] == int(removed / 4 + 0.5)
    agent = continued.agent
    read_back = [a for a in agent.answers if not a.startswith("There is no text with id=")]
    assert total["omitted"]["calls"] == len(agent.calls) == 3, total["omitted"]
    outcomes = {"ok": len(read_back), "not_found": len(agent.calls) - len(read_back)}
    assert total["omitted"]["outcomes"] == {k: n for k, n in outcomes.items() if n}, total["omitted"]
    # Each distinct read (id and range) counts once (docs/stats.md): turn 2 asks turn 1's
    # range again, and that answer is not more text read back.
    distinct = {(args["id"], args["from"], args["to"]): answer for (_, args), answer in zip(agent.calls, agent.answers)
                if not answer.startswith("There is no text with id=")}
    assert total["omitted"]["chars_read_back"] == sum(len(a) for a in distinct.values())
    assert total["read_back_share"] == pytest.approx(sum(len(a) for a in distinct.values()) / removed)
    sessions = list((continued.home.home / ".cache" / "toolprune" / "sessions").glob("opencode-*"))
    assert len(sessions) == 1, sessions
    assert sorted(f.name for f in sessions[0].iterdir()) == ["P1.json", "P2.json", "request.json", "state.json"]


def one_turn(toolchain: Toolchain, corpus: Path, plugin_url: str, root: Path, prepare: Any) -> tuple[Home, Agent, oc.OpenCodeRun, list[str]]:
    """Turn one in a fresh HOME after ``prepare(home)``: the home, the scripted model, the
    run and the tool names the model was offered first. The API saw no error."""
    exe, fetch_bin = oc.ensure_opencode_cli(), ensure_fetch_venv()
    oc.ensure_readability(fetch_bin)
    with Site(corpus_pages(corpus, [DOC_1], toolchain.python)) as site:
        agent = Agent([(PROMPT_1, site.url + page_path(DOC_1))])
        with ScriptedChat(agent) as api:
            home = setup_home(root, api.url, fetch_bin, plugin_url)
            prepare(home)
            run = oc.run_opencode(exe, PROMPT_1, home=home.home, cwd=home.project, extra_env=home.env())
            assert not api.errors, api.errors
            offered = [t["function"]["name"] for t in api.requests[0]["tools"]]
    assert run.returncode == 0, run.stderr[-2000:]
    return home, agent, run, offered


def test_e_an_unusable_store_passes_the_page_unchanged_and_the_run_succeeds(
    toolchain: Toolchain, corpus: Path, plugin_url: str, tmp_path: Path
) -> None:
    def unusable_store(home: Home) -> None:
        store = home.home / ".cache" / "toolprune" / "sessions"
        store.parent.mkdir(parents=True, exist_ok=True)
        store.write_text("not a directory\n")

    home, agent, run, _ = one_turn(toolchain, corpus, plugin_url, tmp_path, unusable_store)
    assert "Answered from the whole page." in run.stdout
    (original,) = originals(home.probe_log)
    assert agent.fetched == [original], "the original page reached the model"


@pytest.mark.parametrize("denial", [{"tools": {OMITTED: False}}, {"permission": {"*": "allow", "omit*": "deny"}}],
                         ids=["tools", "permission"])
def test_f_a_config_that_takes_omitted_from_the_model_gets_the_page_whole(
    toolchain: Toolchain, corpus: Path, plugin_url: str, tmp_path: Path, denial: dict[str, Any]
) -> None:
    """``"tools": {"omitted": false}``, or a ``permission`` rule denying it, in
    opencode.json: OpenCode offers the model no ``omitted``, and the plugin (told by its
    ``config`` hook) prunes nothing: no way back."""
    def without_omitted(home: Home) -> None:
        config = home.project / "opencode.json"
        config.write_text(json.dumps({**json.loads(config.read_text()), **denial}, indent=2) + "\n")

    home, agent, _, offered = one_turn(toolchain, corpus, plugin_url, tmp_path, without_omitted)
    assert FETCH in offered and OMITTED not in offered, offered
    (original,) = originals(home.probe_log)
    assert agent.fetched == [original], "the original page reached the model"
