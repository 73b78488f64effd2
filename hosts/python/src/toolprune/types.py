"""The values of ``toolprune:pruner@0.3`` as plain Python dataclasses.

Field names follow Python style (``raw_chars`` for ``raw-chars``). Enum
values are the WIT case names converted generically (:func:`snake`:
``no-basis`` → ``no_basis``, ``json-wrapper`` → ``json_wrapper``), which is
how the guest's log lines write them. No name list lives in this package:
the component's types are the only list. Every number here was
counted by the guest: the host never counts characters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple, Union

Lang = str
"""Language of markers, ``omitted`` answers and the tool description: a case
of the WIT ``lang`` enum (``en``, ``ja``)."""


def snake(name: str) -> str:
    """A WIT enum case as this package names it: ``no-basis`` → ``no_basis``."""
    return name.replace("-", "_")


def kebab(name: str) -> str:
    """The WIT enum case of a name of this package: ``guest_trap`` → ``guest-trap``."""
    return name.replace("_", "-")


# --- scoring ------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """One batch to score: up to 16 paragraphs and 12,000 characters (SPEC §4.6)."""

    paragraphs: List[int]
    """Paragraph numbers (0-based) of the batch, in order."""
    chunks: List[str]
    """The paragraphs' texts, in the same order."""
    jev_body: str
    """The Jev request body, encoded by the guest: POST it unchanged."""


@dataclass(frozen=True)
class TransportPolicy:
    """How to run the batches; the guest's numbers."""

    max_in_flight: int
    """Requests in flight at most."""
    deadline_ms: int
    """Deadline for the whole result, in ms (enforced by the host for every scorer)."""


@dataclass(frozen=True)
class ScoringRequest:
    """Everything a scorer needs for one tool result (one request per result)."""

    basis: str
    """The first 2,000 characters of the turn's request (SPEC §3)."""
    batches: List[Batch]
    policy: TransportPolicy


@dataclass(frozen=True)
class Scores:
    """Scores in [0, 1] per paragraph of the batch, in order; ``None`` = not scored (kept)."""

    values: List[Optional[float]]


@dataclass(frozen=True)
class JevResponse:
    """A 2xx Jev response body (bare or in the Cloudflare envelope), for the guest to decode."""

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
    """A scorer's answer: one answer per batch (same order), or a stop.

    ``elapsed_ms``: the scorer's own measure of its wall time, for the log's
    ``ms=``; ``None`` (the default) lets the host measure it. A scorer may
    also return the list of answers alone."""

    answers: Optional[List[BatchAnswer]]
    """``None`` exactly when ``stop`` is set."""
    elapsed_ms: Optional[int] = None
    stop: Optional[str] = None
    """``timeout`` or ``cancelled`` (WIT ``scoring-stop``)."""

    @classmethod
    def answered(cls, answers: List[BatchAnswer], elapsed_ms: Optional[int] = None) -> "ScoringResponse":
        return cls(list(answers), elapsed_ms, None)

    @classmethod
    def stopped(cls, stop: str, elapsed_ms: Optional[int] = None) -> "ScoringResponse":
        return cls(None, elapsed_ms, stop)


# --- pruning ------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """The counts of the ``tool prune:`` log line (SPEC §12)."""

    raw_chars: int
    kept_chars: int
    """Characters of the body the model receives (markers included)."""
    paragraphs: Optional[int]
    """Paragraphs the text was split into; None when it was not split (skipped, ``structured``), never 0 for that."""
    dropped: int
    """Paragraphs below the threshold (also when the floor kept them)."""
    calls: int
    """Scorer calls that answered; 0 for the offline scorer."""
    jev_tokens: int
    ms: Optional[int]
    """Scoring wall time in ms; None when no host scorer answered (not measured)."""
    work: int = 0
    """Work units the guest counted for this result (bytes scanned, paragraphs
    scored, …): the same in every host and both forms (SPEC §7). Past the
    budget (``Limits.work``, else the guest's own, sized from the text) the
    result is ``failed`` and its line says ``reason=budget``."""


