"""The real Claude Code CLI, offline, with a probe hook: every fact FACTS.md states.

Each test runs the pinned ``claude`` (provision.py) in a scratch HOME against the
scripted Messages API (scripted_anthropic.py), with MCP servers on stdio — the real
``mcp-server-fetch`` as ``docs`` over a loopback site of ../shared/corpus pages
(docsite.py) and/or the probe server (probe_mcp_server.py) as ``toolprune`` — and
the probe hook (probe_hook.py) registered in settings. The two-turn conversation
(`two_turns`) is the shape of the final toolprune test: the probe stands where
``toolprune hook claude-code`` and ``toolprune mcp`` will.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import fixtures
from docsite import Site, corpus_pages
from harness import (
    Claude,
    ClaudeResult,
    FetchOmittedAgent,
    ProbeHook,
    Scratch,
    docs_server,
    find_omission,
    hooks_settings,
    post_tool_use_replacement,
    pre_tool_use_add_session,
    probe_server,
    read_jsonl,
    tool_result_text,
    tool_results_by_id,
)
from provision import CLAUDE_CODE_VERSION, Toolchain
from scripted_anthropic import ScriptedAnthropic, text, tool_use

FETCH = "mcp__docs__fetch"
OMITTED = "mcp__toolprune__omitted"
DOC = "rust-book-ch08-02-strings.md"
DOC_PATH = "/docs/rust-book-ch08-02-strings.html"
#: A sentence of DOC that survives markdown → HTML → markdown unchanged.
DOC_SENTENCE = "We talked about strings in Chapter 4"
PROMPT_1 = "Why can't I index a Rust String with s[0]?"
PROMPT_2 = "And how do I iterate over its characters?"
#: What the probe makes of the fetch result: toolprune's header and one marker
#: (SPEC §9) in front of the original text ({{text}}).
PRUNED = (
    "[Omitted by relevance: 3 of 40 paragraphs (1,200 of 15,000 characters). Call `omitted` with the id"
    " and paragraph numbers to read them verbatim. id=P1]\n\n"
    "[… paragraphs 2–4 omitted: 3 paragraphs, 1,200 characters …]\n\n{{text}}"
)

#: The fields of each event's stdin with Claude Code CLAUDE_CODE_VERSION (FACTS.md §Hook stdin).
COMMON = {"session_id", "transcript_path", "cwd", "hook_event_name"}
TURN = COMMON | {"prompt_id", "permission_mode"}
KEYS = {
    "SessionStart": COMMON | {"source"},
    "UserPromptSubmit": TURN | {"prompt"},
    "PreToolUse": TURN | {"effort", "tool_name", "tool_input", "tool_use_id", "mcp_server"},
    "PostToolUse": TURN | {"effort", "tool_name", "tool_input", "tool_response", "tool_use_id", "duration_ms", "mcp_server"},
    "Stop": TURN | {"effort", "stop_hook_active", "last_assistant_message", "background_tasks", "session_crons"},
    "SessionEnd": COMMON | {"prompt_id", "reason"},
}
#: SessionStart with ``source: "resume"`` (``--continue``) adds these.
RESUME_EXTRA = {"seconds_since_last_response", "prompt_cache_likely_expired", "context_tokens", "estimated_cache_write_usd"}


def last_user_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the last user message of a request body."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def scrubber(scratch: Scratch) -> fixtures.Scrubber:
    return fixtures.Scrubber(scratch.home, scratch.project, scratch.tmp, scratch.root)


# -- the two-turn conversation -----------------------------------------------------


@dataclass
class TwoTurns:
    scratch: Scratch
    probe: ProbeHook
    mcp_log: Path
    page_url: str
    turns: list[ClaudeResult]
    requests: list[dict[str, Any]]
    turn_of_request: list[int]
    agent: FetchOmittedAgent
    recorded: list[Any]  # every RecordedRequest, side requests and other endpoints included


@pytest.fixture(scope="module")
def two_turns(toolchain: Toolchain, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> TwoTurns:
    """Turn 1 and, with ``--continue``, turn 2: fetch a corpus page, the probe prunes
    it (header + marker), the model calls ``omitted`` with the marker's range, the
    PreToolUse probe adds the session id to its arguments, the model answers."""
    scratch = Scratch(tmp_path_factory.mktemp("two-turns"))
    probe = ProbeHook(scratch.root / "probe")
    probe.respond("PostToolUse", post_tool_use_replacement(FETCH, PRUNED))
    probe.respond("PreToolUse", pre_tool_use_add_session(OMITTED))
    Scratch.write_json(scratch.user_settings, hooks_settings(probe.command))
    mcp_log = scratch.root / "toolprune-mcp.jsonl"
    servers = {
        "docs": docs_server(toolchain),
        "toolprune": probe_server(
            toolchain,
            mcp_log,
            env={"E2E_HOME": "${HOME}", "E2E_SESSION": "${CLAUDE_CODE_SESSION_ID}", "E2E_PROJECT": "${CLAUDE_PROJECT_DIR}"},
        ),
    }
    claude = Claude(toolchain, scratch)
    with Site(corpus_pages(corpus, [DOC], toolchain.python)) as site:
        page_url = site.url + DOC_PATH
        agent = FetchOmittedAgent({PROMPT_1: page_url, PROMPT_2: page_url}, fetch_tool=FETCH, omitted_tool=OMITTED)
        with ScriptedAnthropic(agent) as api:
            turns = [claude.run(PROMPT_1, api.url, mcp_servers=servers, allowed_tools=[FETCH, OMITTED]).check()]
            n1 = len(api.main_requests())
            turns.append(claude.run(PROMPT_2, api.url, mcp_servers=servers, allowed_tools=[FETCH, OMITTED], continue_=True).check())
            assert not api.errors, api.errors
            requests = api.main_requests()
    return TwoTurns(scratch, probe, mcp_log, page_url, turns, requests, [1] * n1 + [2] * (len(requests) - n1), agent, list(api.requests))


def test_each_turn_fetches_reads_the_omission_back_and_answers(two_turns: TwoTurns) -> None:
    actions = [a.split(" ")[0] for _, a in two_turns.agent.decisions]
    assert actions == ["fetch", "omitted", "answer"] * 2
    assert [t.stdout.strip() for t in two_turns.turns] == ["Answered from the page."] * 2
    assert two_turns.turn_of_request == [1, 1, 1, 2, 2, 2]


def test_an_offline_run_calls_only_the_messages_endpoint(two_turns: TwoTurns) -> None:
    assert {(r.method, r.path) for r in two_turns.recorded} == {("POST", "/v1/messages?beta=true")}
    assert not any(r.side for r in two_turns.recorded)
    assert all(r.body["stream"] is True for r in two_turns.recorded)
    # The session id also travels in a header and in metadata.user_id.
    session = two_turns.probe.events()[0]["session_id"]
    assert {r.headers["x-claude-code-session-id"] for r in two_turns.recorded} == {session}
    assert json.loads(two_turns.requests[0]["metadata"]["user_id"])["session_id"] == session
    assert two_turns.recorded[0].headers["user-agent"].startswith(f"claude-cli/{CLAUDE_CODE_VERSION} ")


def test_hook_events_arrive_in_order_with_these_fields(two_turns: TwoTurns) -> None:
    events = two_turns.probe.events()
    names = [(e["hook_event_name"], e.get("tool_name")) for e in events]
    one_turn = [
        ("UserPromptSubmit", None),
        ("PreToolUse", FETCH),
        ("PostToolUse", FETCH),
        ("PreToolUse", OMITTED),
        ("PostToolUse", OMITTED),
        ("Stop", None),
        ("SessionEnd", None),
    ]
    assert names == [("SessionStart", None)] + one_turn + [("SessionStart", None)] + one_turn
    for e in events:
        extra = RESUME_EXTRA if e.get("source") == "resume" else set()
        assert set(e) == KEYS[e["hook_event_name"]] | extra, e["hook_event_name"]
    assert [e["source"] for e in two_turns.probe.events("SessionStart")] == ["startup", "resume"]
    assert [e["reason"] for e in two_turns.probe.events("SessionEnd")] == ["other", "other"]
    assert [e["prompt"] for e in two_turns.probe.events("UserPromptSubmit")] == [PROMPT_1, PROMPT_2]
    assert {e["mcp_server"]["name"] for e in two_turns.probe.events("PreToolUse")} == {"docs", "toolprune"}


def test_session_id_and_transcript_stay_the_same_across_continue(two_turns: TwoTurns) -> None:
    events = two_turns.probe.events()
    assert len({e["session_id"] for e in events}) == 1
    assert len({e["transcript_path"] for e in events}) == 1
    session = events[0]["session_id"]
    assert events[0]["transcript_path"].endswith(f"/{session}.jsonl")
    assert events[0]["transcript_path"].startswith(str(two_turns.scratch.home / ".claude" / "projects"))
    # One prompt_id per turn, shared by every event of that turn that has one.
    ids = [e.get("prompt_id") for e in events if e["hook_event_name"] == "UserPromptSubmit"]
    assert len(set(ids)) == 2


def test_post_tool_use_gets_the_mcp_result_as_content_blocks(two_turns: TwoTurns) -> None:
    post = two_turns.probe.events("PostToolUse")[0]
    assert post["tool_name"] == FETCH
    assert post["tool_input"] == {"url": two_turns.page_url, "max_length": 100000}
    blocks = post["tool_response"]
    assert isinstance(blocks, list) and [b["type"] for b in blocks] == ["text"]
    body = blocks[0]["text"]
    assert body.startswith(f"Contents of {two_turns.page_url}:\n")
    assert DOC_SENTENCE in body and len(body) > 15000
    assert post["mcp_server"] == {"name": "docs", "source": "dynamic"}
    assert post["tool_use_id"].startswith("toolu_e2e_")


def test_updated_mcp_tool_output_is_exactly_what_the_model_receives(two_turns: TwoTurns) -> None:
    original = two_turns.probe.events("PostToolUse")[0]["tool_response"][0]["text"]
    expected = [{"type": "text", "text": PRUNED.replace("{{text}}", original)}]
    result = last_user_content(two_turns.requests[1])[-1]
    assert result["type"] == "tool_result"
    assert result["content"] == expected
    assert find_omission(tool_result_text(result)) is not None


def test_pre_tool_use_updated_input_reaches_the_mcp_server(two_turns: TwoTurns) -> None:
    session = two_turns.probe.events()[0]["session_id"]
    calls = [e["params"] for e in read_jsonl(two_turns.mcp_log) if e.get("method") == "tools/call"]
    assert [c["arguments"] for c in calls] == [{"id": "P1", "from": 2, "to": 4, "session_id": session}] * 2
    # The model's tool_use block keeps the arguments it wrote; the result echoes the server's.
    omitted_uses = [
        b for m in two_turns.requests[-1]["messages"] if m["role"] == "assistant" for b in m["content"]
        if b.get("type") == "tool_use" and b["name"] == OMITTED
    ]
    assert [u["input"] for u in omitted_uses] == [{"id": "P1", "from": 2, "to": 4}] * 2
    assert session in tool_result_text(last_user_content(two_turns.requests[2])[-1])


def test_tools_call_meta_carries_the_tool_use_id_but_no_session(two_turns: TwoTurns) -> None:
    calls = [e["params"] for e in read_jsonl(two_turns.mcp_log) if e.get("method") == "tools/call"]
    tool_use_ids = [e["tool_use_id"] for e in two_turns.probe.events("PreToolUse") if e["tool_name"] == OMITTED]
    assert [c["_meta"]["claudecode/toolUseId"] for c in calls] == tool_use_ids
    session = two_turns.probe.events()[0]["session_id"]
    for c in calls:
        assert session not in json.dumps(c["_meta"])
        assert c["_meta"]["io.modelcontextprotocol/clientInfo"]["version"] == CLAUDE_CODE_VERSION


def test_mcp_server_env_session_id_is_stale_after_continue(two_turns: TwoTurns) -> None:
    session = two_turns.probe.events()[0]["session_id"]
    starts = [e for e in read_jsonl(two_turns.mcp_log) if e["event"] == "start"]
    assert len(starts) == 2  # one server process per `claude` run
    assert starts[0]["env"]["CLAUDE_CODE_SESSION_ID"] == session
    assert starts[1]["env"]["CLAUDE_CODE_SESSION_ID"] != session  # --continue: a fresh id, not the conversation's
    assert starts[0]["cwd"] == str(two_turns.scratch.project)
    assert starts[0]["env"]["CLAUDE_PROJECT_DIR"] == str(two_turns.scratch.project)


def test_mcp_config_expands_the_process_env_but_no_session_variable(two_turns: TwoTurns) -> None:
    env = [e for e in read_jsonl(two_turns.mcp_log) if e["event"] == "start"][0]["env"]
    assert env["E2E_HOME"] == str(two_turns.scratch.home)
    assert env["E2E_SESSION"] == "${CLAUDE_CODE_SESSION_ID}"
    assert env["E2E_PROJECT"] == "${CLAUDE_PROJECT_DIR}"


def test_hook_process_runs_in_the_project_with_claude_variables(two_turns: TwoTurns) -> None:
    session = two_turns.probe.events()[0]["session_id"]
    for call in two_turns.probe.calls():
        assert call["cwd"] == str(two_turns.scratch.project)
        assert call["env"]["CLAUDE_PROJECT_DIR"] == str(two_turns.scratch.project)
        assert call["env"]["CLAUDECODE"] == "1"
        assert call["env"]["HOME"] == str(two_turns.scratch.home)
    # In the hooks, CLAUDE_CODE_SESSION_ID is the conversation's id in both turns.
    assert {c["env"]["CLAUDE_CODE_SESSION_ID"] for c in two_turns.probe.calls()} == {session}
    # The API key is passed on to hooks (they are the user's own programs).
    assert two_turns.probe.calls()[0]["env"].get("ANTHROPIC_API_KEY") == "sk-test"


def test_turn_two_prompt_is_a_user_message_of_its_own(two_turns: TwoTurns) -> None:
    first_of_turn_2 = two_turns.requests[3]
    roles = [m["role"] for m in first_of_turn_2["messages"]]
    assert roles[-2:] == ["assistant", "user"]
    assert first_of_turn_2["messages"][-2]["content"][-1] == {"type": "text", "text": "Answered from the page."}
    texts = [b.get("text") for b in last_user_content(first_of_turn_2)]
    assert PROMPT_2 in texts
    assert all(b["type"] == "text" for b in last_user_content(first_of_turn_2))
    # Turn 1's last request is replayed before the answer and the new prompt.
    turn_1 = [m["role"] for m in two_turns.requests[2]["messages"]]
    assert roles == turn_1 + ["assistant", "user"]


def test_tool_results_repeat_unchanged_in_every_later_request(two_turns: TwoTurns) -> None:
    per_id = tool_results_by_id(two_turns.requests)
    assert len(per_id) == 4
    for tool_use_id, copies in per_id.items():
        assert len(set(copies)) == 1, tool_use_id
    first_fetch = two_turns.probe.events("PostToolUse")[0]["tool_use_id"]
    assert len(per_id[first_fetch]) == 5  # requests 2–6 all carry turn 1's pruned fetch


def test_hook_payload_fixtures_have_the_live_shapes(two_turns: TwoTurns) -> None:
    scrub = scrubber(two_turns.scratch)
    events = two_turns.probe.events()
    first = {}
    for e in events:
        key = (e["hook_event_name"], e.get("tool_name"), e.get("source"))
        first.setdefault(key, e)
    fixtures.check("session_start.startup", scrub(first[("SessionStart", None, "startup")]))
    fixtures.check("session_start.resume", scrub(first[("SessionStart", None, "resume")]))
    fixtures.check("user_prompt_submit", scrub(first[("UserPromptSubmit", None, None)]))
    fixtures.check("pre_tool_use.mcp_fetch", scrub(first[("PreToolUse", FETCH, None)]))
    fixtures.check("post_tool_use.mcp_fetch", scrub(first[("PostToolUse", FETCH, None)]))
    fixtures.check("pre_tool_use.mcp_omitted", scrub(first[("PreToolUse", OMITTED, None)]))
    fixtures.check("post_tool_use.mcp_omitted", scrub(first[("PostToolUse", OMITTED, None)]))
    fixtures.check("stop", scrub(first[("Stop", None, None)]))
    fixtures.check("session_end", scrub(first[("SessionEnd", None, None)]))
    call = [e for e in read_jsonl(two_turns.mcp_log) if e.get("method") == "tools/call"][0]
    fixtures.check("mcp_tools_call.omitted", scrub(call["params"]))
    env = {k: v for k, v in two_turns.probe.calls("PostToolUse")[0]["env"].items() if k.startswith("CLAUDE")}
    fixtures.check("hook_env.post_tool_use", scrub(env))
    # What the probe printed, as verified above (the forms toolprune's hook prints).
    session = events[0]["session_id"]
    original = two_turns.probe.events("PostToolUse")[0]["tool_response"][0]["text"]
    fixtures.check("output.post_tool_use.updated_mcp_tool_output", scrub(
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": [{"type": "text", "text": PRUNED.replace("{{text}}", original)}]}}
    ))
    fixtures.check("output.pre_tool_use.updated_input", {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                               "updatedInput": {"id": "P1", "from": 2, "to": 4, "session_id": session}}
    })


# -- what a PostToolUse answer does ------------------------------------------------


def run_omitted_once(claude: Claude, probe: ProbeHook, toolchain: Toolchain, events=("UserPromptSubmit", "PreToolUse", "PostToolUse"), timeout=None, allowed=(OMITTED,)):
    """One prompt; the model calls the probe's ``omitted`` once, then answers ``done``."""
    Scratch.write_json(claude.scratch.user_settings, hooks_settings(probe.command, events=events, timeout=timeout))
    with ScriptedAnthropic([tool_use(OMITTED, {"id": "P1", "from": 0, "to": 1}), text("done")]) as api:
        result = claude.run("q", api.url, mcp_servers={"toolprune": probe_server(toolchain, claude.scratch.root / "mcp.jsonl")}, allowed_tools=allowed)
        return result, api.main_requests()


