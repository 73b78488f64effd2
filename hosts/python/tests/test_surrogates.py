"""Surrogates in a Python ``str`` (``docs/reliability.md`` "The fault matrix"): text decoded
with ``errors="surrogateescape"`` holds ``"\\udcff"``, and a WIT ``string``
carries Unicode scalar values only, so wasmtime-py cannot pass it (it would
raise ``UnicodeEncodeError``). The host checks first. With pruning on, a
succeeded call and a prunable tool it fails open without calling the guest:
the very same ``str`` back, outcome ``failed``, reason ``invalid_text`` (the
result text) or ``invalid_input`` (request, tool name, agent, scorer name,
Jev model), and the guest's failure line (labels with U+FFFD for each
surrogate); the conversation goes on. When one of those cheap gates fails,
the answer is the guest's own, as for a well-formed text: ``skipped`` with
its gate, no line (SPEC §12), the same ``str`` back. ``omitted`` arguments
with surrogates get the guest's ``invalid`` answer instead of raising."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

import pytest

from toolprune import PruneResult, Pruner, ScoringRequest, ScoringResponse, ScriptedScorer
from toolprune.cli import main

from conftest import REQUEST, Log, headings_text, shared_dir

TEXT = headings_text()

ILL_FORMED: Dict[str, str] = {
    "surrogateescape byte": (TEXT.encode() + b"\xff tail").decode("utf-8", "surrogateescape"),
    "lone high in the middle": TEXT[:2000] + "\ud800" + TEXT[2000:],
    "surrogate pair as two code points": TEXT + "\ud83d\ude00",
    "short text": "a \udc80 b",
}


def _sync(turn: Any, **kw: Any) -> PruneResult:
    return turn.on_tool_result(**kw)  # type: ignore[no-any-return]


def _async(turn: Any, **kw: Any) -> PruneResult:
    return asyncio.run(turn.on_tool_result_async(**kw))


FLAVOURS: Dict[str, Callable[..., PruneResult]] = {"sync": _sync, "async": _async}


class Counting:
    """A scorer that drops odd paragraphs and counts its calls."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0
        self.inner = ScriptedScorer().default_score(0.9).scores(range(1, 10_000, 2), 0.05).elapsed_ms(7)

    def score(self, request: ScoringRequest) -> ScoringResponse:
        self.calls += 1
        return self.inner.score(request)


def _passed_through(r: PruneResult, text: str, reason: str, line: str) -> None:
    assert r.outcome == "failed"
    assert r.body is text and r.raw is text, "the very same str, every code point"
    assert r.counts is None and r.id is None
    assert r.failure is not None and (r.failure.reason, r.failure.limit) == (reason, None)
    assert r.failure.message.endswith("surrogate code point(s); the guest was not called")
    assert r.log_line == line


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", ILL_FORMED)
def test_an_ill_formed_text_comes_back_unchanged_and_the_conversation_goes_on(pruner: Pruner, name: str, flavour: str) -> None:
    text = ILL_FORMED[name]
    with pytest.raises(UnicodeEncodeError):
        text.encode("utf-8")
    call = FLAVOURS[flavour]
    log = Log()
    scorer = Counting()
    conversation = pruner.conversation(enabled=True, scorer=scorer, agent="my agent", log=log)
    turn = conversation.turn(REQUEST)
    line = "tool prune: agent=my_agent name=fetch outcome=failed reason=invalid_text"
    _passed_through(call(turn, tool="fetch", text=text, prunable=True), text, "invalid_text", line)
    assert log.lines == [line], "one line, labels and names only"
    assert scorer.calls == 0 and conversation.stored == []
    # Instances are made lazily: the guest was never even instantiated.
    assert _instances(conversation) == []
    # The same conversation prunes the next result normally; the first stored id is P1.
    nxt = call(turn, tool="fetch", text=TEXT, prunable=True)
    assert (nxt.outcome, nxt.id) == ("ok", "P1")
    instances = _instances(conversation)
    assert instances
    # Another ill-formed text: the live instance survives (the guest was not called).
    _passed_through(call(turn, tool="fetch", text=text, prunable=True), text, "invalid_text", line)
    assert _instances(conversation) == instances
    assert conversation.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def _instances(conversation: Any) -> List[Any]:
    """The conversation's live instances: the jobs' one and the import form's idle ones."""
    jobs = conversation._instance  # noqa: SLF001
    return ([] if jobs is None else [jobs]) + list(conversation._idle)  # noqa: SLF001


