"""``python -m toolprune``: the Rust CLI's ``prune``, ``split`` and ``route``,
with the same flags and the same outputs.

    python -m toolprune prune --request TEXT [--threshold 0.2] [--lang en|ja]
                              [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
                              [--json] [FILE|-]
    python -m toolprune split [--json] [FILE|-]
    python -m toolprune route --rules FILE --message TEXT [--answers FILE] [--json]

``prune`` writes the body for the model to stdout byte for byte and the
``tool prune:`` line to stderr; ``--json`` prints the report instead (the
Rust CLI's JSON, byte for byte). Settings: flags > the environment > the
config file > the guest's defaults, resolved by the guest
(``settings.resolve``); without ``--scorer``, Jev when it is configured,
else the offline scorer. Exit codes: 0 done (also when the input passed
through unchanged), 1 the input or the component could not be read, 2
usage — a refused ``--threshold`` prints the guest's message and passes the
text through. Input that is not UTF-8 is written back unchanged with a
warning. Option values may start with ``-`` (``--threshold -1`` is a value,
refused by the guest). The component comes from ``$TOOLPRUNE_WASM`` or the
installed package.

``route`` is the judge router: the decision to stdout, the ``judge:`` line to
stderr. Exit codes: 0 routed or returned, 3 failed (Jev could not judge), 2
an invalid rules file or usage, 1 a file or the component failed.

``prune --json``, ``split``, ``split --json``, ``route``, ``route --json``
and a rules file's errors are rendered by the guest (``report.prune-json``,
``report.split-table``, ``report.split-json``, ``report.route-summary``,
``report.route-json``, ``report.rules-errors``), so every CLI prints the same
bytes. The conformance suite's ``cli`` steps and ``tests/test_cli.py``
compare them.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any, Dict, List, Optional, Sequence

from .judge import RulesError
from .pruner import Pruner, stderr_log
from .scorers import OFFLINE, STUB, CancelToken
from .settings import ConfigError
from .types import GuestError

SCORERS = ("offline", "stub", "jev")
"""The scorers ``--scorer`` names (this host's own names)."""

_VALUED = {
    "prune": ("--request", "--threshold", "--lang", "--scorer", "--tool", "--agent"),
    "split": (),
    "route": ("--rules", "--message", "--answers"),
}
"""Options that take a value: their value may start with ``-``."""


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
    prune.add_argument(
        "--threshold",
        help="the threshold, checked by the guest (a value it refuses: its message, exit 2, the text "
        "passed through); default: the configuration's, else the guest's",
    )
    prune.add_argument("--lang", help="language of the markers (en, ja); default: the configuration's")
    prune.add_argument(
        "--scorer",
        choices=SCORERS,
        help="offline: the guest's lexical (BM25) scorer, nothing leaves the machine; "
        "stub: a trivial word-overlap stand-in for tests, not a relevance model; "
        "jev: TypeSafe's Jev over HTTP. Default: jev when configured, else offline",
    )
    prune.add_argument("--tool", default="cli", help="tool name for the log line")
    prune.add_argument("--agent", default="cli", help="agent name for the log line")
    prune.add_argument("--json", action="store_true", help="print a JSON report instead of the body")
    prune.add_argument("file", nargs="?", help="the document; `-` or nothing reads stdin")
    split = commands.add_parser(
        "split",
        help="show the units exactly as pruning splits the document",
        description="Show the units exactly as pruning splits the document (pruner.inspect): the shape, "
        "a wrapper's span, each unit's span and kind (scored, fixed, blank).",
    )
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
        "without it, Jev is called once with the configured credentials",
    )
    route.add_argument("--json", action="store_true", help="print the decision, the answers and the log line as JSON")
    return parser


def _join_values(argv: Sequence[str]) -> List[str]:
    """``--opt VALUE`` → ``--opt=VALUE`` for options that take a value, so
    that a value starting with ``-`` (``--threshold -1``) stays a value."""
    out = list(argv)
    valued = _VALUED.get(out[0], ()) if out else ()
    i = 1
    while i < len(out):
        if out[i] == "--":
            break
        if out[i] in valued and i + 1 < len(out):
            out[i : i + 2] = [f"{out[i]}={out[i + 1]}"]
        i += 1
    return out


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


def _cancel_on_ctrl_c() -> CancelToken:
    """Ctrl-C cancels scoring (the raw text is printed, outcome ``cancelled``);
    a second Ctrl-C exits at once with 130."""
    token = CancelToken()

    def handler(_signum: int, _frame: Any) -> None:
        if token.cancelled:
            os._exit(130)
        token.cancel()

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread (tests)
        pass
    return token


# --- commands ---------------------------------------------------------------------


class _Usage(Exception):
    """A usage error found after the text was read: pass it through, exit 2."""


