"""`python -m toolprune`: the Rust CLI's flags and outputs (body to stdout
byte for byte, the log line to stderr, exit codes, `--json`, `split`)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from toolprune.cli import format_f64, main, to_json

from conftest import VECTORS, load_vectors, shared_dir

OFFLINE = [v for v in load_vectors() if v["scorer"]["kind"] == "offline" and "text_file" in v]


def cli_args(v: Dict[str, Any]) -> List[str]:
    return [
        "prune",
        "--request", v["request"],
        "--threshold", repr(v["threshold"]),
        "--lang", v["lang"],
        "--agent", v["agent"],
        "--tool", v["tool"],
        str(shared_dir() / v["text_file"]),
    ]


@pytest.mark.parametrize("v", OFFLINE, ids=[v["name"] for v in OFFLINE])
def test_prune_prints_the_vector_body_and_log_line(v: Dict[str, Any], capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(cli_args(v)) == 0
    out, err = capfdbinary.readouterr()
    assert hashlib.sha256(out).hexdigest() == v["expect"]["body_sha256"]
    line = v["expect"]["log_line"]
    assert err.decode() == ("" if line is None else line + "\n")


def test_the_module_entry_point_reads_stdin(tmp_path: Path) -> None:
    v = next(v for v in OFFLINE if v["name"] == "offline-mcp-spec-2025-11-25-transports-0.3")
    data = (shared_dir() / v["text_file"]).read_bytes()
    args = cli_args(v)[:-1] + ["-"]
    done = subprocess.run([sys.executable, "-m", "toolprune", *args], input=data, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256(done.stdout).hexdigest() == v["expect"]["body_sha256"]
    assert done.stderr.decode() == v["expect"]["log_line"] + "\n"


def test_json_prints_the_report(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    v = next(v for v in OFFLINE if v["name"] == "offline-mcp-spec-2025-11-25-transports-0.3")
    assert main(cli_args(v)[:1] + ["--json"] + cli_args(v)[1:]) == 0
    out, err = capfdbinary.readouterr()
    report = json.loads(out)
    assert list(report) == ["outcome", "shape", "counts", "ratio", "threshold", "scorer", "id", "paragraphs", "failures"]
    assert report["outcome"] == v["expect"]["outcome"] and report["counts"] == v["expect"]["counts"]
    assert report["ratio"] == v["expect"]["ratio"] and report["scorer"] == "offline"
    assert "".join(p["fate"][0] for p in report["paragraphs"]) == v["expect"]["fates"]
    assert out.decode() == to_json(report) + "\n"  # serde_json's pretty layout
    assert err.decode() == v["expect"]["log_line"] + "\n"


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
    with pytest.raises(SystemExit) as usage:
        main(["prune", "--request", "x", "--lang", "fr", "-"])
    assert usage.value.code == 2


def test_split_shows_the_paragraphs(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    path = shared_dir() / "cases" / "crlf.md"
    assert main(["split", "--json", str(path)]) == 0
    rows = json.loads(capfdbinary.readouterr()[0])
    data = path.read_bytes()
    assert rows[0]["byte_start"] == 0 and rows[-1]["byte_end"] == len(data)
    assert all(r["chars"] == r["char_end"] - r["char_start"] for r in rows)
    assert main(["split", str(path)]) == 0
    table = capfdbinary.readouterr()[0].decode()
    assert table.splitlines()[0] == "index  bytes               chars  kind    text"
    assert len(table.splitlines()) == len(rows) + 1


@pytest.mark.parametrize(
    "value, text",
    [
        (0.0, "0.0"),
        (1.0, "1.0"),
        (0.2, "0.2"),
        (0.30000000000000004, "0.30000000000000004"),
        (0.432, "0.432"),
        (1e-5, "0.00001"),
        (1.5e-5, "0.000015"),
        (1e-6, "1e-6"),
        (1.25e-7, "1.25e-7"),
        (123.0, "123.0"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1.2345678901234568e17, "1.2345678901234568e17"),
        (-0.5, "-0.5"),
    ],
)
def test_floats_are_written_as_serde_json_writes_them(value: float, text: str) -> None:
    assert format_f64(value) == text


def test_every_float_in_the_vectors_is_written_back_as_serde_json_wrote_it() -> None:
    literals: List[str] = []

    def keep(literal: str) -> float:
        literals.append(literal)
        return float(literal)

    json.loads(VECTORS.read_text(encoding="utf-8"), parse_float=keep)
    assert len(literals) > 100
    assert [format_f64(float(x)) for x in literals] == literals