def _clean(s: str) -> str:
    """``s`` with every surrogate code point replaced by U+FFFD."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in s)


GATES = {
    "pruning off": (False, True, True, "disabled"),
    "the call failed": (True, False, True, "tool_failed"),
    "not prunable": (True, True, False, "not_prunable"),
}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("gate", GATES)
def test_a_cheap_gate_failed_the_guests_own_answer_and_no_line(pruner: Pruner, gate: str, flavour: str) -> None:
    # SPEC §12: no `tool prune:` line before the cheap gates passed, ill-formed or not.
    enabled, ok, prunable, name = GATES[gate]
    call = FLAVOURS[flavour]
    scorer = Counting()
    cases = [(REQUEST, "fetch", "agent", text) for text in ILL_FORMED.values()] + [
        (REQUEST + "\udcff", "fetch", "agent", TEXT),
        (REQUEST, "f\udcff", "agent", TEXT),
        (REQUEST, "fetch", "a\ud800", TEXT),
    ]
    for request, tool, agent, text in cases:
        log = Log()
        conversation = pruner.conversation(enabled=enabled, scorer=scorer, agent=agent, log=log)
        clean = pruner.conversation(enabled=enabled, scorer=scorer, agent=_clean(agent), log=Log())
        r = call(conversation.turn(request), tool=tool, text=text, ok=ok, prunable=prunable)
        expected = call(clean.turn(_clean(request)), tool=_clean(tool), text=_clean(text), ok=ok, prunable=prunable)
        assert r.body is text and r.raw is text, "the very same str, every code point"
        assert (r.outcome, r.gate) == (expected.outcome, expected.gate) == ("skipped", name)
        assert r.failure is None and r.log_line is None and expected.log_line is None
        assert r.counts == expected.counts
        assert log.lines == [] and conversation.stored == []
    assert scorer.calls == 0, "the scorer is never called"


def test_an_ill_formed_short_text_with_the_gates_passed_still_fails_open_with_its_line(pruner: Pruner) -> None:
    # The 4,000-character gate is the guest's to count: the host does not call it with this text.
    log = Log()
    turn = pruner.conversation(enabled=True, scorer=Counting(), log=log).turn(REQUEST)
    text = ILL_FORMED["short text"]
    line = "tool prune: agent=agent name=fetch outcome=failed reason=invalid_text"
    _passed_through(turn.on_tool_result(tool="fetch", text=text, prunable=True), text, "invalid_text", line)
    assert turn.on_tool_result(tool="fetch", text=_clean(text), prunable=True).log_line is None
    assert log.lines == [line]
    # A str with real astral characters (no surrogate code points) is pruned as usual.
    on = pruner.conversation(enabled=True, scorer=Counting(), log=Log()).turn(REQUEST)
    assert on.on_tool_result(tool="fetch", text=TEXT + "\n\n😀 done", prunable=True).outcome == "ok"


class Named(Counting):
    def __init__(self, name: str, jev_model: Optional[str] = None) -> None:
        super().__init__()
        self.name = name
        if jev_model is not None:
            self.jev_model = jev_model


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_scorer_name_or_jev_model_with_surrogates_is_invalid_input(pruner: Pruner, flavour: str) -> None:
    call = FLAVOURS[flavour]
    line = "tool prune: agent=agent name=fetch outcome=failed reason=invalid_input"
    for what, scorer in (("the scorer name", Named("odd\udcff")), ("the Jev model", Named("jev", "m\ud800"))):
        log = Log()
        conversation = pruner.conversation(enabled=True, scorer=scorer, log=log)
        r = call(conversation.turn(REQUEST), tool="fetch", text=TEXT, prunable=True)
        _passed_through(r, TEXT, "invalid_input", line)
        assert r.failure is not None and r.failure.message.startswith(f"{what} holds 1 "), r.failure.message
        assert conversation._instance is None  # noqa: SLF001 - never instantiated: the guest was not called
        # Pruning off: the guest's own answer, as with a well-formed scorer, and no line.
        off = call(pruner.conversation(scorer=scorer, log=log).turn(REQUEST), tool="fetch", text=TEXT, prunable=True)
        assert off.body is TEXT and off.failure is None and off.log_line is None
        assert (off.outcome, off.gate) == ("skipped", "disabled")
        assert log.lines == [line]
        assert scorer.calls == 0


def test_route_checks_the_scorers_own_jev_model(pruner: Pruner) -> None:
    scorer = Named("jev", "m\udcff")
    with pytest.raises(ValueError, match=r"jev_model holds 1 surrogate"):
        pruner.route("[questions.a]", "hello", scorer=scorer)
    with pytest.raises(ValueError, match=r"jev_model holds 1 surrogate"):
        asyncio.run(pruner.route_async("[questions.a]", "hello", scorer=scorer))
    assert scorer.calls == 0


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_request_with_surrogates_passes_every_result_through(pruner: Pruner, flavour: str) -> None:
    call = FLAVOURS[flavour]
    scorer = Counting()
    turn = pruner.conversation(enabled=True, scorer=scorer, log=Log()).turn(REQUEST + "\udcff")
    line = "tool prune: agent=agent name=fetch outcome=failed reason=invalid_input"
    r = call(turn, tool="fetch", text=TEXT, prunable=True)
    _passed_through(r, TEXT, "invalid_input", line)
    assert r.failure is not None and r.failure.message.startswith("the request holds 1 ")
    # An ill-formed text wins: it is the text's reason.
    assert call(turn, tool="fetch", text=ILL_FORMED["short text"], prunable=True).failure.reason == "invalid_text"  # type: ignore[union-attr]
    assert scorer.calls == 0
    # A tool name with a surrogate: the same; the guest's label writes U+FFFD for it.
    good = pruner.conversation(enabled=True, scorer=scorer, log=Log()).turn(REQUEST)
    odd = call(good, tool="f\udcff", text=TEXT, prunable=True)
    _passed_through(odd, TEXT, "invalid_input", "tool prune: agent=agent name=f\ufffd outcome=failed reason=invalid_input")
    assert call(good, tool="fetch", text=TEXT, prunable=True).outcome == "ok"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_omitted_arguments_with_surrogates_get_the_invalid_answer(pruner: Pruner, lang: str) -> None:
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=Counting(), lang=lang, agent="my\udcffagent", log=log)
    r = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=TEXT, prunable=True)
    assert r.failure is not None and r.failure.reason == "invalid_input"
    assert r.log_line == "tool prune: agent=my\ufffdagent name=fetch outcome=failed reason=invalid_input"
    conversation.agent = "a"
    assert conversation.turn(REQUEST).on_tool_result(tool="fetch", text=TEXT, prunable=True).outcome == "ok"
    expected = conversation.omitted("not json")
    assert expected.outcome == "invalid"
    for args in (
        '{"id": "P1\ud800", "from": 1, "to": 1}',
        '{"id": "P1", "from": 1, "to": 1, "note": "\udcff"}',
        {"id": "P1\udcff", "from": 1, "to": 1},  # json.dumps(ensure_ascii=False) keeps it
    ):
        o = conversation.omitted(args)  # type: ignore[arg-type]
        assert (o.outcome, o.text) == ("invalid", expected.text), args
        assert o.log_line == "tool omitted: agent=a id=- from=- to=- chars=0 outcome=invalid"
    assert conversation.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok", "the next call is served"
    # An agent with a surrogate does not make omitted raise either.
    conversation.agent = "b\udcff"
    assert conversation.omitted({"id": "P1", "from": 1, "to": 1}).outcome == "ok"


def test_the_cli_request_from_argv_with_a_non_utf8_byte(pruner: Pruner, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    # POSIX argv is decoded with surrogateescape: b"\xff" arrives as "\udcff".
    path = str(shared_dir() / "cases" / "headings.md")
    assert main(["prune", "--request", REQUEST + "\udcff", "--tool", "t\udcff", path]) == 0
    out, err = capfdbinary.readouterr()
    assert out == (shared_dir() / "cases" / "headings.md").read_bytes()
    line = pruner.settings.failure_line("prune", "cli", "t\udcff", "invalid_input")
    assert line == "tool prune: agent=cli name=t\ufffd outcome=failed reason=invalid_input"
    assert err.decode() == line + "\n"


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


def test_inspect_and_route_refuse_surrogates_with_a_value_error(pruner: Pruner) -> None:
    # Their answers would describe another text, or the call would fail as a guest error.
    with pytest.raises(ValueError, match=r"text holds 1 surrogate code point\(s\)"):
        pruner.inspect(TEXT + "\udcff")
    assert len(pruner.inspect(TEXT).units) > 1, "a well-formed text still splits"
    with pytest.raises(ValueError, match=r"message holds 1 surrogate"):
        pruner.route("[questions.a]", "hello \ud800", answers="{}")
    with pytest.raises(ValueError, match=r"rules holds 1 surrogate"):
        asyncio.run(pruner.route_async("# \udc80", "hello", answers="{}"))
