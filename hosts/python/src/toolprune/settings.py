"""The guest's ``settings`` interface (``wit/settings.wit``): everything this
host would otherwise have to know — the contract version, thresholds, the
configuration from the environment and the config file, prunable tools, the
retry rule, per-call limits and the fail-open log line — asked of the guest,
on one small instance shared by the process (calls are serialized).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import OrderedDict
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from . import _convert
from ._engine import BOOT_FUEL, CallLimits, Compiled, Instance, Trapped
from .types import Config, GuestError, HostFailure, kebab

Env = Sequence[Tuple[str, str]]

CONFIG_READ_MAX = (1 << 20) + 1
"""The most of a config file read: one byte more than the guest accepts
(guest/src/limits.rs ``CONFIG_MAX_BYTES``, 1 MiB), so that its size check
fires on a larger file with its own line (``settings.resolve``)."""

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class ConfigError(ValueError):
    """The configuration (environment or config file) is invalid: the guest's
    one-line message (``line 3, column 1: …``), never the file's content."""


def utf8_len(s: str) -> Optional[int]:
    """The UTF-8 length of ``s`` in bytes, or None when ``s`` holds surrogate
    code points (a WIT ``string`` cannot carry them). ``isascii`` is O(1);
    ``encode`` costs ≈ 70–140 µs on 100 KB of non-ASCII text."""
    if s.isascii():
        return len(s)
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return None


class Settings:
    """The ``settings`` interface of one compiled component."""

    _LIMITS_CACHE = 512

    def __init__(self, compiled: Compiled) -> None:
        self._compiled = compiled
        self._lock = threading.Lock()
        self._instance: Optional[Instance] = None
        self._limits: "OrderedDict[int, CallLimits]" = OrderedDict()
        self._version: Optional[str] = None
        self._variables: Optional[List[str]] = None
        self._defaults: Optional[Config] = None

    # --- mechanism ------------------------------------------------------------------

    def _live(self) -> Instance:
        if self._instance is None:
            self._instance = Instance(self._compiled)
        return self._instance

    def _raw_limits(self, text_bytes: int) -> CallLimits:
        found = self._limits.get(text_bytes)
        if found is not None:
            self._limits.move_to_end(text_bytes)
            return found
        # The first call asks for the limits of an empty input, with a fixed budget.
        boot = self._limits.get(0) or CallLimits(fuel=BOOT_FUEL, wall_ms=0, memory_bytes=None)
        rec = self._live().call(boot, "call-limits-for", text_bytes)
        found = CallLimits(fuel=rec.fuel, wall_ms=getattr(rec, "wall-ms"), memory_bytes=getattr(rec, "memory-bytes"))
        self._limits[text_bytes] = found
        while len(self._limits) > self._LIMITS_CACHE:
            oldest = next(iter(self._limits))
            if oldest == 0:
                self._limits.move_to_end(0)
                continue
            del self._limits[oldest]
        return found

    def _call(self, size: int, name: str, *args: Any) -> Any:
        """One call on the shared instance, with the limits for ``size`` bytes
        of input. Raises :class:`GuestError` (the instance is replaced)."""
        with self._lock:
            try:
                self._raw_limits(0)
                limits = self._raw_limits(max(size, 0))
                return self._live().call(limits, name, *args)
            except Trapped as err:
                self._instance = None
                raise GuestError(HostFailure("guest_trap", err.limit, err.message)) from None

    # --- the interface -----------------------------------------------------------------

    def call_limits_for(self, text_bytes: int) -> CallLimits:
        """Fuel, wall time and memory for one call with a text of ``text_bytes``
        bytes (cached per size)."""
        with self._lock:
            try:
                self._raw_limits(0)
                return self._raw_limits(max(int(text_bytes), 0))
            except Trapped as err:
                self._instance = None
                raise GuestError(HostFailure("guest_trap", err.limit, err.message)) from None

    def version(self) -> str:
        """The component's contract version (``0.3.0``)."""
        if self._version is None:
            self._version = self._call(0, "version")
        return self._version

    def threshold(self, value: str) -> float:
        """Check a threshold written by a user (``"0.2"``, ``"0.20"``): one of
        the four (SPEC §6). Raises :class:`ValueError` with the guest's message."""
        if not isinstance(value, str):
            raise TypeError(f"a threshold is checked as text, not {type(value).__name__}")
        size = utf8_len(value)
        if size is None:
            value = clean(value)
            size = len(value.encode())
        answer = self._call(size, "threshold", value)
        if isinstance(answer, str):
            raise ValueError(answer)
        return float(answer)

    def variables(self) -> List[str]:
        """The environment variables :meth:`resolve` and :meth:`config_path` read."""
        if self._variables is None:
            self._variables = list(self._call(0, "variables"))
        return list(self._variables)

    def env(self, environ: Optional[Mapping[str, str]] = None) -> List[Tuple[str, str]]:
        """The values of :meth:`variables` in ``environ`` (default ``os.environ``), and only those."""
        source = os.environ if environ is None else environ
        out = []
        for name in self.variables():
            value = source.get(name)
            if isinstance(value, str) and utf8_len(value) is not None:
                out.append((name, value))
        return out

    def config_path(self, env: Env) -> Optional[str]:
        """The config file's path from those variables, or None."""
        pairs = [(str(k), str(v)) for k, v in env]
        return self._call(sum(len(k) + len(v) for k, v in pairs) * 4, "config-path", pairs)  # type: ignore[no-any-return]

    def resolve(self, env: Env, file: Optional[str]) -> Config:
        """The configuration: defaults < ``file`` (the config file's text) <
        ``env``. Raises :class:`ConfigError` with the guest's one-line message."""
        pairs = [(str(k), str(v)) for k, v in env]
        if file is not None and utf8_len(file) is None:
            raise ConfigError("the config file is not valid UTF-8")
        size = sum(len(k) + len(v) for k, v in pairs) * 4 + (0 if file is None else len(file) * 4)
        answer = self._call(size, "resolve", pairs, file)
        if isinstance(answer, str):
            raise ConfigError(answer)
        return _convert.lift_config(answer)

    def defaults(self) -> Config:
        """The configuration with no environment and no file: the guest's defaults."""
        if self._defaults is None:
            self._defaults = self.resolve([], None)
        return self._defaults

    def config(self, environ: Optional[Mapping[str, str]] = None) -> Config:
        """The user's configuration: the variables of ``environ`` (default
        ``os.environ``) and the config file at :meth:`config_path`, if it
        exists. Raises :class:`ConfigError` (invalid file or variable, or a
        file that cannot be read)."""
        env = self.env(environ)
        path = self.config_path(env)
        return self.resolve(env, None if path is None else read_config_file(path))

    def is_prunable(self, tool: Union[str, Sequence[str]], globs: Sequence[str]) -> bool:
        """Whether a tool's results may be pruned (SPEC §2, §15;
        ``settings.is-tool-prunable``). ``tool``: its name, or every name the
        caller knows for it (``["read_file", "mcp__fetch__read_file",
        "mcp_fetch_read_file"]``): never when any name is a file reader,
        shell, editor or ``omitted``, else when any name matches a glob.
        Raises ``TypeError`` for a name that is not a ``str``."""
        names = [tool] if isinstance(tool, str) else list(tool)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"tool must be a str, not {type(name).__name__}")
        patterns = [clean(str(g)) for g in globs]
        size = (sum(len(n) for n in names) + sum(len(g) for g in patterns)) * 4
        return bool(self._call(size, "is-tool-prunable", [clean(n) for n in names], patterns))

    def retry_delay(
        self,
        *,
        attempt: int,
        status: Optional[int],
        retry_after: Optional[str],
        retry_after_ms: Optional[str],
        now_unix_ms: int,
        remaining_ms: int,
    ) -> Optional[int]:
        """After a failed attempt, the wait in ms before the next one, or None: give up (SPEC §11)."""
        facts = _convert.record(
            attempt=_convert.u32(attempt),
            status=status,
            retry_after=None if retry_after is None else clean(retry_after),
            retry_after_ms=None if retry_after_ms is None else clean(retry_after_ms),
            now_unix_ms=max(int(now_unix_ms), 0),
            remaining_ms=_convert.u32(remaining_ms),
        )
        size = (len(retry_after or "") + len(retry_after_ms or "")) * 4
        return self._call(size, "retry-delay", facts)  # type: ignore[no-any-return]

    def failure_line(
        self, operation: str, agent: str, tool: str, failure: str, limit: Optional[str] = None
    ) -> str:
        """The log line for a host failure (``prune``, ``omitted``, ``judge``),
        labels sanitised by the guest. ``failure``: ``guest_trap``,
        ``invalid_text``, ``invalid_input``; ``limit``: ``fuel``, ``memory``,
        ``wall_time`` or None. Surrogates in the labels become U+FFFD."""
        agent, tool = clean(agent), clean(tool)
        size = (len(agent) + len(tool)) * 4
        return self._call(  # type: ignore[no-any-return]
            size, "failure-line", kebab(operation), agent, tool, kebab(failure), None if limit is None else kebab(limit)
        )


