#!/usr/bin/env python3
"""Stand-in for ``toolprune hook gemini`` in the design probe (not toolprune's code): the
recommended Gemini CLI wiring, with a trivial "pruner" (drops every paragraph that contains
``--drop``).

- AfterTool on ``--prunable`` (exact tool name), no ``original_request_name``: take the one
  text part of ``tool_response.llmContent``, strip the ``<untrusted_context>`` wrapper, drop
  the matching paragraphs (blank-line separated) for a marker ``[… N paragraph(s) omitted,
  id=P1 …]``, write ``{"body", "dropped"}`` to ``<store>/<session_id>/P1.json`` and answer
  ``tailToolCallRequest`` → ``mcp_toolprune_omitted {id: "P1", session, part: "body"}``.
  Nothing to drop → ``{}``.
- BeforeTool on ``mcp_toolprune_omitted`` called by the model (no ``original_request_name``):
  answer ``tool_input`` = its arguments + ``session`` (0.61 replaces the arguments).
- Everything else, and any error: ``{}``. Exit 0 always; nothing on stderr.
"""

import argparse
import json
import os
import sys

WRAP_OPEN, WRAP_CLOSE = "<untrusted_context>\n", "\n</untrusted_context>"
OMITTED = "mcp_toolprune_omitted"


def answer(event: dict, opts) -> dict:
    name, tool = event.get("hook_event_name"), event.get("tool_name")
    sid = event.get("session_id", "")
    if event.get("original_request_name"):
        return {}
    if name == "BeforeTool" and tool == OMITTED:
        return {"hookSpecificOutput": {"hookEventName": "BeforeTool",
                                       "tool_input": {**(event.get("tool_input") or {}), "session": sid}}}
    if name != "AfterTool" or tool != opts.prunable:
        return {}
    resp = event.get("tool_response") or {}
    parts = resp.get("llmContent")
    if resp.get("error") or not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0].get("text"), str):
        return {}
    text = parts[0]["text"]
    if not (text.startswith(WRAP_OPEN) and text.endswith(WRAP_CLOSE)):
        return {}
    paragraphs = text[len(WRAP_OPEN):-len(WRAP_CLOSE)].split("\n\n")
    dropped = [p for p in paragraphs if opts.drop in p]
    if not dropped:
        return {}
    marker = f"[… {len(dropped)} paragraph(s) omitted, id=P1 …]"
    body, placed = [], False
    for p in paragraphs:
        if opts.drop in p:
            if not placed:
                body.append(marker)
                placed = True
        else:
            body.append(p)
    d = os.path.join(opts.store, sid)
    os.makedirs(d, mode=0o700, exist_ok=True)
    with open(os.path.join(d, "P1.json"), "w", encoding="utf-8") as f:
        json.dump({"body": "\n\n".join(body), "dropped": "\n\n".join(dropped)}, f)
    return {"hookSpecificOutput": {"hookEventName": "AfterTool", "tailToolCallRequest": {
        "name": OMITTED, "args": {"id": "P1", "session": sid, "part": "body"}}}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--prunable", default="mcp_fetch_fetch")
    ap.add_argument("--drop", required=True)
    opts = ap.parse_args()
    try:
        out = answer(json.loads(sys.stdin.read()), opts)
    except Exception:  # fail-open: the result reaches the model unchanged
        out = {}
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