ORIGINAL = [{"type": "text", "text": 'omitted probe: {"from": 0, "id": "P1", "to": 1}'}]


@pytest.mark.parametrize(
    "key, value, received",
    [
        ("updatedMCPToolOutput", [{"type": "text", "text": "NEW"}], [{"type": "text", "text": "NEW"}]),
        ("updatedToolOutput", [{"type": "text", "text": "NEW"}], [{"type": "text", "text": "NEW"}]),
        ("updatedToolOutput", "NEW", "NEW"),
    ],
    ids=["updatedMCPToolOutput", "updatedToolOutput-blocks", "updatedToolOutput-string"],
)
def test_post_tool_use_output_replaces_an_mcp_result(claude, probe, toolchain, key, value, received) -> None:
    probe.respond("PostToolUse", {"tool": OMITTED, "stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse", key: value}}})
    result, requests = run_omitted_once(claude, probe, toolchain)
    result.check()
    assert last_user_content(requests[1])[-1]["content"] == received


def test_exit_1_with_json_on_stdout_still_replaces_the_result(claude, probe, toolchain) -> None:
    probe.respond("PostToolUse", {**post_tool_use_replacement(OMITTED, "NEW"), "exit": 1})
    result, requests = run_omitted_once(claude, probe, toolchain)
    assert result.check().stderr == ""
    assert last_user_content(requests[1])[-1]["content"] == [{"type": "text", "text": "NEW"}]


