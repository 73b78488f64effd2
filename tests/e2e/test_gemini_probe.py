"""End-to-end probe of Gemini CLI's hooks, offline: the real ``gemini`` CLI (npm
``@google/gemini-cli``, version pinned in gemini_harness.py), the real ``mcp-server-fetch``
(PyPI) fetching a page from a loopback site, a scripted loopback model API
(scripted_gemini.py), and a probe hook (gemini_probe_hook.py) on every event.

What it proves, each against the request the CLI sends to the model next:

- an AfterTool answer ``hookSpecificOutput.tailToolCallRequest`` replaces the fetch result
  (the tail tool's output goes back under the original call's name and id);
- ``{"decision": "deny", "reason": R}`` turns the result into ``{"error": R}``;
- ``hookSpecificOutput.tool_output`` (closed PR google-gemini/gemini-cli#19505) is ignored;
- ``{}`` leaves the result byte for byte as the hook saw it;
- a second prompt with ``--resume <session-id>`` keeps the session id and resends turn 1's
  functionResponse part byte for byte;
- BeforeTool ``hookSpecificOutput.tool_input`` replaces the arguments and makes the CLI append
  a fixed notice to that tool's result;
- an MCP server gets no session id from the CLI (environment or arguments);
- a headless run does not offer the tools of an MCP server without ``"trust": true``;
- what each hook exit code / stray output does to the result and shows the user;
- the wiring FACTS-gemini-cursor.md §3 recommends works, with stand-ins for toolprune's hook
  (gemini_design_hook.py) and MCP server (gemini_design_store_mcp.py).

Run: ``python3 -m pytest tests/e2e/test_gemini_probe.py`` (needs Node >= 20 with npm, and
Python >= 3.10 with pytest; the first run installs into ~/.cache/toolprune-e2e, ~1 min).
With ``TOOLPRUNE_CAPTURE_FIXTURES=1`` it rewrites tests/fixtures/hooks/gemini/ from the run
(machine paths scrubbed). Each CLI run takes ~8-20 s; the module makes sixteen (~3.5 min).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gemini_harness as h  # noqa: E402
from scripted_gemini import (  # noqa: E402
    ScriptedGemini,
    function_call_chunk,
    function_responses,
    text_chunk,
)

MARKER = "TOOLPRUNE-PROBE-MARKER: this text replaced the fetch result"
FETCH_TOOL = "mcp_fetch_fetch"
ECHO_TOOL = "mcp_probe_echo"
EVENTS = ["SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool"]
PARAGRAPHS = [f"Paragraph {i}: the {w} fox number {i} jumps over the lazy dog." for i, w in
              enumerate(["quick", "slow", "red", "grey", "young", "old", "small", "tall"])]
PAGE = ("<html><head><title>Probe page</title></head><body><h1>Probe page</h1>"
        + "".join(f"<p>{p}</p>" for p in PARAGRAPHS) + "</body></html>")
SYSTEM_NOTICE = "[System] Tool input parameters were modified by a hook before execution."
FIXTURES = h.REPO_ROOT / "tests" / "fixtures" / "hooks" / "gemini"
CAPTURE = os.environ.get("TOOLPRUNE_CAPTURE_FIXTURES") == "1"


@dataclass
class Scenario:
    """Everything one probe scenario left behind (one or two CLI runs)."""

    root: Path
    session_id: str
    runs: list
    calls: list            # every ModelCall, all runs
    events: list[dict]     # probe hook log lines: {"stdin": ..., "env": ...}
    echo_calls: list[dict]
    site_requests: list[str]
    generation_runs: list[list] = field(default_factory=list)  # generation calls per run
    settings: dict = field(default_factory=dict)   # the settings.json the runs used

    def events_named(self, name: str, tool: str | None = None) -> list[dict]:
        return [e["stdin"] for e in self.events if e["stdin"].get("hook_event_name") == name
                and (tool is None or e["stdin"].get("tool_name") == tool)]


def _script(page_url: str):
    """The scripted model: a prompt mentioning "fetch" → call the fetch tool on ``page_url``;
    a tool result → a closing text; any other prompt (the resumed turn) → a plain answer."""
    def script(call):
        last = call.body["contents"][-1]
        if any("functionResponse" in p for p in last["parts"]):
            return [text_chunk("The page was fetched.")]
        text = "".join(p.get("text", "") for p in last["parts"])
        if "fetch" in text:
            return [function_call_chunk(FETCH_TOOL, {"url": page_url})]
        return [text_chunk("Second answer.")]
    return script


def run_scenario(mode: str, *, resume: bool = False, inject: bool = False) -> Scenario:
    """Run the CLI once (twice with ``resume``) with the probe hook in ``mode``."""
    exe = h.ensure_gemini_cli()
    fetch_bin = h.ensure_fetch_venv()
    root = Path(tempfile.mkdtemp(prefix=f"gemini-probe-{mode}."))
    home, work = root / "home", root / "project"
    work.mkdir()
    log, echo_log = root / "events.jsonl", root / "echo.jsonl"
    hook = shlex.join([sys.executable, str(h.E2E_DIR / "gemini_probe_hook.py"), "--log", str(log),
                       "--mode", mode, "--replace-tool", FETCH_TOOL, "--tail-tool", ECHO_TOOL,
                       "--marker", MARKER])
    if inject:
        hook += f" --inject-session-tool {ECHO_TOOL}"
    settings = h.base_settings()
    settings["mcpServers"] = {
        "fetch": h.fetch_server_config(fetch_bin),
        "probe": {"command": str(fetch_bin / "python"),
                  "args": [str(h.E2E_DIR / "gemini_probe_echo_mcp.py"), "--log", str(echo_log)],
                  "trust": True},
    }
    settings["hooks"] = h.hooks_for(EVENTS, hook)
    h.write_settings(home, settings)
    sid = str(uuid.uuid4())
    runs, per_run = [], []
    with h.LoopbackSite({"page.html": PAGE}) as site, ScriptedGemini(_script(site.url("page.html"))) as model:
        n = 0
        runs.append(h.run_gemini(exe, "Please fetch the probe page.", home=home, cwd=work,
                                 base_url=model.url, extra_args=["--session-id", sid]))
        per_run.append(model.generation_calls()[n:])
        n = len(model.generation_calls())
        if resume:
            runs.append(h.run_gemini(exe, "And a second question.", home=home, cwd=work,
                                     base_url=model.url, extra_args=["--resume", sid]))
            per_run.append(model.generation_calls()[n:])
        calls = list(model.calls)
        site_requests = list(site.requests)
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    echo = [json.loads(line) for line in echo_log.read_text().splitlines()] if echo_log.exists() else []
    shutil.rmtree(root, ignore_errors=True)  # the scratch HOME holds the session transcripts
    for r in runs:
        assert r.returncode == 0, f"gemini exited {r.returncode}:\n{r.stdout}\n{r.stderr[-3000:]}"
    return Scenario(root, sid, runs, calls, events, echo, site_requests, per_run, settings)


def fetch_response(call) -> dict:
    """The ``response`` of the fetch tool's functionResponse in one generation request."""
    frs = [fr for fr in function_responses(call.body) if fr["name"] == FETCH_TOOL]
    assert frs, f"no {FETCH_TOOL} functionResponse in the request"
    return frs[-1]["response"]


