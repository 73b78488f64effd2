"""The harness's own pieces, without the CLI: SSE framing, marker reading, tool_result extraction."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request

from harness import Omission, find_omission, tool_results_by_id
from provision import CLAUDE_CODE_VERSION
from scripted_anthropic import ScriptedAnthropic, text, tool_use


def _post(url: str, body: dict) -> tuple[str, bytes]:
    req = urllib.request.Request(url + "/v1/messages", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers["content-type"], r.read()


def _events(raw: bytes) -> list[tuple[str, dict]]:
    out = []
    for frame in raw.decode().split("\n\n"):
        if frame.strip():
            lines = dict(line.split(": ", 1) for line in frame.splitlines())
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_streamed_tool_use_has_the_real_event_order_and_reassembles_its_input() -> None:
    args = {"url": "http://127.0.0.1:1/x", "max_length": 100000}
    with ScriptedAnthropic([tool_use("mcp__docs__fetch", args, id="toolu_1")]) as api:
        ctype, raw = _post(api.url, {"model": "m", "stream": True, "tools": [{"name": "t"}], "messages": []})
    events = _events(raw)
    assert ctype == "text/event-stream"
    names = [e for e, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    start = events[2][1]["content_block"]
    assert start == {"type": "tool_use", "id": "toolu_1", "name": "mcp__docs__fetch", "input": {}}
    partial = "".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta")
    assert json.loads(partial) == args
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_non_streaming_answer_count_tokens_and_side_requests_do_not_consume_the_script() -> None:
    with ScriptedAnthropic([text("first"), text("second")]) as api:
        _, side = _post(api.url, {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]})
        _, main = _post(api.url, {"model": "m", "tools": [{"name": "t"}], "messages": []})
        count = urllib.request.urlopen(urllib.request.Request(
            api.url + "/v1/messages/count_tokens", data=b'{"messages": []}', headers={"content-type": "application/json"}), timeout=10).read()
    assert json.loads(main)["content"] == [{"type": "text", "text": "first"}]
    assert json.loads(main)["stop_reason"] == "end_turn"
    assert json.loads(side)["content"][0]["type"] == "text"
    assert json.loads(count)["input_tokens"] >= 1
    assert [r.side for r in api.requests] == [True, False, False]
    assert len(api.main_requests()) == 1 and len(api.side_requests()) == 1


def test_a_script_that_raises_is_answered_500_and_kept() -> None:
    def script(req):
        raise ValueError("bad step")

    with ScriptedAnthropic(script) as api:
        try:
            _post(api.url, {"model": "m", "tools": [{"name": "t"}], "messages": []})
        except urllib.error.HTTPError as e:
            assert e.code == 500
        else:
            raise AssertionError("expected HTTP 500")
    assert [type(e) for e in api.errors] == [ValueError]


def test_find_omission_reads_header_and_first_marker_in_both_languages_and_units() -> None:
    en = (
        "[Omitted by relevance: 21 of 48 paragraphs (3,926 of 9,388 characters). Call `omitted` with the id and"
        " paragraph numbers to read them verbatim. id=P2]\n\nkept\n\n"
        "[… paragraphs 8–14 omitted: 7 paragraphs, 1,204 characters …]\n\n[… paragraph 20 omitted: 1 paragraph, 311 characters …]"
    )
    single = en.replace("[… paragraphs 8–14 omitted: 7 paragraphs, 1,204 characters …]\n\n", "")
    ja = (
        "【関連度で段落を省略しています: 全 48 段落・9,388 字のうち 21 段落・3,926 字を省略。省略した段落は `omitted` に id と"
        "段落番号を渡すと逐語で読めます。id=P3】\n\n［… 段落 8〜14・7 段落・1,204 字を省略 …］"
    )
    array = (
        '"[Omitted by relevance: 2 of 7 elements (4,419 of 14,697 characters). Call `omitted` with the id and element'
        ' numbers (from, to) to read them verbatim. id=P1] [… elements 0–1 omitted: 2 elements, 4,419 characters …]"'
    )
    assert find_omission(en) == Omission("P2", 8, 14)
    assert find_omission(single) == Omission("P2", 20, 20)
    assert find_omission(ja) == Omission("P3", 8, 14)
    assert find_omission(array) == Omission("P1", 0, 1)
    assert find_omission("no header [… paragraphs 1–2 omitted: …]") is None
    assert find_omission(en.split("\n\n")[0]) is None  # a header without a marker


def test_tool_results_by_id_lists_each_copy_without_cache_control() -> None:
    result = {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "é"}]}
    bodies = [
        {"messages": [{"role": "user", "content": [dict(result, cache_control={"type": "ephemeral"})]}]},
        {"messages": [{"role": "user", "content": [result]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "x"}]}]},
    ]
    per_id = tool_results_by_id(bodies)
    assert per_id == {"a": ['[{"text":"é","type":"text"}]'] * 2, "b": ['"x"']}


def test_the_pinned_claude_runs_and_reports_its_version(toolchain) -> None:
    out = subprocess.run([toolchain.claude, "--version"], capture_output=True, text=True, timeout=60).stdout
    assert out.split()[0] == CLAUDE_CODE_VERSION == toolchain.claude_version