@pytest.mark.parametrize(
    "rule, timeout",
    [
        ({"stdout": "{not json"}, None),
        ({"stdout": "plain words from the hook"}, None),
        ({"stdout": "", "stderr": "HOOK-STDERR", "exit": 1}, None),
        ({"sleep": 5, "stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": [{"type": "text", "text": "TOO-LATE"}]}}}, 2),
    ],
    ids=["invalid-json", "plain-text", "exit-1", "over-its-timeout"],
)
def test_a_failing_post_tool_use_hook_leaves_the_result_and_says_nothing(claude, probe, toolchain, rule, timeout) -> None:
    probe.respond("PostToolUse", {"tool": OMITTED, **rule})
    result, requests = run_omitted_once(claude, probe, toolchain, timeout=timeout)
    assert result.check().stdout.strip() == "done"
    assert result.stderr == ""
    assert last_user_content(requests[1])[-1]["content"] == ORIGINAL
    sent = json.dumps(requests, ensure_ascii=False)
    for needle in ("{not json", "plain words from the hook", "HOOK-STDERR", "TOO-LATE"):
        assert needle not in sent


def test_exit_2_on_post_tool_use_shows_stderr_to_the_model(claude, probe, toolchain) -> None:
    probe.respond("PostToolUse", {"tool": OMITTED, "stderr": "HOOK-BLOCKING", "exit": 2})
    result, requests = run_omitted_once(claude, probe, toolchain)
    assert result.check().stderr == ""
    assert last_user_content(requests[1])[0]["content"] == ORIGINAL
    system = [m for m in requests[1]["messages"] if m["role"] == "system" and "HOOK-BLOCKING" in json.dumps(m)]
    assert len(system) == 1
    assert "PostToolUse:mcp__toolprune__omitted hook blocking error from command" in json.dumps(system[0])