def compact(obj) -> str:
    """JSON as the CLI's SDK serialises it (no spaces, non-ASCII kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture(scope="module")
def tail():
    return run_scenario("tail")


@pytest.fixture(scope="module")
def tail_resumed():
    return run_scenario("tail", resume=True)


@pytest.fixture(scope="module")
def unchanged():
    return run_scenario("none")


def capture(name: str, obj, s: "Scenario") -> None:
    """With TOOLPRUNE_CAPTURE_FIXTURES=1, write ``obj`` (machine paths scrubbed) as a fixture."""
    if CAPTURE:
        FIXTURES.mkdir(parents=True, exist_ok=True)
        (FIXTURES / name).write_text(json.dumps(_scrub(obj, s), indent=2, ensure_ascii=False) + "\n")


def fetch_part(call) -> dict:
    """The fetch tool's whole ``{"functionResponse": ...}`` part in one generation request."""
    return [p for c in call.body["contents"] for p in c["parts"]
            if p.get("functionResponse", {}).get("name") == FETCH_TOOL][-1]


def hook_stdout(s: "Scenario", event: str, tool: str) -> dict:
    """What the probe hook printed for ``event`` on ``tool`` (its first such call)."""
    return [e["stdout"] for e in s.events if e["stdin"].get("hook_event_name") == event
            and e["stdin"].get("tool_name") == tool][0]


