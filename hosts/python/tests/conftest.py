"""Shared fixtures: the component, `shared/`, the vectors, captured logs.

The compile cache of every test (and of every CLI process a test starts)
lives in a temporary folder: `XDG_CACHE_HOME` is pointed there before
anything is loaded, so the suite never writes to the user's cache."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator, List

import pytest

_CACHE = tempfile.TemporaryDirectory(prefix="toolprune-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE.name

from toolprune import Pruner  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
"""The repository root (hosts/python/tests → …)."""

REQUEST = "How do I configure the retry limit for the upload client?"


def shared_dir() -> Path:
    """`shared/` beside the repository, or `$TOOLPRUNE_SHARED` (as the Rust generator)."""
    env = os.environ.get("TOOLPRUNE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


class Log:
    """A log sink that keeps the lines."""

    def __init__(self) -> None:
        self.lines: List[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)


@pytest.fixture(scope="session")
def pruner() -> Pruner:
    return Pruner.load()


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def cache_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "cache"


def shared_text(relative: str) -> str:
    """A shared file as UTF-8, bytes as they are (no newline translation: CRLF stays)."""
    return (shared_dir() / relative).read_bytes().decode("utf-8")


def headings_text() -> str:
    return shared_text("cases/headings.md")


def note_text(count: int = 12, word: str = "Note") -> str:
    """`count` numbered paragraphs of ~390 characters (the conformance suite's text): one batch up to 16."""
    template = (
        word + " {i}. The upload client keeps a small queue of pending parts and sends them in order; when a part "
        "fails it is put back at the head of the queue and tried again after a pause that grows with each "
        "failure. Operators who watch the queue see the same part name several times in a row, which is "
        "expected and harmless, and the dashboard marks it amber until it goes through."
    )
    return "\n\n".join(template.replace("{i}", str(i)) for i in range(1, count + 1))
