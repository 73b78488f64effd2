"""The wasmtime side: finding the component, compiling it (with an on-disk
cache of the compiled code), checking its contract version, and instances
whose every call runs under the limits the guest sizes for it.

wasmtime-py (50.x) maps the WIT values as follows (pinned by
``tests/test_wit_mapping.py``):

- ``record`` → :class:`wasmtime.component.Record` with the WIT field names as
  attributes (``getattr(r, "raw-chars")``); lowering reads the same attributes,
  so a record lifted from one call can be passed to another unchanged;
- ``enum`` → ``str`` (the WIT case name, kebab-case);
- ``list<T>`` → ``list``, ``tuple<…>`` → ``tuple``, integers → ``int``,
  ``f64`` → ``float`` (an ``int`` is refused);
- ``option<T>`` → ``None`` or the value; ``result<T, E>`` and ``variant`` are
  **untagged** when the Python classes of their cases do not overlap, else
  :class:`wasmtime.component.Variant`. Untagged here: ``failure`` (``int``
  http / ``None`` network), ``batch-answer`` (``list`` scores / ``str``
  jev-response / a ``failure``), ``scoring-response.answers`` (``list`` /
  ``str`` stop), every ``result`` of ``settings`` and ``judge``. Tagged: the
  judge's ``verdict`` and ``scorer-choice`` (``offline`` and ``stub`` both
  carry nothing: ``Variant("host", name)``, ``Variant("offline")``,
  ``Variant("stub")``);
- ``resource`` → :class:`wasmtime.component.ResourceAny`, freed with
  ``ResourceAny.drop(store)``.

The component's only import, ``toolprune:pruner/scorer#score`` (contract
0.3, ``wit/scorer.wit``), is one host function in the shared linker
(:func:`_score_import`). It receives the lifted ``scoring-request`` record
and returns a ``scoring-response`` record; whom it asks is set per thread
for the length of one guest call (:func:`scoring`): the blocking API's
``pruner.prune`` and ``judge.decide`` set a scorer; every other call (the
job form, settings, ``omitted``) sets none, and then a call of the import
raises :class:`ImportRefused`, which traps the guest (fail-open). The
guest calls the import on the thread that called the export, so a
thread-local is exact.

The import always answers or traps as the import's failure, never as
something else: a ``KeyboardInterrupt`` (any ``BaseException`` that is not
an ``Exception``) raised by the responder is answered ``cancelled`` (the
scoring stopped) and raised again once the guest call has returned (it
must not cross the ctypes callback: wasmtime-py would print "Exception
ignored" and the guest would read a result that was never written); an
``Exception`` raised by the responder, or an answer that cannot be lowered,
traps with :attr:`Trapped.from_import` set, and :func:`explain` never names
a limit for it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union, cast

from wasmtime import Config, Engine, Store, WasmtimeError
from wasmtime.component import Component, ExportIndex, Linker

PACKAGE = "toolprune:pruner"
CONTRACT = "0.3"
"""The contract this host implements: every ``toolprune:pruner/*`` export must carry ``0.3.x``."""

SCORER_IMPORT = "scorer"
"""The interface of the component's only import (``toolprune:pruner/scorer@0.3.x``, function ``score``)."""

EXPORTS: Dict[str, Tuple[str, ...]] = {
    "settings": (
        "version",
        "threshold",
        "variables",
        "config-path",
        "resolve",
        "is-prunable",
        "is-tool-prunable",
        "retry-delay",
        "call-limits-for",
        "failure-line",
    ),
    "pruner": (
        "[constructor]prune-job",
        "[method]prune-job.scoring-request",
        "[method]prune-job.finish",
        "prune",
        "inspect",
    ),
    "omitted": ("requested-id", "answer", "unavailable", "tool", "request-argument"),
    "judge": ("route", "decide", "[static]judge-job.load", "[method]judge-job.scoring-request", "[method]judge-job.finish"),
    "report": ("prune-json", "split-json", "split-table", "route-json", "route-summary", "rules-errors"),
}
"""The functions this host calls, by interface."""

ENV_WASM = "TOOLPRUNE_WASM"
"""Where to find the component (the host's own variable: not configuration of the guest)."""

BOOT_FUEL = 1_000_000_000
"""Fuel for the one call that asks the guest for its limits (``call-limits-for(0)``)."""


class ComponentError(ValueError):
    """The file is not a toolprune component this host can run (wrong
    contract version, missing exports). The message names what was found."""


def find_component(path: Union[str, "os.PathLike[str]", None] = None) -> Path:
    """Where the component is: ``path``, else ``$TOOLPRUNE_WASM``, else the
    copy inside the installed package, else ``dist/toolprune.wasm`` of a
    source checkout this file lives in (editable installs).

    Raises :class:`FileNotFoundError` naming every place that was tried.
    """
    if path is not None:
        return Path(path)
    env = os.environ.get(ENV_WASM)
    if env:
        return Path(env)
    tried: List[str] = [f"${ENV_WASM} (unset)"]
    here = Path(__file__).resolve().parent
    packaged = here / "toolprune.wasm"
    if packaged.is_file():
        return packaged
    tried.append(str(packaged))
    for parent in here.parents:
        candidate = parent / "dist" / "toolprune.wasm"
        if (parent / "wit" / "pruner.wit").is_file() and candidate.is_file():
            return candidate
    tried.append("dist/toolprune.wasm of a source checkout")
    raise FileNotFoundError(
        "toolprune.wasm not found (tried "
        + ", ".join(tried)
        + "); build it with `cargo run -p toolprune-artifacts --bin toolprune-dist` "
        "and pass its path, or set TOOLPRUNE_WASM"
    )


# --- the compile cache ----------------------------------------------------------------


def default_cache_dir() -> Optional[Path]:
    """The per-user cache folder for compiled code, as the Rust host finds
    it: ``$TOOLPRUNE_CACHE_DIR``, else ``$XDG_CACHE_HOME/toolprune``, else
    ``$HOME/.cache/toolprune``; None (compile in memory) when none is set."""
    for name, tail in (("TOOLPRUNE_CACHE_DIR", ()), ("XDG_CACHE_HOME", ("toolprune",)), ("HOME", (".cache", "toolprune"))):
        value = os.environ.get(name)
        if value:
            return Path(value, *tail)
    return None


def _wasmtime_version() -> str:
    """The installed wasmtime-py's version, from its ``.dist-info`` folder
    (``importlib.metadata`` costs ≈ 0.2 s at a cold start), plus the native
    library's size and mtime so that a reinstall of the same version with
    another build never reads code compiled by the old one."""
    import wasmtime

    package = Path(wasmtime.__file__).resolve().parent
    version = "unknown"
    for info in package.parent.glob("wasmtime-*.dist-info"):
        version = info.name[len("wasmtime-") : -len(".dist-info")]
        break
    else:  # pragma: no cover - an unusual install layout
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("wasmtime")
        except Exception:  # noqa: BLE001
            pass
    stamp = ""
    for lib in package.glob("*/_libwasmtime.*"):
        st = lib.stat()
        stamp = f"-{st.st_size}-{st.st_mtime_ns}"
        break
    return version + stamp


