"""Jev on the wire as the vendor's own client speaks it: conformance with
TypeSafe AI's official Python SDK, ``typesafe-sdk`` 0.7.5 (a test-only
dependency), pointed at a loopback server (``jev_loopback.Loopback``,
127.0.0.1 only; no key, nothing leaves the machine).

- **Requests.** For every batch of every shared corpus document (with its
  ``request_en`` and ``request_ja``) and every shared case, and for the
  judge's example rules, the SDK is given the same state and questions —
  built here from the scoring request's basis, paragraph numbers and texts
  and the SPEC §5 question, not from the guest's body — and the body it
  POSTs must equal the guest's ``jev_body`` as a JSON value (native route:
  ``model`` in the body, path ``/v1/systemone``; Cloudflare: the same body
  without ``model``).
- **Answers.** The loopback server answers the SDK with responses built from
  the SDK's own pydantic models; the same bytes, bare and in the Cloudflare
  envelope, go back to the guest as ``jev-response`` answers, and the guest
  must decode what the SDK reports (scores bit for bit up to 15 significant
  digits — 16 and 17 are a strict xfail —, ``jev_tokens``; the judge's
  value, p, margin and mean). Malformed answers: whatever the SDK
  refuses in a field the guest reads is never a score or a judge answer;
  where the guest is stricter or reads less, the table says so and why.
- **Errors and retries.** Status by status, what the SDK retries and raises
  and what toolprune's Python transport does (every wait decided by the
  guest's ``settings.retry-delay``, the deadline from its
  ``transport-policy``); how both read ``retry-after-ms``, ``Retry-After``
  in seconds and as an HTTP-date (header by header against the SDK's own
  parser, then on the wire).
- **The served model.** The answer's ``model`` (what the SDK reports as
  ``SystemOneResponse.model``) is what the guest reports as
  ``served_model``, not the name asked for.

Every call into ``toolprune`` is in the "adapter" section below.
docs/jev-sdk-conformance.md has the findings.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pytest

if sys.version_info < (3, 11):  # pragma: no cover - the SDK's httpx2 needs 3.11
    pytest.skip("typesafe-sdk needs Python >= 3.11 (httpx2)", allow_module_level=True)

import tomllib  # noqa: E402

# Not importorskip: CI installs the SDK with the `test` extra, and a missing
# SDK must fail the run, not pass it silently.
import httpx2  # noqa: E402  (the SDK's HTTP client: its headers type)
import typesafe_sdk as ts  # noqa: E402
from typesafe_sdk._core import errors as sdk_errors  # noqa: E402  (parse_retry_after: the SDK's own reading)

from conftest import REPO, shared_dir  # noqa: E402
from jev_loopback import DROP, Loopback, Received, Reply, gaps  # noqa: E402

SDK_VERSION = "0.7.5"
"""The SDK version these facts were read from (pinned in pyproject.toml)."""
API_KEY = "sdk-conformance-key"
NATIVE_MODEL = "jev-1.13.0"
SERVED_MODEL = "jev-1.13.2"
"""What the loopback server says answered: the served version may differ from the requested alias."""

# SPEC §5: the frozen question, written out here so that a change of one byte
# in the guest's copy (guest/src/jev.rs) fails this suite.
INSTRUCTIONS = "`chunks.{chunk}` の文章は、`request` の依頼に答えるために必要な情報を含むか。"
CRITERIA_TRUE = "依頼に答える材料 (事実・数値・主張・手順・限界) が含まれる"
CRITERIA_FALSE = "ナビゲーション・広告・定型文・著者欄・無関係な話題など、依頼に答える材料を含まない"

JUDGE_DIR = REPO / "tests" / "conformance" / "judge"
"""The judge's shared fixtures (the rules are examples/judge/rules.toml: test_judge.py checks it)."""
JUDGE_RULES = (JUDGE_DIR / "rules.toml").read_text(encoding="utf-8")
JUDGE_MESSAGES = [
    "Compare the pricing of three CI services",
    "Delete the `prod` bucket and publish \"v2\" now\n\t— then tell #ops 🚀",
    "本番のバケットを削除して、結果を\u2028報告してください。\u0000\u001f\\",
]

# =============================================================================
# Adapter: every call into toolprune (contract 0.2 Python API). Keep it small.
# =============================================================================

from toolprune import Failed, JevResponse, JevScorer, Pruner, PruneResult, ScoringRequest, ScoringResponse  # noqa: E402


def _quiet(_line: str) -> None:
    pass


@dataclass(frozen=True)
class GuestBatch:
    """One batch as the guest hands it to the scorer."""

    basis: str
    paragraphs: List[int]
    chunks: List[str]
    body: str
    """``jev_body``: what every host POSTs unchanged."""


class _Answering:
    """A scorer for the guest: keeps the scoring requests and answers batch
    ``i`` with ``bodies[i]`` as a ``jev-response`` (``None``: network failure)."""

    name = "jev"

    def __init__(self, jev_model: Optional[str], bodies: Optional[List[Optional[str]]] = None) -> None:
        self.jev_model = jev_model
        """The model the guest names in the body (the conversation takes it from the scorer)."""
        self.bodies = bodies
        self.requests: List[ScoringRequest] = []

    def score(self, request: ScoringRequest) -> ScoringResponse:
        self.requests.append(request)
        answers: List[Any] = []
        for i in range(len(request.batches)):
            body = self.bodies[i] if self.bodies is not None and i < len(self.bodies) else None
            answers.append(Failed.network() if body is None else JevResponse(body))
        return ScoringResponse.answered(answers, 1)


def _prune(pruner: Pruner, text: str, request: str, scorer: Any, report: bool = False) -> PruneResult:
    """One tool result in a fresh conversation (pruning on, a prunable tool),
    the guest naming ``scorer.jev_model`` in its bodies."""
    conversation = pruner.conversation(enabled=True, scorer=scorer, jev_model=scorer.jev_model, log=_quiet)
    return conversation.turn(request).on_tool_result(tool="fetch", text=text, prunable=True, report=report)


def guest_batches(pruner: Pruner, text: str, request: str, model: Optional[str]) -> List[GuestBatch]:
    """The batches the guest asks to score for ``text`` (empty: no call)."""
    scorer = _Answering(model)
    _prune(pruner, text, request, scorer)
    assert len(scorer.requests) <= 1, "one scorer call per tool result (SPEC §14)"
    return [
        GuestBatch(r.basis, list(b.paragraphs), list(b.chunks), b.jev_body)
        for r in scorer.requests
        for b in r.batches
    ]


@dataclass(frozen=True)
class GuestScores:
    scores: Dict[int, Optional[float]]
    """Paragraph number → the score the guest decoded (``None``: none)."""
    jev_tokens: int
    failed_batches: List[Tuple[int, str]]
    """(batch, class) of every batch the guest counted as failed."""
    served_model: Optional[str]
    """The model the guest says answered (``pruned.served-model``)."""


def guest_scores(
    pruner: Pruner, text: str, request: str, model: Optional[str], bodies: List[Optional[str]]
) -> GuestScores:
    """Prunes ``text`` answering batch ``i`` with ``bodies[i]``; what the guest decoded."""
    result = _prune(pruner, text, request, _Answering(model, bodies), report=True)
    assert result.failure is None and result.counts is not None, f"the guest gave no answer: {result.failure}"
    return GuestScores(
        {p.index: p.score for p in result.paragraphs},
        result.counts.jev_tokens,
        [(f.batch, f.klass) for f in result.failures],
        result.served_model,
    )


@dataclass(frozen=True)
class GuestJudgement:
    verdict: str
    reason: Optional[str]
    answers: Dict[str, Tuple[Optional[str], float, Optional[float], Optional[float]]]
    """question → (value, p, margin, mean)."""
    jev_tokens: int
    body: str
    """The judge's request body (its one batch's ``jev_body``)."""


def guest_judge(pruner: Pruner, rules: str, message: str, model: Optional[str], answer: Optional[str]) -> GuestJudgement:
    """Routes ``message`` with one live Jev call (the judge job) answered by
    ``answer`` (``None``: network failure)."""
    scorer = _Answering(model, [answer])
    d = pruner.route(rules, message, scorer=scorer, jev_model=model, log=_quiet)
    (request,) = scorer.requests
    (batch,) = request.batches
    return GuestJudgement(
        d.verdict,
        d.reason,
        {a.question: (a.value, a.p, a.margin, a.mean) for a in d.answers},
        d.jev_tokens,
        batch.jev_body,
    )


def guest_fixed_judgement(pruner: Pruner, rules: str, message: str, answers: str) -> Dict[str, Tuple[Any, ...]]:
    """The judge's reading of ``answers`` given as fixed answers (``--answers``: no call)."""
    d = pruner.route(rules, message, answers, log=_quiet)
    return {a.question: (a.value, a.p, a.margin, a.mean) for a in d.answers}


def guest_deadline_ms(pruner: Pruner) -> int:
    """The guest's deadline for one tool result (``transport-policy``)."""
    scorer = _Answering(NATIVE_MODEL)
    _prune(pruner, ONE_BATCH_TEXT, ONE_BATCH_REQUEST, scorer)
    return scorer.requests[0].policy.deadline_ms


