"""The config file (``settings.config-path``'s answer, e.g.
``TOOLPRUNE_CONFIG``) as every host reads it: opened without blocking,
refused unless it is a regular file, read no further than 1 MiB + 1 byte
(the guest refuses a larger one with its own line: guest/src/limits.rs
``CONFIG_MAX_BYTES``), and refused unless it is UTF-8, in the Rust host's
words. A refusal is a :class:`ConfigError`: pruning is off, the agent goes on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolprune import ConfigError, Pruner

MIB = 1 << 20
HERE = Path(__file__).resolve().parent


def config(pruner: Pruner, path: Path) -> object:
    return pruner.config({"TOOLPRUNE_CONFIG": str(path)})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a FIFO")
def test_a_config_file_that_is_not_a_regular_file_is_refused_at_once_naming_the_path(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    # In a child: before the fix, opening the FIFO blocked forever.
    child = textwrap.dedent(
        """
        import sys
        from toolprune import Pruner

        pruner = Pruner.load()
        for path in sys.argv[1:]:
            try:
                pruner.config({"TOOLPRUNE_CONFIG": path})
                print("accepted", path)
            except Exception as err:
                print(f"{type(err).__name__}: {err}")
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", child, str(fifo), "/dev/zero", str(tmp_path)],
        capture_output=True, text=True, timeout=30, cwd=HERE,
    )
    assert run.stderr == ""
    assert run.stdout.splitlines() == [
        f"ConfigError: cannot read {fifo}: not a regular file",
        "ConfigError: cannot read /dev/zero: not a regular file",
        f"ConfigError: cannot read {tmp_path}: not a regular file",
    ]


def test_a_config_file_over_1_mib_is_read_no_further_than_1_mib_and_1_byte(pruner: Pruner, tmp_path: Path) -> None:
    # 64 MiB (sparse: NUL bytes, valid UTF-8). Before the fix the host read all of it.
    big = tmp_path / "big.toml"
    with open(big, "wb") as handle:
        handle.truncate(64 * MIB)
    with pytest.raises(ConfigError) as info:
        config(pruner, big)
    assert str(info.value) == f"configuration {big}: larger than the 1048576 bytes a configuration file may have"
    # At the bound: read and resolved; one byte more: refused.
    head = "threshold = 0.3\n#"
    fits = tmp_path / "fits.toml"
    fits.write_bytes((head + "x" * (MIB - len(head) - 1) + "\n").encode())
    assert config(pruner, fits).threshold == 0.3  # type: ignore[attr-defined]
    over = tmp_path / "over.toml"
    over.write_bytes((head + "x" * (MIB - len(head)) + "\n").encode())
    with pytest.raises(ConfigError) as info:
        config(pruner, over)
    assert str(info.value) == f"configuration {over}: larger than the 1048576 bytes a configuration file may have"
    # Cut inside a character at 1 MiB + 1 byte: still the guest's size refusal, not "not UTF-8".
    cut = tmp_path / "cut.toml"
    cut.write_bytes(("#" + "é" * MIB + "\n").encode())
    with pytest.raises(ConfigError, match=r"^configuration .*cut\.toml: larger than the 1048576 bytes a configuration file may have$"):
        config(pruner, cut)


def test_a_config_file_with_a_byte_that_is_not_utf8_is_refused_in_the_rust_hosts_words(pruner: Pruner, tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes(b"threshold = 0.3\n# caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        config(pruner, latin1)
    assert str(info.value) == f"cannot read {latin1}: stream did not contain valid UTF-8"
    utf8 = tmp_path / "utf8.toml"
    utf8.write_bytes("threshold = 0.3\n# café\n".encode())
    assert config(pruner, utf8).threshold == 0.3  # type: ignore[attr-defined]


def test_a_config_file_that_does_not_exist(pruner: Pruner, tmp_path: Path) -> None:
    """None when found by HOME; the guest's refusal when named by TOOLPRUNE_CONFIG."""
    assert pruner.config({"HOME": str(tmp_path / "nowhere")}).threshold == pruner.settings.defaults().threshold
    with pytest.raises(ConfigError, match=r"no such file \(named by TOOLPRUNE_CONFIG\)"):
        config(pruner, tmp_path / "missing.toml")
