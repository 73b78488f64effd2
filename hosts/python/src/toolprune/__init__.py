"""toolprune for Python: drop the paragraphs of a large tool result that do
not help answer the user's request — verbatim, at paragraph boundaries,
once — through the toolprune WebAssembly component (wasmtime,
contract ``toolprune:pruner@0.3``).

    from toolprune import Pruner

    pruner = Pruner.load()                                 # compiled once, cached on disk
    conversation = pruner.conversation(enabled=True)       # one per agent conversation
    turn = conversation.turn(user_message)                 # one per user message
    result = turn.on_tool_result(tool="fetch", text=page, prunable=True, arguments=args)  # blocks; scores through the import
    send_to_model(result.body)                             # result.raw for repeat detection
    tools.append(conversation.omitted_tool("anthropic"))   # the `omitted` tool, static
    answer = conversation.omitted({"id": "P1", "from": 8, "to": 14})
    send_tool_result(answer.text)

Every rule lives in the guest; this package supplies the HTTP call
(:class:`toolprune.jev.JevScorer`), the clock, the store, resource limits
and fail-open.
"""

from typing import Any

from ._engine import ComponentError, default_cache_dir
from .judge import Decision, JudgeAnswer, LoadError, RulesError, render_load_errors
from .pruner import Conversation, Pruner, Turn, stderr_log
from .scorers import AsyncScorer, CancelToken, Scorer, ScriptedScorer
from .settings import ConfigError, Settings
from .types import (
    Batch,
    BatchAnswer,
    BatchFailure,
    Config,
    Counts,
    Failed,
    GuestError,
    HostFailure,
    Inspection,
    JevEndpoint,
    JevResponse,
    Limits,
    OmittedAnswer,
    ParagraphReport,
    PruneResult,
    Scores,
    ScoringRequest,
    ScoringResponse,
    StoredResult,
    StoreLimits,
    TransportPolicy,
    UnitInfo,
)

__version__ = "0.3.0"


def __getattr__(name: str) -> Any:
    # The Jev transport imports urllib (≈ 30 ms): only when asked for.
    if name == "JevScorer":
        from .jev import JevScorer

        return JevScorer
    raise AttributeError(f"module 'toolprune' has no attribute {name!r}")


__all__ = [
    "AsyncScorer",
    "Batch",
    "BatchAnswer",
    "BatchFailure",
    "CancelToken",
    "ComponentError",
    "Config",
    "ConfigError",
    "Conversation",
    "Counts",
    "Decision",
    "Failed",
    "GuestError",
    "HostFailure",
    "Inspection",
    "JevEndpoint",
    "JevResponse",
    "JevScorer",
    "JudgeAnswer",
    "Limits",
    "LoadError",
    "OmittedAnswer",
    "ParagraphReport",
    "PruneResult",
    "Pruner",
    "RulesError",
    "Scorer",
    "Scores",
    "ScoringRequest",
    "ScoringResponse",
    "ScriptedScorer",
    "Settings",
    "StoreLimits",
    "StoredResult",
    "TransportPolicy",
    "Turn",
    "UnitInfo",
    "default_cache_dir",
    "render_load_errors",
    "stderr_log",
]
