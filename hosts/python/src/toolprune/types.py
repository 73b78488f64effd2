"""The WIT types of ``toolprune:pruner@0.1.0`` as plain Python dataclasses.

Names follow Python style (``raw_chars`` for ``raw-chars``); enum values
follow SPEC §7/§10/§12 as the log lines write them (``no_basis``,
``json_wrapper``, ``not_dropped``). Every number here was counted by the
guest: the host never counts characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Literal, Optional, Tuple, Union

Lang = Literal["ja", "en"]
"""Language of markers, ``omitted`` texts and the tool description."""

Outcome = Literal[
    "ok",
    "structured",
    "no_basis",
    "all_dropped",
    "nothing_dropped",
    "below_floor",
    "timeout",
    "failed",
    "cancelled",
]
"""The nine outcomes of SPEC §7 and §11."""

Shape = Literal["text", "json_wrapper", "json_array"]
Fate = Literal["kept", "dropped", "unscored", "fixed"]
OmittedOutcome = Literal["ok", "not_dropped", "not_found", "too_large", "invalid"]
ParagraphKind = Literal["scored", "fixed"]
Stop = Literal["timeout", "cancelled"]
"""Why scoring stopped before every batch answered (SPEC §11)."""


# --- the scorer import -------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """One batch to score: up to 16 paragraphs and 12,000 characters."""

    paragraphs: List[int]
    """Paragraph numbers (0-based) of the batch, in order."""
    chunks: List[str]
    """The paragraphs' texts, in the same order."""
    jev_body: str
    """The Jev request body, encoded by the guest: POST it unchanged."""


@dataclass(frozen=True)
class TransportPolicy:
    """How the host must run the batches. The numbers are the guest's."""

    max_in_flight: int
    deadline_ms: int
    max_retries: int
    retry_on: List[Tuple[int, int]]
    """Inclusive status ranges that may be retried (429, 500–599)."""
    retry_backoff_ms: int
    """Wait before a retry without a usable ``Retry-After`` (ms; the guest's number)."""

    def retryable(self, status: int) -> bool:
        """Whether ``status`` is in one of the ``retry_on`` ranges."""
        return any(lo <= status <= hi for lo, hi in self.retry_on)


@dataclass(frozen=True)
class ScoringRequest:
    """Everything the scorer needs for one tool result (one call per result)."""

    basis: str
    batches: List[Batch]
    policy: TransportPolicy


@dataclass(frozen=True)
class Scores:
    """Scores in [0, 1] per paragraph of the batch, in order; ``None`` = not scored."""

    values: List[Optional[float]]


@dataclass(frozen=True)
class JevResponse:
    """A 2xx response body of Jev (bare or Cloudflare envelope), for the guest to decode."""

    body: str


@dataclass(frozen=True)
class Failed:
    """The batch could not be scored: ``status`` is the last HTTP status, ``None`` = network."""

    status: Optional[int] = None

    @classmethod
    def http(cls, status: int) -> "Failed":
        return cls(status)

    @classmethod
    def network(cls) -> "Failed":
        return cls(None)


BatchAnswer = Union[Scores, JevResponse, Failed]
"""The answer for one batch."""


@dataclass(frozen=True)
class ScoringResponse:
    """One answer per batch (same order), or a stop; and the scoring wall time."""

    answers: Optional[List[BatchAnswer]]
    """``None`` exactly when ``stop`` is set."""
    elapsed_ms: int
    stop: Optional[Stop] = None

    @classmethod
    def answered(cls, answers: List[BatchAnswer], elapsed_ms: int) -> "ScoringResponse":
        return cls(list(answers), elapsed_ms, None)

    @classmethod
    def stopped(cls, stop: Stop, elapsed_ms: int) -> "ScoringResponse":
        return cls(None, elapsed_ms, stop)


# --- the pruner export ---------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """The counts of the ``tool prune:`` log line (SPEC §12)."""

    raw_chars: int
    kept_chars: int
    paragraphs: int
    dropped: int
    calls: int
    jev_tokens: int
    ms: int


@dataclass(frozen=True)
class ParagraphReport:
    index: int
    chars: int
    score: Optional[float]
    fate: Fate


