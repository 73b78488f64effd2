#!/usr/bin/env python3
"""The Gemini CLI probe hook: logs every event's stdin and, for AfterTool on the tool
named by ``--replace-tool``, answers with the output shape chosen by ``--mode``.

Usage (as the ``command`` of every hook in settings.json)::

    python3 gemini_probe_hook.py --log EVENTS.jsonl --replace-tool mcp_fetch_fetch \
        --mode tail|deny|tool_output|none --marker TEXT [--tail-tool mcp_probe_echo] \
        [--inject-session-tool mcp_probe_echo]

Each invocation appends one JSON line to ``--log``: ``{"stdin": <the event JSON as
received>, "env": {GEMINI_* / CLAUDE_PROJECT_DIR values}, "stdout": <the object it printed>}``.

Modes (what is printed on stdout for the matching AfterTool; every other event gets ``{}``):

- ``tail``: ``{"hookSpecificOutput": {"hookEventName": "AfterTool", "tailToolCallRequest":
  {"name": <tail-tool>, "args": {"text": <marker>}}}}`` (replaces the result in 0.61).
- ``deny``: ``{"decision": "deny", "reason": <marker>}`` (result becomes an error).
- ``tool_output``: ``{"hookSpecificOutput": {"hookEventName": "AfterTool", "tool_output":
  <marker>}}`` (the shape from closed PR google-gemini/gemini-cli#19505; ignored by 0.61).
- ``none``: ``{}`` (the "no change" answer).

With ``--inject-session-tool NAME``, BeforeTool on NAME answers ``{"hookSpecificOutput":
{"hookEventName": "BeforeTool", "tool_input": {<the call's tool_input>, "session": <session_id>}}}``
(input rewrite; 0.61 *replaces* the arguments with this object, so it repeats the original ones).

It never writes to stderr: Gemini CLI parses stderr as the hook's output when stdout is
empty (hookRunner.js), so stray text there would become a systemMessage.
"""

import argparse
import json
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--replace-tool", default="mcp_fetch_fetch")
    ap.add_argument("--mode", choices=["tail", "deny", "tool_output", "none"], default="none")
    ap.add_argument("--marker", default="TOOLPRUNE-PROBE-MARKER")
    ap.add_argument("--tail-tool", default="mcp_probe_echo")
    ap.add_argument("--inject-session-tool", default="",
                    help="for BeforeTool on this tool, answer hookSpecificOutput.tool_input = {session: <session_id>}")
    opts = ap.parse_args()

    raw = sys.stdin.read()
    try:
        event = json.loads(raw)
    except ValueError:
        event = {"_unparsed": raw}
    env = {k: v for k, v in os.environ.items() if k.startswith("GEMINI_") or k == "CLAUDE_PROJECT_DIR"}

    out: dict = {}
    if (opts.inject_session_tool and event.get("hook_event_name") == "BeforeTool"
            and event.get("tool_name") == opts.inject_session_tool):
        out = {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {
            **(event.get("tool_input") or {}), "session": event.get("session_id", "")}}}
    if event.get("hook_event_name") == "AfterTool" and event.get("tool_name") == opts.replace_tool:
        if opts.mode == "tail":
            out = {
                "hookSpecificOutput": {
                    "hookEventName": "AfterTool",
                    "tailToolCallRequest": {"name": opts.tail_tool, "args": {"text": opts.marker}},
                }
            }
        elif opts.mode == "deny":
            out = {"decision": "deny", "reason": opts.marker}
        elif opts.mode == "tool_output":
            out = {"hookSpecificOutput": {"hookEventName": "AfterTool", "tool_output": opts.marker}}
    with open(opts.log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"stdin": event, "env": env, "stdout": out}) + "\n")
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