# --- replacement -----------------------------------------------------------------------


def test_aftertool_tail_call_replaces_the_fetch_result_in_the_next_model_request(tail):
    first, second = tail.generation_runs[0][:2]
    assert FETCH_TOOL in compact(first.body["tools"]), "the fetch tool was declared to the model"
    assert tail.site_requests == ["/page.html"], "mcp-server-fetch fetched the loopback page"
    assert fetch_response(second) == {"output": f"<untrusted_context>\n{MARKER}\n</untrusted_context>"}
    assert "Paragraph 3" not in second.raw.decode(), "the raw page text never reaches the model"
    fr = [fr for fr in function_responses(second.body) if fr["name"] == FETCH_TOOL][0]
    call_id = [p["functionCall"] for c in second.body["contents"] for p in c["parts"]
               if "functionCall" in p][0]["id"]
    assert fr["id"] == call_id, "the replacement answers the original call id"
    capture("AfterTool.tail-call.stdout.json", hook_stdout(tail, "AfterTool", FETCH_TOOL), tail)
    capture("functionResponse.after-tail-call.json", fetch_part(second), tail)


def test_tail_call_fires_before_and_after_tool_for_the_tail_tool_with_original_request_name(tail):
    (before_echo,) = tail.events_named("BeforeTool", ECHO_TOOL)
    (after_echo,) = tail.events_named("AfterTool", ECHO_TOOL)
    assert before_echo["original_request_name"] == FETCH_TOOL
    assert after_echo["original_request_name"] == FETCH_TOOL
    assert after_echo["tool_input"] == {"text": MARKER}
    (after_fetch,) = tail.events_named("AfterTool", FETCH_TOOL)
    assert "original_request_name" not in after_fetch


def test_aftertool_deny_turns_the_result_into_an_error_carrying_the_reason():
    s = run_scenario("deny")
    assert fetch_response(s.generation_runs[0][1]) == {"error": MARKER}
    capture("AfterTool.deny.stdout.json", hook_stdout(s, "AfterTool", FETCH_TOOL), s)
    capture("functionResponse.after-deny.json", fetch_part(s.generation_runs[0][1]), s)


def test_aftertool_tool_output_field_is_ignored_by_this_version():
    s = run_scenario("tool_output")
    out = fetch_response(s.generation_runs[0][1])
    assert set(out) == {"output"} and MARKER not in out["output"] and "Paragraph 3" in out["output"]
    capture("AfterTool.tool_output-ignored.stdout.json", hook_stdout(s, "AfterTool", FETCH_TOOL), s)


def test_empty_answer_leaves_the_result_byte_for_byte_as_the_hook_saw_it(unchanged):
    (after,) = unchanged.events_named("AfterTool", FETCH_TOOL)
    llm_content = after["tool_response"]["llmContent"]
    assert isinstance(llm_content, list) and len(llm_content) == 1, llm_content
    text = llm_content[0]["text"]
    assert text.startswith("<untrusted_context>\nContents of http://127.0.0.1:")
    assert all(p in text for p in PARAGRAPHS)
    assert fetch_response(unchanged.generation_runs[0][1]) == {"output": text}
    capture("AfterTool.no-change.stdout.json", hook_stdout(unchanged, "AfterTool", FETCH_TOOL), unchanged)
    capture("functionResponse.after-no-change.json", fetch_part(unchanged.generation_runs[0][1]), unchanged)


# --- events and session ------------------------------------------------------------------


