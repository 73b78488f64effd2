"""``python -m toolprune``: the Rust CLI's ``prune`` and ``split``, with the
same flags and the same outputs.

    python -m toolprune prune --request TEXT [--threshold 0.2] [--lang en|ja]
                              [--scorer offline|stub] [--tool NAME] [--agent NAME]
                              [--json] [FILE|-]
    python -m toolprune split [--json] [FILE|-]
    python -m toolprune route --rules FILE --message TEXT [--answers FILE] [--json]

``prune`` writes the body for the model to stdout byte for byte and the
``tool prune:`` line to stderr; ``--json`` prints the report instead (the
Rust CLI's JSON, byte for byte). Exit codes: 0 done (also when the input
passed through unchanged), 1 the input or the component could not be read,
2 usage. Input that is not UTF-8 is written back unchanged with a warning.
The component comes from ``$TOOLPRUNE_WASM`` or the installed package.

``route`` is the judge router: the decision to stdout, the ``judge:`` line to
stderr, as the Rust CLI's ``toolprune route``. Exit codes: 0 routed or
returned, 3 failed (Jev could not judge), 2 an invalid rules file or usage,
1 a file or the component failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import unicodedata
from decimal import Decimal
from typing import Any, List, Optional, Sequence

from .jev import JevScorer
from .judge import Decision, RulesError, render_load_errors, summary
from .pruner import Pruner, stderr_log
from .types import GuestError, ParagraphInfo, Pruned


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # exit code 2, like clap
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="toolprune",
        description="Drop the paragraphs of a tool result that do not help answer a request.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    prune = commands.add_parser(
        "prune",
        help="prune a document as if a prunable tool had returned it",
        description="Prune a document as if a prunable tool had returned it: the body goes "
        "to stdout byte for byte, the `tool prune:` log line to stderr.",
    )
    prune.add_argument("--request", required=True, help="the user's request (the basis is its first 2,000 characters)")
    prune.add_argument("--threshold", type=float, default=0.2, help="0.1, 0.2, 0.3 or 0.5; any other value means 0.2")
    prune.add_argument("--lang", choices=("ja", "en"), default="en", help="language of the markers")
    prune.add_argument(
        "--scorer",
        choices=("offline", "stub"),
        default="offline",
        help="offline: the guest's lexical (BM25) scorer, nothing leaves the machine; "
        "stub: a trivial word-overlap stand-in for tests, not a relevance model",
    )
    prune.add_argument("--tool", default="cli", help="tool name for the log line")
    prune.add_argument("--agent", default="cli", help="agent name for the log line")
    prune.add_argument("--json", action="store_true", help="print a JSON report instead of the body")
    prune.add_argument("file", nargs="?", help="the document; `-` or nothing reads stdin")
    split = commands.add_parser("split", help="show the paragraphs exactly as pruning splits the document")
    split.add_argument("--json", action="store_true", help="print JSON instead of a table")
    split.add_argument("file", nargs="?", help="the document; `-` or nothing reads stdin")
    route = commands.add_parser(
        "route",
        help="decide where a message goes with a rules file (the judge router)",
        description="Decide where a message goes with a rules file (the judge router): "
        "the decision to stdout, the `judge:` line to stderr.",
    )
    route.add_argument("--rules", required=True, help="the rules file (TOML: [questions.NAME], [[rules]], [otherwise])")
    route.add_argument("--message", required=True, help="the message to judge (never logged)")
    route.add_argument(
        "--answers",
        help="fixed Jev answers (the text of a Jev response), so no call is made; "
        "without it, Jev is called once with the TOOLPRUNE_JEV_* settings",
    )
    route.add_argument("--json", action="store_true", help="print the decision, the answers and the log line as JSON")
    return parser


class _Failure(Exception):
    """A one-line message for stderr, exit code 1."""


def _read_input(file: Optional[str]) -> bytes:
    if file is None or file == "-":
        try:
            return sys.stdin.buffer.read()
        except OSError as err:
            raise _Failure(f"cannot read stdin: {err.strerror or err}") from err
    try:
        with open(file, "rb") as handle:
            return handle.read()
    except OSError as err:
        detail = f"{err.strerror} (os error {err.errno})" if err.errno else str(err)
        raise _Failure(f"cannot read {file}: {detail}") from err


def _write_stdout(data: bytes) -> None:
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError as err:
        raise _Failure(f"cannot write stdout: {err.strerror or err}") from err


def _load() -> Pruner:
    try:
        return Pruner.load(log=stderr_log)
    except Exception as err:  # noqa: BLE001
        raise _Failure(f"cannot load the component: {err}") from err


# --- serde_json's pretty output, so `--json` matches the Rust CLI byte for byte ---


def format_f64(value: float) -> str:
    """``value`` as serde_json (ryu) writes an f64: the shortest round-trip
    digits, ``1.0`` for integers, ``0.0001``, ``1e-7``, ``1e16``."""
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    sign = "-" if str(value).startswith("-") else ""
    if value == 0:
        return sign + "0.0"
    digits_tuple = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    exponent = int(digits_tuple.exponent)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped.lstrip("0") or "0"
    kk = len(digits) + exponent
    if 0 <= exponent and kk <= 16:
        text = digits + "0" * exponent + ".0"
    elif 0 < kk <= 16:
        text = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        text = "0." + "0" * (-kk) + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{mantissa}e{kk - 1}"
    return sign + text


def to_json(value: Any, indent: int = 0) -> str:
    """serde_json::to_string_pretty: two spaces, ``": "``, ``[]``/``{}`` when empty."""
    pad = "  " * (indent + 1)
    end = "  " * indent
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_f64(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {to_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(pad + to_json(v, indent + 1) for v in value) + "\n" + end + "]"
    raise TypeError(f"cannot encode {type(value).__name__}")


def prune_report(pruned: Pruned, scorer: str) -> "dict[str, Any]":
    """The ``prune --json`` report, fields in the Rust CLI's order."""
    report = pruned.report
    if report is None:
        out: "dict[str, Any]" = {"outcome": pruned.outcome}
        if pruned.failure is not None:
            out["reason"] = pruned.failure.reason
        out.update(shape=None, counts=None, ratio=None, threshold=None, scorer=scorer, id=None, paragraphs=[], failures=[])
        return out
    c = report.counts
    return {
        "outcome": report.outcome,
        "shape": report.shape,
        "counts": dataclasses.asdict(c),
        "ratio": report.ratio,
        "threshold": report.threshold,
        "scorer": scorer,
        "id": None if report.record is None else report.record.id,
        "paragraphs": [{"index": p.index, "chars": p.chars, "score": p.score, "fate": p.fate} for p in report.paragraphs],
        "failures": [{"batch": f.batch, "status": f.status, "class": f.klass} for f in report.failures],
    }


