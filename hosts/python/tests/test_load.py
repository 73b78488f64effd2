"""Pruner.load: the contract version check (every `toolprune:pruner/*`
export must be 0.2.x, else a clear error naming both versions, before any
instance exists) and the disk cache of the compiled component (issue 14):
keyed by the .wasm's SHA-256 and the wasmtime-py version, the serialized
bytes' SHA-256 beside them checked before deserializing, a corrupt or
foreign entry ignored and rewritten, atomic writes, compiling in memory
when the cache cannot be used."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import List

import pytest

from toolprune import ComponentError, Pruner, default_cache_dir
from toolprune import _engine

from conftest import REPO, REQUEST, Log, note_text

WASM = _engine.find_component()


def component_exporting(tmp_path: Path, *names: str) -> Path:
    """A real (tiny) component whose exports carry these names: what an
    older or newer toolprune looks like to the version check."""
    exports = " ".join(f'(export "{n}" (instance $i))' for n in names)
    path = tmp_path / "other.wasm"
    path.write_text(f"(component (instance $i) {exports})", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "names, found",
    [
        (["toolprune:pruner/pruner@0.1.0", "toolprune:pruner/judge@0.1.0"], "0.1.0"),
        (["toolprune:pruner/types@0.2.0", "toolprune:pruner/settings@0.2.0"], "0.2.0"),
        (["toolprune:pruner/types@0.4.0", "toolprune:pruner/settings@0.4.0"], "0.4.0"),
        (["toolprune:pruner/settings@1.2.0"], "1.2.0"),
        (["toolprune:pruner/settings@0.2.0", "toolprune:pruner/pruner@0.3.1"], "0.2.0, 0.3.1"),
        (["toolprune:pruner/settings"], "(unversioned)"),
    ],
)
def test_a_component_of_another_contract_is_refused_naming_both_versions(tmp_path: Path, names: List[str], found: str) -> None:
    with pytest.raises(ComponentError) as info:
        Pruner.load(wasm=component_exporting(tmp_path, *names), cache_dir=False)
    assert str(info.value) == (
        f"toolprune: this component implements contract {found}, this host needs 0.3.x (rebuild or reinstall toolprune)"
    )


def test_a_component_that_is_not_toolprune_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ComponentError, match="is not a toolprune component"):
        Pruner.load(wasm=component_exporting(tmp_path, "wasi:cli/run@0.2.0"), cache_dir=False)
    with pytest.raises(ComponentError, match="does not export toolprune:pruner/settings@0.3.0#version"):
        Pruner.load(wasm=component_exporting(tmp_path, "toolprune:pruner/settings@0.3.0"), cache_dir=False)
    bogus = tmp_path / "bogus.wasm"
    bogus.write_bytes(b"\0asm\x01\0\0\0")
    with pytest.raises(Exception):
        Pruner.load(wasm=bogus, cache_dir=False)


CONTRACT_0_2 = os.environ.get("TOOLPRUNE_OTHER_WASM") or str(REPO / "dist" / "contract-0.2.0.wasm")


@pytest.mark.skipif(not Path(CONTRACT_0_2).is_file(), reason="no dist/contract-0.2.0.wasm (toolprune-dist writes it) nor $TOOLPRUNE_OTHER_WASM")
def test_a_real_component_of_another_contract_is_refused() -> None:
    """The refusal stand-in toolprune-dist writes (contract 0.2.0's WIT, a dummy core module)."""
    with pytest.raises(ComponentError) as info:
        Pruner.load(wasm=CONTRACT_0_2, cache_dir=False)
    if not os.environ.get("TOOLPRUNE_OTHER_WASM"):
        assert str(info.value) == (
            "toolprune: this component implements contract 0.2.0, this host needs 0.3.x (rebuild or reinstall toolprune)"
        )
    assert re.search(r"implements contract (?!0\.3\.)[\d.]+, this host needs 0\.3\.x", str(info.value))


def test_the_component_is_found_by_argument_env_or_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _engine.find_component(tmp_path / "x.wasm") == tmp_path / "x.wasm"
    monkeypatch.setenv("TOOLPRUNE_WASM", str(tmp_path / "y.wasm"))
    assert _engine.find_component() == tmp_path / "y.wasm"
    monkeypatch.delenv("TOOLPRUNE_WASM")
    assert _engine.find_component().is_file()
    with pytest.raises(FileNotFoundError):
        Pruner.load(wasm=tmp_path / "missing.wasm")


# --- the cache ------------------------------------------------------------------------------


def fresh(cache: Path) -> Pruner:
    """A load that does not reuse this process's compile (as a new process would)."""
    _engine._compiled.clear()  # noqa: SLF001
    return Pruner.load(wasm=WASM, cache_dir=cache)


def entry(cache: Path) -> _engine.CacheEntry:
    return _engine.cache_entry(cache, WASM.read_bytes())


def works(pruner: Pruner) -> bool:
    conversation = pruner.conversation(enabled=True, log=Log())
    return conversation.turn(REQUEST).on_tool_result(tool="f", text=note_text(), prunable=True).failure is None


def test_the_first_load_compiles_and_stores_the_next_reads_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = fresh(cache)
    assert first.cache == "miss" and works(first)
    e = entry(cache)
    data = e.code.read_bytes()
    assert e.digest.read_text() == hashlib.sha256(data).hexdigest()
    assert e.code.name.startswith(hashlib.sha256(WASM.read_bytes()).hexdigest()[:32])
    if sys.platform != "win32":
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    second = fresh(cache)
    assert second.cache == "hit" and works(second)
    assert sorted(p.name for p in cache.iterdir()) == sorted([e.code.name, e.digest.name]), "no temporary file left"


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "foreign bytes", "digest missing", "digest garbage"])
def test_a_corrupt_or_foreign_entry_is_ignored_and_rewritten(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    fresh(cache)
    e = entry(cache)
    good = e.code.read_bytes()
    if damage == "flip a byte":
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0xFF
        e.code.write_bytes(bytes(bad))
    elif damage == "truncate":
        e.code.write_bytes(good[: len(good) // 3])
    elif damage == "foreign bytes":
        # Consistent with its digest, but not a serialized component of this engine.
        e.code.write_bytes(b"\x7fELF not ours" * 100)
        e.digest.write_text(hashlib.sha256(e.code.read_bytes()).hexdigest())
    elif damage == "digest missing":
        e.digest.unlink()
    else:
        e.digest.write_text("zz")
    again = fresh(cache)
    assert again.cache == "miss" and works(again)
    assert e.digest.read_text() == hashlib.sha256(e.code.read_bytes()).hexdigest()
    assert fresh(cache).cache == "hit"


def test_an_unusable_cache_folder_only_costs_the_compile(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    pruner = fresh(blocked / "cache")
    assert pruner.cache == "unwritable" and works(pruner)
    _engine._compiled.clear()  # noqa: SLF001
    off = Pruner.load(wasm=WASM, cache_dir=False)
    assert off.cache == "off" and works(off)


def test_the_default_cache_folder_is_the_rust_hosts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TOOLPRUNE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    assert default_cache_dir() is None
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "toolprune"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "toolprune"
    monkeypatch.setenv("TOOLPRUNE_CACHE_DIR", str(tmp_path / "own"))
    assert default_cache_dir() == tmp_path / "own"
    _engine._compiled.clear()  # noqa: SLF001
    assert Pruner.load(wasm=WASM).cache == "miss" and (tmp_path / "own").is_dir()


def test_a_warm_load_is_much_faster_than_a_cold_one(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    start = time.perf_counter()
    assert fresh(cache).cache == "miss"
    cold = time.perf_counter() - start
    start = time.perf_counter()
    assert fresh(cache).cache == "hit"
    warm = time.perf_counter() - start
    assert warm * 5 < cold, (cold, warm)


# --- the cache's owner rules (issue 27 §4), tested as a second uid ---------------------------

OTHER = 65534
"""The second user (nobody): the suite runs as root in CI, so files are handed to it with chown."""

as_root = pytest.mark.skipif(
    sys.platform == "win32" or not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root to hand files to a second uid",
)


def snapshot(folder: Path) -> dict:
    return {p.name: (p.read_bytes(), p.stat().st_uid) for p in sorted(folder.iterdir())}


@as_root
def test_a_cache_folder_owned_by_another_user_is_never_read_nor_written(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh(cache)
    for p in [cache, *cache.iterdir()]:
        os.chown(p, OTHER, OTHER)
    before = snapshot(cache)
    pruner = fresh(cache)
    assert pruner.cache == "untrusted" and works(pruner), "another user's entry was loaded"
    assert snapshot(cache) == before, "nothing written into another user's folder"


@as_root
def test_a_cache_folder_that_is_a_symbolic_link_is_not_used(tmp_path: Path) -> None:
    real = tmp_path / "real"
    fresh(real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert fresh(link).cache == "untrusted"


@pytest.mark.parametrize("which", ["code", "digest", "both"])
@as_root
def test_an_entry_owned_by_another_user_is_recompiled_never_loaded(tmp_path: Path, which: str) -> None:
    cache = tmp_path / "cache"
    fresh(cache)
    e = entry(cache)
    for p in {"code": [e.code], "digest": [e.digest], "both": [e.code, e.digest]}[which]:
        os.chown(p, OTHER, OTHER)
    again = fresh(cache)
    assert again.cache == "miss" and works(again)
    assert e.code.stat().st_uid == os.geteuid() and e.digest.stat().st_uid == os.geteuid(), "replaced by our own"
    assert fresh(cache).cache == "hit"


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606])
@as_root
def test_an_entry_others_can_read_or_write_is_recompiled(tmp_path: Path, mode: int) -> None:
    cache = tmp_path / "cache"
    fresh(cache)
    e = entry(cache)
    os.chmod(e.code, mode)
    assert fresh(cache).cache == "miss"
    assert stat.S_IMODE(e.code.stat().st_mode) == 0o600


@as_root
def test_entries_are_0600_and_an_open_folder_of_ours_is_narrowed_to_0700(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    assert fresh(cache).cache == "miss"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    for p in cache.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p.name


@as_root
def test_a_symbolic_link_planted_at_an_entry_is_neither_followed_nor_written_through(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh(cache)
    e = entry(cache)
    good = e.code.read_bytes()
    victim = tmp_path / "victim"
    victim.write_bytes(good)  # a valid entry, but only reachable through the link
    os.chmod(victim, 0o600)
    e.code.unlink()
    e.code.symlink_to(victim)
    assert fresh(cache).cache == "miss", "an entry behind a symbolic link was loaded"
    assert victim.read_bytes() == good and not e.code.is_symlink()


@as_root
def test_a_temporary_name_cannot_be_predicted_nor_written_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    opened: List[str] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).endswith(".tmp"):
            opened.append(str(path))
            assert flags & os.O_EXCL and flags & os.O_CREAT and flags & os.O_NOFOLLOW, "created exclusively, no link"
            assert mode == 0o600
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(_engine.os, "open", spy)
    assert fresh(cache).cache == "miss"
    monkeypatch.undo()
    shutil.rmtree(cache)
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(_engine.os, "open", spy)
    assert fresh(cache).cache == "miss"
    monkeypatch.undo()
    assert len(opened) == 4 and len(set(Path(p).name for p in opened)) == 4, opened
    assert victim.read_bytes() == b"untouched"
