#!/usr/bin/env python3
"""A probe Claude Code hook: logs what every hook event gets, and answers as configured.

Registered in a settings file as the command ``PYTHON probe_hook.py CONFIG`` for
each event under test. Standard library only. CONFIG is a JSON file, read on
every call (a test may rewrite it between runs)::

    {
      "log": "/scratch/hook-log.jsonl",           # one JSON line per call (required)
      "respond": {                                 # optional, by hook_event_name
        "PostToolUse": [
          {"tool": "mcp__docs__fetch",             # exact tool_name to act on
           "stdout": {...} | "raw text",           # printed as JSON / as is
           "exit": 0,                              # exit status (default 0)
           "stderr": "text",                       # written to stderr (optional)
           "sleep": 0}                             # seconds before answering (optional;
                                                   # then LOG.slept gets a line)
        ],
        "PreToolUse": [ ... ],                     # same form; "tool" may be "*"
        "UserPromptSubmit": [ {"stdout": ...} ]    # no "tool" for non-tool events
      }
    }

In ``stdout`` (a JSON object), inside every string, ``{{text}}`` is replaced by
the first text block of ``tool_response`` and ``{{session_id}}`` by the event's
``session_id``, so a test can check a replacement that depends on the original. A JSON object with the key
``"{{tool_input}}"`` becomes the event's ``tool_input`` updated with the object's
other keys (``{"{{tool_input}}": 1, "session_id": "{{session_id}}"}`` adds a
``session_id`` to the arguments, for PreToolUse ``updatedInput``).

Each log line is ``{"stdin": <the event JSON>, "argv": [...], "cwd": "...",
"env": {...}}`` with the whole environment the hook process got.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _substitute(value: Any, event: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        out = {k: _substitute(v, event) for k, v in value.items() if k != "{{tool_input}}"}
        if "{{tool_input}}" in value:
            out = {**(event.get("tool_input") or {}), **out}
        return out
    if isinstance(value, list):
        return [_substitute(v, event) for v in value]
    if isinstance(value, str):
        if "{{text}}" in value:
            value = value.replace("{{text}}", _first_text(event.get("tool_response")))
        return value.replace("{{session_id}}", str(event.get("session_id", "")))
    return value


def _first_text(response: Any) -> str:
    if isinstance(response, list):
        for block in response:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text", ""))
    if isinstance(response, str):
        return response
    return json.dumps(response)


def main() -> int:
    config = json.load(open(sys.argv[1], encoding="utf-8"))
    raw = sys.stdin.read()
    try:
        event = json.loads(raw)
    except ValueError:
        event = {"unparsed_stdin": raw}
    with open(config["log"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"stdin": event, "argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}) + "\n")

    name = event.get("hook_event_name", "")
    for rule in config.get("respond", {}).get(name, []):
        tool = rule.get("tool")
        if tool is not None and tool != "*" and tool != event.get("tool_name"):
            continue
        if rule.get("sleep"):
            time.sleep(float(rule["sleep"]))
            # Proof that the hook outlived its sleep (it was not killed first).
            with open(config["log"] + ".slept", "a", encoding="utf-8") as f:
                f.write(json.dumps({"hook_event_name": name, "slept": rule["sleep"]}) + "\n")
        out = rule.get("stdout")
        if isinstance(out, (dict, list)):
            sys.stdout.write(json.dumps(_substitute(out, event)))
        elif isinstance(out, str):
            sys.stdout.write(out)
        if rule.get("stderr"):
            sys.stderr.write(rule["stderr"])
        return int(rule.get("exit", 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