_ENGINE_TAG = "fuel"
"""What the engine's configuration adds to the cache key (fuel metering on)."""


@dataclass(frozen=True)
class CacheEntry:
    """Where the compiled code of one component lives in the cache."""

    code: Path
    """The serialized component (``Component.serialize``)."""
    digest: Path
    """Hex SHA-256 of ``code``'s bytes, checked before they are deserialized."""


def cache_entry(cache_dir: Path, wasm: bytes) -> CacheEntry:
    """The entry for ``wasm`` (its SHA-256, the wasmtime-py version, the engine tag)."""
    key = hashlib.sha256(wasm).hexdigest()
    raw = f"{key}-{_wasmtime_version()}-{_ENGINE_TAG}"
    name = f"{key[:32]}-{hashlib.sha256(raw.encode()).hexdigest()[:16]}"
    return CacheEntry(cache_dir / f"{name}.cwasm", cache_dir / f"{name}.cwasm.sha256")


# The owner rules (issue 27 §4). An entry is **native code** (``Component.deserialize`` trusts it
# completely), so on POSIX the cache has the session store's rules, as the Rust
# host's (hosts/rust/src/cache.rs, issue 27 §4): the folder is created 0700,
# and one that is a symbolic link, not a folder, or owned by another user is
# never used (the compile stays in memory); one of ours that others can reach
# is narrowed to 0700 before anything in it is read or written. An entry or
# digest is opened without following a symbolic link and read only when it is
# a regular file of this user with no group/other bits: anything else is
# ignored and replaced by a fresh compile, never loaded. New files are created
# exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600) under an
# unpredictable name, then renamed over the entry.

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def _euid() -> Optional[int]:
    """This process's effective user id; None where there is none (Windows)."""
    geteuid = getattr(os, "geteuid", None)
    return None if geteuid is None else geteuid()