def read_config_file(path: str) -> Optional[str]:
    """The config file at ``path`` as text, read as the Rust host reads it:
    None when there is none; :class:`ConfigError` (one line naming the path)
    when it is not a regular file — opened without blocking, so a FIFO
    cannot hang — cannot be read, or is not UTF-8. At most :data:`CONFIG_READ_MAX` bytes
    are read: past the guest's bound the text is only there to be refused
    for its size (a character cut at the end becomes U+FFFD, which keeps it
    over)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {_os_error(err)}") from err
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"cannot read {path}: not a regular file")
        chunks: List[bytes] = []
        size = 0
        while size < CONFIG_READ_MAX:
            chunk = os.read(fd, CONFIG_READ_MAX - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {_os_error(err)}") from err
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) >= CONFIG_READ_MAX:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        # The Rust host's words (`read_to_string`'s error), as every host says it.
        raise ConfigError(f"cannot read {path}: stream did not contain valid UTF-8") from err


def _os_error(err: OSError) -> str:
    """An OS error as the Rust host prints one (``Permission denied (os error 13)``)."""
    return f"{err.strerror} (os error {err.errno})" if err.errno and err.strerror else str(err)


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(s: str) -> str:
    """``s`` with every surrogate code point replaced by U+FFFD (the same
    ``str`` when it has none)."""
    if utf8_len(s) is not None:
        return s
    return _SURROGATE.sub("\ufffd", s)


def surrogates(s: str) -> int:
    """How many surrogate code points ``s`` holds."""
    return len(_SURROGATE.findall(s))


__all__ = ["ConfigError", "Settings", "clean", "surrogates", "utf8_len"]
