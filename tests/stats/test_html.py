"""``toolprune stats --html``: the page opens in headless Chromium without a console
message, an exception or a request, and the figures it draws are the JSON's.

The log is written as the doors write it: ``toolprune prune`` appends its real lines to
the store's log, and lines of other days, agents and outcomes (the hooks' and the
proxy's forms, SPEC §12) are added beside them, so every chart has several bars.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cdp import Browser

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
DAY = 1_767_312_000  # 2026-01-02 00:00 UTC
REQUEST = "In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server messages?"

#: Lines of three days, as the hooks, `toolprune mcp` and the proxy write them.
LINES = [
    f"{DAY + 60} session=aaaa000000000001 id=P1 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok shape=text raw_chars=40133 kept_chars=14020 paragraphs=61 dropped=30 calls=6 jev_tokens=20111 ms=912 threshold=0.2 ratio=0.651 scorer=jev",
    f"{DAY + 90} session=aaaa000000000001 tool omitted: agent=claude-code id=P1 from=12 to=15 chars=2210 outcome=ok",
    f"{DAY + 95} session=aaaa000000000001 tool omitted: agent=claude-code id=P1 from=12 to=15 chars=2210 outcome=ok",
    f"{DAY + 120} session=aaaa000000000001 tool prune: agent=claude-code name=mcp__docs__fetch outcome=skipped gate=repeated raw_chars=40133 kept_chars=40133 paragraphs=- dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=jev",
    f"{DAY + 300} session=aaaa000000000002 tool prune: agent=claude-code name=WebFetch outcome=nothing_dropped shape=text raw_chars=6210 kept_chars=6210 paragraphs=8 dropped=0 calls=1 jev_tokens=1800 ms=420 threshold=0.2 ratio=- scorer=jev",
    f"{DAY + 86_400 + 10} session=bbbb000000000001 id=P1 tool prune: agent=gemini name=mcp_fetch_fetch outcome=ok shape=text raw_chars=17439 kept_chars=7301 paragraphs=40 dropped=19 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=0.581 scorer=offline",
    f"{DAY + 86_400 + 20} session=bbbb000000000001 tool prune: agent=gemini name=mcp_fetch_fetch outcome=below_floor shape=text raw_chars=5120 kept_chars=5120 paragraphs=6 dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=0.112 scorer=offline",
    f"{DAY + 86_400 + 30} tool prune: agent=mcp-proxy:docs name=fetch outcome=failed reason=guest_trap limit=fuel",
    f"{DAY + 2 * 86_400 + 10} id=P88 tool prune: agent=mcp-proxy:docs name=fetch outcome=ok shape=text raw_chars=25063 kept_chars=9120 paragraphs=44 dropped=20 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=0.636 scorer=offline",
    f"{DAY + 2 * 86_400 + 50} tool omitted: agent=mcp-proxy:docs id=P88 from=3 to=9 chars=5400 outcome=ok",
    f"{DAY + 2 * 86_400 + 55} tool omitted: agent=mcp-proxy:docs id=P2 from=0 to=1 chars=0 outcome=not_found",
    f"{DAY + 2 * 86_400 + 60} hook: agent=claude-code event=PostToolUse answer=replace ms=31",
    "a corrupt line",
]


def run(binary: str, env: dict[str, str], *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    p = subprocess.run([binary, *args], env=env, input=stdin, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, toolprune_bin: str) -> dict[str, str]:
    root = tmp_path_factory.mktemp("stats")
    store = root / "store"
    store.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(root), "TZ": "UTC", "TOOLPRUNE_STORE_DIR": str(store),
           "TOOLPRUNE_CACHE_DIR": str(root / "cache")}
    (store / "toolprune.log").write_text("\n".join(LINES) + "\n")
    page = (CORPUS / "mcp-spec-2025-11-25-transports.mdx").read_bytes()
    run(toolprune_bin, env, "prune", "--threshold", "0.3", "--request", REQUEST, "--tool", "docs", stdin=page)
    assert " agent=cli name=docs outcome=ok " in (store / "toolprune.log").read_text()
    return env


def figures_in_page(browser: Browser) -> dict[str, Any]:
    return browser.evaluate("""(() => {
      const box = e => e.getBoundingClientRect();
      const num = v => v === '' ? null : Number(v);
      return {
        totals: Object.fromEntries([...document.querySelectorAll('#totals [data-figure]')].map(e => [e.dataset.figure, num(e.dataset.value === '-' ? '' : e.dataset.value)])),
        days: [...document.querySelectorAll('#chart-days rect[data-day]')].map(r => ({day: r.dataset.day, tokens: num(r.dataset.tokens), chars: num(r.dataset.chars), height: box(r).height})),
        outcomes: [...document.querySelectorAll('#chart-outcomes [data-outcome]')].map(g => ({outcome: g.dataset.outcome, count: num(g.dataset.count), width: box(g.querySelector('rect')).width})),
        tools: [...document.querySelectorAll('#chart-read-back [data-tool]')].map(g => ({tool: g.dataset.tool, share: num(g.dataset.share), read_back: num(g.dataset.readBack), removed: num(g.dataset.removed)})),
        charts: [...document.querySelectorAll('svg')].map(s => ({id: s.id, width: box(s).width, height: box(s).height})),
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        text: document.body.innerText,
        scripts: document.scripts.length,
      };
    })()""")


@pytest.mark.parametrize("filters", [[], ["--agent", "claude-code"], ["--since", "2026-01-03"]], ids=["all", "agent", "since"])
def test_the_page_renders_without_errors_and_its_figures_are_the_jsons(store: dict[str, str], toolprune_bin: str, tmp_path: Path, filters: list[str]) -> None:
    report = json.loads(run(toolprune_bin, store, "stats", "--json", *filters).stdout)
    page = tmp_path / "report.html"
    run(toolprune_bin, store, "stats", "--html", str(page), *filters)
    url = page.as_uri()
    with Browser() as browser:
        browser.open(url)
        problems = browser.problems(url)
        got = figures_in_page(browser)
        browser.screenshot(tmp_path / "report.png")
    assert problems == [], problems
    assert got["scripts"] == 0, "the page runs no script"
    assert got["overflow"] <= 0, "nothing wider than the window"
    total = report["total"]
    assert got["totals"] == {
        "tokens_removed": total["tokens_removed"],
        "chars_removed": total["chars"]["removed"],
        "pruned": total["pruned"],
        "read_back_share": total["read_back_share"],
    }
    # Tokens removed per day: one bar per day of the JSON, its height in proportion.
    assert [(d["day"], d["tokens"], d["chars"]) for d in got["days"]] == [
        (g["key"], g["tokens_removed"], g["chars"]["removed"]) for g in report["by_day"]]
    top = max(d["tokens"] for d in got["days"])
    tallest = max(d["height"] for d in got["days"])
    for d in got["days"]:
        assert d["height"] == pytest.approx(tallest * d["tokens"] / top, abs=0.6), d
    assert tallest > 50, "the chart is drawn at a readable size"
    # Outcomes: every outcome of the total, bars in proportion.
    assert {o["outcome"]: o["count"] for o in got["outcomes"]} == total["outcomes"]
    widest = max(o["width"] for o in got["outcomes"])
    most = max(o["count"] for o in got["outcomes"])
    for o in got["outcomes"]:
        assert o["width"] == pytest.approx(widest * o["count"] / most, abs=0.6), o
    # Read back per tool: the tools that removed or read back something.
    expected_tools = [g for g in report["by_tool"] if g["chars"]["removed"] or g["omitted"]["calls"]]
    assert got["tools"] == [
        {"tool": g["key"], "share": g["read_back_share"], "read_back": g["omitted"]["chars_read_back"], "removed": g["chars"]["removed"]}
        for g in expected_tools]
    assert all(c["width"] > 300 and c["height"] > 20 for c in got["charts"]), got["charts"]
    # What a person reads says the same: the share as a percentage, "estimate" beside tokens.
    if total["read_back_share"] is not None:
        assert f"{total['read_back_share'] * 100:.1f}%" in got["text"]
    assert "estimate" in got["text"]
    print(f"{filters}: {len(got['days'])} days, {len(got['outcomes'])} outcomes, {len(got['tools'])} tools; screenshot {tmp_path / 'report.png'}")


def test_the_figures_cover_every_door_and_outcome_of_the_log(store: dict[str, str], toolprune_bin: str) -> None:
    report = json.loads(run(toolprune_bin, store, "stats", "--json").stdout)
    today = time.strftime("%Y-%m-%d", time.gmtime())  # `toolprune prune` wrote its line now
    assert [g["key"] for g in report["by_day"]] == ["2026-01-02", "2026-01-03", "2026-01-04", today]
    assert {g["key"] for g in report["by_agent"]} == {"claude-code", "gemini", "mcp-proxy:docs", "cli"}
    assert report["total"]["outcomes"]["skipped"] == 1 and report["total"]["skipped"] == {"repeated": 1}
    assert report["log"]["skipped"] == 1
    proxy = next(g for g in report["by_tool"] if g["key"] == "fetch")
    assert proxy["omitted"]["chars_read_back"] == 5400 and proxy["read_back_share"] == pytest.approx(5400 / (25063 - 9120))


def test_the_browser_check_sees_errors_requests_and_exceptions(tmp_path: Path) -> None:
    """The check above would fail on a page that misbehaves: it is not blind."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
                   '<script>console.error("drawn wrong"); null.figure;</script></body></html>')
    with Browser() as browser:
        browser.open(bad.as_uri())
        problems = browser.problems(bad.as_uri())
    text = "\n".join(problems)
    assert "console.error" in text and "drawn wrong" in text, problems
    assert "exception" in text, problems
    assert "request: http://127.0.0.1:9/x.png" in text, problems