def guest_retry_delay(
    pruner: Pruner,
    status: Optional[int],
    attempt: int = 1,
    retry_after: Optional[str] = None,
    retry_after_ms: Optional[str] = None,
    now_unix_ms: int = 0,
    remaining_ms: int = 20_000,
) -> Optional[int]:
    """The guest's retry rule (``settings.retry-delay``): ms to wait, or None (give up)."""
    return pruner.settings.retry_delay(
        attempt=attempt,
        status=status,
        retry_after=retry_after,
        retry_after_ms=retry_after_ms,
        now_unix_ms=now_unix_ms,
        remaining_ms=remaining_ms,
    )


@dataclass(frozen=True)
class TransportOutcome:
    outcome: str
    failures: List[Tuple[Optional[int], str]]
    """(status, class) of each failed batch; ``None`` status: network."""
    served_model: Optional[str]


def jev_scorer(pruner: Pruner, route: str, base_url: Optional[str] = None, model: str = NATIVE_MODEL) -> Any:
    """toolprune's own Jev transport as a user configures it (the guest
    resolves the endpoint from these variables; the token from the one it names)."""
    env = {"TOOLPRUNE_JEV_ROUTE": route, "TOOLPRUNE_JEV_MODEL": model}
    if base_url is not None:
        env["TOOLPRUNE_JEV_BASE_URL"] = base_url
    env[pruner.settings.defaults().token_variable] = API_KEY
    return JevScorer.from_env(env, pruner=pruner)


def guest_transport(pruner: Pruner, route: str, base_url: str, model: str = NATIVE_MODEL) -> TransportOutcome:
    """One one-batch result through toolprune's own Python Jev transport."""
    result = _prune(pruner, ONE_BATCH_TEXT, ONE_BATCH_REQUEST, jev_scorer(pruner, route, base_url, model))
    return TransportOutcome(result.outcome, [(f.status, f.klass) for f in result.failures], result.served_model)


def guest_transport_url(pruner: Pruner, route: str) -> str:
    """The URL the transport POSTs to on ``route`` with its default base URL."""
    return str(jev_scorer(pruner, route).url)


# =============================================================================
# The SDK side
# =============================================================================


def sdk_client(base: str, retry: Optional[ts.RetryPolicy] = None) -> ts.TypeSafeClient:
    """The vendor's client against the loopback server. ``compression=False``:
    with zstd available (Python 3.14, or the ``[zstd]`` extra) the SDK
    compresses bodies of 1,024 bytes or more; toolprune never does."""
    return ts.TypeSafeClient(api_key=API_KEY, base_url=base, compression=False, retry=retry, timeout=10.0)


def sdk_noul_questions(names: List[str]) -> Dict[str, ts.Noul]:
    """The SPEC §5 question for each chunk name, as the SDK's own ``Noul``."""
    return {
        name: ts.Noul(
            instructions=INSTRUCTIONS.replace("{chunk}", name),
            criteria={"true": CRITERIA_TRUE, "false": CRITERIA_FALSE},
        )
        for name in names
    }


def sdk_judge_questions(rules: str) -> Dict[str, Any]:
    """The rules file's questions as the SDK's ``Noul`` / ``Choice`` / ``Score``."""
    out: Dict[str, Any] = {}
    for name, q in tomllib.loads(rules)["questions"].items():
        if q["type"] == "noul":
            out[name] = ts.Noul(instructions=q["ask"], criteria={"true": q["true_if"], "false": q["false_if"]})
        elif q["type"] == "choice":
            out[name] = ts.Choice(instructions=q["ask"], criteria=dict(q["options"]))
        else:
            out[name] = ts.Score(instructions=q["ask"], criteria=list(q["levels"]))
    return out


EDGE_PROBABILITIES = [
    0.0, 1.0, 0.5, 0.2, 0.199999999999999, 0.200000000000001, 0.3, 5e-324, 1e-17, 0.999999999999999,
]
"""Values at the threshold, the ends of [0, 1] and the limits of a double,
with at most 15 significant digits (see ``LONG_PROBABILITIES``)."""

LONG_PROBABILITIES = [0.19999999999999998, 0.9999999999999999, 0.9452706955539223, 0.30000000000000004, 0.1 + 0.2, 0.38120423768821243]
"""16 and 17 significant digits, which the guest's serde_json (without
``float_roundtrip``) may read 1 ULP off; Jev sends hundredths."""


def rng_for(data: bytes) -> random.Random:
    return random.Random(hashlib.sha256(data).digest())


def a_probability(rng: random.Random) -> float:
    """Hundredths most often (Jev's resolution), else up to 15 significant digits."""
    roll = rng.random()
    if roll < 0.2:
        return rng.choice(EDGE_PROBABILITIES)
    if roll < 0.6:
        return rng.randint(0, 100) / 100
    return round(rng.random(), rng.randint(3, 15))


def sdk_noul_response(request_body: bytes) -> bytes:
    """A System One answer for every question of the request, built from the
    SDK's own models (deterministic per request body)."""
    rng = rng_for(request_body)
    questions = json.loads(request_body)["questions"]
    response = ts.SystemOneResponse(
        model=SERVED_MODEL,
        usage=ts.Usage(input_tokens=rng.randint(1, 60_000), output_tokens=0),
        answers={name: ts.NoulAnswer(noul=a_probability(rng)) for name in questions},
    )
    return response.model_dump_json().encode()


def hundredths_summing_to_one(rng: random.Random, n: int) -> List[int]:
    cuts = sorted(rng.randint(0, 100) for _ in range(n - 1))
    return [b - a for a, b in zip([0] + cuts, cuts + [100])]


def sdk_judge_response(request_body: bytes, salt: int) -> bytes:
    """Answers to the judge's questions from the SDK's models: probabilities
    in hundredths (Jev's resolution, SPEC §13), ties included."""
    rng = rng_for(request_body + salt.to_bytes(4, "big"))
    answers: Dict[str, Any] = {}
    for name, q in json.loads(request_body)["questions"].items():
        if q["type"] == "noul":
            answers[name] = ts.NoulAnswer(noul=rng.randint(0, 100) / 100)
        elif q["type"] == "choice":
            options = list(q["criteria"])
            hs = hundredths_summing_to_one(rng, len(options))
            if salt % 5 == 0:  # a tie between the first two options
                hs[0] = hs[1] = 50
                hs[2:] = [0] * (len(hs) - 2)
            top = max(hs)
            tied = [o for o, h in zip(options, hs) if h == top]
            answers[name] = ts.ChoiceAnswer(
                choice=rng.choice(tied),
                confidence=rng.random(),
                probabilities={o: h / 100 for o, h in zip(options, hs)},
            )
        else:
            levels = q["criteria"]
            hs = hundredths_summing_to_one(rng, len(levels))
            answers[name] = ts.ScoreAnswer(
                score=sum(k * h / 100 for k, h in enumerate(hs)),
                confidence=rng.random(),
                legend={k: text for k, text in enumerate(levels)},
                probabilities={k: h / 100 for k, h in enumerate(hs)},
            )
    response = ts.SystemOneResponse(
        model=SERVED_MODEL, usage=ts.Usage(input_tokens=rng.randint(1, 5_000), output_tokens=7), answers=answers
    )
    return response.model_dump_json().encode()


def envelope(raw: bytes) -> bytes:
    """Cloudflare's REST envelope around a bare answer, its bytes untouched."""
    return b'{"success":true,"result":' + raw + b',"errors":[],"messages":[]}'


SdkResult = Union[ts.SystemOneResponse, ts.TypeSafeError]


class Referee:
    """The SDK against a loopback server that answers with ``self.reply``
    (bytes or a function of the request body), recording what arrived."""

    def __init__(self) -> None:
        self.reply: Union[bytes, Callable[[bytes], bytes]] = b"{}"
        self.server = Loopback(self._respond)

    def _respond(self, got: Received, n: int) -> Reply:
        body = self.reply(got.body) if callable(self.reply) else self.reply
        return Reply(200, body)

    def __enter__(self) -> "Referee":
        self.server.__enter__()
        self.client = sdk_client(self.server.base, retry=ts.RetryPolicy(max_retries=0))
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.server.__exit__(*exc)

    def ask(self, state: Any, questions: Dict[str, Any], model: str) -> Tuple[Received, SdkResult]:
        """Sends through the SDK; the request as received, and the SDK's
        answer or the error it raised."""
        try:
            result: SdkResult = self.client.system_one(state, questions, model=model)
        except ts.TypeSafeError as err:
            result = err
        return self.server.received[-1], result

    def read(self, raw: bytes) -> SdkResult:
        """What the SDK makes of ``raw`` as a 200 answer to a one-question request."""
        self.reply = raw
        return self.ask("x", {"q": ts.Noul(instructions="x")}, NATIVE_MODEL)[1]


@pytest.fixture(scope="module")
def referee() -> Iterator[Referee]:
    with Referee() as r:
        yield r


