"""Surrogates in a Python ``str`` (README "The fault matrix"): text decoded
with ``errors="surrogateescape"`` holds ``"\\udcff"``, and a WIT ``string``
carries Unicode scalar values only, so wasmtime-py cannot pass it (it raised
``UnicodeEncodeError``, which failed open as a misleading ``guest_trap`` and
threw the instance away). The host checks first and fails open without
calling the guest: the very same ``str`` back, outcome ``failed``, reason
``invalid_text`` (the result text) or ``invalid_input`` (request, tool name,
agent); the turn goes on. ``omitted`` arguments with surrogates get the
guest's ``invalid`` answer instead of raising."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any, Callable, Dict

import pytest

from toolprune import Pruned, Pruner, ScoringRequest, ScoringResponse, ScriptedScorer
from toolprune.cli import main

from conftest import REQUEST, Log, headings_text, shared_dir

TEXT = headings_text()

ILL_FORMED: Dict[str, str] = {
    "surrogateescape byte": (TEXT.encode() + b"\xff tail").decode("utf-8", "surrogateescape"),
    "lone high in the middle": TEXT[:2000] + "\ud800" + TEXT[2000:],
    "surrogate pair as two code points": TEXT + "\ud83d\ude00",
    "short text": "a \udc80 b",
}

Flavour = Callable[..., Pruned]


def _sync(turn: Any, **kw: Any) -> Pruned:
    return turn.on_tool_result(**kw)  # type: ignore[no-any-return]


def _job(turn: Any, **kw: Any) -> Pruned:
    return turn.on_tool_result_via_job(**kw)  # type: ignore[no-any-return]


def _async(turn: Any, **kw: Any) -> Pruned:
    return asyncio.run(turn.on_tool_result_async(**kw))


FLAVOURS = {"sync": _sync, "job": _job, "async": _async}


class Counting:
    """A scorer that drops odd paragraphs and counts its calls."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0
        self.inner = ScriptedScorer().default_score(0.9).scores(range(1, 10_000, 2), 0.05).elapsed_ms(7)

    def score(self, request: ScoringRequest) -> ScoringResponse:
        self.calls += 1
        return self.inner.score(request)


