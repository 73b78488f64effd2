"""`python -m toolprune`: the Rust CLI's flags and outputs (body to stdout
byte for byte, the log line to stderr, exit codes, `--json` and `split`
rendered by the guest's `report` exports), settings from the guest's configuration, thresholds
refused by the guest (negative-looking values are values), and — when
`$TOOLPRUNE_RUST_CLI` names the Rust CLI binary — the same bytes as it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from toolprune import Pruner
from toolprune.cli import main

from conftest import note_text, shared_dir

MCP = shared_dir() / "corpus" / "mcp-spec-2025-11-25-transports.mdx"
MCP_REQUEST = "How does a client resume a broken Streamable HTTP SSE stream? Which header carries the last event ID?"


def cli_args(v: Dict[str, Any]) -> List[str]:
    return [
        "prune",
        "--request", v["request"],
        "--threshold", repr(v["threshold"]),
        "--lang", v["lang"],
        "--agent", v["agent"],
        "--tool", v["tool"],
        "--scorer", "offline",
        str(shared_dir() / v["text_file"]),
    ]


def run(args: List[str], stdin: bytes = b"", env: Dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m toolprune ARGS` in a process with only PATH, HOME (an empty
    folder), the cache folder, the interpreter's path and ``env``."""
    base = {k: os.environ[k] for k in ("PATH", "XDG_CACHE_HOME", "PYTHONPATH", "TOOLPRUNE_WASM") if k in os.environ}
    home = Path(os.environ["XDG_CACHE_HOME"]) / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "toolprune", *args],
        input=stdin,
        capture_output=True,
        env={**base, "HOME": str(home), **(env or {})},
        timeout=120,
        check=False,
    )


def library(threshold: float = 0.3, report: bool = False) -> Any:
    """What the library answers for the MCP page, as the CLI's defaults set it up."""
    conversation = Pruner.load().conversation(enabled=True, threshold=threshold, agent="cli", scorer="offline", log=lambda _l: None)
    return conversation.turn(MCP_REQUEST).on_tool_result(tool="cli", text=MCP.read_text(encoding="utf-8"), prunable=True, report=report)


def test_the_module_entry_point_reads_stdin() -> None:
    done = run(["prune", "--threshold", "0.3", "--request", MCP_REQUEST, "-"], MCP.read_bytes())
    assert done.returncode == 0, done.stderr
    expected = library()
    assert expected.outcome == "ok"
    assert done.stdout == expected.body.encode()
    assert done.stderr.decode() == expected.log_line + "\n"


def test_json_prints_the_report(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["prune", "--json", "--threshold", "0.3", "--request", MCP_REQUEST, str(MCP)]) == 0
    out, err = capfdbinary.readouterr()
    report = json.loads(out)
    assert list(report) == [
        "outcome", "gate", "shape", "counts", "ratio", "threshold", "scorer", "id", "served_model", "paragraphs", "failures",
    ]
    expected = library(report=True)
    counts = {k: v for k, v in vars(expected.counts).items() if k != "work"}
    assert report["outcome"] == "ok" and report["counts"] == counts and report["counts"]["ms"] is None
    assert report["ratio"] == expected.ratio and report["scorer"] == "offline" and report["id"] == "P1"
    assert [p["fate"] for p in report["paragraphs"]] == [p.fate for p in expected.paragraphs]
    assert out.decode() == Pruner.load().prune_json(expected, "offline") + "\n"  # the guest's bytes, not this host's
    assert err.decode() == expected.log_line + "\n"