def _private_dir(folder: Path) -> bool:
    """Make ``folder`` the cache folder, or refuse it (False): created
    (parents too) with mode 0700; an existing one must be a real folder (not
    a symbolic link) owned by this user, and is narrowed to 0700 when others
    can reach it. Raises :class:`OSError` when it cannot be created."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    uid = _euid()
    if uid is None:
        return stat.S_ISDIR(st.st_mode)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        return False
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return True


def _read_private(path: Path) -> Optional[bytes]:
    """The bytes of ``path`` when it is a regular file of this user that
    nobody else can read or write, opened without following a symbolic link
    (nor blocking on a FIFO); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        uid = _euid()
        if not stat.S_ISREG(st.st_mode):
            return None
        if uid is not None and (st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077):
            return None
        try:
            return handle.read()
        except OSError:
            return None


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a new 0600 file created
    exclusively, never through a symbolic link, under an unpredictable name
    in the same folder, then a rename over ``path`` (a rename replaces a
    planted link, never writes through it). Raises :class:`OSError`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(12)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read_cached(engine: Engine, entry: CacheEntry) -> Optional[Component]:
    """The cached component, or None when there is none, or it is corrupt,
    foreign (another wasmtime or engine configuration), unreadable or not
    private to this user (the owner rules above)."""
    digest = _read_private(entry.digest)
    if digest is None:
        return None
    data = _read_private(entry.code)
    if data is None:
        return None
    try:
        expected = digest.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        return None
    try:
        return Component.deserialize(engine, data)
    except (WasmtimeError, ValueError, TypeError):
        return None


def _write_cached(component: Component, entry: CacheEntry) -> bool:
    """Store the compiled code and its digest (the code first: a reader that
    sees the new digest sees the new code); False when the cache is not writable."""
    try:
        data = bytes(component.serialize())
        _atomic_write(entry.code, data)
        _atomic_write(entry.digest, hashlib.sha256(data).hexdigest().encode("ascii"))
        return True
    except (OSError, WasmtimeError):
        return False


def load_component(engine: Engine, path: Path, cache_dir: Optional[Path]) -> Tuple[Component, str]:
    """The compiled component at ``path``: from the cache when a verified
    entry exists, else compiled (and stored when ``cache_dir`` is given).
    Returns it and how it was obtained: ``hit``, ``miss`` (compiled and
    stored), ``unwritable`` (compiled, the cache folder could not be
    created or written), ``untrusted`` (compiled, the folder is a link or
    another user's: never read nor written, the owner rules above) or ``off``
    (compiled, no cache)."""
    wasm = path.read_bytes()
    if cache_dir is None:
        return Component(engine, wasm), "off"
    try:
        usable = _private_dir(cache_dir)
    except OSError:
        return Component(engine, wasm), "unwritable"
    if not usable:
        return Component(engine, wasm), "untrusted"
    entry = cache_entry(cache_dir, wasm)
    found = _read_cached(engine, entry)
    if found is not None:
        return found, "hit"
    component = Component(engine, wasm)
    return component, ("miss" if _write_cached(component, entry) else "unwritable")


