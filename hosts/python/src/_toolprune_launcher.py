"""The ``toolprune`` command of the platform-independent wheel.

The wheels for a platform with a native binary (``manylinux_*_x86_64``)
carry the Rust CLI itself as their ``toolprune`` script, as ruff and uv
do: pip installs it into the environment's ``bin/``, and no Python runs
before it. This module is the ``toolprune`` of the ``py3-none-any`` wheel,
for every other platform, where there is no binary:

- ``prune``, ``split``, ``route`` (and help, usage errors) run the Python
  implementation, :func:`toolprune.cli.main`, imported only then;
- ``hook AGENT`` gives the agent's "no change" answer: stdin read and
  discarded (at most 5 s), the answer the binary gives when it passes
  (Gemini CLI and Cursor ``{}``, Cursor's prompt event
  ``{"continue":true}``, else nothing), exit 0, nothing on stderr —
  never an error in the agent;
- every other command of the binary says this platform has no native
  binary, exit 1.

It is a module of its own, outside the ``toolprune`` package, so that
deciding imports neither the package nor wasmtime. The same decisions are
those of the npm package's launcher (``bin/toolprune.mjs``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import List, Optional, Sequence

NATIVE_ONLY = frozenset(
    ("mcp", "mcp-proxy", "install", "uninstall", "doctor", "stats", "eval", "jev", "plugin")
)
"""Commands only the native binary has (``hook`` is answered apart)."""

DRAIN_SECONDS = 5.0
"""How long a hook without the binary keeps reading the agent's event (the binary's DRAIN_LIMIT)."""

HEAD_BYTES = 1 << 20
"""Of the event, this much is kept to read its name (Cursor's prompt event)."""


def pass_answer(args: Sequence[str], head: Optional[bytes]) -> str:
    """The binary's "no change" answer of ``hook AGENT`` (cli/src/agents/*.rs ``pass``)."""
    agent, more = (args[0] if args else None), list(args[1:])
    if len(more) > 1 or (more and more[0] != "--plugin"):
        return ""
    if agent == "gemini":
        return "{}"
    if agent != "cursor":
        return ""
    try:
        event = json.loads(head or b"")
        if isinstance(event, dict) and event.get("hook_event_name") == "beforeSubmitPrompt":
            return '{"continue":true}'
    except (ValueError, UnicodeDecodeError):
        pass
    return "{}"


def _read_event() -> Optional[bytes]:
    """Stdin read to its end or for DRAIN_SECONDS; its bytes when they fit HEAD_BYTES."""
    chunks: List[bytes] = []
    size = [0]

    def read() -> None:
        try:
            while True:
                chunk = os.read(0, 1 << 16)
                if not chunk:
                    return
                if size[0] + len(chunk) <= HEAD_BYTES:
                    chunks.append(chunk)
                size[0] += len(chunk)
        except OSError:
            return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(DRAIN_SECONDS)
    if reader.is_alive() or size[0] > HEAD_BYTES:
        return None
    return b"".join(chunks)


def _hook(args: Sequence[str]) -> None:
    """``hook`` without the binary: answer "no change", exit 0 (never returns)."""
    try:
        answer = pass_answer(args, _read_event())
        if answer:
            os.write(1, answer.encode())
    except BaseException:  # noqa: BLE001 - nothing may reach the agent but the answer
        pass
    # os._exit: a reader thread still blocked on stdin must not hold the exit,
    # and nothing at interpreter shutdown may write to stderr.
    os._exit(0)


def _no_binary(command: str) -> int:
    print(
        f"toolprune {command}: this package (the platform-independent wheel) has no native "
        "toolprune binary; the wheel for Linux x86-64 (manylinux) carries it. "
        "Here only prune, split and route work (docs/install.md).",
        file=sys.stderr,
    )
    return 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else None
    if command == "hook":
        _hook(args[1:])
    if command in NATIVE_ONLY:
        return _no_binary(command)
    from toolprune.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
