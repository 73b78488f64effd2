"""Fixtures of the stats page test: the ``toolprune`` binary (``$TOOLPRUNE_BIN``, set by
``run``, else ``target/debug/toolprune``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def toolprune_bin() -> str:
    path = Path(os.environ.get("TOOLPRUNE_BIN") or REPO / os.environ.get("CARGO_TARGET_DIR", "target") / "debug" / "toolprune")
    if not path.exists():
        pytest.fail(f"{path} not found: build it (cargo build -p toolprune-cli) or run tests/stats/run", pytrace=False)
    return str(path)
