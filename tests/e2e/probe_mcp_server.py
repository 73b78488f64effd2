"""A probe MCP server (stdio, official Python ``mcp`` SDK 2.x) that records what a client sends.

Run by the client as ``python probe_mcp_server.py LOG``. Appends JSON lines to LOG:

- ``{"event": "start", "argv": [...], "cwd": "...", "env": {...}}`` once at start
  (the whole environment the client gave the process);
- ``{"event": "request", "method": "...", "params": {...}}`` for every request and
  notification, with the raw, unvalidated params (so ``_meta`` and arguments the
  schema does not declare are visible).

It offers one tool, ``omitted`` (``{id, from, to}``, the shape of toolprune's
`omitted` tool, SPEC §10), that answers ``omitted probe: <arguments as JSON>`` with
the *raw* arguments of the call — keys the schema does not declare included (a
``session_id`` a PreToolUse hook injected, say) — so the model's side shows what
the server received.

Needs the ``mcp`` package (the e2e venv has it); the test suite itself does not.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Annotated, Any

from mcp.server import MCPServer, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from pydantic import Field

LOG = sys.argv[1] if len(sys.argv) > 1 else os.devnull


def _log(obj: dict[str, Any]) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj, default=repr) + "\n")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True)
    return value


server = MCPServer("toolprune-probe", version="0")


async def record(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: log every inbound request or notification with its raw params.

    A ``tools/call`` of ``omitted`` is answered here, before the SDK validates the
    arguments, so the answer echoes them exactly as received.
    """
    params = _jsonable(ctx.params)
    _log({"event": "request", "method": ctx.method, "params": params})
    if ctx.method == "tools/call" and isinstance(params, dict) and params.get("name") == "omitted":
        echoed = json.dumps(params.get("arguments") or {}, sort_keys=True)
        return {"content": [{"type": "text", "text": "omitted probe: " + echoed}], "isError": False}
    return await call_next(ctx)


server.middleware.append(record)


@server.tool(
    name="omitted",
    description="Probe: read omitted paragraphs back (records its arguments).",
    structured_output=False,  # a text result, like toolprune's omitted (no outputSchema)
)
async def omitted(
    id: Annotated[str, Field(description="the id from the omission header, e.g. P1")],
    from_: Annotated[int, Field(alias="from", description="first paragraph, 0-based")],
    to: Annotated[int, Field(description="last paragraph, inclusive")],
) -> str:
    """Declares the tool's schema; calls are answered by `record`."""
    raise NotImplementedError("answered by the middleware")


if __name__ == "__main__":
    _log({"event": "start", "argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)})
    server.run()