# --- the compiled component ---------------------------------------------------------------


def contract_version(component: Component, engine: Engine, path: Path) -> str:
    """The version of the ``toolprune:pruner`` interfaces ``component`` exports.

    Raises :class:`ComponentError` unless every one is ``0.3.x``: ``toolprune:
    this component implements contract X, this host needs 0.3.x (rebuild or
    reinstall toolprune)``.
    """
    names = list(component.type.exports(engine))
    ours = [n for n in names if n.startswith(PACKAGE + "/")]
    if not ours:
        raise ComponentError(
            f"toolprune: {path} is not a toolprune component (it exports no {PACKAGE} interface; "
            f"exports: {', '.join(names) or 'none'})"
        )
    versions = sorted({n.partition("@")[2] or "(unversioned)" for n in ours})
    if any(not v.startswith(CONTRACT + ".") for v in versions):
        raise ComponentError(
            f"toolprune: this component implements contract {', '.join(versions)}, this host needs "
            f"{CONTRACT}.x (rebuild or reinstall toolprune)"
        )
    if len(versions) > 1:
        raise ComponentError(f"toolprune: {path} mixes contract versions {', '.join(versions)}")
    return versions[0]


# --- the scorer import -------------------------------------------------------------


class ImportRefused(Exception):
    """The guest called ``scorer.score`` during a guest call that has no
    scorer (the job form, settings, ``omitted``, an inspection): the call
    traps, and the caller fails open. Never expected: the guest calls the
    import only from ``pruner.prune`` and ``judge.decide``."""


Responder = Callable[[Any], Any]
"""Answers the ``score`` import: the lifted ``scoring-request`` record in,
a ``scoring-response`` record out (``_convert.lower_response``). Must
return, never raise: every scorer failure, the deadline and cancellation
are answers (``wit/scorer.wit``)."""


class _CallState:
    """What the import did during one guest call (:meth:`Instance.call`)."""

    __slots__ = ("entered", "answered", "interrupt")

    def __init__(self) -> None:
        self.entered = False
        """The import was called."""
        self.answered = False
        """The responder returned (its answer may still fail to lower)."""
        self.interrupt: Optional[BaseException] = None
        """A ``BaseException`` that is not an ``Exception`` (Ctrl-C), raised
        by the responder: answered ``cancelled``, raised after the call."""


class _Scoring(threading.local):
    responder: Optional[Responder] = None
    """Who answers the import for the guest calls running on this thread."""
    call: Optional[_CallState] = None
    """The innermost guest call running on this thread."""


_SCORING = _Scoring()


@contextmanager
def scoring(responder: Optional[Responder]) -> Iterator[None]:
    """For the guest calls made in this block on this thread, the ``score``
    import is answered by ``responder`` (None: the import traps)."""
    previous = _SCORING.responder
    _SCORING.responder = responder
    try:
        yield
    finally:
        _SCORING.responder = previous


def _score_import(_store: Any, request: Any) -> Any:
    """The host function behind ``toolprune:pruner/scorer#score``. Nothing
    but an ``Exception`` leaves it (see the module docstring)."""
    state = _SCORING.call
    if state is None:  # pragma: no cover - the guest runs only inside Instance.call
        state = _SCORING.call = _CallState()
    state.entered = True
    responder = _SCORING.responder
    if responder is None:
        raise ImportRefused("scorer.score was called where this host scores through jobs")
    try:
        response = responder(request)
    except Exception:
        raise
    except BaseException as err:  # Ctrl-C: the scoring stopped; raised after the call
        from ._convert import lower_response

        state.interrupt = err
        response = lower_response("cancelled", 0)
    state.answered = True
    return response


def _linker(engine: Engine, version: str) -> Linker:
    """The linker every instance is made with: the ``score`` import defined
    (the world's only import; a component of this contract needs it)."""
    linker = Linker(engine)
    with linker.root() as root:
        with root.add_instance(f"{PACKAGE}/{SCORER_IMPORT}@{version}") as scorer:
            scorer.add_func("score", _score_import)
    return linker


