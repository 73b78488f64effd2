"""Conversions between wasmtime-py's component values (see
:mod:`toolprune._engine` for the mapping) and :mod:`toolprune.types`.
Enum cases are converted generically (:func:`~toolprune.types.snake`)."""

from __future__ import annotations

from typing import Any, List, Optional

from wasmtime.component import Record

from .types import (
    Batch,
    BatchAnswer,
    BatchFailure,
    Config,
    Counts,
    Failed,
    Inspection,
    JevEndpoint,
    JevResponse,
    ParagraphReport,
    Scores,
    ScoringRequest,
    ScoringResponse,
    StoredResult,
    StoreLimits,
    TransportPolicy,
    UnitInfo,
    snake,
)

U32_MAX = 0xFFFF_FFFF


def record(**fields: Any) -> Record:
    """A :class:`Record` whose attributes are the WIT names (``_`` → ``-``)."""
    rec = Record()
    for name, value in fields.items():
        setattr(rec, name.replace("_", "-"), value)
    return rec


def get(rec: Any, name: str) -> Any:
    return getattr(rec, name)


def opt_snake(name: Optional[str]) -> Optional[str]:
    return None if name is None else snake(name)


# --- scoring -----------------------------------------------------------------------


def lift_request(rec: Any) -> ScoringRequest:
    policy = get(rec, "policy")
    return ScoringRequest(
        basis=get(rec, "basis"),
        batches=[
            Batch(paragraphs=list(get(b, "paragraphs")), chunks=list(get(b, "chunks")), jev_body=get(b, "jev-body"))
            for b in get(rec, "batches")
        ],
        policy=TransportPolicy(max_in_flight=get(policy, "max-in-flight"), deadline_ms=get(policy, "deadline-ms")),
    )


def lower_request(request: ScoringRequest) -> Record:
    return record(
        basis=request.basis,
        batches=[
            record(paragraphs=[int(p) for p in b.paragraphs], chunks=list(b.chunks), jev_body=b.jev_body)
            for b in request.batches
        ],
        policy=record(max_in_flight=request.policy.max_in_flight, deadline_ms=request.policy.deadline_ms),
    )


def u32(value: int) -> int:
    return max(0, min(int(value), U32_MAX))


def _lower_score(value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a score must be a float or None, not {type(value).__name__}")
    return float(value)


def lower_answer(answer: BatchAnswer) -> Any:
    """One ``batch-answer``: ``list`` (scores), ``str`` (jev-response), ``int``
    / ``None`` (failed http / network). Raises :class:`TypeError` /
    :class:`ValueError` on anything else."""
    if isinstance(answer, Scores):
        return [_lower_score(v) for v in answer.values]
    if isinstance(answer, JevResponse):
        if not isinstance(answer.body, str):
            raise TypeError("JevResponse.body must be a str")
        return answer.body
    if isinstance(answer, Failed):
        if answer.status is None:
            return None
        if isinstance(answer.status, bool) or not isinstance(answer.status, int) or not 0 <= answer.status <= 0xFFFF:
            raise ValueError(f"not an HTTP status: {answer.status!r}")
        return answer.status
    raise TypeError(f"not a batch answer: {type(answer).__name__}")


def lower_response(answers: Any, elapsed_ms: int) -> Record:
    """A ``scoring-response`` from a list of answers or a stop name."""
    return record(answers=answers, elapsed_ms=u32(elapsed_ms))


def lift_answer(value: Any) -> BatchAnswer:
    if isinstance(value, list):
        return Scores(list(value))
    if isinstance(value, str):
        return JevResponse(value)
    return Failed(value)


def lift_response(rec: Any) -> ScoringResponse:
    answers = get(rec, "answers")
    elapsed = get(rec, "elapsed-ms")
    if isinstance(answers, str):
        return ScoringResponse.stopped(answers, elapsed)
    return ScoringResponse.answered([lift_answer(a) for a in answers], elapsed)


# --- pruning -------------------------------------------------------------------------


def lift_counts(rec: Any) -> Counts:
    return Counts(
        raw_chars=get(rec, "raw-chars"),
        kept_chars=get(rec, "kept-chars"),
        paragraphs=get(rec, "paragraphs"),
        dropped=get(rec, "dropped"),
        calls=get(rec, "calls"),
        jev_tokens=get(rec, "jev-tokens"),
        ms=get(rec, "ms"),
        work=get(rec, "work"),
    )


def lift_paragraphs(items: List[Any]) -> List[ParagraphReport]:
    return [
        ParagraphReport(index=get(p, "index"), chars=get(p, "chars"), score=get(p, "score"), fate=snake(get(p, "fate")))
        for p in items
    ]


def lift_failures(items: List[Any]) -> List[BatchFailure]:
    return [BatchFailure(batch=get(f, "batch"), status=get(f, "status"), klass=snake(get(f, "class"))) for f in items]


def lift_stored(rec: Any) -> StoredResult:
    return StoredResult(id=get(rec, "id"), chars=get(rec, "chars"), data=get(rec, "data"), call=get(rec, "call"))


def lower_stored(held: StoredResult) -> Record:
    """A stored result as the guest's ``stored-result`` record (for ``omitted.answer``)."""
    return record(id=held.id, chars=held.chars, call=held.call, data=held.data)


def lift_inspection(rec: Any) -> Inspection:
    span = get(rec, "wrapper-span")
    return Inspection(
        shape=opt_snake(get(rec, "shape")),
        wrapper_span=None if span is None else (int(span[0]), int(span[1])),
        units=[
            UnitInfo(
                index=get(u, "index"),
                byte_start=get(u, "byte-start"),
                byte_end=get(u, "byte-end"),
                char_start=get(u, "char-start"),
                char_end=get(u, "char-end"),
                kind=snake(get(u, "kind")),
            )
            for u in get(rec, "units")
        ],
    )


# --- settings ------------------------------------------------------------------------


def lift_config(rec: Any) -> Config:
    jev = get(rec, "jev")
    store = get(rec, "store")
    return Config(
        enabled=get(rec, "enabled"),
        threshold=get(rec, "threshold"),
        lang=get(rec, "lang"),
        jev=jev
        if isinstance(jev, str)
        else JevEndpoint(route=get(jev, "route"), url=get(jev, "url"), model=get(jev, "model"), loopback=get(jev, "loopback")),
        token_variable=get(rec, "token-variable"),
        prunable=list(get(rec, "prunable")),
        store=StoreLimits(
            max_records=get(store, "max-records"), max_chars=get(store, "max-chars"), max_age_s=get(store, "max-age-s")
        ),
        proxy_basis=get(rec, "proxy-basis"),
    )

