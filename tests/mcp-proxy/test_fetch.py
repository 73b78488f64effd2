"""`toolprune mcp-proxy` around the real ``mcp-server-fetch`` (PyPI), fetching a real
page from a loopback site, with the official Python ``mcp`` SDK as the client — in
both protocol eras (``initialize``, and ``server/discover`` of 2026-07-28).

Asserted: the page comes back pruned (header, markers, kept text verbatim and in
order) on the basis of the prompt hook's record, of the model-written argument,
or not at all (``no_basis``: the bytes of the upstream's answer); ``omitted`` gives
every dropped paragraph back verbatim (their characters add up to the header's
count); every line the proxy did not prune is the same bytes on both sides of it;
the same fetch again after a pruned one passes whole (the repeat gate).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from mcp.client.client import Client

from conftest import DOC, kept_chunks, markers, stack

pytestmark = pytest.mark.anyio

MAX = 100000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def fetch_server(tools) -> list[str]:
    return [tools.fetch_server, "--ignore-robots-txt", "--allow-private-ips"]


def request_of(manifest) -> str:
    return manifest[DOC]["request_en"]


def text_of(result) -> str:
    return "".join(b.text for b in result.content if b.type == "text")


def assert_transparent(s) -> None:
    """Every line not intercepted is byte-identical on both sides of the proxy, in order."""
    inner_s2c = s.inner.lines("s2c")
    outer_s2c = s.outer.lines("s2c")
    intercepted = set()
    for m in s.outer.messages("c2s"):
        if m.get("method") in ("tools/list", "tools/call") and "id" in m:
            intercepted.add(json.dumps(m["id"]))
    passed = [l for l in inner_s2c if json.dumps(json.loads(l).get("id")) not in intercepted or "method" in json.loads(l)]
    seen = iter(outer_s2c)
    for line in passed:
        assert any(line == o for o in seen), f"a server line did not reach the client unchanged: {line[:200]!r}"
    inner_c2s = s.inner.lines("c2s")
    outer_c2s = [l for l in s.outer.lines("c2s") if json.loads(l).get("method") != "tools/call"]
    seen = iter(inner_c2s)
    for line in outer_c2s:
        assert any(line == i for i in seen), f"a client line did not reach the server unchanged: {line[:200]!r}"


def upstream_text(s, tool: str = "fetch") -> str:
    """The text the server answered to the (last) call of `tool`, as it sent it."""
    calls = {json.dumps(m["id"]) for m in s.inner.messages("c2s") if m.get("method") == "tools/call" and m["params"]["name"] == tool}
    answers = [m for m in s.inner.messages("s2c") if json.dumps(m.get("id")) in calls and "result" in m]
    assert answers, "the server answered no call"
    return "".join(b["text"] for b in answers[-1]["result"]["content"] if b["type"] == "text")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_fetched_page_is_pruned_on_the_hooks_request_and_omitted_gives_the_rest_back_verbatim(tools, toolprune, user, site, manifest, mode, tmp_path):
    user.config('threshold = 0.5\n')
    s = stack(toolprune, user, fetch_server(tools), proxy_args=("--name", "docs"))
    url = site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html"
    async with Client(s.params, mode=mode) as client:
        # The prompt hook runs when the user sends the prompt (after the agent started its
        # servers), in a process of the same agent: here the agent is the outer tap.
        agent = s.outer.pids()["tap"]
        user.record_prompt("claude-code-abc", request_of(manifest), agent_pid=agent)
        user.record_prompt("claude-code-other", "Tell me about cooking pasta with tomatoes and basil, please.", agent_pid=agent + 1)
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert names.count("omitted") == 1 and "fetch" in names
        assert names[-1] == "omitted", "appended after the server's own tools"
        result = await client.call_tool("fetch", {"url": url, "max_length": MAX})
        body = text_of(result)
        pid, ranges, dropped_chars, total_chars = markers(body)
        raw = upstream_text(s)
        assert len(raw) == total_chars, "the header counts the page the server returned"
        assert ranges, "at least one marker"
        # Kept text: verbatim, in order.
        at = 0
        for chunk in kept_chunks(body):
            found = raw.find(chunk, at)
            assert found >= 0, f"kept text is not verbatim: {chunk[:120]!r}"
            at = found + len(chunk)
        # omitted: every dropped run back, verbatim, adding up to the header's count.
        got = 0
        for a, b in ranges:
            back = await client.call_tool("omitted", {"id": pid, "from": a, "to": b})
            text = text_of(back)
            assert not back.is_error
            assert text and text in raw, "omitted returns the page's own text"
            got += len(text)
        assert got == dropped_chars
        gone = await client.call_tool("omitted", {"id": "P999999999", "from": 0, "to": 3})
        assert "There is no text with id=P999999999" in text_of(gone)
    assert_transparent(s)
    lines = s.log_lines()
    assert any(l.startswith("tool prune:") and "outcome=ok" in l and "agent=mcp-proxy:docs" in l for l in lines), lines
    assert all("Last-Event-ID" not in l for l in lines), "log lines carry counts, never text"
    # The same lines go to the store's log, the pruned one with its stored id, so that
    # `toolprune stats` counts the read-back on the fetch it read from.
    logged = (user.store / "toolprune.log").read_text(encoding="utf-8").splitlines()
    assert any(f" id={pid} tool prune: agent=mcp-proxy:docs name=fetch outcome=ok " in l for l in logged), logged
    stats = subprocess.run([toolprune, "stats", "--json", "--agent", "mcp-proxy"], env=user.env(TZ="UTC"),
                           capture_output=True, text=True, timeout=60)
    assert stats.returncode == 0, stats.stderr
    report = json.loads(stats.stdout)
    assert report["total"]["pruned"] == 1 and report["total"]["chars"]["removed"] == len(raw) - len(body)
    (fetch,) = [g for g in report["by_tool"] if g["key"] == "fetch"]
    assert fetch["omitted"]["calls"] == len(ranges) and fetch["omitted"]["chars_read_back"] == dropped_chars
    assert report["total"]["omitted"]["outcomes"].get("not_found") == 1, "P999999999: on the tool '-'"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_without_any_basis_the_page_reaches_the_client_byte_for_byte(tools, toolprune, user, site, manifest, mode):
    user.config('threshold = 0.5\n')
    s = stack(toolprune, user, fetch_server(tools))
    url = site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html"
    async with Client(s.params, mode=mode) as client:
        await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
        result = await client.call_tool("fetch", {"url": url, "max_length": MAX})
        assert "Omitted by relevance" not in text_of(result)
    # The answer to the call: the same bytes on both sides.
    call_ids = {json.dumps(m["id"]) for m in s.outer.messages("c2s") if m.get("method") == "tools/call"}
    inner = [l for l in s.inner.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
    outer = [l for l in s.outer.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
    assert inner and inner == outer
    assert any("outcome=no_basis" in l for l in s.log_lines()), s.log_lines()


async def test_the_argument_basis_adds_an_optional_argument_and_strips_it_before_the_server(tools, toolprune, user, site, manifest):
    user.config('threshold = 0.5\n[proxy]\nbasis = "argument"\n')
    s = stack(toolprune, user, fetch_server(tools))
    url = site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html"
    async with Client(s.params, mode="auto") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schema = listed["fetch"].input_schema
        assert "user_request" in schema["properties"]
        assert "user_request" not in schema.get("required", [])
        assert listed["fetch"].description, "the server's description is kept"
        result = await client.call_tool("fetch", {"url": url, "max_length": MAX, "user_request": request_of(manifest)})
        assert "Omitted by relevance" in text_of(result)
    sent = [m for m in s.inner.messages("c2s") if m.get("method") == "tools/call"]
    assert sent and all("user_request" not in m["params"]["arguments"] for m in sent)
    assert sent[0]["params"]["arguments"] == {"url": url, "max_length": MAX}
    # The upstream's own tool list, apart from the added property and `omitted`, is unchanged.
    upstream_tools = next(m for m in s.inner.messages("s2c") if "result" in m and "tools" in m["result"])["result"]["tools"]
    client_tools = next(m for m in s.outer.messages("s2c") if "result" in m and "tools" in m["result"])["result"]["tools"]
    assert [t["name"] for t in client_tools] == [t["name"] for t in upstream_tools] + ["omitted"]
    client_tools[0]["inputSchema"]["properties"].pop("user_request")
    assert client_tools[0] == upstream_tools[0]


async def test_the_working_folder_finds_the_hooks_record_when_the_agent_process_does_not(tools, toolprune, user, site, manifest):
    user.config('threshold = 0.5\n')
    user.record_prompt("gemini-xyz", request_of(manifest), cwd=str(user.project))
    s = stack(toolprune, user, fetch_server(tools))
    url = site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html"
    async with Client(s.params, mode="legacy") as client:
        await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
        result = await client.call_tool("fetch", {"url": url, "max_length": MAX})
        assert "Omitted by relevance" in text_of(result)
    # A second session writing in the same folder makes it ambiguous: no basis.
    user.record_prompt("gemini-second", "Another session's request about something else entirely.", cwd=str(user.project))
    async with Client(s.params, mode="legacy") as client:
        await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
        result = await client.call_tool("fetch", {"url": url, "max_length": MAX})
        assert "Omitted by relevance" not in text_of(result)


async def test_an_error_result_and_a_short_page_pass_unchanged(tools, toolprune, user, site, manifest):
    user.config('threshold = 0.5\n')
    s = stack(toolprune, user, fetch_server(tools))
    async with Client(s.params, mode="auto") as client:
        await client.list_tools()  # as a client does before the model calls: the proxy prunes only once omitted was listed
        user.record_prompt("s", request_of(manifest), agent_pid=s.outer.pids()["tap"])
        missing = await client.call_tool("fetch", {"url": site.url + "/nope.html"})
        assert missing.is_error
        short = await client.call_tool("fetch", {"url": site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html", "max_length": 1500})
        assert "Omitted by relevance" not in text_of(short)
    call_ids = {json.dumps(m["id"]) for m in s.outer.messages("c2s") if m.get("method") == "tools/call"}
    inner = [l for l in s.inner.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
    outer = [l for l in s.outer.lines("s2c") if json.dumps(json.loads(l).get("id")) in call_ids]
    assert len(inner) == 2 and inner == outer


async def test_the_entry_toolprune_install_wraps_starts_a_working_proxy(tools, toolprune, user, site, manifest):
    """The "new user" path: a fetch server already configured for Claude Code,
    `toolprune install claude-code --wrap fetch`, and the client starts exactly the
    entry the installer wrote."""
    import subprocess

    from mcp.client.stdio import StdioServerParameters

    user.config('threshold = 0.5\n[proxy]\nbasis = "argument"\n')
    claude_json = user.home / ".claude.json"
    claude_json.write_text(json.dumps({"mcpServers": {"fetch": {"type": "stdio", "command": tools.fetch_server, "args": ["--ignore-robots-txt", "--allow-private-ips"]}}}))
    env = user.env()
    out = subprocess.run([toolprune, "install", "claude-code", "--wrap", "fetch"], env=env, cwd=user.project, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    entry = json.loads(claude_json.read_text())["mcpServers"]["fetch"]
    assert entry["args"][:4] == ["mcp-proxy", "--name", "fetch", "--"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(user.project))
    url = site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html"
    async with Client(params, mode="auto") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["fetch", "omitted"]
        body = text_of(await client.call_tool("fetch", {"url": url, "max_length": MAX, "user_request": request_of(manifest)}))
        pid, ranges, _, _ = markers(body)
        back = await client.call_tool("omitted", {"id": pid, "from": ranges[0][0], "to": ranges[0][1]})
        assert text_of(back) and not back.is_error
    out = subprocess.run([toolprune, "uninstall", "claude-code", "--wrap", "fetch"], env=env, cwd=user.project, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(claude_json.read_text())["mcpServers"]["fetch"]["command"] == tools.fetch_server


async def test_the_same_fetch_again_after_a_pruned_one_reaches_the_client_whole_and_other_arguments_are_pruned_again(tools, toolprune, user, site, manifest):
    """The repeat gate (SPEC §2) through the real server: a model that asks for
    the page again (the same arguments, in another key order) is given the
    server's own bytes; a call with other arguments is a new call, pruned."""
    user.config('threshold = 0.5\n')
    s = stack(toolprune, user, fetch_server(tools))
    url = site.url + "/docs/" + DOC.rsplit(".", 1)[0] + ".html"
    async with Client(s.params, mode="auto") as client:
        await client.list_tools()
        user.record_prompt("s", request_of(manifest), agent_pid=s.outer.pids()["tap"])
        first = await client.call_tool("fetch", {"url": url, "max_length": MAX})
        assert "Omitted by relevance" in text_of(first)
        again = await client.call_tool("fetch", {"max_length": MAX, "url": url})
        assert text_of(again) == upstream_text(s), "the repeat is the server's text, whole"
        other = await client.call_tool("fetch", {"url": url, "max_length": MAX - 1})
        assert "Omitted by relevance" in text_of(other), "other arguments: another call, pruned"
    # The repeat's answer: the same bytes on both sides of the proxy.
    (repeat_id,) = [json.dumps(m["id"]) for m in s.outer.messages("c2s")
                    if m.get("method") == "tools/call" and list(m["params"]["arguments"]) == ["max_length", "url"]]
    inner = [l for l in s.inner.lines("s2c") if json.dumps(json.loads(l).get("id")) == repeat_id]
    outer = [l for l in s.outer.lines("s2c") if json.dumps(json.loads(l).get("id")) == repeat_id]
    assert len(inner) == 1 and inner == outer
    outcomes = [l.split(" outcome=", 1)[1].split(" ", 1)[0] + (" repeated" if "gate=repeated" in l else "")
                for l in s.log_lines() if l.startswith("tool prune:") and "name=fetch" in l]
    assert outcomes == ["ok", "skipped repeated", "ok"], s.log_lines()
