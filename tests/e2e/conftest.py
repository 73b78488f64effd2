"""Fixtures of the Claude Code end-to-end suite (see FACTS.md and harness.py).

The toolchain (the pinned ``claude`` CLI and the e2e venv) is installed on first
use into the cache (provision.py); a failure to install fails the tests that need
it, with the reason — it never skips them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
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


#: The repository (tests/e2e → tests → repo).
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def toolprune_bin() -> str:
    """The ``toolprune`` binary: ``$TOOLPRUNE_BIN``, else built with
    ``cargo build -p toolprune-cli`` (debug; honours ``CARGO_TARGET_DIR``)."""
    explicit = os.environ.get("TOOLPRUNE_BIN")
    if explicit:
        return str(Path(explicit).resolve())
    p = subprocess.run(
        ["cargo", "build", "-p", "toolprune-cli", "--bin", "toolprune", "--message-format=json-render-diagnostics"],
        cwd=REPO, capture_output=True, text=True, timeout=3600,
    )
    if p.returncode != 0:
        pytest.fail(f"cargo build -p toolprune-cli failed:\n{p.stderr[-3000:]}", pytrace=False)
    for line in p.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "toolprune" and msg.get("executable"):
            return msg["executable"]
    pytest.fail("cargo build did not name the toolprune executable", pytrace=False)


@pytest.fixture(scope="session")
def plugin_dir(toolprune_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The marketplace folder ``toolprune plugin build`` writes (what scripts/package puts
    in ``dist/plugins/``), every plugin carrying a stripped copy of ``toolprune_bin`` (the
    debug build is ~370 MB with its symbols; the agents copy a plugin when they install it)."""
    root = tmp_path_factory.mktemp("plugins")
    binary = root / "toolprune"
    shutil.copyfile(toolprune_bin, binary)
    binary.chmod(0o755)
    subprocess.run(["strip", str(binary)], capture_output=True, timeout=300)  # optional: a copy with symbols works too
    out = root / "dist"
    p = subprocess.run([toolprune_bin, "plugin", "build", str(out), "--binary", str(binary)],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        pytest.fail(f"toolprune plugin build failed:\n{p.stderr}", pytrace=False)
    return out
