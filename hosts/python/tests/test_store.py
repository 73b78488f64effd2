"""The pluggable store (toolprune.store) and the gateway's domain code
(toolprune.gateway) on plain types: numbers come from the store, a failing
store fails open, the basis argument is stripped, scopes keep users apart,
and a gateway result is pruned or left exactly as the server returned it.
The Redis store and the ContextForge plugin run end to end in tests/gateway/.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from toolprune import Pruner, StoredResult, StoreLimits
from toolprune.gateway import SCOPE_ARGUMENT, GatewayPruner, GatewaySettings, Identity, scope_of, with_basis
from toolprune.store import MemoryStore, Store

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
PAGE = (SHARED / "corpus" / "mcp-spec-2025-11-25-transports.mdx").read_text(encoding="utf-8")
REQUEST = "In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server messages?"


class Numbered(MemoryStore):
    """A store whose numbers start at 41 (as a shared store's would, after other instances)."""

    def __init__(self) -> None:
        super().__init__(StoreLimits(max_records=10, max_chars=10_000_000, max_age_s=60))
        self.next = 41
        self.puts: List[StoredResult] = []

    def next_number(self) -> int:
        n, self.next = self.next, self.next + 2
        return n

    def put(self, record: StoredResult) -> None:
        self.puts.append(record)
        super().put(record)


class Broken:
    def __init__(self, where: str) -> None:
        self.where = where

    def next_number(self) -> int:
        if self.where == "next_number":
            raise ConnectionError("down")
        return 1

    def put(self, record: StoredResult) -> None:
        if self.where == "put":
            raise ConnectionError("down")

    def get(self, id: str) -> Optional[StoredResult]:
        raise ConnectionError("down")


def test_a_memory_store_keeps_its_bounds_oldest_first() -> None:
    store = MemoryStore(StoreLimits(max_records=2, max_chars=100, max_age_s=60))
    assert isinstance(store, Store)
    for n, chars in ((1, 10), (2, 10), (3, 10)):
        assert store.next_number() == n
        store.put(StoredResult(id=f"P{n}", chars=chars, data="x"))
    assert [r.id for r in store.records()] == ["P2", "P3"] and store.get("P1") is None
    store.put(StoredResult(id="P4", chars=95, data="x"))
    assert [r.id for r in store.records()] == ["P4"], "over max_chars: the oldest go"


def test_the_id_number_comes_from_the_store_and_omitted_reads_from_it(pruner: Pruner) -> None:
    store = Numbered()
    conversation = pruner.conversation(enabled=True, threshold=0.5, backend=store, log=lambda _l: None)
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=PAGE, prunable=True)
    assert result.outcome == "ok" and result.id == "P41" and "id=P41" in result.body
    assert [r.id for r in store.puts] == ["P41"] and conversation.count == 41
    again = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=PAGE + "\n\nmore", prunable=True)
    assert again.id == "P43"
    other = pruner.conversation(backend=store, log=lambda _l: None)  # another conversation on the same store
    assert other.omitted({"id": "P41", "from": 0, "to": 100}).outcome == "ok"
    assert pruner.conversation(log=lambda _l: None).omitted({"id": "P41", "from": 0, "to": 100}).outcome == "not_found"


@pytest.mark.parametrize("where", ["next_number", "put"])
def test_a_store_that_fails_returns_the_raw_text_with_a_counts_only_line(pruner: Pruner, where: str) -> None:
    lines: List[str] = []
    conversation = pruner.conversation(enabled=True, threshold=0.5, backend=Broken(where), log=lines.append)
    result = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=PAGE, prunable=True)
    assert result.body is PAGE and result.outcome == "failed" and result.id is None
    assert result.failure is not None and result.failure.reason == "store"
    assert lines == ["tool prune: agent=agent name=fetch outcome=failed reason=store"]
    answer = conversation.omitted({"id": "P1", "from": 0, "to": 3})
    assert answer.outcome == "failed" and "again" in answer.text and answer.failure.reason == "store"


def test_the_default_store_behaves_as_before(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, threshold=0.5, log=lambda _l: None)
    first = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=PAGE, prunable=True)
    second = conversation.turn(REQUEST).on_tool_result(tool="fetch", text=PAGE + "\n\nmore", prunable=True)
    assert (first.id, second.id) == ("P1", "P2") and [s.id for s in conversation.stored] == ["P1", "P2"]


# --- the gateway's domain code ------------------------------------------------------------


def gateway(pruner: Pruner, stores: Dict[str, Any], **settings: Any) -> GatewayPruner:
    def store_for(scope: str) -> Store:
        return stores.setdefault(scope, MemoryStore(StoreLimits(max_records=50, max_chars=10_000_000, max_age_s=60)))

    config = GatewaySettings.from_mapping({"prunable": ["fetch", "*-fetch"], "threshold": 0.5, **settings})
    return GatewayPruner(pruner, config, store_for=store_for, environ={}, secret=b"k")