def test_user_prompt_submit_plain_stdout_is_added_to_the_model_context(claude, probe, toolchain) -> None:
    probe.respond("UserPromptSubmit", {"stdout": "UPS-STDOUT"})
    result, requests = run_omitted_once(claude, probe, toolchain)
    result.check()
    assert "UserPromptSubmit hook success: UPS-STDOUT" in json.dumps(requests[0])


def test_user_prompt_submit_exit_1_is_silent_and_exit_2_blocks_the_prompt(toolchain, tmp_path) -> None:
    for code, prompt_sent in ((1, True), (2, False)):
        scratch = Scratch(tmp_path / f"exit{code}")
        probe = ProbeHook(scratch.root / "probe").respond("UserPromptSubmit", {"stderr": "UPS-STDERR", "exit": code})
        result, requests = run_omitted_once(Claude(toolchain, scratch), probe, toolchain)
        assert result.check().stderr == ""
        assert bool(requests) is prompt_sent
        if prompt_sent:
            assert "UPS-STDERR" not in json.dumps(requests)
        else:
            assert result.stdout.startswith("UserPromptSubmit operation blocked by hook:")
            assert "UPS-STDERR" in result.stdout


def test_session_end_hook_is_cancelled_quickly_unless_it_sets_a_timeout(toolchain, tmp_path) -> None:
    for timeout, finished in ((None, False), (10, True)):
        scratch = Scratch(tmp_path / f"timeout-{timeout}")
        probe = ProbeHook(scratch.root / "probe").respond("SessionEnd", {"sleep": 2.5})
        Scratch.write_json(scratch.user_settings, hooks_settings(probe.command, events=("SessionEnd",), timeout=timeout))
        with ScriptedAnthropic([text("done")]) as api:
            result = Claude(toolchain, scratch).run("q", api.url).check()
        slept = Path(str(probe.log) + ".slept")
        if finished:
            assert slept.exists() and result.stderr == ""
        else:
            assert "failed: Hook cancelled" in result.stderr and "SessionEnd hook" in result.stderr
            time.sleep(3)  # past the hook's sleep: it was killed, not left running
            assert not slept.exists()