def _passed_through(r: Pruned, text: str, reason: str, line: str) -> None:
    assert r.outcome == "failed"
    assert r.body is text and r.raw is text, "the very same str, every code point"
    assert r.report is None
    assert r.failure is not None and r.failure.reason == reason
    assert r.failure.message.endswith("surrogate code point(s); the guest was not called")
    assert r.log_line == line


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", ILL_FORMED)
def test_an_ill_formed_text_comes_back_unchanged_and_the_turn_goes_on(pruner: Pruner, name: str, flavour: str) -> None:
    text = ILL_FORMED[name]
    with pytest.raises(UnicodeEncodeError):
        text.encode("utf-8")
    call = FLAVOURS[flavour]
    log = Log()
    scorer = Counting()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, agent="my agent", log=log)
    instance = turn._instance  # noqa: SLF001 - the instance must survive: the guest was not called
    line = "tool prune: agent=my_agent name=fetch outcome=failed reason=invalid_text"
    _passed_through(call(turn, tool="fetch", text=text, prunable=True), text, "invalid_text", line)
    assert log.lines == [line], "one line, labels and names only"
    assert scorer.calls == 0 and turn.stored == []
    if instance is not None:
        assert turn._instance is instance  # noqa: SLF001
    # The same turn prunes the next result normally; the first stored id is P1.
    nxt = call(turn, tool="fetch", text=TEXT, prunable=True)
    assert nxt.outcome == "ok" and nxt.report is not None and nxt.report.record is not None
    assert nxt.report.record.id == "P1"
    assert turn.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def test_pruning_off_or_not_prunable_the_text_still_cannot_reach_the_guest(pruner: Pruner) -> None:
    text = ILL_FORMED["surrogateescape byte"]
    turn = pruner.begin_turn(REQUEST, log=Log())  # enabled=False
    r = turn.on_tool_result(tool="fetch", text=text)
    _passed_through(r, text, "invalid_text", "tool prune: agent=agent name=fetch outcome=failed reason=invalid_text")
    # A str with real astral characters (no surrogate code points) is pruned as usual.
    on = pruner.begin_turn(REQUEST, enabled=True, scorer=Counting(), log=Log())
    assert on.on_tool_result(tool="fetch", text=TEXT + "\n\n😀 done", prunable=True).outcome == "ok"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_request_with_surrogates_passes_every_result_through(pruner: Pruner, flavour: str) -> None:
    call = FLAVOURS[flavour]
    scorer = Counting()
    turn = pruner.begin_turn(REQUEST + "\udcff", enabled=True, scorer=scorer, log=Log())
    line = "tool prune: agent=agent name=fetch outcome=failed reason=invalid_input"
    r = call(turn, tool="fetch", text=TEXT, prunable=True)
    _passed_through(r, TEXT, "invalid_input", line)
    assert r.failure is not None and r.failure.message.startswith("the request holds 1 ")
    # An ill-formed text wins: it is the text's reason.
    assert call(turn, tool="fetch", text=ILL_FORMED["short text"]).failure.reason == "invalid_text"  # type: ignore[union-attr]
    assert scorer.calls == 0
    # A tool name with a surrogate: the same, and the log label writes `_`.
    good = pruner.begin_turn(REQUEST, enabled=True, scorer=scorer, log=Log())
    odd = call(good, tool="f\udcff", text=TEXT, prunable=True)
    _passed_through(odd, TEXT, "invalid_input", "tool prune: agent=agent name=f_ outcome=failed reason=invalid_input")
    assert call(good, tool="fetch", text=TEXT, prunable=True).outcome == "ok"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_omitted_arguments_with_surrogates_get_the_invalid_answer(pruner: Pruner, lang: str) -> None:
    log = Log()
    turn = pruner.begin_turn(REQUEST, enabled=True, scorer=Counting(), lang=lang, agent="my\udcffagent", log=log)
    # (an agent with a surrogate prunes nothing: invalid_input, the label writes `_`)
    r = turn.on_tool_result(tool="fetch", text=TEXT, prunable=True)
    assert r.failure is not None and r.failure.reason == "invalid_input"
    assert r.log_line == "tool prune: agent=my_agent name=fetch outcome=failed reason=invalid_input"
    turn.agent = "a"
    assert turn.on_tool_result(tool="fetch", text=TEXT, prunable=True).outcome == "ok"
    expected = turn.omitted("not json")
    assert expected.outcome == "invalid"
    for args in (
        '{"id": "P1\ud800", "from": 1, "to": 1}',
        '{"id": "P1", "from": 1, "to": 1, "note": "\udcff"}',
        {"id": "P1\udcff", "from": 1, "to": 1},  # json.dumps(ensure_ascii=False) keeps it
    ):
        o = turn.omitted(args)  # type: ignore[arg-type]
        assert (o.outcome, o.text) == ("invalid", expected.text), args
        assert o.log_line == "tool omitted: agent=a id=- from=- to=- chars=0 outcome=invalid"
    assert turn.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok", "the next call is served"
    # An agent with a surrogate does not make omitted raise either.
    turn.agent = "b\udcff"
    assert turn.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def test_the_cli_request_from_argv_with_a_non_utf8_byte(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    # POSIX argv is decoded with surrogateescape: b"\xff" arrives as "\udcff".
    path = str(shared_dir() / "cases" / "headings.md")
    assert main(["prune", "--request", REQUEST + "\udcff", "--tool", "t\udcff", path]) == 0
    out, err = capfdbinary.readouterr()
    assert out == (shared_dir() / "cases" / "headings.md").read_bytes()
    assert err == b"tool prune: agent=cli name=t_ outcome=failed reason=invalid_input\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX argv bytes")
def test_the_cli_in_a_process_with_a_non_utf8_request_byte() -> None:
    path = shared_dir() / "cases" / "headings.md"
    done = subprocess.run(
        [sys.executable.encode(), b"-m", b"toolprune", b"prune", b"--request", REQUEST.encode() + b" \xff", str(path).encode()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == path.read_bytes()
    assert done.stderr == b"tool prune: agent=cli name=cli outcome=failed reason=invalid_input\n"


def test_paragraphs_and_route_refuse_surrogates_with_a_value_error(pruner: Pruner) -> None:
    # Their answers would describe another text, or the call would fail as a guest error.
    with pytest.raises(ValueError, match=r"text holds 1 surrogate code point\(s\)"):
        pruner.paragraphs(TEXT + "\udcff")
    assert len(pruner.paragraphs(TEXT)) > 1, "a well-formed text still splits"
    with pytest.raises(ValueError, match=r"message holds 1 surrogate"):
        pruner.route("[questions.a]", "hello \ud800", answers="{}")
    with pytest.raises(ValueError, match=r"rules holds 1 surrogate"):
        asyncio.run(pruner.route_async("# \udc80", "hello", answers="{}"))
