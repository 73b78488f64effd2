"""Ctrl-C and other exceptions inside the ``scorer.score`` import (the
blocking form, SPEC §14). The import always answers the guest: a
``KeyboardInterrupt`` (any ``BaseException`` that is not an ``Exception``)
while the scorer runs stops the scoring — the guest gets ``cancelled``, its
line is written, the scorer is told to stop — and reaches the caller once
the guest call has returned. An exception that escapes the import is a
trap of the import, never named a memory limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, List

import pytest

from toolprune import Limits, Pruner, ScriptedScorer
from toolprune import _engine
from toolprune.scorers import scorer_choice

from conftest import REQUEST, Log, note_text

SRC = Path(__file__).resolve().parent

CHILD = textwrap.dedent(
    """
    import sys, time
    from toolprune import Pruner, Scores

    def say(text):
        sys.stdout.write(text + "\\n")  # one write: the scorer's thread prints too
        sys.stdout.flush()

    class Sleepy:
        name = "sleepy"

        def score(self, request, cancel=None):
            say("scoring")
            stopped = cancel.wait(30)
            say("scorer stopped" if stopped else "scorer slept 30 s")
            return [Scores([1.0] * len(b.paragraphs)) for b in request.batches]

    class Quick:
        name = "quick"

        def score(self, request):
            return [Scores([1.0 if i % 2 == 0 else 0.0 for i in range(len(b.paragraphs))]) for b in request.batches]

    pruner = Pruner.load()
    lines = []
    kind = sys.argv[1]
    try:
        if kind == "prune":
            conversation = pruner.conversation(enabled=True, scorer=Sleepy(), log=lines.append)
            result = conversation.turn("How do I configure the retry limit?").on_tool_result(
                tool="fetch", text=sys.argv[2], prunable=True
            )
        else:
            result = pruner.route(sys.argv[2], "Compare the pricing of three CI services", scorer=Sleepy(), log=lines.append)
        say(f"returned {getattr(result, 'outcome', None) or getattr(result, 'verdict', None)}")
    except KeyboardInterrupt:
        say("KeyboardInterrupt reached the caller")
    for line in lines:
        say(f"log: {line}")
    if kind == "prune":
        # The conversation goes on: the next result is pruned (a fresh scorer).
        again = conversation.turn("How do I configure the retry limit?").on_tool_result(
            tool="fetch", text=sys.argv[2], prunable=True, scorer=Quick()
        )
        say(f"next: {again.outcome} {again.id}")
    time.sleep(0.3)
    """
)


def interrupted(*args: str) -> "subprocess.CompletedProcess[str]":
    """Runs CHILD, sends it SIGINT once its scorer is waiting, returns what it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=SRC,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first == "scoring\n", first + proc.communicate(timeout=60)[1]
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, first + out, err)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child")
def test_ctrl_c_while_the_import_scores_reaches_the_caller_after_a_cancelled_answer() -> None:
    done = interrupted("prune", note_text())
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert "KeyboardInterrupt reached the caller" in out, done.stdout
    assert "scorer stopped" in out, "the scorer was told to stop"
    log = [line for line in out if line.startswith("log: ")]
    assert len(log) == 1 and " outcome=cancelled " in log[0], log
    assert "limit=" not in log[0] and "reason=" not in log[0], log
    assert "next: ok P1" in out, done.stdout
    assert "Exception ignored" not in done.stderr, done.stderr
    assert "KeyboardInterrupt" not in done.stderr, done.stderr


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child")
def test_ctrl_c_while_the_judge_import_scores_reaches_the_caller() -> None:
    rules = (SRC.parents[2] / "tests" / "conformance" / "judge" / "rules.toml").read_text(encoding="utf-8")
    done = interrupted("route", rules)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert "KeyboardInterrupt reached the caller" in out, done.stdout
    assert "scorer stopped" in out, "the scorer was told to stop"
    assert "log: judge: rule=- failed reason=cancelled" in out, done.stdout
    assert "Exception ignored" not in done.stderr, done.stderr


def _host_input(text: str) -> Any:
    from toolprune import _convert

    return _convert.record(
        request=REQUEST, text=text, enabled=True, succeeded=True, prunable=True, threshold=0.2, lang="en",
        scorer=scorer_choice(ScriptedScorer()), jev_model=None, agent="a", tool="t", report=False,
        arguments=None, pruned_calls=[], work_budget=None,
    )


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_keyboard_interrupt_escaping_a_responder_is_answered_and_raised_after_the_call(
    pruner: Pruner, capfd: pytest.CaptureFixture[str]
) -> None:
    """The engine's own net, for any responder: the guest gets a valid
    answer (``cancelled``), the instance stays usable, the interrupt is
    raised when the guest call has returned."""
    limits = pruner.settings.call_limits_for(10_000)
    instance = _engine.Instance(pruner._compiled, limits.memory_bytes)  # noqa: SLF001

    def interrupt(_request: Any) -> Any:
        raise KeyboardInterrupt

    with _engine.scoring(interrupt), pytest.raises(KeyboardInterrupt):
        instance.call(limits, "prune", _host_input(note_text()), 1)
    assert "Exception ignored" not in capfd.readouterr().err
    answered: List[Any] = []

    def fine(request: Any) -> Any:
        from toolprune import _convert

        answered.append(request)
        batches = _convert.get(request, "batches")
        return _convert.lower_response([[1.0] * len(_convert.get(b, "paragraphs")) for b in batches], 3)

    with _engine.scoring(fine):
        pruned = instance.call(limits, "prune", _host_input(note_text()), 1)
    assert answered and pruned is not None, "the same instance answers the next call"


def test_an_exception_escaping_the_import_is_never_named_a_memory_limit(pruner: Pruner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay with more memory would answer (it never asks the scorer), so
    the trap used to be labelled ``limit=memory``: it is the import's."""
    from toolprune import pruner as pruner_module

    def broken(self: Any, request: Any) -> Any:
        raise RuntimeError("a bug in the import's answer")

    monkeypatch.setattr(pruner_module._ImportScorer, "__call__", broken)
    log = Log()
    conversation = pruner.conversation(enabled=True, scorer=ScriptedScorer(), log=log, limits=Limits(memory_bytes=64 << 20))
    text = note_text()
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=text, prunable=True)
    assert (result.outcome, result.body) == ("failed", text)
    assert result.failure is not None and (result.failure.reason, result.failure.limit) == ("guest_trap", None), result.failure
    assert "RuntimeError" in result.failure.message
    assert "limit=" not in log.lines[-1], log.lines
