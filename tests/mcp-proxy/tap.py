"""A recording pipe for stdio MCP: ``python tap.py LOG [--stderr FILE] -- COMMAND ARGS…``.

Starts COMMAND and relays this process's stdin to its stdin and its stdout to
this process's stdout **byte for byte**, line by line, appending each line to
LOG as one JSON object ``{"dir": "c2s" | "s2c", "line": <the line's bytes as
latin-1 text, newline included>, "t": <monotonic seconds>}``. stderr is
inherited (see ``--stderr``). The first LOG line is ``{"dir": "pids", "tap": <pid>, "child":
<pid>}``. With ``--stderr FILE`` the child's stderr is appended to FILE (else
inherited). stdin EOF closes the child's stdin; the child's stdout EOF closes
ours; the tap exits with the child's exit code (128 + signal when killed).

Used twice in one run — between the client and the proxy, and between the
proxy and the server — it shows what the proxy changed: every line not
pruned must be the same bytes on both sides.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def main() -> int:
    args = sys.argv[1:]
    log_path = args.pop(0)
    stderr = None
    if args[0] == "--stderr":
        stderr = open(args[1], "ab")
        args = args[2:]
    assert args[0] == "--", "usage: tap.py LOG [--stderr FILE] -- COMMAND ARGS…"
    command = args[1:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
    lock = threading.Lock()
    log = open(log_path, "a", encoding="utf-8")

    def record(direction: str, line: bytes) -> None:
        with lock:
            log.write(json.dumps({"dir": direction, "line": line.decode("latin-1"), "t": time.monotonic()}) + "\n")
            log.flush()

    with lock:
        log.write(json.dumps({"dir": "pids", "tap": os.getpid(), "child": child.pid}) + "\n")
        log.flush()

    def client_to_server() -> None:
        src = sys.stdin.buffer
        try:
            for line in iter(src.readline, b""):
                record("c2s", line)
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=client_to_server, daemon=True).start()
    out = sys.stdout.buffer
    try:
        for line in iter(child.stdout.readline, b""):
            record("s2c", line)
            out.write(line)
            out.flush()
    except (BrokenPipeError, OSError):
        child.kill()
    try:
        out.close()
    except OSError:
        pass
    code = child.wait()
    log.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