def test_events_arrive_in_order_with_one_session_id_and_it_is_also_in_the_environment(unchanged):
    names = [e["stdin"]["hook_event_name"] for e in unchanged.events]
    assert names == ["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"]
    for e in unchanged.events:
        assert e["stdin"]["session_id"] == unchanged.session_id
        assert e["env"]["GEMINI_SESSION_ID"] == unchanged.session_id
        assert set(e["stdin"]) >= {"session_id", "transcript_path", "cwd", "hook_event_name", "timestamp"}
    (before_agent,) = unchanged.events_named("BeforeAgent")
    assert before_agent["prompt"] == "Please fetch the probe page."
    (end,) = unchanged.events_named("SessionEnd")
    assert end["reason"] == "exit"
    capture("settings.probe.json", unchanged.settings, unchanged)


def test_second_prompt_with_resume_keeps_the_session_and_turn_one_bytes(tail_resumed):
    s = tail_resumed
    starts = s.events_named("SessionStart")
    assert [e["source"] for e in starts] == ["startup", "resume"]
    assert [e["reason"] for e in s.events_named("SessionEnd")] == ["exit", "exit"], \
        "SessionEnd fires at the end of every headless run, resumed or not"
    assert {e["stdin"]["session_id"] for e in s.events} == {s.session_id}
    turn1_followup = s.generation_runs[0][1]
    (turn2,) = s.generation_runs[1]
    part = [p for c in turn1_followup.body["contents"] for p in c["parts"] if "functionResponse" in p][0]
    assert compact(part) in turn1_followup.raw.decode()
    assert compact(part) in turn2.raw.decode(), "turn 1's functionResponse part is resent byte for byte"
    # Gemini CLI 0.61 quirk: the resumed history carries that part twice (same id).
    assert [fr["id"] for fr in function_responses(turn2.body)] == [part["functionResponse"]["id"]] * 2
    capture("contents.turn2-after-resume.json", turn2.body["contents"][1:], s)


def test_beforetool_tool_input_replaces_the_arguments_and_appends_a_notice_to_the_result():
    s = run_scenario("tail", inject=True)
    (echo,) = s.echo_calls
    assert echo["session"] == s.session_id, "the MCP server received the injected session id"
    assert fetch_response(s.generation_runs[0][1]) == {
        "output": f"<untrusted_context>\n{MARKER}\n</untrusted_context>\n\n\n{SYSTEM_NOTICE}"}
    capture("BeforeTool.rewrite-input.stdout.json", hook_stdout(s, "BeforeTool", ECHO_TOOL), s)
    capture("functionResponse.after-tail-call-with-rewritten-input.json", fetch_part(s.generation_runs[0][1]), s)


def test_an_mcp_server_gets_no_session_id_from_the_cli(tail):
    (echo,) = tail.echo_calls
    assert echo["session"] == "", "no session argument unless a hook injects one"
    assert tail.session_id not in json.dumps(echo["env"])
    assert echo["env"].get("GEMINI_CLI") == "1"


def test_headless_run_does_not_offer_tools_of_an_untrusted_mcp_server():
    """Without ``"trust": true`` (or --yolo) a headless run leaves the server's tools out of
    the declarations, and the model's call to one answers "not found"."""
    exe, fetch_bin = h.ensure_gemini_cli(), h.ensure_fetch_venv()
    root = Path(tempfile.mkdtemp(prefix="gemini-probe-untrusted."))
    home, work = root / "home", root / "project"
    work.mkdir()
    settings = h.base_settings()
    settings["mcpServers"] = {"fetch": {**h.fetch_server_config(fetch_bin), "trust": False}}
    h.write_settings(home, settings)
    with h.LoopbackSite({"page.html": PAGE}) as site, ScriptedGemini(_script(site.url("page.html"))) as model:
        run = h.run_gemini(exe, "Please fetch the probe page.", home=home, cwd=work, base_url=model.url)
        first, second = model.generation_calls()[:2]
        assert site.requests == []
    shutil.rmtree(root, ignore_errors=True)
    assert run.returncode == 0, run.stderr
    assert FETCH_TOOL not in compact(first.body["tools"])
    assert fetch_response(second)["error"].startswith(f'Tool "{FETCH_TOOL}" not found.')


# --- the recommended wiring, with stand-ins for toolprune's hook and MCP server -------------