class Compiled:
    """The component compiled once (fuel metering on), version-checked, with
    the index of every function this host calls and the names of the enums
    it validates input against. Shared by every conversation of a process."""

    def __init__(self, path: Path, cache_dir: Optional[Path]) -> None:
        config = Config()
        config.consume_fuel = True
        self.path = path
        self.engine = Engine(config)
        self.component, self.cache = load_component(self.engine, path, cache_dir)
        self.version = contract_version(self.component, self.engine, path)
        self.linker = _linker(self.engine, self.version)
        self.exports: Dict[str, ExportIndex] = {}
        types: Dict[str, Any] = dict(self.component.type.exports(self.engine))
        self.funcs: Dict[str, Any] = {}
        for iface, names in EXPORTS.items():
            full = f"{PACKAGE}/{iface}@{self.version}"
            index = self.component.get_export_index(full)
            if index is None or full not in types:
                raise ComponentError(f"toolprune: {path} does not export {full}")
            iface_type: Dict[str, Any] = cast(Any, types[full].ty).exports(self.engine)
            for name in names:
                func = self.component.get_export_index(name, index)
                if func is None or name not in iface_type:
                    raise ComponentError(f"toolprune: {path} does not export {full}#{name}")
                self.exports[name] = func
                self.funcs[name] = iface_type[name].ty
        # Enum names, straight from the component's types (no host copy).
        prune_input = dict(self.funcs["[constructor]prune-job"].params)["input"]
        self.langs: List[str] = list(dict(prune_input.fields)["lang"].names)
        self.dialects: List[str] = list(dict(self.funcs["tool"].params)["dialect"].names)

    def instance(self) -> "Instance":
        return Instance(self)


_compiled: Dict[Tuple[str, Optional[str]], Compiled] = {}
_compiled_lock = threading.Lock()


def compiled(path: Path, cache_dir: Optional[Path]) -> Compiled:
    """The process-wide compile of the component at ``path``."""
    key = (str(path.resolve()), None if cache_dir is None else str(cache_dir))
    with _compiled_lock:
        found = _compiled.get(key)
        if found is None:
            found = _compiled[key] = Compiled(path, cache_dir)
        return found


# --- instances ---------------------------------------------------------------------


@dataclass(frozen=True)
class CallLimits:
    """Resource limits for one call into the guest (WIT ``settings.call-limits``)."""

    fuel: int
    """wasmtime fuel for the call (≈ one unit per wasm instruction)."""
    wall_ms: int
    """Wall time for the call in ms (hosts without fuel; this host uses fuel)."""
    memory_bytes: Optional[int]
    """Linear memory of the instance at most, in bytes (None: unlimited, for the first call only)."""


class Trapped(Exception):
    """A call into the guest that gave no answer: a trap, a panic, a resource
    limit or a failed instantiation. The instance must be dropped.

    ``limit``: ``fuel`` when fuel ran out; None when this host cannot tell (a
    refused memory growth ends in the guest's ``unreachable``, like a panic).
    ``message``: wasmtime's message, for diagnosis; never document text."""

    def __init__(self, limit: Optional[str], message: str, from_import: bool = False) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message
        self.from_import = from_import
        """The ``scorer`` import failed (its responder raised, or its answer
        could not be lowered): no limit stopped the guest."""


def _classify(err: BaseException, state: Optional[_CallState] = None) -> Trapped:
    message = f"{type(err).__name__}: {err}"
    if state is not None and state.entered and (not state.answered or not isinstance(err, WasmtimeError)):
        # Raised by the import (a Python exception, passed through by
        # wasmtime-py), or the guest trapped while the import had not answered.
        return Trapped(None, message, from_import=True)
    text = str(err)
    limit = "fuel" if "all fuel consumed" in text else "memory" if "exceeds memory limits" in text else None
    return Trapped(limit, message)