ALICE = Identity("alice@example.com", "alpha")
BOB = Identity("bob@example.com", "beta")


def test_scopes_are_keyed_hashes_of_user_and_team() -> None:
    a = scope_of(ALICE, b"k")
    assert a == scope_of(Identity("alice@example.com", "alpha"), b"k") and len(a) == 32
    assert len({a, scope_of(BOB, b"k"), scope_of(Identity("alice@example.com"), b"k"), scope_of(ALICE, b"other")}) == 4
    assert scope_of(Identity(None), b"k") is None
    assert "alice" not in a


def test_pre_invoke_strips_the_basis_of_prunable_tools_and_sets_the_omitted_scope(pruner: Pruner) -> None:
    g = gateway(pruner, {})
    args, basis = g.strip(["docs-fetch", "fetch"], {"url": "u", "user_request": REQUEST}, ALICE)
    assert args == {"url": "u"} and basis == REQUEST
    assert g.strip(["docs-fetch"], {"url": "u"}, ALICE) == (None, None), "nothing to strip: the call as it is"
    assert g.strip(["read_file"], {"path": "p", "user_request": REQUEST}, ALICE) == (None, None), "not prunable: untouched"
    args, basis = g.strip(["toolprune-omitted"], {"id": "P1", "from": 0, "to": 2, SCOPE_ARGUMENT: "forged"}, ALICE)
    assert args == {"id": "P1", "from": 0, "to": 2, SCOPE_ARGUMENT: g.scope(ALICE)} and basis is None
    args, _ = g.strip(["toolprune-omitted"], {"id": "P1", SCOPE_ARGUMENT: "forged"}, Identity(None))
    assert args == {"id": "P1"}, "no identity: no scope (not_found)"


def test_the_basis_argument_joins_the_schema_once_and_optional(pruner: Pruner) -> None:
    argument = pruner.request_argument()
    schema = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
    added = with_basis(schema, argument)
    assert added is not None and added["properties"]["user_request"] == argument["schema"] and added["required"] == ["url"]
    assert with_basis(added, argument) is None, "a tool that has the property is left alone"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_result_is_pruned_into_the_callers_scope_only(pruner: Pruner) -> None:
    stores: Dict[str, Any] = {}
    g = gateway(pruner, stores)
    result = {"content": [{"type": "text", "text": PAGE}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}], "isError": False}
    pruned = run(g.prune(["docs-fetch", "fetch"], result, REQUEST, ALICE))
    assert pruned is not None and pruned["content"][1] == result["content"][1], "non-text content unchanged"
    body = pruned["content"][0]["text"]
    assert len(body) < len(PAGE) and "id=P1" in body
    assert result["content"][0]["text"] == PAGE, "the server's result is not mutated"
    assert list(stores) == [g.scope(ALICE)] and stores[g.scope(ALICE)].get("P1") is not None


@pytest.mark.parametrize(
    "case",
    ["error", "structured", "no_text", "no_basis", "not_prunable", "no_identity", "not_a_dict", "broken_store"],
)
def test_a_result_is_left_exactly_as_the_server_returned_it(pruner: Pruner, case: str) -> None:
    stores: Dict[str, Any] = {}
    g = gateway(pruner, stores)
    result: Any = {"content": [{"type": "text", "text": PAGE}], "isError": False}
    names, basis, who = ["docs-fetch"], REQUEST, ALICE
    if case == "error":
        result["isError"] = True
    elif case == "structured":
        result["structuredContent"] = {"text": PAGE}
    elif case == "no_text":
        result["content"] = [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]
    elif case == "no_basis":
        basis = None
    elif case == "not_prunable":
        names = ["read_file"]
    elif case == "no_identity":
        who = Identity(None)
    elif case == "not_a_dict":
        result = "text"
    elif case == "broken_store":
        g = GatewayPruner(pruner, GatewaySettings.from_mapping({"prunable": ["*-fetch"], "threshold": 0.5}),
                          store_for=lambda _s: Broken("next_number"), environ={}, secret=b"k")
    assert run(g.prune(names, result, basis, who)) is None


def test_unknown_plugin_config_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown plugin config key"):
        GatewaySettings.from_mapping({"prunabel": ["*"]})