def split_report(paragraphs: List[ParagraphInfo]) -> List["dict[str, Any]"]:
    return [
        {
            "index": p.index,
            "byte_start": p.byte_start,
            "byte_end": p.byte_end,
            "char_start": p.char_start,
            "char_end": p.char_end,
            "chars": max(p.char_end - p.char_start, 0),
            "kind": p.kind,
        }
        for p in paragraphs
    ]


def preview(text: str, limit: int) -> str:
    """Up to ``limit`` characters on one line, as the Rust CLI shows them."""
    out: List[str] = []
    for i, c in enumerate(text):
        if i == limit:
            out.append("…")
            break
        if c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c == "\\":
            out.append("\\\\")
        elif unicodedata.category(c) == "Cc":
            out.append(f"\\u{{{ord(c):x}}}")
        else:
            out.append(c)
    return "".join(out)


def paragraphs_table(text: bytes, paragraphs: List[ParagraphInfo]) -> str:
    out = [f"{'index':>5}  {'bytes':<17}  {'chars':>6}  {'kind':<6}  text\n"]
    for p in paragraphs:
        piece = text[p.byte_start : p.byte_end].decode("utf-8", errors="replace")
        span = f"{p.byte_start}..{p.byte_end}"
        out.append(
            f"{p.index:>5}  {span:<17}  {max(p.char_end - p.char_start, 0):>6}  {p.kind:<6}  {preview(piece, 60)}\n"
        )
    return "".join(out)


# --- commands ---------------------------------------------------------------------


def _prune(args: argparse.Namespace) -> int:
    data = _read_input(args.file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        _write_stdout(data)  # fail-open: what cannot be pruned goes through untouched
        print("toolprune: warning: input is not UTF-8; passed through unchanged", file=sys.stderr)
        return 0
    pruner = _load()
    turn = pruner.begin_turn(
        args.request,
        enabled=True,
        threshold=args.threshold,
        lang=args.lang,
        agent=args.agent,
        scorer=args.scorer,
    )
    pruned = turn.on_tool_result(tool=args.tool, text=text, prunable=True)
    if args.json:
        _write_stdout((to_json(prune_report(pruned, turn.scorer.name)) + "\n").encode("utf-8"))
    else:
        _write_stdout(pruned.body.encode("utf-8"))
    return 0


def _split(args: argparse.Namespace) -> int:
    data = _read_input(args.file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _Failure("input is not UTF-8; nothing to split") from err
    try:
        paragraphs = _load().paragraphs(text)
    except GuestError as err:
        raise _Failure(f"the component failed: {err}") from err
    if args.json:
        out = to_json(split_report(paragraphs)) + "\n"
    else:
        out = paragraphs_table(data, paragraphs)
    _write_stdout(out.encode("utf-8"))
    return 0


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except OSError as err:
        detail = f"{err.strerror} (os error {err.errno})" if err.errno else str(err)
        raise _Failure(f"cannot read the {what} {path}: {detail}") from err
    except UnicodeDecodeError as err:
        raise _Failure(f"cannot read the {what} {path}: stream did not contain valid UTF-8") from err


def _sorted(value: Any) -> Any:
    """serde_json's ``json!`` objects print their keys sorted."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def route_json(decision: Decision) -> str:
    """``toolprune route --json``, byte for byte."""
    return to_json(_sorted(decision.to_json())) + "\n"


def _route(args: argparse.Namespace) -> int:
    rules = _read_text(args.rules, "rules file")
    answers = None
    scorer: Any = "stub"  # never asked with fixed answers
    if args.answers is not None:
        answers = _read_text(args.answers, "answers file")
    else:
        try:
            scorer = JevScorer.from_env()
        except ValueError as err:
            print(f"toolprune: route without --answers calls Jev, and {err}; or pass --answers FILE (fixed answers)", file=sys.stderr)
            return 2
    pruner = _load()
    try:
        decision = pruner.route(rules, args.message, answers, scorer, rules_file=args.rules)
    except RulesError as err:
        sys.stderr.write(render_load_errors(args.rules, err.errors))
        return 2
    except GuestError as err:
        raise _Failure(f"the component failed: {err}") from err
    out = route_json(decision) if args.json else summary(decision)
    _write_stdout(out.encode("utf-8"))
    return 3 if decision.verdict == "failed" else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "prune":
            return _prune(args)
        if args.command == "route":
            return _route(args)
        return _split(args)
    except _Failure as err:
        print(f"toolprune: {err}", file=sys.stderr)
        return 1


__all__ = ["main", "format_f64", "to_json", "prune_report", "split_report", "route_json"]