@dataclass(frozen=True)
class ParagraphReport:
    """One paragraph (or array element), in the opt-in report."""

    index: int
    chars: int
    score: Optional[float]
    fate: str
    """``kept``, ``dropped``, ``unscored`` or ``fixed``."""


@dataclass(frozen=True)
class BatchFailure:
    """A batch that failed: status and class, never a body."""

    batch: int
    status: Optional[int]
    klass: str
    """The guest's failure class (``http_4xx``, ``http_5xx``, ``http_other``,
    ``rate_limited``, ``out_of_credit``, ``network``, ``undecodable``,
    ``no_answer``, …; WIT field ``class``)."""


@dataclass(frozen=True)
class StoredResult:
    """A stored result as the guest made it (SPEC §10), read-only."""

    id: str
    chars: int
    """Characters of the dropped units: what the record weighs in the store."""
    data: str
    """The shape, unit count and dropped units in the guest's own encoding:
    stored as it is, passed back to ``omitted``, never read by the host."""
    call: Optional[str] = None
    """The key of the call that gave this result (a digest of the tool's name
    and canonical arguments, never the arguments), or None when the
    arguments were not given: a store hands the keys of its records back as
    ``prune-input.pruned-calls`` for the repeat gate (SPEC §2)."""


@dataclass(frozen=True)
class HostFailure:
    """Why the guest gave no answer; the host then fails open (SPEC §11)."""

    reason: str
    """``guest_trap`` (trap, panic, resource limit, failed instantiation),
    ``invalid_text`` (the result text holds surrogate code points, e.g. from
    ``errors="surrogateescape"``: it cannot cross a WIT ``string``, the
    guest was not called) or ``invalid_input`` (the same for the request,
    tool name, agent, scorer name or Jev model) or ``store`` (the
    conversation's store could not give an id number, keep or read a
    record: :mod:`toolprune.store`)."""
    limit: Optional[str]
    """``fuel`` when fuel ran out; else None (this host cannot tell a memory
    limit from another trap)."""
    message: str
    """For diagnosis: wasmtime's message or what was ill-formed. Never document text."""


@dataclass(frozen=True)
class PruneResult:
    """What one tool result became: the same shape in every host."""

    body: str
    """The string the model receives: the pruned body, or the input ``str``
    itself (the very same object) when nothing changed."""
    raw: str
    """The input text, for repeat detection (SPEC §11)."""
    outcome: str
    """``ok``, ``skipped``, ``structured``, ``no_basis``, ``all_dropped``,
    ``nothing_dropped``, ``below_floor``, ``timeout``, ``failed``, ``cancelled``."""
    gate: Optional[str]
    """For ``skipped``: ``disabled``, ``tool_failed``, ``not_prunable``,
    ``too_short`` or ``repeated`` (the same tool with the same arguments
    after an earlier result of that call was pruned: the model asked again,
    it gets everything; the one gate that writes a log line)."""
    id: Optional[str]
    """The stored id (``P3``) when the outcome is ``ok`` and something was stored."""
    shape: Optional[str]
    """``text``, ``json_wrapper``, ``json_array``, or None (not split)."""
    counts: Optional[Counts]
    """None on a host failure (the guest gave no answer)."""
    ratio: Optional[float]
    threshold: Optional[float]
    """The threshold in effect; None on a host failure (the guest gave no answer)."""
    log_line: Optional[str]
    """The line written to the log sink for this result (None for ``skipped``)."""
    served_model: Optional[str]
    """The model Jev said it ran, if any batch answered."""
    paragraphs: List[ParagraphReport] = field(default_factory=list)
    """One per paragraph when the report was asked for (``report=True``), else empty."""
    failures: List[BatchFailure] = field(default_factory=list)
    failure: Optional[HostFailure] = None
    """Set when the host could not get a guest answer (then ``body is raw``)."""
    scorer_calls: int = 0
    """How many times the host's scorer was asked to score this result: 0
    (a gate stopped it, nothing was scorable, the guest scored it itself:
    offline or stub) or 1 — the ``scorer.score`` import call (import form)
    or the job's request scored (jobs form); never more."""
    _pruned: Any = field(default=None, repr=False, compare=False)
    """The guest's ``pruned`` record as it came (for ``report.prune-json``); None on a host failure."""