def test_a_host_failure_in_the_json_report_names_reason_and_limit(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    pruner = Pruner.load()
    result = pruner.conversation(enabled=True, limits=__import__("toolprune").Limits(fuel=1000), log=lambda _l: None).turn(
        "How do I configure the retry limit?"
    ).on_tool_result(tool="f", text=note_text(), prunable=True)
    report = json.loads(pruner.prune_json(result, "offline"))
    assert list(report)[:6] == ["outcome", "gate", "reason", "limit", "shape", "counts"]
    assert (report["reason"], report["limit"], report["counts"], report["threshold"]) == ("guest_trap", "fuel", None, None)


@pytest.mark.parametrize("value", ["-1", "0.25", "NaN", "-0.2"])
def test_a_refused_threshold_prints_the_guests_message_passes_the_text_and_exits_2(value: str) -> None:
    data = note_text().encode()
    done = run(["prune", "--threshold", value, "--request", "How do I configure the retry limit?", "--scorer", "offline"], data)
    assert done.returncode == 2
    assert done.stdout == data
    message = Pruner.load().settings
    with pytest.raises(ValueError) as refused:
        message.threshold(value)
    assert str(refused.value) in done.stderr.decode()
    assert b"tool prune:" not in done.stderr


def test_values_may_start_with_a_hyphen(capfdbinary: pytest.CaptureFixture[bytes], tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(note_text(), encoding="utf-8")
    assert main(["prune", "--request", "-how do I configure the retry limit?", "--agent", "-a", "--tool", "-t", "--scorer", "stub", str(path)]) == 0
    err = capfdbinary.readouterr()[1].decode()
    assert err.startswith("tool prune: agent=-a name=-t ")


def test_settings_come_from_the_guests_configuration() -> None:
    data = note_text().encode()
    args = ["prune", "--request", "How do I configure the retry limit for the upload client?"]
    off = run(args, data, {"TOOLPRUNE_ENABLED": "0"})
    assert (off.returncode, off.stdout, off.stderr) == (0, data, b""), "disabled: skipped, no line"
    stricter = run(args + ["--scorer", "stub"], data, {"TOOLPRUNE_THRESHOLD": "0.5"})
    assert b"threshold=0.5" in stricter.stderr
    flag_wins = run(args + ["--scorer", "stub", "--threshold", "0.1"], data, {"TOOLPRUNE_THRESHOLD": "0.5"})
    assert b"threshold=0.1" in flag_wins.stderr
    broken = run(args, data, {"TOOLPRUNE_THRESHOLD": "0.25"})
    assert broken.returncode == 0 and broken.stdout == data
    assert b"toolprune: TOOLPRUNE_THRESHOLD: threshold" in broken.stderr and b"pruning is off" in broken.stderr
    no_jev = run(args + ["--scorer", "jev"], data)
    assert no_jev.returncode == 2 and no_jev.stdout == data and b"--scorer jev:" in no_jev.stderr
    default = run(args, data)
    assert b"scorer=offline" in default.stderr, "no Jev configured: the offline scorer"


def test_input_that_is_not_utf8_passes_through_unchanged(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    path = tmp_path / "latin1.txt"
    data = "caf\xe9 ".encode("latin-1") * 2000
    path.write_bytes(data)
    assert main(["prune", "--request", "what is the cafe about, in detail please?", str(path)]) == 0
    out, err = capfdbinary.readouterr()
    assert out == data
    assert b"not UTF-8; passed through unchanged" in err


def test_exit_codes(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["prune", "--request", "x", str(tmp_path / "missing.md")]) == 1
    assert b"cannot read" in capfdbinary.readouterr()[1]
    with pytest.raises(SystemExit) as usage:
        main(["prune", str(tmp_path / "missing.md")])
    assert usage.value.code == 2
    path = tmp_path / "doc.md"
    path.write_bytes(b"some text")
    assert main(["prune", "--request", "x", "--lang", "fr", str(path)]) == 2
    out, err = capfdbinary.readouterr()
    assert out == b"some text" and b"--lang fr" in err


def test_split_shows_the_inspection(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    path = shared_dir() / "cases" / "crlf.md"
    assert main(["split", "--json", str(path)]) == 0
    report = json.loads(capfdbinary.readouterr()[0])
    rows = report["units"]
    data = path.read_bytes()
    assert (report["shape"], report["wrapper_span"]) == ("text", None)
    assert rows[0]["byte_start"] == 0 and rows[-1]["byte_end"] == len(data)
    assert all(r["chars"] == r["char_end"] - r["char_start"] for r in rows)
    assert main(["split", str(path)]) == 0
    table = capfdbinary.readouterr()[0].decode().splitlines()
    assert table[:2] == ["shape: text", "index  bytes               chars  kind    text"]
    assert len(table) == len(rows) + 2
    wrapper = shared_dir() / "cases" / "wrapper-ascii-escaped.json"
    assert main(["split", str(wrapper)]) == 0
    table = capfdbinary.readouterr()[0].decode().splitlines()
    assert table[0].startswith("shape: json_wrapper (string literal at bytes ")
    assert "Section 0 on retries" in table[2]
    structured = shared_dir() / "cases" / "top-level-array.json"
    assert main(["split", str(structured)]) == 0
    assert capfdbinary.readouterr()[0].decode().splitlines()[0].startswith("shape: json_array")


RUST_CLI = os.environ.get("TOOLPRUNE_RUST_CLI")


@pytest.mark.skipif(not RUST_CLI, reason="set TOOLPRUNE_RUST_CLI to the Rust CLI binary (cargo build -p toolprune-cli)")
@pytest.mark.parametrize(
    "args",
    [
        ["prune", "--json", "--threshold", "0.3", "--request", MCP_REQUEST, str(MCP)],
        ["prune", "--threshold", "0.3", "--request", MCP_REQUEST, str(MCP)],
        ["prune", "--scorer", "stub", "--json", "--request", MCP_REQUEST, str(MCP)],
        ["prune", "--threshold", "-1", "--request", MCP_REQUEST, str(MCP)],
        ["split", str(MCP)],
        ["split", "--json", str(shared_dir() / "cases" / "wrapper-ascii-escaped.json")],
        ["split", str(shared_dir() / "cases" / "wrapper-raw-utf8.json")],
        ["split", "--json", str(shared_dir() / "cases" / "huge-paragraph.md")],
        ["split", '--json', str(shared_dir() / "corpus" / "vue-docs-partners.json")],
    ],
    ids=lambda a: " ".join(x for x in a if not x.startswith("/") and len(x) < 20),
)
def test_the_same_bytes_as_the_rust_cli(args: List[str]) -> None:
    assert RUST_CLI is not None
    home = Path(os.environ["XDG_CACHE_HOME"]) / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    rust = subprocess.run([RUST_CLI, *args], capture_output=True, env=env, timeout=300, check=False)
    python = run(args)
    assert (python.returncode, python.stdout) == (rust.returncode, rust.stdout)
    tool_lines = lambda err: [l for l in err.decode().splitlines() if l.startswith(("tool ", "judge:"))]  # noqa: E731
    assert tool_lines(python.stderr) == tool_lines(rust.stderr)


def test_the_cli_renders_no_report_itself() -> None:
    """Issue 22 §7: `prune --json`, `split` and `split --json` are the guest's
    (`report` exports); the imitation of serde_json's floats and layout is gone."""
    import toolprune.cli as cli

    for gone in ("format_f64", "to_json", "prune_report", "split_report", "split_table", "preview"):
        assert not hasattr(cli, gone), gone
    text = (shared_dir() / "cases" / "wrapper-raw-utf8.json").read_text(encoding="utf-8")
    pruner = Pruner.load()
    assert run(["split", "-"], text.encode()).stdout.decode() == pruner.split_table(text)
    assert run(["split", "--json", "-"], text.encode()).stdout.decode() == pruner.split_json(text) + "\n"
