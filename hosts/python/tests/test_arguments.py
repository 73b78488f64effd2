"""The tool call's ``arguments`` (the repeat gate's only input, SPEC §2),
the same rule in every host (hosts/js/test/arguments.test.js is the Node
twin): a JSON text is taken as it is; a mapping (``dict``) or a
``list`` / ``tuple`` whose values are JSON values (``str``, ``int``, finite
``float``, ``bool``, ``None``, mappings with ``str`` keys, lists; at most 128
levels deep) is encoded as JSON. Anything else — a set, bytes, a datetime,
another object, a scalar, NaN, a cycle, a surrogate code point (a WIT
string cannot carry it) — gives no arguments: no repeat is detected and the
result is pruned as usual, never failed, never a ``TypeError``."""

from __future__ import annotations

import asyncio
import datetime
from types import MappingProxyType
from typing import Any, Dict, List

import pytest

from toolprune import Pruner, ScriptedScorer

from conftest import REQUEST, note_text

TEXT = note_text()


def repeated(pruner: Pruner, form: str, first: Any, second: Any = None, *, same: bool = True) -> bool:
    """Prunes TEXT with ``first``, then with ``second`` (default: ``first``
    again), in a fresh conversation: whether the second is the repeat of
    the first. Both results must be pruned or skipped, never failed."""
    scorer = ScriptedScorer().default_score(0.9).scores(range(1, 400, 2), 0.05)
    conversation = pruner.conversation(enabled=True, scorer=scorer, log=lambda _l: None, form="jobs" if form == "jobs" else "import")
    turn = conversation.turn(REQUEST)

    def prune(arguments: Any) -> Any:
        if form == "asyncio":
            return asyncio.run(turn.on_tool_result_async(tool="fetch", text=TEXT, prunable=True, arguments=arguments))
        return turn.on_tool_result(tool="fetch", text=TEXT, prunable=True, arguments=arguments)

    a = prune(first)
    assert (a.outcome, a.id, a.failure) == ("ok", "P1", None), "the first result is pruned"
    b = prune(first if same else second)
    assert b.outcome != "failed"
    if b.outcome == "skipped":
        assert b.gate == "repeated"
        return True
    assert (b.outcome, b.id) == ("ok", "P2")
    return False


def cycle() -> Dict[str, Any]:
    c: Dict[str, Any] = {"url": "a"}
    c["self"] = c
    return c


def deep(levels: int) -> Any:
    v: Any = "a"
    for _ in range(levels):
        v = [v]
    return v


TAKEN: List[Any] = [
    ("a JSON text", '{"url": "a", "n": 1}', '{"n":1,"url":"a"}'),
    ("a text that is not JSON (keyed as it is)", "not json", "not json"),
    ("a dict, keys in another order", {"url": "a", "n": 1}, '{"n": 1, "url": "a"}'),
    ("a whole float is the int (as Node writes it)", {"url": "a", "n": 1.0}, '{"url": "a", "n": 1}'),
    ("another mapping", MappingProxyType({"url": "a"}), {"url": "a"}),
    ("a list of JSON values", ["a", 1, {"b": None, "c": True, "d": [1.5, -2]}], '["a",1,{"b":null,"c":true,"d":[1.5,-2]}]'),
    ("a tuple is a list", ("a", 1), ["a", 1]),
    ("128 levels deep", deep(128), deep(128)),
]

NOT_TAKEN: List[Any] = [
    ("a set", {"a"}),
    ("bytes", b'{"url": "a"}'),
    ("a datetime", datetime.datetime(2020, 1, 1)),
    ("an object inside", {"url": object()}),
    ("NaN", {"n": float("nan")}),
    ("infinity", [float("inf")]),
    ("a key that is not a str", {1: "a"}),
    ("a number", 42),
    ("a boolean", True),
    ("a cycle", cycle()),
    ("129 levels deep", deep(129)),
    ("a JSON text with a surrogate", '{"q": "\ud800"}'),
    ("a str with a surrogate inside", {"q": "caf\udcff"}),
    ("a key with a surrogate", {"\ud800": 1}),
]


def test_arguments_are_encoded_as_the_node_host_encodes_them() -> None:
    from toolprune.pruner import _arguments_text

    assert _arguments_text({"b": [1, 2.5, None, True], "a": "é\n"}) == '{"b":[1,2.5,null,true],"a":"é\\n"}'
    assert _arguments_text(' {"a": 1} ') == ' {"a": 1} ', "a text is taken as it is"


@pytest.mark.parametrize("form", ["import", "jobs", "asyncio"])
def test_arguments_that_are_json_are_one_call_whatever_their_form(pruner: Pruner, form: str) -> None:
    for what, first, second in TAKEN:
        assert repeated(pruner, form, first, second, same=False), what


@pytest.mark.parametrize("form", ["import", "jobs", "asyncio"])
def test_arguments_that_are_not_json_give_no_arguments_pruned_never_failed_never_a_repeat(pruner: Pruner, form: str) -> None:
    for what, value in NOT_TAKEN:
        assert not repeated(pruner, form, value), what