def test_recommended_flow_tail_call_for_the_pruned_body_and_session_injection_for_omitted():
    """FACTS §3, end to end: AfterTool prunes and tail-calls ``mcp_toolprune_omitted`` with the
    session in its args, so the model gets the pruned body; the model's own ``omitted`` call
    gets the session from BeforeTool and returns the dropped paragraph verbatim."""
    exe, fetch_bin = h.ensure_gemini_cli(), h.ensure_fetch_venv()
    root = Path(tempfile.mkdtemp(prefix="gemini-probe-design."))
    home, work, store = root / "home", root / "project", root / "store"
    work.mkdir()
    hook = shlex.join([sys.executable, str(h.E2E_DIR / "gemini_design_hook.py"), "--store", str(store),
                       "--prunable", FETCH_TOOL, "--drop", "Paragraph 3"])
    settings = h.base_settings()
    settings["mcpServers"] = {
        "fetch": h.fetch_server_config(fetch_bin),
        "toolprune": {"command": str(fetch_bin / "python"),
                      "args": [str(h.E2E_DIR / "gemini_design_store_mcp.py"), "--store", str(store)],
                      "trust": True},
    }
    settings["hooks"] = {
        "AfterTool": [{"matcher": f"^({FETCH_TOOL}|mcp_toolprune_omitted)$",
                       "hooks": [{"type": "command", "command": hook, "name": "toolprune"}]}],
        "BeforeTool": [{"matcher": "^mcp_toolprune_omitted$",
                        "hooks": [{"type": "command", "command": hook, "name": "toolprune"}]}],
    }
    h.write_settings(home, settings)

    def script(call):
        last = call.body["contents"][-1]
        names = [p["functionResponse"]["name"] for p in last["parts"] if "functionResponse" in p]
        if names == [FETCH_TOOL]:
            return [function_call_chunk("mcp_toolprune_omitted", {"id": "P1"})]
        if names:
            return [text_chunk("Done.")]
        return [function_call_chunk(FETCH_TOOL, {"url": site.url("page.html")})]

    with h.LoopbackSite({"page.html": PAGE}) as site, ScriptedGemini(script) as model:
        run = h.run_gemini(exe, "Please fetch the probe page.", home=home, cwd=work, base_url=model.url)
        gens = model.generation_calls()
    shutil.rmtree(root, ignore_errors=True)
    assert run.returncode == 0, run.stderr
    assert len(gens) == 3
    declared = [d for t in gens[0].body["tools"] for d in t.get("functionDeclarations", [])
                if d["name"] == "mcp_toolprune_omitted"]
    assert declared and "session" in compact(declared[0])
    pruned = fetch_response(gens[1])["output"]
    assert pruned.startswith("<untrusted_context>\nContents of http://127.0.0.1:")
    assert "[… 1 paragraph(s) omitted, id=P1 …]" in pruned and PARAGRAPHS[3] not in pruned
    assert all(p in pruned for i, p in enumerate(PARAGRAPHS) if i != 3)
    (answer,) = [fr["response"] for fr in function_responses(gens[2].body) if fr["name"] == "mcp_toolprune_omitted"]
    assert answer == {"output": f"<untrusted_context>\n{PARAGRAPHS[3]}\n</untrusted_context>\n\n\n{SYSTEM_NOTICE}"}


# --- failures: what the model gets, what the user sees ----------------------------------

HOOK_FAILURES = {
    # name: (hook body after reading stdin, expected functionResponse response or None for
    #        "unchanged", text that must appear on the CLI's stderr, texts that must not)
    "json_and_stderr_log_exit0": ("echo '{}'; echo log-line >&2; exit 0", None, None, ("log-line", "Hook")),
    "stderr_only_exit0": ("echo log-line >&2; exit 0", None, "Hook system message: log-line", None),
    "plain_text_exit0": ("echo not-json; exit 0", None, "Hook system message: not-json", None),
    "stderr_exit1": ("echo oops >&2; exit 1", None, "Hook system message: Warning: oops", None),
    # A Rust panic: message on stderr, exit 101, nothing on stdout. The CLI reads stderr as
    # the hook's text and, for an exit code other than 0 and 1, as a *deny*: the tool result
    # is lost. (hookRunner.js convertPlainTextToHookOutput)
    "panic_exit101": ("echo panic >&2; exit 101", {"error": "panic"}, "Hook(s) [probe] failed for event AfterTool", None),
    "json_then_panic_exit101": ("echo '{}'; echo panic >&2; exit 101", None, "Hook(s) [probe] failed", ("panic",)),
    "exit2": ("echo blocked >&2; exit 2", {"error": "blocked"}, "Tool result blocked: blocked", None),
}