@dataclass(frozen=True)
class BatchFailure:
    """A batch that failed: status and class, never a body."""

    batch: int
    status: Optional[int]
    klass: str
    """``http-4xx``, ``http-5xx``, ``rate-limited``, ``out-of-credit``,
    ``network``, ``undecodable``, ``no-answer`` (WIT field ``class``)."""


@dataclass(frozen=True)
class StoredResult:
    """What ``omitted`` needs later in the turn: memory only."""

    id: str
    text: str
    dropped: List[int]


@dataclass(frozen=True)
class Report:
    """The guest's full answer for one tool result (WIT ``pruned``)."""

    body: str
    raw: str
    outcome: Outcome
    shape: Optional[Shape]
    counts: Counts
    ratio: Optional[float]
    threshold: float
    log_line: Optional[str]
    record: Optional[StoredResult]
    paragraphs: List[ParagraphReport]
    failures: List[BatchFailure]


@dataclass(frozen=True)
class GuestFailure:
    """Why the guest gave no answer; the host then fails open (SPEC §11)."""

    reason: str
    """``instantiate``, ``guest_trap`` (trap, panic, fuel or memory limit,
    an instance discarded under a pending job), ``scorer_error`` (the
    Python scorer raised), ``invalid_text`` (the tool result text holds
    surrogate code points, e.g. from ``errors="surrogateescape"``: it cannot
    cross the WIT ``string``, so the guest was not called) or
    ``invalid_input`` (the same for the request, tool name, agent, scorer name
    or Jev model)."""
    message: str
    """wasmtime's or the scorer's message, for diagnosis. Carries no document text."""


class GuestError(Exception):
    """Raised by calls that cannot fail open (``omitted``, inspection)."""

    def __init__(self, failure: GuestFailure) -> None:
        super().__init__(f"{failure.reason}: {failure.message}")
        self.failure = failure


@dataclass(frozen=True)
class Pruned:
    """What the host hands the model (``body``) and its repeat detector (``raw``)."""

    body: str
    """The pruned body, or the raw text byte for byte."""
    raw: str
    """The raw text, for repeat detection (SPEC §11)."""
    outcome: Outcome
    """The guest's outcome, or ``failed`` when the guest gave no answer."""
    report: Optional[Report]
    """The guest's full answer (counts, paragraphs, failures); ``None`` when it failed."""
    log_line: Optional[str]
    """The ``tool prune:`` line written for this result, if any."""
    failure: Optional[GuestFailure] = None
    """Why the guest gave no answer (then ``body == raw``, outcome ``failed``)."""

    @property
    def id(self) -> Optional[str]:
        """``P1``, ``P2``, … when the result went into the turn store."""
        if self.report is not None and self.report.record is not None:
            return self.report.record.id
        return None


@dataclass(frozen=True)
class OmittedResult:
    """The ``omitted`` tool's answer (SPEC §10)."""

    outcome: OmittedOutcome
    text: str
    """The dropped paragraphs verbatim (``ok``), or the explanation for the model."""
    log_line: str


@dataclass(frozen=True)
class ToolSpec:
    """The ``omitted`` tool as presented to the model."""

    name: str
    description: str
    input_schema: str
    """JSON Schema of the arguments, as a JSON text."""


@dataclass(frozen=True)
class ParagraphInfo:
    """One paragraph as pruning splits the text: spans are ``[start, end)``."""

    index: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    kind: ParagraphKind


@dataclass(frozen=True)
class Limits:
    """Resource limits of one instance, applied to every call into the guest."""

    memory_bytes: int = 256 << 20
    """Largest linear memory of the instance (default 256 MiB)."""
    fuel: int = 20_000_000_000
    """Fuel given to each export call (≈ one unit per wasm instruction)."""


__all__ = [
    "Lang",
    "Outcome",
    "Shape",
    "Fate",
    "OmittedOutcome",
    "ParagraphKind",
    "Stop",
    "Batch",
    "TransportPolicy",
    "ScoringRequest",
    "Scores",
    "JevResponse",
    "Failed",
    "BatchAnswer",
    "ScoringResponse",
    "Counts",
    "ParagraphReport",
    "BatchFailure",
    "StoredResult",
    "Report",
    "GuestFailure",
    "GuestError",
    "Pruned",
    "OmittedResult",
    "ToolSpec",
    "ParagraphInfo",
    "Limits",
]