def test_the_same_call_again_passes_unpruned_with_a_repeated_line(pruner: Pruner, caplog: pytest.LogCaptureFixture) -> None:
    """SPEC §2, issue 25 §4 at the gateway door: the same tool with the same
    arguments (any key order), after its result was pruned in this scope,
    passes exactly as the server returned it, with a counts-only line."""
    stores: Dict[str, Any] = {}
    g = gateway(pruner, stores)
    result = {"content": [{"type": "text", "text": PAGE}], "isError": False}
    caplog.set_level("INFO", logger="toolprune")
    first = run(g.prune(["docs-fetch"], result, REQUEST, ALICE, {"url": "https://example.org/secret-page", "max_length": 5000}))
    assert first is not None and "id=P1" in first["content"][0]["text"]
    caplog.clear()
    again = run(g.prune(["docs-fetch"], result, REQUEST, ALICE, {"max_length": 5000, "url": "https://example.org/secret-page"}))
    assert again is None, "the model asked again: it gets everything"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "outcome=skipped" in lines[0] and "agent=contextforge" in lines[0], lines
    assert "secret-page" not in lines[0] and "example.org" not in lines[0], "no arguments in the line"
    other = run(g.prune(["docs-fetch"], result, REQUEST, ALICE, {"url": "v", "max_length": 5000}))
    assert other is not None and "id=P2" in other["content"][0]["text"], "other arguments: another call"
    assert run(g.prune(["docs-fetch"], result, REQUEST, BOB, {"url": "https://example.org/secret-page", "max_length": 5000})) is not None, "another scope"
    unknown = run(g.prune(["docs-fetch"], result, REQUEST, ALICE))
    assert unknown is not None, "without arguments no repeat is detected"


def test_the_repeated_line_names_its_gate(pruner: Pruner) -> None:
    lines: List[str] = []
    conversation = pruner.conversation(enabled=True, threshold=0.5, log=lines.append)
    turn = conversation.turn(REQUEST)
    assert turn.on_tool_result(tool="fetch", text=PAGE, prunable=True, arguments='{"url": "u"}').outcome == "ok"
    again = turn.on_tool_result(tool="fetch", text=PAGE, prunable=True, arguments='{"url": "u"}')
    assert (again.outcome, again.gate) == ("skipped", "repeated")
    assert "gate=repeated" in lines[-1], lines[-1]


@pytest.mark.parametrize("form", ["import", "jobs", "asyncio"])
def test_the_repeat_gate_reads_the_call_keys_the_store_holds(pruner: Pruner, form: str) -> None:
    """`arguments` and the store's `calls()` reach the guest in every form; an
    evicted record's call is no longer a repeat; a store without `calls()`
    detects none."""
    store = MemoryStore(StoreLimits(max_records=1, max_chars=10_000_000, max_age_s=60))
    lines: List[str] = []
    conversation = pruner.conversation(enabled=True, threshold=0.5, backend=store, log=lines.append, form="jobs" if form == "jobs" else "import")
    turn = conversation.turn(REQUEST)

    def prune(text: str, arguments: Any) -> Any:
        if form == "asyncio":
            return asyncio.run(turn.on_tool_result_async(tool="fetch", text=text, prunable=True, arguments=arguments))
        return turn.on_tool_result(tool="fetch", text=text, prunable=True, arguments=arguments)

    assert prune(PAGE, {"url": "a"}).id == "P1"
    assert store.calls() and len(store.calls()[0]) == 32 and "a" not in store.calls()
    repeated = prune(PAGE, '{"url":"a"}')
    assert (repeated.outcome, repeated.gate, repeated.body, repeated.scorer_calls) == ("skipped", "repeated", PAGE, 0)
    assert repeated.log_line is not None and repeated.log_line == lines[-1]
    assert prune(PAGE + "\n\nmore", {"url": "b"}).id == "P2"  # evicts P1 (max_records 1)
    assert prune(PAGE, {"url": "a"}).outcome == "ok", "P1 was evicted: its call is no longer known"
    assert prune(PAGE, 42).outcome == "ok", "not JSON arguments: none, pruned as usual (test_arguments.py)"


def test_a_store_without_call_keys_detects_no_repeat(pruner: Pruner) -> None:
    conversation = pruner.conversation(enabled=True, threshold=0.5, backend=_NoCalls(), log=lambda _l: None)
    turn = conversation.turn(REQUEST)
    assert turn.on_tool_result(tool="fetch", text=PAGE, prunable=True, arguments={"url": "a"}).outcome == "ok"
    assert turn.on_tool_result(tool="fetch", text=PAGE, prunable=True, arguments={"url": "a"}).outcome == "ok"


class _NoCalls:
    """A store written for contract 0.2: no ``calls()``, no ``peek_number()``."""

    def __init__(self) -> None:
        self.inner = MemoryStore(StoreLimits(max_records=10, max_chars=10_000_000, max_age_s=60))

    def next_number(self) -> int:
        return self.inner.next_number()

    def put(self, record: StoredResult) -> None:
        self.inner.put(record)

    def get(self, id: str) -> Optional[StoredResult]:
        return self.inner.get(id)
