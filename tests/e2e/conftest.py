"""Fixtures of the Claude Code end-to-end suite (see FACTS.md and harness.py).

The toolchain (the pinned ``claude`` CLI and the e2e venv) is installed on first
use into the cache (provision.py); a failure to install fails the tests that need
it, with the reason — it never skips them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Claude, ProbeHook, Scratch  # noqa: E402
from provision import ProvisionError, Toolchain, ensure_toolchain  # noqa: E402

#: ``../shared/corpus`` beside the repository (tests/e2e → repo → its parent).
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    """The pinned Claude Code CLI and the e2e venv, installed if missing."""
    try:
        return ensure_toolchain()
    except ProvisionError as e:
        pytest.fail(f"cannot install the e2e toolchain: {e}", pytrace=False)


@pytest.fixture
def scratch(tmp_path: Path) -> Scratch:
    """A scratch HOME, project folder and TMPDIR for one conversation."""
    return Scratch(tmp_path)


@pytest.fixture
def claude(toolchain: Toolchain, scratch: Scratch) -> Claude:
    """The CLI, run in ``scratch``."""
    return Claude(toolchain, scratch)


@pytest.fixture
def probe(scratch: Scratch) -> ProbeHook:
    """The probe hook, its config and log in the scratch folder (log only until told)."""
    return ProbeHook(scratch.root / "probe")


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``../shared/corpus``; fails when the shared folder is not beside the repo."""
    if not (CORPUS / "manifest.json").exists():
        pytest.fail(f"{CORPUS} not found: clone the repository beside shared/", pytrace=False)
    return CORPUS
