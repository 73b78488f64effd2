"""Shared fixtures: the component, `shared/`, the vectors, captured logs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

from toolprune import Pruner

REPO = Path(__file__).resolve().parents[3]
"""The repository root (hosts/python/tests → …)."""
VECTORS = REPO / "tests" / "vectors" / "vectors.json"


def shared_dir() -> Path:
    """`shared/` beside the repository, or `$TOOLPRUNE_SHARED` (as the Rust generator)."""
    env = os.environ.get("TOOLPRUNE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def load_vectors() -> List[Dict[str, Any]]:
    with open(VECTORS, encoding="utf-8") as handle:
        return json.load(handle)  # type: ignore[no-any-return]


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


def shared_text(relative: str) -> str:
    """A shared file as UTF-8, bytes as they are (no newline translation: CRLF stays)."""
    return (shared_dir() / relative).read_bytes().decode("utf-8")


def headings_text() -> str:
    return shared_text("cases/headings.md")


REQUEST = "How do I configure the retry limit for the upload client?"