def _prune_setup(pruner: Pruner, named: Optional[str], threshold: Optional[str], lang: Optional[str]) -> Dict[str, Any]:
    """Flags > environment > config file > defaults (resolved by the guest),
    and the scorer. Raises :class:`_Usage` (a refused threshold, a bad
    ``--lang``, ``--scorer jev`` without a complete configuration)."""
    checked: Optional[float] = None
    if threshold is not None:
        try:
            checked = pruner.settings.threshold(threshold)
        except ValueError as err:
            raise _Usage(f"--threshold {threshold}: {err}") from err
    if lang is not None and lang not in pruner.langs:
        raise _Usage(f"--lang {lang}: expected one of {', '.join(pruner.langs)}")
    try:
        config = pruner.config()
    except ConfigError as err:
        # The guest's rule: a broken configuration turns pruning off.
        print(f"toolprune: {err}; pruning is off", file=sys.stderr)
        defaults = pruner.settings.defaults()
        return {
            "scorer": OFFLINE,
            "enabled": False,
            "threshold": defaults.threshold if checked is None else checked,
            "lang": lang or defaults.lang,
        }
    if named is None:
        ready = not isinstance(config.jev, str) and bool(os.environ.get(config.token_variable, "").strip())
        named = "jev" if ready else OFFLINE
    scorer: Any = named
    if named == "jev":
        from .jev import JevScorer

        try:
            scorer = JevScorer.from_env(pruner=pruner)
        except ValueError as err:
            raise _Usage(f"--scorer jev: {err}") from err
    return {
        "scorer": scorer,
        "enabled": config.enabled,
        "threshold": config.threshold if checked is None else checked,
        "lang": lang or config.lang,
    }


def _prune(args: argparse.Namespace) -> int:
    data = _read_input(args.file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        _write_stdout(data)  # fail-open: what cannot be pruned goes through untouched
        print("toolprune: warning: input is not UTF-8; passed through unchanged", file=sys.stderr)
        return 0
    pruner = _load()
    try:
        setup = _prune_setup(pruner, args.scorer, args.threshold, args.lang)
    except _Usage as usage:
        # A usage error, but no text is lost: the input goes through unchanged.
        _write_stdout(data)
        print(f"toolprune: {usage}; the text was passed through unchanged", file=sys.stderr)
        return 2
    scorer = setup["scorer"]
    name = scorer if scorer in (OFFLINE, STUB) else scorer.name
    conversation = pruner.conversation(
        enabled=setup["enabled"],
        threshold=str(setup["threshold"]),
        lang=setup["lang"],
        agent=args.agent,
        scorer=scorer,
    )
    turn = conversation.turn(args.request, _cancel_on_ctrl_c())
    result = turn.on_tool_result(tool=args.tool, text=text, prunable=True, report=args.json)
    if args.json:
        try:
            report = pruner.prune_json(result, name)
        except GuestError as err:
            raise _Failure(f"the component failed: {err}") from err
        _write_stdout((report + "\n").encode("utf-8"))
    elif result.body is text:
        _write_stdout(data)
    else:
        _write_stdout(result.body.encode("utf-8"))
    return 0


def _split(args: argparse.Namespace) -> int:
    data = _read_input(args.file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _Failure("input is not UTF-8; nothing to split") from err
    pruner = _load()
    try:
        out = pruner.split_json(text) + "\n" if args.json else pruner.split_table(text)
    except (GuestError, ValueError) as err:
        raise _Failure(f"the component failed: {err}") from err
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


def _route(args: argparse.Namespace) -> int:
    rules = _read_text(args.rules, "rules file")
    answers = None if args.answers is None else _read_text(args.answers, "answers file")
    pruner = _load()
    scorer: Any = None
    if answers is None:
        from .jev import JevScorer

        try:
            scorer = JevScorer.from_env(pruner=pruner)
        except ValueError as err:
            print(
                f"toolprune: route without --answers calls Jev, and {err}; or pass --answers FILE (fixed answers)",
                file=sys.stderr,
            )
            return 2
    try:
        decision = pruner.route(rules, args.message, answers, scorer, rules_file=args.rules)
    except RulesError as err:
        sys.stderr.write(pruner.rules_errors(args.rules, err.errors))
        return 2
    except (GuestError, ValueError) as err:
        raise _Failure(f"the component failed: {err}") from err
    # Rendered by the guest (report.route-json / route-summary): every CLI prints the same bytes.
    out = pruner.route_report(decision, json=True) + "\n" if args.json else pruner.route_report(decision)
    _write_stdout(out.encode("utf-8"))
    return 3 if decision.verdict == "failed" else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(_join_values(sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "prune":
            return _prune(args)
        if args.command == "route":
            return _route(args)
        return _split(args)
    except _Failure as err:
        print(f"toolprune: {err}", file=sys.stderr)
        return 1


__all__ = ["main"]