def test_tool_matcher_is_an_exact_name_or_list_else_an_unanchored_regex_not_a_glob(toolchain, scratch) -> None:
    matchers = {
        "exact": OMITTED,
        "list": "mcp__docs__fetch|mcp__toolprune__omitted",
        "bare-server": "mcp__toolprune",
        "regex": "mcp__toolprune__.*",
        "anchored-regex": "^mcp__.*__omitted$",
        "regex-substring": "mcp__toolprune__*",
        "glob": "mcp__*__omitted",
    }
    probes = {k: ProbeHook(scratch.root / "probe", tag=k) for k in matchers}
    entries = [{"matcher": m, "hooks": [{"type": "command", "command": probes[k].command}]} for k, m in matchers.items()]
    Scratch.write_json(scratch.user_settings, {"hooks": {"PostToolUse": entries}})
    with ScriptedAnthropic([tool_use(OMITTED, {"id": "P1", "from": 0, "to": 1}), text("done")]) as api:
        servers = {"toolprune": probe_server(toolchain, scratch.root / "mcp.jsonl")}
        Claude(toolchain, scratch).run("q", api.url, mcp_servers=servers, allowed_tools=[OMITTED]).check()
    fired = {k: len(p.events()) for k, p in probes.items()}
    assert fired == {"exact": 1, "list": 1, "bare-server": 0, "regex": 1, "anchored-regex": 1, "regex-substring": 1, "glob": 0}