@pytest.mark.parametrize("case", sorted(HOOK_FAILURES))
def test_aftertool_hook_exit_codes_and_stray_output(case):
    body, expected, shown, hidden = HOOK_FAILURES[case]
    exe, fetch_bin = h.ensure_gemini_cli(), h.ensure_fetch_venv()
    root = Path(tempfile.mkdtemp(prefix=f"gemini-probe-{case}."))
    home, work = root / "home", root / "project"
    work.mkdir()
    script = root / "hook.sh"
    script.write_text("#!/bin/bash\ncat >/dev/null\n" + body + "\n")
    script.chmod(0o755)
    settings = h.base_settings()
    settings["mcpServers"] = {"fetch": h.fetch_server_config(fetch_bin)}
    settings["hooks"] = {"AfterTool": [{"matcher": FETCH_TOOL, "hooks": [
        {"type": "command", "command": str(script), "name": "probe"}]}]}
    h.write_settings(home, settings)
    with h.LoopbackSite({"page.html": PAGE}) as site, ScriptedGemini(_script(site.url("page.html"))) as model:
        run = h.run_gemini(exe, "Please fetch the probe page.", home=home, cwd=work, base_url=model.url)
        second = model.generation_calls()[1]
    shutil.rmtree(root, ignore_errors=True)
    assert run.returncode == 0, run.stderr
    got = fetch_response(second)
    if expected is None:
        assert set(got) == {"output"} and all(p in got["output"] for p in PARAGRAPHS)
    else:
        assert got == expected
    if shown:
        assert shown in run.stderr
    for text in hidden or ():
        assert text not in run.stderr


# --- fixtures ----------------------------------------------------------------------------


def _scrub(obj, s: Scenario):
    text = json.dumps(obj, ensure_ascii=False)
    for path, name in ((str(s.root / "project"), "/home/user/project"), (str(s.root / "home"), "/home/user"),
                       (str(s.root), "/tmp/gemini-probe"), (str(h.cache_dir()), "/home/user/.cache/toolprune-e2e"),
                       (str(h.E2E_DIR), "/repo/tests/e2e"), (sys.executable, "/usr/bin/python3")):
        text = text.replace(json.dumps(path)[1:-1], name)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8000", text)
    return json.loads(text)


def _fixture_events(s: Scenario) -> dict[str, dict]:
    out = {}
    for e in s.events:
        st = e["stdin"]
        name = st["hook_event_name"]
        key = (f"{name}.{st['tool_name']}" if "tool_name" in st
               else f"{name}.{st['source']}" if name == "SessionStart" else name)
        out.setdefault(key, _scrub(st, s))
    return out


def test_recorded_fixtures_have_the_keys_a_live_run_sends(unchanged, tail, tail_resumed):
    """Guards tests/fixtures/hooks/gemini/ against drift when the pinned version changes."""
    live = {**_fixture_events(unchanged),
            **{k: v for k, v in _fixture_events(tail).items() if ECHO_TOOL in k},
            **{k: v for k, v in _fixture_events(tail_resumed).items() if k == "SessionStart.resume"}}
    if CAPTURE:
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for key, st in live.items():
            (FIXTURES / f"{key}.stdin.json").write_text(json.dumps(st, indent=2, ensure_ascii=False) + "\n")
    for key, st in live.items():
        path = FIXTURES / f"{key}.stdin.json"
        assert path.exists(), f"missing fixture {path.name}; rerun with TOOLPRUNE_CAPTURE_FIXTURES=1"
        recorded = json.loads(path.read_text())
        assert sorted(recorded) == sorted(st), f"{path.name}: keys differ from the live run"
        if "tool_response" in st:
            assert sorted(recorded["tool_response"]) == sorted(st["tool_response"])