Replay = Callable[["Instance", CallLimits], Any]
"""Redoes the calls that trapped, on another instance with other limits."""


def explain(compiled: Compiled, trapped: Trapped, limits: CallLimits, replay: Replay) -> Trapped:
    """Names the limit behind a trap that does not name one.

    A refused memory growth makes the guest's allocator fail, which ends in
    ``unreachable`` like a panic; wasmtime-py cannot report the refusal (no
    resource-limiter callback in its C API). The guest is deterministic, so
    the calls are replayed once on a throwaway instance with more memory
    (4× the limit + 64 MiB): if they get further — they answer, or run out
    of fuel instead — memory stopped the first run (``limit=memory``); if
    they trap the same way, it was not memory (``limit`` stays None). Only
    ever after a trap, which the guest's limits make rare. Never for a trap
    of the ``scorer`` import (:attr:`Trapped.from_import`): a replay does
    not ask the scorer again, so it would get further for another reason."""
    if trapped.limit is not None or trapped.from_import or limits.memory_bytes is None:
        return trapped
    more = limits.memory_bytes * 4 + (64 << 20)
    bigger = CallLimits(fuel=limits.fuel, wall_ms=limits.wall_ms, memory_bytes=more)
    try:
        replay(Instance(compiled, more), bigger)
    except Trapped as again:
        if again.limit != "fuel":
            return trapped
    except Exception:  # noqa: BLE001 - the probe must never fail the caller
        return trapped
    return Trapped("memory", trapped.message)


class Instance:
    """One live instance in its own store. Not thread-safe: callers hold a
    lock. After :class:`Trapped` it must be dropped."""

    def __init__(self, compiled: Compiled, memory_bytes: Optional[int] = None) -> None:
        self.compiled = compiled
        self.store = Store(compiled.engine)
        if memory_bytes is not None:
            self.store.set_limits(memory_size=memory_bytes)
        self.store.set_fuel(BOOT_FUEL)
        try:
            self.instance = compiled.linker.instantiate(self.store, compiled.component)
        except Exception as err:  # noqa: BLE001 - e.g. the memory limit below the initial memory
            raise _classify(err) from None
        self._funcs: Dict[str, Any] = {}

    def func(self, name: str) -> Any:
        found = self._funcs.get(name)
        if found is None:
            found = self.instance.get_func(self.store, self.compiled.exports[name])
            if found is None:  # pragma: no cover - checked at compile time
                raise ComponentError(f"export {name} is not a function")
            self._funcs[name] = found
        return found

    def call(self, limits: CallLimits, name: str, *args: Any) -> Any:
        """One export call with ``limits``: fuel for this call, memory for the instance.

        Raises :class:`Trapped` on any wasmtime error, and :class:`TypeError`
        / :class:`ValueError` when an argument cannot be lowered (the instance
        is then still good: nothing ran). A ``KeyboardInterrupt`` raised
        inside the ``scorer`` import is raised here once the guest has
        returned (it got ``cancelled``)."""
        self.store.set_fuel(limits.fuel)
        if limits.memory_bytes is not None:
            self.store.set_limits(memory_size=limits.memory_bytes)
        func = self.func(name)
        state = _CallState()
        outer, _SCORING.call = _SCORING.call, state
        try:
            result = func(self.store, *args)
        except (TypeError, ValueError) as err:
            if state.entered:  # raised by or after the import: the guest ran
                raise _classify(err, state) from None
            raise  # an argument that cannot be lowered: nothing ran
        except Exception as err:  # noqa: BLE001 - every wasmtime failure is a trap
            raise _classify(err, state) from None
        finally:
            _SCORING.call = outer
            if state.interrupt is not None:
                raise state.interrupt
        return result

    def drop(self, limits: CallLimits, handle: Any) -> None:
        """Frees a resource handle (``prune-job``, ``judge-job``)."""
        self.store.set_fuel(limits.fuel)
        try:
            handle.drop(self.store)
        except Exception as err:  # noqa: BLE001
            raise _classify(err) from None