def test_updated_input_applies_without_a_permission_decision(claude, probe, toolchain) -> None:
    probe.respond("PreToolUse", {"tool": OMITTED, "stdout": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"{{tool_input}}": 1, "session_id": "{{session_id}}"}}}})
    result, requests = run_omitted_once(claude, probe, toolchain)
    result.check()
    session = probe.events("PreToolUse")[0]["session_id"]
    assert f'"session_id": "{session}"' in tool_result_text(last_user_content(requests[1])[-1])


# -- built-in tools ------------------------------------------------------------------


def test_updated_tool_output_replaces_a_builtin_result_only_in_its_own_shape(toolchain, tmp_path) -> None:
    bash_response = {"stdout": "NEW-BASH", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
    for value, received in (("NEW-BASH-STRING", "bash-original"), (bash_response, "NEW-BASH")):
        scratch = Scratch(tmp_path / ("obj" if isinstance(value, dict) else "str"))
        probe = ProbeHook(scratch.root / "probe").respond(
            "PostToolUse", {"tool": "Bash", "stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": value}}}
        )
        Scratch.write_json(scratch.user_settings, hooks_settings(probe.command, events=("PostToolUse",)))
        with ScriptedAnthropic([tool_use("Bash", {"command": "echo bash-original", "description": "Print a word"}), text("done")]) as api:
            Claude(toolchain, scratch).run("q", api.url, allowed_tools=["Bash"]).check()
            assert last_user_content(api.main_requests()[1])[-1]["content"] == received
        post = probe.events("PostToolUse")[0]
        assert post["tool_response"]["stdout"] == "bash-original"
        assert "mcp_server" not in post
        fixtures.check("post_tool_use.bash", scrubber(scratch)(post))


