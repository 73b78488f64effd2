"""Where log lines go, fail-open (SPEC §11, §12): a sink's failure never
reaches a result. The line is lost; the result, the ``omitted`` answer or
the decision is returned as computed."""

from __future__ import annotations

import sys
from typing import Callable

LogSink = Callable[[str], None]
"""Receives complete log lines (``tool prune: …``), without a newline."""


def stderr_log(line: str) -> None:
    """The default log sink: each line to stderr. A stderr that is closed
    or gone (``sys.stderr`` is None when descriptor 2 was closed at start)
    drops the line, never writes it elsewhere."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(line, file=stream, flush=True)
    except Exception:  # noqa: BLE001 - OSError, ValueError (closed), a replaced stream's own errors
        pass


def write_line(sink: LogSink, line: str) -> None:
    """``sink(line)``, with anything it raises (an :class:`Exception`) dropped."""
    try:
        sink(line)
    except Exception:  # noqa: BLE001 - a log sink's failure never reaches a result
        pass


__all__ = ["LogSink", "stderr_log", "write_line"]
