"""toolprune for Python: drop the paragraphs of a large tool result that do
not help answer the user's request — verbatim, at paragraph boundaries,
once — through the toolprune WebAssembly component (wasmtime).

    from toolprune import Pruner

    pruner = Pruner.load(scorer="offline")            # compiled once per process
    turn = pruner.begin_turn(user_message, enabled=True)
    result = turn.on_tool_result(tool="fetch", text=page, prunable=True)
    send_to_model(result.body)                         # result.raw for repeat detection
    back = turn.omitted({"id": "P1", "from": 8, "to": 14})

Every rule lives in the guest; this package supplies the HTTP call
(:class:`toolprune.jev.JevScorer`), the clock, the turn store, resource
limits and fail-open.
"""

from .jev import JevScorer
from .judge import Decision, JudgeAnswer, LoadError, RulesError, render_load_errors
from .pruner import Pruner, Turn, stderr_log
from .scorers import AsyncScorer, CancelToken, OfflineScorer, Scorer, ScriptedScorer, StubScorer
from .types import (
    Batch,
    BatchAnswer,
    BatchFailure,
    Counts,
    Failed,
    GuestError,
    GuestFailure,
    JevResponse,
    Limits,
    OmittedResult,
    ParagraphInfo,
    ParagraphReport,
    Pruned,
    Report,
    Scores,
    ScoringRequest,
    ScoringResponse,
    StoredResult,
    ToolSpec,
    TransportPolicy,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncScorer",
    "Batch",
    "BatchAnswer",
    "BatchFailure",
    "CancelToken",
    "Counts",
    "Decision",
    "Failed",
    "GuestError",
    "GuestFailure",
    "JevResponse",
    "JevScorer",
    "JudgeAnswer",
    "Limits",
    "LoadError",
    "OfflineScorer",
    "OmittedResult",
    "ParagraphInfo",
    "ParagraphReport",
    "Pruned",
    "Pruner",
    "Report",
    "RulesError",
    "Scorer",
    "Scores",
    "ScoringRequest",
    "ScoringResponse",
    "ScriptedScorer",
    "StoredResult",
    "StubScorer",
    "ToolSpec",
    "TransportPolicy",
    "Turn",
    "render_load_errors",
    "stderr_log",
]