@pytest.fixture
def tls_site(corpus: Path, toolchain: Toolchain, tmp_path: Path):
    """The corpus site over HTTPS with a self-signed certificate (``openssl``), and its PEM."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed for the WebFetch test (apt-get install openssl)"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    site = Site(corpus_pages(corpus, [DOC], toolchain.python))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    site._httpd.socket = ctx.wrap_socket(site._httpd.socket, server_side=True)
    with site:
        yield site.url.replace("http://", "https://"), cert


def test_webfetch_runs_offline_digests_through_a_side_request_and_takes_updated_tool_output(toolchain, scratch, probe, tls_site) -> None:
    base, cert = tls_site
    url = base + DOC_PATH
    response = {"bytes": 1, "code": 200, "codeText": "OK", "result": "NEW-WEBFETCH", "durationMs": 1, "url": url}
    probe.respond("PostToolUse", {"tool": "WebFetch", "stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": response}}})
    settings = hooks_settings(probe.command, events=("PostToolUse",))
    settings["skipWebFetchPreflight"] = True  # else it asks claude.ai whether the domain is safe
    Scratch.write_json(scratch.user_settings, settings)
    with ScriptedAnthropic([tool_use("WebFetch", {"url": url, "prompt": "What does it say about indexing?"}), text("done")]) as api:
        Claude(toolchain, scratch).run("q", api.url, allowed_tools=["WebFetch"], env={"NODE_EXTRA_CA_CERTS": str(cert)}).check()
        side = api.side_requests()
        assert last_user_content(api.main_requests()[1])[-1]["content"] == "NEW-WEBFETCH"
    assert len(side) == 1 and not side[0].body.get("tools")
    digest_prompt = json.dumps(side[0].body["messages"])
    assert "Web page content:" in digest_prompt and DOC_SENTENCE in digest_prompt
    post = probe.events("PostToolUse")[0]
    assert set(post["tool_response"]) == {"bytes", "code", "codeText", "result", "durationMs", "url"}
    assert post["tool_response"]["result"] == "e2e digest of the fetched page"  # the side request's answer
    fixtures.check("post_tool_use.webfetch", scrubber(scratch)(post))


# -- settings, permissions, MCP registration -----------------------------------------


def test_hooks_run_from_user_project_and_local_settings_and_project_mcp_json_needs_no_approval(toolchain, scratch) -> None:
    probes = {tag: ProbeHook(scratch.root / "probe", tag=tag) for tag in ("user", "project", "local")}
    Scratch.write_json(scratch.user_settings, hooks_settings(probes["user"].command, events=("UserPromptSubmit",)))
    Scratch.write_json(
        scratch.project_settings,
        {**hooks_settings(probes["project"].command, events=("UserPromptSubmit",)), "permissions": {"allow": [OMITTED]}},
    )
    Scratch.write_json(scratch.project_local_settings, hooks_settings(probes["local"].command, events=("UserPromptSubmit",)))
    Scratch.write_json(scratch.project_mcp_json, {"mcpServers": {"toolprune": probe_server(toolchain, scratch.root / "mcp.jsonl")}})
    with ScriptedAnthropic([tool_use(OMITTED, {"id": "P1", "from": 0, "to": 1}), text("done")]) as api:
        # .mcp.json servers connect in the background like ~/.claude.json ones: wait for them.
        result = Claude(toolchain, scratch).run("q", api.url, env={"MCP_CONNECTION_NONBLOCKING": "false"}).check()
        requests = api.main_requests()
    assert {tag: len(p.events("UserPromptSubmit")) for tag, p in probes.items()} == {"user": 1, "project": 1, "local": 1}
    assert OMITTED in [t["name"] for t in requests[0]["tools"]]  # .mcp.json server started, no approval asked
    # An untrusted workspace's permissions.allow is ignored (said on stderr): the call is refused.
    assert "Ignoring 1 permissions.allow entry from .claude/settings.json" in result.stderr
    refusal = last_user_content(requests[1])[-1]
    assert refusal["is_error"] is True and "haven't granted it yet" in refusal["content"]


@pytest.mark.parametrize("where", ["none", "user-settings", "trusted-project", "pre-tool-use-allow"])
def test_how_an_mcp_tool_gets_permission_in_print_mode(toolchain, scratch, probe, where) -> None:
    settings: dict[str, Any] = {}
    if where == "user-settings":
        settings["permissions"] = {"allow": [OMITTED]}
    elif where == "trusted-project":
        Scratch.write_json(scratch.project_settings, {"permissions": {"allow": [OMITTED]}})
        Scratch.write_json(scratch.home / ".claude.json", {"projects": {str(scratch.project): {"hasTrustDialogAccepted": True}}})
    elif where == "pre-tool-use-allow":
        probe.respond("PreToolUse", pre_tool_use_add_session(OMITTED))
        settings.update(hooks_settings(probe.command, events=("PreToolUse",), matcher=OMITTED))
    Scratch.write_json(scratch.user_settings, settings)
    with ScriptedAnthropic([tool_use(OMITTED, {"id": "P1", "from": 0, "to": 1}), text("done")]) as api:
        Claude(toolchain, scratch).run("q", api.url, mcp_servers={"toolprune": probe_server(toolchain, scratch.root / "mcp.jsonl")}).check()
        result = last_user_content(api.main_requests()[1])[-1]
    if where == "none":
        assert result.get("is_error") is True and "haven't granted it yet" in result["content"]
    else:
        assert "omitted probe:" in tool_result_text(result) and not result.get("is_error")


@pytest.mark.parametrize("nonblocking", [None, "false"])
def test_user_scope_mcp_server_is_in_the_first_request_when_connections_block(toolchain, scratch, nonblocking) -> None:
    Scratch.write_json(scratch.home / ".claude.json", {"mcpServers": {"toolprune": {"type": "stdio", **probe_server(toolchain, scratch.root / "mcp.jsonl")}}})
    Scratch.write_json(scratch.user_settings, {"permissions": {"allow": [OMITTED]}})
    env = {"MCP_CONNECTION_NONBLOCKING": nonblocking} if nonblocking else None
    with ScriptedAnthropic([tool_use(OMITTED, {"id": "P1", "from": 0, "to": 1}), text("done")]) as api:
        Claude(toolchain, scratch).run("q", api.url, env=env).check()
        tools = [[t["name"] for t in b["tools"]] for b in api.main_requests()]
    # By default the first request is built before the server has listed its tools
    # (seen in every run here, but a race, so not asserted); the second has them.
    assert OMITTED in tools[1]
    if nonblocking == "false":
        assert OMITTED in tools[0]


def test_without_the_traffic_flags_the_cli_also_probes_api_hello(toolchain, scratch) -> None:
    with ScriptedAnthropic([text("done")]) as api:
        env = scratch.env(api.url)
        unset = {k: None for k in ("DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")}
        Claude(toolchain, scratch).run("q", api.url, env=unset).check()
        paths = [(r.method, r.path, r.status) for r in api.requests]
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"  # the harness's default
    assert ("HEAD", "/api/hello", 404) in paths
    assert [p for p in paths if p[0] == "POST"] == [("POST", "/v1/messages?beta=true", 200)]


def test_tool_search_hides_mcp_tools_unless_disabled(toolchain, scratch) -> None:
    with ScriptedAnthropic([text("done")]) as api:
        servers = {"toolprune": probe_server(toolchain, scratch.root / "mcp.jsonl")}
        Claude(toolchain, scratch).run("q", api.url, mcp_servers=servers, tool_search=True).check()
        deferred = [t["name"] for t in api.main_requests()[0]["tools"]]
    assert "ToolSearch" in deferred and OMITTED not in deferred