@dataclass(frozen=True)
class OmittedAnswer:
    """The answer to one call of the model's ``omitted`` tool (SPEC §10):
    ``text`` goes back to the model as the tool result, whatever the outcome."""

    outcome: str
    """``ok``, ``not_dropped``, ``not_found``, ``too_large``, ``invalid``; or
    ``failed`` when the guest could not answer (``text`` then asks the model
    to try again)."""
    text: str
    log_line: str
    failure: Optional[HostFailure] = None


@dataclass(frozen=True)
class UnitInfo:
    """One unit as pruning splits a text: spans are ``[start, end)``."""

    index: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    kind: str
    """``scored`` (sent to the scorer), ``fixed`` (over 6,000 characters: kept,
    never sent) or ``blank`` (no visible character)."""


@dataclass(frozen=True)
class Inspection:
    """How pruning would split a text (SPEC §14's inspection call)."""

    shape: Optional[str]
    """None: JSON that is neither a wrapper nor a prunable array (``structured``)."""
    wrapper_span: Optional[Tuple[int, int]]
    """For a wrapper: its string literal's byte span in the raw text, quotes included."""
    units: List[UnitInfo]


@dataclass(frozen=True)
class Limits:
    """Overrides of the guest's per-call limits (``settings.call-limits-for``):
    each field left None keeps the guest's number. For tests and for hosts
    that must be stricter; never needed otherwise."""

    memory_bytes: Optional[int] = None
    """Linear memory of an instance at most."""
    fuel: Optional[int] = None
    """Fuel for each call into the guest."""
    work: Optional[int] = None
    """The guest's work budget of every result (``prune-input.work-budget``,
    SPEC §7: the deterministic budget that decides, in units the guest
    counts); None: the guest's own, sized from the text."""


# --- configuration --------------------------------------------------------------------


@dataclass(frozen=True)
class JevEndpoint:
    """Where Jev answers (WIT ``settings.jev-endpoint``)."""

    route: str
    url: str
    model: Optional[str]
    loopback: bool
    """The URL's host is loopback: no proxy."""


@dataclass(frozen=True)
class StoreLimits:
    """Bounds of a conversation's store (SPEC §10)."""

    max_records: int
    max_chars: int
    max_age_s: int


@dataclass(frozen=True)
class Config:
    """The resolved configuration: defaults < config file < environment."""

    enabled: bool
    threshold: float
    lang: str
    jev: Union[JevEndpoint, str]
    """The endpoint, or (a ``str``) why it is incomplete."""
    token_variable: str
    """The environment variable holding the API token (the host reads it; never the guest)."""
    prunable: List[str]
    store: StoreLimits
    proxy_basis: str


class GuestError(Exception):
    """A call that cannot fail open gave no answer (inspection, settings)."""

    def __init__(self, failure: HostFailure) -> None:
        super().__init__(f"{failure.reason}: {failure.message}")
        self.failure = failure


__all__ = [
    "Batch",
    "BatchAnswer",
    "BatchFailure",
    "Config",
    "Counts",
    "Failed",
    "GuestError",
    "HostFailure",
    "Inspection",
    "JevEndpoint",
    "JevResponse",
    "Lang",
    "Limits",
    "OmittedAnswer",
    "ParagraphReport",
    "PruneResult",
    "Scores",
    "ScoringRequest",
    "ScoringResponse",
    "StoreLimits",
    "StoredResult",
    "TransportPolicy",
    "UnitInfo",
    "kebab",
    "snake",
]