# =============================================================================
# Inputs
# =============================================================================

SHARED = shared_dir()
MANIFEST: List[Dict[str, Any]] = json.loads((SHARED / "corpus" / "manifest.json").read_text(encoding="utf-8"))
CASES: List[Dict[str, Any]] = json.loads((SHARED / "cases" / "cases.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Input:
    id: str
    file: Path
    request: str


INPUTS: List[Input] = [
    Input(f"{m['file']}:{key[-2:]}", SHARED / "corpus" / m["file"], m[key])
    for m in MANIFEST
    for key in ("request_en", "request_ja")
    if m.get(key)
] + [Input(f"cases/{c['file']}", SHARED / "cases" / c["file"], c["request"]) for c in CASES]

ROUTES = {"native": NATIVE_MODEL, "cloudflare": None}
"""Route → the model the guest names in the body (Cloudflare: none, it is in the URL)."""

ONE_BATCH_REQUEST = "How do I configure the retry limit for the upload client?"
ONE_BATCH_TEXT = "\n\n".join(
    (f"Paragraph {i} of the upload client guide: " + ("the retry limit is set in the client options. " * 14)).strip()
    for i in range(6)
) + "\n"
"""Six paragraphs of ~750 characters: over the 4,000-character gate, one batch."""


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


@dataclass
class Exchange:
    """One input through the guest and the SDK, on one route."""

    batches: List[GuestBatch]
    sent: List[Received]
    """What the SDK POSTed for each batch."""
    answers: List[bytes]
    """The loopback server's answer (SDK models) to each batch."""
    reported: List[SdkResult]
    """What the SDK made of each answer."""


@pytest.fixture(scope="module")
def exchanges(pruner: Pruner, referee: Referee) -> Dict[Tuple[str, str], Exchange]:
    """Every input on both routes: the guest's batches, then the SDK sending
    the same state and questions (built from the scoring request, not from
    the guest's body) and reading the loopback server's answers."""
    out: Dict[Tuple[str, str], Exchange] = {}
    referee.reply = sdk_noul_response
    sdk_cache: Dict[str, Tuple[Received, SdkResult]] = {}
    for item in INPUTS:
        text = read_text(item.file)
        for route, model in ROUTES.items():
            batches = guest_batches(pruner, text, item.request, model)
            ex = Exchange(batches, [], [], [])
            for b in batches:
                names = [f"p{i}" for i in b.paragraphs]
                state = {"request": b.basis, "chunks": dict(zip(names, b.chunks))}
                # The SDK's request does not depend on the guest's route: send it once.
                key = json.dumps([state, names], ensure_ascii=False)
                if key not in sdk_cache:
                    sdk_cache[key] = referee.ask(state, sdk_noul_questions(names), NATIVE_MODEL)
                got, reported = sdk_cache[key]
                ex.sent.append(got)
                ex.answers.append(sdk_noul_response(got.body))
                ex.reported.append(reported)
            out[(item.id, route)] = ex
    return out


def ordered_keys(body: str, *path: str) -> List[str]:
    """The keys of the object at ``path`` in their order in the JSON text."""
    value: Any = json.loads(body, object_pairs_hook=lambda pairs: pairs)
    for key in path:
        value = dict(value)[key]
    return [k for k, _ in value]


# =============================================================================
# Requests
# =============================================================================


def test_the_sdk_is_the_version_whose_facts_this_suite_states() -> None:
    assert ts.__version__ == SDK_VERSION


def test_the_inputs_make_real_batches(exchanges: Dict[Tuple[str, str], Exchange]) -> None:
    """Guards the suite itself: the corpus and cases give well over a hundred
    batches per route, several with 16 paragraphs."""
    for route in ROUTES:
        batches = [b for (i, r), ex in exchanges.items() if r == route for b in ex.batches]
        assert len(batches) > 100
        assert max(len(b.paragraphs) for b in batches) == 16


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("item", INPUTS, ids=[i.id for i in INPUTS])
def test_the_guest_body_equals_the_sdk_body(
    exchanges: Dict[Tuple[str, str], Exchange], item: Input, route: str
) -> None:
    ex = exchanges[(item.id, route)]
    for b, got in zip(ex.batches, ex.sent):
        assert (got.method, got.path) == ("POST", "/v1/systemone")
        sdk_body = json.loads(got.body)
        guest_body = json.loads(b.body)
        if route == "cloudflare":
            # The SDK speaks the native API only; Cloudflare takes the model from its URL.
            assert "model" not in guest_body
            assert sdk_body.pop("model") == NATIVE_MODEL
        assert guest_body == sdk_body
        # Beyond value equality: chunks and questions keep the batch's order in both.
        names = [f"p{i}" for i in b.paragraphs]
        assert ordered_keys(b.body, "questions") == ordered_keys(got.body.decode(), "questions") == names
        assert ordered_keys(b.body, "state", "chunks") == names


RUST_WHITESPACE = frozenset(
    "\t\n\u000b\u000c\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Rust's ``char::is_whitespace`` (Unicode White_Space); Python's ``isspace`` also counts U+001C–U+001F."""


def paragraph_content(span: str) -> str:
    """A paragraph as scorers get it: without its leading blank lines and
    its trailing whitespace (its separator)."""
    start = 0
    for line in _lines(span):
        if all(c in RUST_WHITESPACE for c in line):
            start += len(line)
        else:
            break
    end = len(span)
    while end > start and span[end - 1] in RUST_WHITESPACE:
        end -= 1
    return span[start:end]


def _lines(span: str) -> List[str]:
    """Lines with their terminator, cut after every line feed and carriage return (as the guest cuts them)."""
    out, start = [], 0
    for i, c in enumerate(span):
        if c in "\n\r":
            out.append(span[start : i + 1])
            start = i + 1
    if start < len(span):
        out.append(span[start:])
    return out


def test_scorers_get_each_paragraph_without_its_separator_and_leading_blank_lines(
    pruner: Pruner, exchanges: Dict[Tuple[str, str], Exchange]
) -> None:
    """The texts the SDK sends above are the scoring request's; this pins
    what they are: for every text-shaped input, each chunk is its
    paragraph's span (the guest's own ``inspect``) without leading blank
    lines and trailing whitespace — never the span itself with its separator."""
    checked = trimmed = 0
    for item in INPUTS:
        text = read_text(item.file)
        inspection = pruner.inspect(text)
        if inspection.shape != "text":
            continue
        raw = text.encode("utf-8")
        spans = {u.index: raw[u.byte_start : u.byte_end].decode("utf-8") for u in inspection.units}
        for b in exchanges[(item.id, "native")].batches:
            for i, chunk in zip(b.paragraphs, b.chunks):
                assert chunk == paragraph_content(spans[i]), (item.id, i)
                assert chunk.strip() != "", (item.id, i)
                checked += 1
                trimmed += chunk != spans[i]
    assert checked > 1000 and trimmed > checked // 2


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_judge_body_equals_the_sdk_body(pruner: Pruner, referee: Referee, route: str) -> None:
    model = ROUTES[route]
    for k, message in enumerate(JUDGE_MESSAGES):
        referee.reply = lambda body, k=k: sdk_judge_response(body, k)
        got, _ = referee.ask({"message": message}, sdk_judge_questions(JUDGE_RULES), model or NATIVE_MODEL)
        judged = guest_judge(pruner, JUDGE_RULES, message, model, None)
        sdk_body = json.loads(got.body)
        if route == "cloudflare":
            assert sdk_body.pop("model") == NATIVE_MODEL
        assert json.loads(judged.body) == sdk_body
        assert ordered_keys(judged.body, "questions") == ordered_keys(got.body.decode(), "questions")
        assert ordered_keys(judged.body, "questions", "kind", "criteria") == ["research", "implement", "other"]


def test_the_transport_posts_to_the_sdks_path_with_the_same_auth_and_content_headers(pruner: Pruner) -> None:
    """Native and Vercel routes (a base URL with a path) reach the path the
    SDK reaches; the header table is the one in docs/jev-sdk-conformance.md."""

    def answer(got: Received, n: int) -> Reply:
        return Reply(200, sdk_noul_response(got.body)) if got.method == "POST" else Reply(404)

    for prefix in ("", "/typesafe"):
        with Loopback(answer) as server:
            base = server.base + prefix
            assert guest_transport(pruner, "typesafe" if not prefix else "vercel", base).failures == []
            with sdk_client(base) as client:
                client.system_one("x", {"q": ts.Noul(instructions="x")}, model=NATIVE_MODEL)
            ours, sdk = server.received
            assert ours.path == sdk.path == f"{prefix}/v1/systemone"
            for name in ("authorization", "content-type", "accept"):
                assert ours.headers[name] == sdk.headers[name], name
            assert sdk.headers["authorization"] == ours.headers["authorization"] == f"Bearer {API_KEY}"
            assert sdk.headers["content-type"] == "application/json"
            # What the SDK adds and toolprune does not (docs/jev-sdk-conformance.md says why).
            assert sdk.headers["user-agent"] == sdk.headers["x-typesafe-sdk"] == f"typesafe-sdk/{SDK_VERSION}"
            assert sdk.headers["x-typesafe-runtime"].startswith("python/")
            assert ours.headers["user-agent"].startswith("toolprune-python/")
            assert not {"x-typesafe-sdk", "x-typesafe-runtime", "x-typesafe-retry-count"} & set(ours.headers)
            # Neither sends an idempotency key: a retried request is a new request.
            assert not any("idempotency" in h for h in (*sdk.headers, *ours.headers))
    # The native route's default endpoint is the SDK's default base URL's.
    assert ts.constants.DEFAULT_BASE_URL == "https://api.typesafe.ai"
    assert guest_transport_url(pruner, "typesafe") == ts.constants.DEFAULT_BASE_URL + "/v1/systemone"


# =============================================================================
# Answers: what the SDK reports, the guest decodes
# =============================================================================


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("item", INPUTS, ids=[i.id for i in INPUTS])
def test_the_guest_decodes_the_scores_the_sdk_reports(
    pruner: Pruner, exchanges: Dict[Tuple[str, str], Exchange], item: Input, route: str
) -> None:
    """Native: the bare answer; Cloudflare: the same bytes in the envelope.
    Scores bit for bit (up to 15 significant digits, edges of [0, 1] included);
    ``jev_tokens`` is the sum of ``usage.input_tokens``; the served model is
    the answers' ``model`` (``jev-1.13.2``), not the one asked for (``jev-1.13.0``)."""
    ex = exchanges[(item.id, route)]
    bodies = [(a if route == "native" else envelope(a)).decode() for a in ex.answers]
    guest = guest_scores(pruner, read_text(item.file), item.request, ROUTES[route], bodies)
    assert guest.failed_batches == []
    tokens = 0
    for b, reported in zip(ex.batches, ex.reported):
        assert isinstance(reported, ts.SystemOneResponse), reported
        assert reported.model == SERVED_MODEL
        sdk = {int(name[1:]): a.noul for name, a in reported.nouls.items()}
        ours = {i: guest.scores[i] for i in b.paragraphs}
        assert ours == sdk
        assert all(math.copysign(1, ours[i]) == math.copysign(1, sdk[i]) for i in sdk)
        tokens += reported.usage.input_tokens or 0
    assert guest.jev_tokens == tokens
    assert NATIVE_MODEL != SERVED_MODEL
    assert guest.served_model == (SERVED_MODEL if ex.batches else None)


def rust_round_hundredths(x: float) -> int:
    """Rust's ``(x * 100.0).round()``: half away from zero, on the double's exact value."""
    return int(Decimal(x * 100).to_integral_value(ROUND_HALF_UP))


def judge_reference(questions: Dict[str, Any], reported: ts.SystemOneResponse) -> Dict[str, Tuple[Any, ...]]:
    """What the README says the judge reads from the answer the SDK reported:
    probabilities in hundredths; a choice's value is its most probable option
    (ties: the one Jev named), a score's the most probable level, 1-based
    (ties: the lower), its mean Jev's ``score`` + 1; margin = first − second."""
    out: Dict[str, Tuple[Any, ...]] = {}
    for name, q in questions.items():
        a = reported.answers[name]
        if isinstance(a, ts.NoulAnswer):
            out[name] = (None, rust_round_hundredths(a.noul) / 100, None, None)
            continue
        if isinstance(a, ts.ChoiceAnswer):
            keys: List[Any] = list(q.criteria)
            hs = [rust_round_hundredths(a.probabilities.get(o, 0.0)) for o in keys]
            top = max(hs)
            best = keys.index(a.choice) if a.choice in keys and hs[keys.index(a.choice)] == top else hs.index(top)
            value: Any = keys[best]
        else:
            assert isinstance(a, ts.ScoreAnswer)
            keys = list(range(len(q.criteria)))
            hs = [rust_round_hundredths(a.probabilities.get(k, 0.0)) for k in keys]
            best = hs.index(max(hs))
            value = str(best + 1)
        second = max((h for i, h in enumerate(hs) if i != best), default=0)
        mean = None if isinstance(a, ts.ChoiceAnswer) else (rust_round_hundredths(a.score) + 100) / 100
        out[name] = (value, hs[best] / 100, (hs[best] - second) / 100, mean)
    return out


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_judge_decodes_the_answers_the_sdk_reports(pruner: Pruner, referee: Referee, route: str) -> None:
    model = ROUTES[route]
    questions = sdk_judge_questions(JUDGE_RULES)
    for salt in range(40):
        message = JUDGE_MESSAGES[salt % len(JUDGE_MESSAGES)]
        referee.reply = lambda body, salt=salt: sdk_judge_response(body, salt)
        got, reported = referee.ask({"message": message}, questions, model or NATIVE_MODEL)
        assert isinstance(reported, ts.SystemOneResponse), reported
        raw = sdk_judge_response(got.body, salt)
        judged = guest_judge(pruner, JUDGE_RULES, message, model, (raw if model else envelope(raw)).decode())
        assert judged.verdict in ("routed", "returned"), judged
        assert judged.answers == judge_reference(questions, reported)
        assert judged.jev_tokens == reported.usage.input_tokens
        if route == "native":
            # The same answer as fixed answers (`--answers`, no call) reads the same.
            assert guest_fixed_judgement(pruner, JUDGE_RULES, message, raw.decode()) == judged.answers


@pytest.mark.xfail(
    strict=True,
    reason="the guest's serde_json reads some 16-17 digit numbers 1 ULP off "
    "(0.19999999999999998 as 0.2); `float_roundtrip` fixes it for +20,027 bytes; see docs/jev-sdk-conformance.md",
)
def test_scores_of_16_and_17_digits_are_read_to_the_last_bit(
    pruner: Pruner, referee: Referee, one_batch: GuestBatch
) -> None:
    names = [f"p{i}" for i in one_batch.paragraphs]
    answers = {n: ts.NoulAnswer(noul=v) for n, v in zip(names, LONG_PROBABILITIES)}
    raw = ts.SystemOneResponse(model=SERVED_MODEL, usage=ts.Usage(input_tokens=1, output_tokens=0), answers=answers)
    body = raw.model_dump_json()
    referee.reply = body.encode()
    _, sdk = referee.ask("x", sdk_noul_questions(names), NATIVE_MODEL)
    assert isinstance(sdk, ts.SystemOneResponse)
    guest = guest_scores(pruner, ONE_BATCH_TEXT, ONE_BATCH_REQUEST, NATIVE_MODEL, [body])
    assert {i: guest.scores[i] for i in one_batch.paragraphs} == {int(n[1:]): a.noul for n, a in sdk.nouls.items()}


# --- malformed answers --------------------------------------------------------

SAME, STRICTER, UNREAD = "same", "stricter", "unread"
"""How the guest's reading relates to the SDK's for a row of the tables:

- ``same``: the SDK refuses ⇒ the guest gives none (pruning) / fails (judge);
  the SDK accepts ⇒ the guest decodes the value the SDK reports.
- ``stricter``: the SDK accepts, the guest refuses (SPEC §5: a probability
  outside [0, 1] is none; a number the guest cannot parse fails the batch).
- ``unread``: the SDK refuses the response for a field the guest does not
  read (``model``, ``usage``, ``confidence``, ``legend``); the guest decodes
  what it reads. On purpose: the judge's example answers (README, ``--answers``)
  carry none of them, and the served fields do not change a score's meaning.
"""

VALID_NOUL = '{"type":"noul","noul":0.25}'

NOUL_ANSWERS: List[Tuple[str, str, str]] = [
    ("a plain answer", '{"type":"noul","noul":0.3}', SAME),
    ("an integer 1", '{"type":"noul","noul":1}', SAME),
    ("an integer 0", '{"type":"noul","noul":0}', SAME),
    ("an exponent", '{"type":"noul","noul":3e-1}', SAME),
    ("minus zero", '{"type":"noul","noul":-0.0}', SAME),
    ("extra fields", '{"type":"noul","noul":0.3,"confidence":"high","why":[1]}', SAME),
    ("a repeated key: the last wins", '{"type":"noul","noul":0.1,"noul":0.9}', SAME),
    ("noul as a string", '{"type":"noul","noul":"0.3"}', SAME),
    ("noul true", '{"type":"noul","noul":true}', SAME),
    ("noul null", '{"type":"noul","noul":null}', SAME),
    ("noul an object", '{"type":"noul","noul":{"p":0.3}}', SAME),
    ("noul a list", '{"type":"noul","noul":[0.3]}', SAME),
    ("no noul", '{"type":"noul"}', SAME),
    ("no type", '{"noul":0.3}', SAME),
    ("type null", '{"type":null,"noul":0.3}', SAME),
    ("type a number", '{"type":1,"noul":0.3}', SAME),
    ("type choice", '{"type":"choice","noul":0.3}', SAME),
    ("type score", '{"type":"score","noul":0.3}', SAME),
    ("type box", '{"type":"box","noul":0.3}', SAME),
    ("type NOUL", '{"type":"NOUL","noul":0.3}', SAME),
    ("an unknown type (the SDK skips it)", '{"type":"verdict","noul":0.3}', SAME),
    ("the answer a number", "0.3", SAME),
    ("the answer a string", '"0.3"', SAME),
    ("the answer null", "null", SAME),
    ("the answer a list", "[0.3]", SAME),
    ("above 1", '{"type":"noul","noul":1.5}', STRICTER),
    ("below 0", '{"type":"noul","noul":-0.01}', STRICTER),
    ("one ulp above 1", '{"type":"noul","noul":1.0000000000000002}', STRICTER),
    ("NaN", '{"type":"noul","noul":NaN}', SAME),
    ("Infinity", '{"type":"noul","noul":Infinity}', SAME),
    ("1e400", '{"type":"noul","noul":1e400}', SAME),
]
"""Answers for the first paragraph of a one-batch result; the others are valid."""


def batch_answer(names: List[str], first: str, tokens: str = '{"input_tokens":321,"output_tokens":0}', model: str = f'"{SERVED_MODEL}"') -> str:
    """A response text with ``first`` as the first question's answer."""
    parts = [f'"{names[0]}":{first}'] + [f'"{n}":{VALID_NOUL}' for n in names[1:]]
    fields = [f'"answers":{{{",".join(parts)}}}']
    if model is not None:
        fields.insert(0, f'"model":{model}')
    if tokens is not None:
        fields.append(f'"usage":{tokens}')
    return "{" + ",".join(fields) + "}"


@pytest.fixture(scope="module")
def one_batch(pruner: Pruner) -> GuestBatch:
    (batch,) = guest_batches(pruner, ONE_BATCH_TEXT, ONE_BATCH_REQUEST, NATIVE_MODEL)
    assert len(batch.paragraphs) == 6
    return batch


def sdk_rejection(result: SdkResult) -> Optional[str]:
    """The field the SDK refused (``""``: the body itself), or None when it accepted."""
    if isinstance(result, ts.TypeSafeAPIResponseValidationError):
        return result.field_path
    assert isinstance(result, ts.SystemOneResponse), result
    return None


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("case", NOUL_ANSWERS, ids=[c[0] for c in NOUL_ANSWERS])
def test_what_the_sdk_refuses_in_a_noul_answer_is_never_a_score(
    pruner: Pruner, referee: Referee, one_batch: GuestBatch, case: Tuple[str, str, str], route: str
) -> None:
    name, first, relation = case
    names = [f"p{i}" for i in one_batch.paragraphs]
    body = batch_answer(names, first)
    sdk = referee.read(body.replace(f'"{names[0]}":', '"q":', 1).encode())
    refused = sdk_rejection(sdk)
    raw = body if route == "native" else envelope(body.encode()).decode()
    guest = guest_scores(pruner, ONE_BATCH_TEXT, ONE_BATCH_REQUEST, ROUTES[route], [raw])
    score = guest.scores[one_batch.paragraphs[0]]
    parsed = guest.failed_batches == []
    if refused is not None:
        assert relation == SAME
        assert refused.startswith("answers.q"), refused
        assert score is None, "a value the SDK refuses became a score"
    else:
        assert isinstance(sdk, ts.SystemOneResponse)
        reported = sdk.nouls.get("q")
        if relation == SAME:
            assert score == (None if reported is None else reported.noul)
        else:
            assert reported is not None and not 0 <= reported.noul <= 1
            assert score is None
    # Only text that is not JSON at all (NaN, Infinity, 1e400 for serde_json) fails the whole batch.
    not_json = name in ("NaN", "Infinity", "1e400")
    assert parsed == (not not_json)
    assert guest.failed_batches == ([] if parsed else [(0, "undecodable")])
    assert all(guest.scores[i] == (0.25 if parsed else None) for i in one_batch.paragraphs[1:])
    assert guest.jev_tokens == (321 if parsed else 0)


S = SERVED_MODEL
RESPONSES: List[Tuple[str, str, Optional[float], int, Optional[str], str]] = [
    # (case, body kind, p0 the guest decodes, jev_tokens, the served model it reports, relation)
    ("no model", "model", 0.3, 321, None, UNREAD),
    ("model a number", "model-number", 0.3, 321, None, UNREAD),
    ("model with a space (the SDK: any string)", "model-space", 0.3, 321, None, STRICTER),
    ("model of 101 characters (the SDK: any string)", "model-long", 0.3, 321, None, STRICTER),
    ("model of 100 characters", "model-100", 0.3, 321, "j" * 100, SAME),
    ("no usage", "usage", 0.3, 0, S, UNREAD),
    ("input_tokens a string", "tokens-string", 0.3, 0, S, UNREAD),
    ("input_tokens 1.5", "tokens-float", 0.3, 0, S, UNREAD),
    ("input_tokens null (the SDK: None)", "tokens-null", 0.3, 0, S, SAME),
    ("input_tokens negative (the SDK: -1)", "tokens-negative", 0.3, 0, S, STRICTER),
    ("no answers (the SDK: no answers)", "no-answers", None, 0, None, STRICTER),
    ("answers a list", "answers-list", None, 0, None, SAME),
    ("not JSON", "not-json", None, 0, None, SAME),
    ("a JSON list", "json-list", None, 0, None, SAME),
    ("an empty body", "empty", None, 0, None, SAME),
    ("a byte-order mark before the JSON", "bom", None, 0, None, SAME),
]
"""The served model is reported only as a short printable name (``jev
check`` prints it): ASCII without spaces or controls, up to 100 characters."""


def response_body(kind: str, names: List[str]) -> str:
    good = '{"type":"noul","noul":0.3}'
    return {
        "model": batch_answer(names, good, model=None),
        "model-number": batch_answer(names, good, model="13"),
        "model-space": batch_answer(names, good, model='"jev 1.13.2"'),
        "model-long": batch_answer(names, good, model=json.dumps("j" * 101)),
        "model-100": batch_answer(names, good, model=json.dumps("j" * 100)),
        "usage": batch_answer(names, good, tokens=None),
        "tokens-string": batch_answer(names, good, tokens='{"input_tokens":"321"}'),
        "tokens-float": batch_answer(names, good, tokens='{"input_tokens":1.5}'),
        "tokens-null": batch_answer(names, good, tokens='{"input_tokens":null}'),
        "tokens-negative": batch_answer(names, good, tokens='{"input_tokens":-1}'),
        "no-answers": f'{{"model":"{SERVED_MODEL}","usage":{{"input_tokens":321}}}}',
        "answers-list": f'{{"model":"{SERVED_MODEL}","answers":[],"usage":{{"input_tokens":321}}}}',
        "not-json": "<html>502 Bad Gateway</html>",
        "json-list": "[]",
        "empty": "",
        "bom": "\ufeff" + batch_answer(names, good),
    }[kind]


@pytest.mark.parametrize("case", RESPONSES, ids=[c[0] for c in RESPONSES])
def test_responses_the_sdk_refuses_as_a_whole(
    pruner: Pruner,
    referee: Referee,
    one_batch: GuestBatch,
    case: Tuple[str, str, Optional[float], int, Optional[str], str],
) -> None:
    name, kind, p0, tokens, served, relation = case
    names = [f"p{i}" for i in one_batch.paragraphs]
    body = response_body(kind, names)
    sdk = referee.read(body.replace(f'"{names[0]}":', '"q":', 1).encode())
    refused = sdk_rejection(sdk)
    guest = guest_scores(pruner, ONE_BATCH_TEXT, ONE_BATCH_REQUEST, NATIVE_MODEL, [body])
    assert (guest.scores[one_batch.paragraphs[0]], guest.jev_tokens, guest.served_model) == (p0, tokens, served)
    if relation == UNREAD:
        assert refused is not None and refused.split(".")[0] in ("model", "usage")
        assert guest.failed_batches == []
    elif relation == STRICTER:
        assert refused is None
        if kind.startswith("model"):
            # The SDK reports any string; the guest reports no name rather than one it would not print.
            assert isinstance(sdk, ts.SystemOneResponse) and sdk.model != served
    else:
        assert (refused is None) == (p0 is not None)
        if refused is None:
            assert isinstance(sdk, ts.SystemOneResponse) and sdk.model == served
    if p0 is None:
        assert guest.failed_batches == [(0, "undecodable")]


# The judge: one valid answer per question, then one question's answer replaced.
VALID_JUDGE = {
    "risky": '{"type":"noul","noul":0.03}',
    "kind": '{"type":"choice","choice":"research","confidence":0.97,"probabilities":{"research":0.55,"implement":0.44,"other":0.01}}',
    "size": '{"type":"score","score":0.25,"confidence":0.8,"legend":{"0":"a","1":"b","2":"c"},"probabilities":{"0":0.8,"1":0.15,"2":0.05}}',
}

JUDGE_ANSWERS: List[Tuple[str, str, str, str]] = [
    # (case, question, answer, relation)
    ("noul: no type", "risky", '{"noul":0.03}', SAME),
    ("noul: a string", "risky", '{"type":"noul","noul":"0.03"}', SAME),
    ("noul: above 1", "risky", '{"type":"noul","noul":1.2}', STRICTER),
    ("choice: as given", "kind", VALID_JUDGE["kind"], SAME),
    ("choice: no type", "kind", VALID_JUDGE["kind"].replace('"type":"choice",', ""), SAME),
    ("choice: type noul", "kind", VALID_JUDGE["kind"].replace('"choice",', '"noul",', 1), SAME),
    ("choice: no choice", "kind", VALID_JUDGE["kind"].replace('"choice":"research",', ""), SAME),
    ("choice: choice a number", "kind", VALID_JUDGE["kind"].replace('"research",', "3,", 1), SAME),
    ("choice: choice null", "kind", VALID_JUDGE["kind"].replace('"research",', "null,", 1), SAME),
    ("choice: an undeclared choice", "kind", VALID_JUDGE["kind"].replace('"choice":"research"', '"choice":"other2"'), SAME),
    ("choice: probabilities a list", "kind", '{"type":"choice","choice":"research","confidence":0.9,"probabilities":[0.55,0.44,0.01]}', SAME),
    ("choice: a probability as a string", "kind", VALID_JUDGE["kind"].replace("0.55", '"0.55"'), SAME),
    ("choice: an undeclared option's probability a string", "kind", VALID_JUDGE["kind"].replace('"other":0.01', '"other":0.01,"x":"y"'), SAME),
    ("choice: no probabilities", "kind", '{"type":"choice","choice":"research","confidence":0.9}', SAME),
    ("choice: a probability above 1", "kind", VALID_JUDGE["kind"].replace("0.55", "1.55"), STRICTER),
    ("choice: only undeclared options", "kind", '{"type":"choice","choice":"x","confidence":0.9,"probabilities":{"x":1.0}}', STRICTER),
    ("choice: no confidence", "kind", VALID_JUDGE["kind"].replace('"confidence":0.97,', ""), UNREAD),
    ("choice: confidence a string", "kind", VALID_JUDGE["kind"].replace("0.97", '"high"'), UNREAD),
    ("score: as given", "size", VALID_JUDGE["size"], SAME),
    ("score: no type", "size", VALID_JUDGE["size"].replace('"type":"score",', ""), SAME),
    ("score: no score", "size", VALID_JUDGE["size"].replace('"score":0.25,', ""), SAME),
    ("score: score a string", "size", VALID_JUDGE["size"].replace("0.25", '"0.25"', 1), SAME),
    ("score: probabilities a list", "size", VALID_JUDGE["size"].replace('{"0":0.8,"1":0.15,"2":0.05}', "[0.8,0.15,0.05]"), SAME),
    ("score: the levels' texts as keys", "size", VALID_JUDGE["size"].replace('{"0":0.8,"1":0.15,"2":0.05}', '{"a":0.8,"b":0.15,"c":0.05}'), SAME),
    ("score: a probability a string", "size", VALID_JUDGE["size"].replace('"1":0.15', '"1":"0.15"'), SAME),
    ("score: no probabilities", "size", '{"type":"score","score":0.25,"confidence":0.8,"legend":{"0":"a"}}', SAME),
    ("score: a level past the last", "size", VALID_JUDGE["size"].replace('"2":0.05}', '"2":0.05,"7":0.0}'), SAME),
    ("score: a key with a sign", "size", VALID_JUDGE["size"].replace('"1":0.15', '"+1":0.15'), SAME),
    ("score: a negative level", "size", VALID_JUDGE["size"].replace('"2":0.05}', '"2":0.05,"-1":0.0}'), SAME),
    ("score: a key with spaces (the SDK: level 1)", "size", VALID_JUDGE["size"].replace('"1":0.15', '" 1":0.15'), STRICTER),
    ("score: a key 1.0 (the SDK: level 1)", "size", VALID_JUDGE["size"].replace('"1":0.15', '"1.0":0.15'), STRICTER),
    ("score: score out of range (mean from the probabilities)", "size", VALID_JUDGE["size"].replace("0.25", "7.5", 1), STRICTER),
    ("score: no legend", "size", VALID_JUDGE["size"].replace('"legend":{"0":"a","1":"b","2":"c"},', ""), UNREAD),
    ("score: no confidence", "size", VALID_JUDGE["size"].replace('"confidence":0.8,', ""), UNREAD),
]


def judge_body(question: str, answer: str, model: Optional[str] = f'"{SERVED_MODEL}"') -> str:
    answers = dict(VALID_JUDGE, **{question: answer})
    fields = [f'"answers":{{{",".join(f"{json.dumps(k)}:{v}" for k, v in answers.items())}}}', '"usage":{"input_tokens":534,"output_tokens":87}']
    if model is not None:
        fields.insert(0, f'"model":{model}')
    return "{" + ",".join(fields) + "}"


@pytest.mark.parametrize("case", JUDGE_ANSWERS, ids=[c[0] for c in JUDGE_ANSWERS])
def test_what_the_sdk_refuses_in_a_judge_answer_is_never_a_judge_answer(
    pruner: Pruner, referee: Referee, case: Tuple[str, str, str, str]
) -> None:
    name, question, answer, relation = case
    body = judge_body(question, answer)
    questions = sdk_judge_questions(JUDGE_RULES)
    referee.reply = body.encode()
    _, sdk = referee.ask({"message": JUDGE_MESSAGES[0]}, questions, NATIVE_MODEL)
    refused = sdk_rejection(sdk)
    for raw in (body, envelope(body.encode()).decode()):
        judged = guest_judge(pruner, JUDGE_RULES, JUDGE_MESSAGES[0], NATIVE_MODEL, raw)
        if relation == SAME and refused is not None:
            assert refused.startswith(f"answers.{question}"), refused
            assert (judged.verdict, judged.reason) == ("failed", "no_answer"), "the SDK refused it; the guest judged"
        elif relation == SAME:
            assert isinstance(sdk, ts.SystemOneResponse)
            assert judged.verdict != "failed"
            assert judged.answers == judge_reference(questions, sdk)
        elif relation == STRICTER:
            assert refused is None
            if name.startswith("score: score out of range"):
                # Jev's `score` outside 0…levels−1 is not used: the mean comes from the probabilities.
                assert judged.answers[question][3] == 1.25
            else:
                assert (judged.verdict, judged.reason) == ("failed", "no_answer")
        else:
            assert refused is not None and refused.split(".")[-1] in ("confidence", "legend")
            assert judged.verdict != "failed"


def test_the_judge_reads_neither_model_nor_usage_as_the_sdk_requires_them(pruner: Pruner, referee: Referee) -> None:
    """``unread`` (see above): the SDK refuses an answer without ``model`` or
    ``usage``; the judge decides on the answers, with 0 tokens when
    ``usage`` is missing. The example answers (``--answers``) have no ``model``."""
    questions = sdk_judge_questions(JUDGE_RULES)
    example = (REPO / "examples" / "judge" / "answers.json").read_text(encoding="utf-8")
    for body, tokens in ((judge_body("risky", VALID_JUDGE["risky"], model=None), 534), (example, 534)):
        referee.reply = body.encode()
        refused = sdk_rejection(referee.ask({"message": JUDGE_MESSAGES[0]}, questions, NATIVE_MODEL)[1])
        assert refused is not None and refused.split(".")[0] in ("model", "answers")
        judged = guest_judge(pruner, JUDGE_RULES, JUDGE_MESSAGES[0], NATIVE_MODEL, body)
        assert judged.verdict != "failed" and judged.jev_tokens == tokens


# =============================================================================
# Errors and retries
# =============================================================================

STATUSES = [400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529]

SDK_ERRORS = {
    400: ts.TypeSafeBadRequestError,
    401: ts.TypeSafeAuthenticationError,
    402: ts.TypeSafeAPIError,
    403: ts.TypeSafePermissionDeniedError,
    404: ts.TypeSafeNotFoundError,
    408: ts.TypeSafeAPIError,
    409: ts.TypeSafeAPIError,
    413: ts.TypeSafeAPIError,
    422: ts.TypeSafeUnprocessableEntityError,
    429: ts.TypeSafeRateLimitError,
}
"""The SDK's class per status (5xx: ``TypeSafeInternalServerError``)."""

OUR_CLASSES = {402: "out_of_credit", 429: "rate_limited"}
"""The guest's failure class per status (else ``http_4xx`` / ``http_5xx``;
the Python API writes the WIT cases in snake_case)."""


def sdk_retries(status: int) -> bool:
    return status in (408, 429) or 500 <= status <= 599


def our_retries(status: int) -> bool:
    """The seeds' choice (SPEC §11): 429 and 5xx, never 408, 402 or another 4xx."""
    return status == 429 or 500 <= status <= 599


def test_the_sdks_retry_defaults_are_the_ones_compared_here() -> None:
    p = ts.RetryPolicy()
    assert (p.max_retries, p.backoff_initial, p.backoff_max, p.backoff_jitter) == (2, 0.5, 5.0, 0.25)
    assert p.http_statuses == {408, 429, *range(500, 600)}
    assert (p.respect_retry_after, p.api_connection_error, p.api_timeout_error, p.timeout) == (True, True, True, 30.0)


def test_the_guests_retry_rule_is_the_seeds(pruner: Pruner) -> None:
    """SPEC §11, as the guest's ``settings.retry-delay`` decides it for every
    host: one retry, on 429 and 5xx only, 250 ms without a header, never
    after a network error, and none whose wait would reach the 20 s
    deadline of the whole result (``transport-policy``)."""
    assert guest_deadline_ms(pruner) == 20_000
    retried = [s for s in STATUSES if guest_retry_delay(pruner, s) is not None]
    assert retried == [s for s in STATUSES if our_retries(s)]
    assert {guest_retry_delay(pruner, s) for s in retried} == {250}
    assert [guest_retry_delay(pruner, s, attempt=2) for s in STATUSES] == [None] * len(STATUSES)
    assert guest_retry_delay(pruner, None) is None
    assert guest_retry_delay(pruner, 503, remaining_ms=250) is None
    assert guest_retry_delay(pruner, 503, remaining_ms=251) == 250


# --- reading retry-after-ms and Retry-After, header by header -----------------

NOW_MS = 1_790_000_000_000
"""A fixed clock for the HTTP-date rows (a whole second: HTTP-dates have no fraction)."""
NO_BUDGET_MS = 2**32 - 1
"""``remaining-ms`` for the reading table: no wait reaches it (the budget is tested on the wire)."""


def http_date_at(offset_s: int, now_ms: int = NOW_MS) -> str:
    """An IMF-fixdate (``Sun, 06 Nov 1994 08:49:37 GMT``) ``offset_s`` seconds from ``now_ms``."""
    return format_datetime(datetime.fromtimestamp(now_ms // 1000 + offset_s, timezone.utc), usegmt=True)


def rfc850_date_at(offset_s: int) -> str:
    """The obsolete RFC 850 form (``Sunday, 06-Nov-94 08:49:37 GMT``), which RFC 9110 §5.6.7 asks recipients to accept."""
    return datetime.fromtimestamp(NOW_MS // 1000 + offset_s, timezone.utc).strftime("%A, %d-%b-%y %H:%M:%S GMT")


SAME_READING, DIFFERENT_READING = "same", "different"

RETRY_HEADERS: List[Tuple[str, Optional[str], Optional[str], Optional[float], int, str]] = [
    # (case, retry-after-ms, Retry-After, the SDK's reading in ms (None: its backoff), the guest's wait in ms, relation)
    ("no header", None, None, None, 250, SAME_READING),
    ("ms: 0", "0", None, 0, 0, SAME_READING),
    ("ms: 1500", "1500", None, 1500, 1500, SAME_READING),
    ("ms: 1.5 (the guest: the next whole ms)", "1.5", None, 1.5, 2, SAME_READING),
    ("ms: 1e3", "1e3", None, 1000, 1000, SAME_READING),
    ("ms: spaces around", " 7 ", None, 7, 7, SAME_READING),
    ("ms before Retry-After", "0", "3600", 0, 0, SAME_READING),
    ("ms before Retry-After, longer", "3600000", "0", 3_600_000, 3_600_000, SAME_READING),
    ("ms negative: Retry-After", "-5", "2", 2000, 2000, SAME_READING),
    ("ms not a number: Retry-After", "soon", "2", 2000, 2000, SAME_READING),
    ("ms inf: Retry-After", "inf", "2", 2000, 2000, SAME_READING),
    ("ms 1e400: Retry-After", "1e400", "2", 2000, 2000, SAME_READING),
    ("ms negative alone: backoff", "-5", None, None, 250, SAME_READING),
    ("ms empty (the SDK: 0)", "", None, 0, 250, DIFFERENT_READING),
    ("ms +5 (the SDK: 5)", "+5", None, 5, 250, DIFFERENT_READING),
    ("ms .5 (the SDK: 0.5)", ".5", None, 0.5, 250, DIFFERENT_READING),
    ("seconds: 0", None, "0", 0, 0, SAME_READING),
    ("seconds: 2", None, "2", 2000, 2000, SAME_READING),
    ("seconds: 007", None, "007", 7000, 7000, SAME_READING),
    ("seconds: +5", None, "+5", 5000, 5000, SAME_READING),
    ("seconds: -1", None, "-1", None, 250, SAME_READING),
    ("seconds: soon", None, "soon", None, 250, SAME_READING),
    ("seconds: ²", None, "²", None, 250, SAME_READING),
    ("seconds: 1.5 (the SDK: 1.5 s)", None, "1.5", 1500, 250, DIFFERENT_READING),
    ("seconds: 1e3 (the SDK: 1000 s)", None, "1e3", 1_000_000, 250, DIFFERENT_READING),
    ("date: 2 s ahead", None, http_date_at(2), 2000, 2000, SAME_READING),
    ("date: an hour ahead", None, http_date_at(3600), 3_600_000, 3_600_000, SAME_READING),
    ("date: 30 s past", None, http_date_at(-30), 0, 0, SAME_READING),
    ("date: ms first", "0", http_date_at(3600), 0, 0, SAME_READING),
    ("date: RFC 850 form (the SDK reads it)", None, rfc850_date_at(2), 2000, 250, DIFFERENT_READING),
    ("date: +0000 for GMT (the SDK reads it)", None, http_date_at(2).replace("GMT", "+0000"), 2000, 250, DIFFERENT_READING),
]
"""How each reads the retry headers of one retryable answer. The guest reads
``retry-after-ms`` as a JSON number of ms (≥ 0), ``Retry-After`` as
delay-seconds (digits, RFC 9110 §10.2.3) or an IMF-fixdate against the
host's clock; anything else is no header (its 250 ms). The SDK reads any
Python ``float`` and any date ``email.utils`` parses."""


@pytest.mark.parametrize("case", RETRY_HEADERS, ids=[c[0] for c in RETRY_HEADERS])
def test_the_retry_headers_are_read_as_the_sdk_reads_them(
    pruner: Pruner, monkeypatch: pytest.MonkeyPatch, case: Tuple[str, Optional[str], Optional[str], Optional[float], int, str]
) -> None:
    """The SDK's own reading (``parse_retry_after``, its clock fixed) against
    the guest's ``settings.retry-delay`` with the same clock; rows marked
    ``different`` are listed in docs/jev-sdk-conformance.md."""
    name, ms, after, sdk_expected, guest_expected, relation = case
    # As bytes, as they arrive (latin-1 on the wire: "²" is one byte).
    headers = {k: v.encode("latin-1") for k, v in (("retry-after-ms", ms), ("retry-after", after)) if v is not None}
    monkeypatch.setattr(sdk_errors, "time", SimpleNamespace(time=lambda: NOW_MS / 1000))
    sdk = sdk_errors.parse_retry_after(httpx2.Headers(headers))
    ours = guest_retry_delay(pruner, 429, retry_after=after, retry_after_ms=ms, now_unix_ms=NOW_MS, remaining_ms=NO_BUDGET_MS)
    assert (sdk, ours) == (sdk_expected, guest_expected)
    # "Same": the guest waits what the SDK read (to the next whole ms), or its own backoff where the SDK has none.
    same = ours == (250 if sdk is None else math.ceil(sdk))
    assert same == (relation == SAME_READING)


def test_a_retry_after_too_large_for_a_u64_is_a_wait_past_the_deadline(pruner: Pruner) -> None:
    huge = "18446744073709551616"
    assert sdk_errors.parse_retry_after(httpx2.Headers({"retry-after": huge})) == 1.8446744073709552e22
    assert guest_retry_delay(pruner, 429, retry_after=huge, remaining_ms=20_000) is None


# --- on the wire ----------------------------------------------------------------


class Wire:
    """One loopback server and one SDK client for the error tests (an SDK
    client costs ~60 ms to make): each run scripts its statuses, then 200."""

    def __init__(self) -> None:
        self.statuses: List[int] = []
        self.headers: Dict[str, str] = {}
        self.offset = 0
        self.server = Loopback(self._respond)

    def _respond(self, got: Received, n: int) -> Reply:
        k = n - self.offset
        if k < len(self.statuses):
            status = self.statuses[k]
            return Reply(status, b'{"error":{"message":"scripted"}}' if status != DROP else b"", self.headers)
        return Reply(200, sdk_noul_response(got.body))

    def _script(self, statuses: List[int], headers: Dict[str, str]) -> None:
        self.statuses, self.headers = statuses, headers
        self.offset = len(self.server.received)

    def sdk(self, statuses: List[int], headers: Dict[str, str], retry: Optional[ts.RetryPolicy] = None) -> Tuple[List[Received], SdkResult]:
        """The SDK (default retry policy unless ``retry``) against the script."""
        self._script(statuses, headers)
        try:
            result: SdkResult = self.client.system_one("x", {"q": ts.Noul(instructions="x")}, model=NATIVE_MODEL, retry=retry)
        except ts.TypeSafeError as err:
            result = err
        return self.server.received[self.offset :], result

    def ours(self, pruner: Pruner, statuses: List[int], headers: Dict[str, str]) -> Tuple[List[Received], TransportOutcome]:
        """toolprune's Python transport (the guest's retry rule) against the script."""
        self._script(statuses, headers)
        outcome = guest_transport(pruner, "typesafe", self.server.base)
        return self.server.received[self.offset :], outcome


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    w = Wire()
    with w.server, sdk_client(w.server.base) as client:
        w.client = client
        yield w


@pytest.mark.parametrize("status", STATUSES)
def test_which_statuses_are_retried_how_often_and_what_they_raise(pruner: Pruner, wire: Wire, status: int) -> None:
    """``Retry-After: 0`` on every error, so that neither waits. The SDK: 3
    attempts on 408, 429, 5xx; toolprune: 2 on 429, 5xx (one retry, never 408)."""
    sent, sdk = wire.sdk([status] * 5, {"Retry-After": "0"})
    assert len(sent) == (3 if sdk_retries(status) else 1)
    assert type(sdk) is SDK_ERRORS.get(status, ts.TypeSafeInternalServerError)
    assert isinstance(sdk, ts.TypeSafeAPIError) and sdk.status == status
    sent, ours = wire.ours(pruner, [status] * 5, {"Retry-After": "0"})
    assert len(sent) == (2 if our_retries(status) else 1)
    klass = OUR_CLASSES.get(status, "http_5xx" if status >= 500 else "http_4xx")
    assert ours.failures == [(status, klass)]
    assert ours.outcome == "failed"
    # Every retry of the SDK says it is one; toolprune's does not (a candidate header).
    assert [r.headers.get("x-typesafe-retry-count") for r in sent] == [None] * len(sent)


def test_a_retry_count_header_marks_the_sdks_retries(wire: Wire) -> None:
    sent, _ = wire.sdk([503, 503], {"Retry-After": "0"})
    assert [r.headers.get("x-typesafe-retry-count") for r in sent] == [None, "1", "2"]


def test_a_retry_then_an_answer(pruner: Pruner, wire: Wire) -> None:
    sent, sdk = wire.sdk([429], {"Retry-After": "0"})
    assert isinstance(sdk, ts.SystemOneResponse) and len(sent) == 2
    sent, ours = wire.ours(pruner, [429], {"Retry-After": "0"})
    assert ours.failures == [] and len(sent) == 2


def test_backoff_without_retry_after(pruner: Pruner, wire: Wire) -> None:
    """toolprune: the guest's 250 ms. The SDK: exponential from
    ``backoff_initial`` with up to 25 % jitter off (0.5 s, 1 s, … ≤ 5 s by
    default; scaled down here to keep the suite fast)."""
    sent, _ = wire.ours(pruner, [503], {})
    (gap,) = gaps(sent)
    assert 0.25 <= gap < 0.6
    sent, sdk = wire.sdk([503, 503], {}, ts.RetryPolicy(backoff_initial=0.06, backoff_max=1.0))
    assert isinstance(sdk, ts.SystemOneResponse)
    first, second = gaps(sent)
    assert 0.045 <= first < 0.06 + 0.15
    assert 0.09 <= second < 0.12 + 0.15


def test_a_retry_after_past_the_budget_is_not_waited_for(pruner: Pruner, wire: Wire) -> None:
    """Both give up at once rather than wait past their budget (toolprune:
    the 20 s deadline; the SDK: its 30 s retry budget)."""
    start = time.monotonic()
    sent, sdk = wire.sdk([429], {"Retry-After": "3600"})
    assert len(sent) == 1
    assert isinstance(sdk, ts.TypeSafeRateLimitError) and sdk.retry_after_ms == 3_600_000
    sent, ours = wire.ours(pruner, [429], {"Retry-After": "3600"})
    assert len(sent) == 1 and ours.failures == [(429, "rate_limited")]
    assert time.monotonic() - start < 2


RETRY_AFTER_MS_ON_THE_WIRE = [
    ({"retry-after-ms": "0"}, True),
    ({"retry-after-ms": "0", "Retry-After": "3600"}, True),
    ({"retry-after-ms": "3600000", "Retry-After": "0"}, False),
]
"""(headers of a 429, retried at once?): ``retry-after-ms`` comes first."""


@pytest.mark.parametrize("headers, at_once", RETRY_AFTER_MS_ON_THE_WIRE, ids=["ms 0", "ms 0, seconds 3600", "ms 3600000, seconds 0"])
def test_both_honour_retry_after_ms_before_retry_after(pruner: Pruner, wire: Wire, headers: Dict[str, str], at_once: bool) -> None:
    """At once means well under toolprune's 250 ms backoff; not at all, one
    attempt (the wait is past both budgets)."""
    sent, sdk = wire.sdk([429], headers)
    if at_once:
        assert isinstance(sdk, ts.SystemOneResponse) and gaps(sent)[0] < 0.2
    else:
        assert isinstance(sdk, ts.TypeSafeRateLimitError) and len(sent) == 1
    sent, ours = wire.ours(pruner, [429], headers)
    if at_once:
        assert ours.failures == [] and gaps(sent)[0] < 0.2
    else:
        assert len(sent) == 1 and ours.failures == [(429, "rate_limited")]


def http_date(delta: timedelta) -> str:
    return format_datetime(datetime.now(timezone.utc) + delta, usegmt=True)


def test_both_honour_a_retry_after_http_date_by_the_clock(pruner: Pruner, wire: Wire) -> None:
    """A date 30 s past: a retry at once (not after toolprune's 250 ms
    backoff); an hour ahead: no retry. Both only hold with the host's real
    clock in ``retry-facts``."""
    for who in ("sdk", "ours"):
        past = {"Retry-After": http_date(timedelta(seconds=-30))}
        sent, got = wire.sdk([503], past) if who == "sdk" else wire.ours(pruner, [503], past)
        assert len(sent) == 2 and gaps(sent)[0] < 0.2, who
        ahead = {"Retry-After": http_date(timedelta(hours=1))}
        sent, got = wire.sdk([503], ahead) if who == "sdk" else wire.ours(pruner, [503], ahead)
        assert len(sent) == 1, who
        if who == "sdk":
            assert isinstance(got, ts.TypeSafeInternalServerError)
        else:
            assert isinstance(got, TransportOutcome) and got.failures == [(503, "http_5xx")]


@pytest.mark.parametrize("value", ["²", "-1", "soon"])
def test_an_unreadable_retry_after_means_no_header(pruner: Pruner, wire: Wire, value: str) -> None:
    """Both retry after their own backoff (toolprune: 250 ms; the SDK's scaled down)."""
    sent, sdk = wire.sdk([429], {"Retry-After": value}, ts.RetryPolicy(backoff_initial=0.01))
    assert isinstance(sdk, ts.SystemOneResponse) and len(sent) == 2
    sent, ours = wire.ours(pruner, [429], {"Retry-After": value})
    assert ours.failures == [] and len(sent) == 2 and 0.25 <= gaps(sent)[0] < 0.6


def test_a_dropped_connection_is_retried_by_the_sdk_only(pruner: Pruner, wire: Wire) -> None:
    """The seeds retry 429 and 5xx only (SPEC §11); the SDK also retries a
    request that got no answer (``api_connection_error``, on by default)."""
    sent, sdk = wire.sdk([DROP], {}, ts.RetryPolicy(backoff_initial=0.01))
    assert isinstance(sdk, ts.SystemOneResponse) and len(sent) == 2
    sent, ours = wire.ours(pruner, [DROP], {})
    assert len(sent) == 1 and ours.failures == [(None, "network")]


# =============================================================================
# The served model
# =============================================================================


def test_the_served_model_is_the_answers_model_field_and_the_models_list_names_aliases(pruner: Pruner) -> None:
    """The answer's ``model`` (the SDK's ``SystemOneResponse.model``, "may
    differ from the alias supplied") is what the guest reports as
    ``served_model`` (``jev check`` prints it), not the name asked for.
    ``GET /v1/models`` lists names and aliases only."""
    listing = b'{"models":[{"name":"jev-latest","description":"General-purpose system one model.","release_date":"2026-09-15"}]}'

    def respond(got: Received, n: int) -> Reply:
        return Reply(200, listing if got.method == "GET" else sdk_noul_response(got.body))

    with Loopback(respond) as server, sdk_client(server.base) as client:
        answer = client.system_one("x", {"q": ts.Noul(instructions="x")}, model="jev-latest")
        models = client.models.list()
        ours = guest_transport(pruner, "typesafe", server.base, model="jev-latest")
    assert json.loads(server.received[0].body)["model"] == "jev-latest"
    assert answer.model == SERVED_MODEL
    assert (server.received[1].method, server.received[1].path) == ("GET", "/v1/models")
    assert [(m.name, m.release_date) for m in models.models] == [("jev-latest", "2026-09-15")]
    assert json.loads(server.received[2].body)["model"] == "jev-latest"
    assert ours.failures == [] and ours.served_model == SERVED_MODEL
