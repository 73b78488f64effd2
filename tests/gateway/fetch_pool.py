"""mcp-server-fetch for many gateway sessions at once:
``python fetch_pool.py --port P --size N --taps DIR -- COMMAND ARGS…``.

mcp-server-fetch speaks stdio only, and one stdio process cannot serve several
clients (``mcpgateway.translate`` relays every SSE session into the same process:
their JSON-RPC ids collide and answers are lost under concurrency). This server,
built on the official MCP Python SDK, listens on streamable HTTP (``/mcp``,
stateless) and hands each ``tools/call`` to one of N mcp-server-fetch processes,
each started behind ``tests/mcp-proxy/tap.py`` (``DIR/fetch-tap-K.jsonl``: what
that process received and answered). ``tools/list`` is the first process's, as it
sent it; a call's result goes back as the process returned it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any, Dict, List

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.server.fastmcp import FastMCP

TAP = str(Path(__file__).resolve().parents[1] / "mcp-proxy" / "tap.py")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--taps", required=True)
    parser.add_argument("--python", required=True, help="the interpreter that runs the tap")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    ns = parser.parse_args()
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command

    app = FastMCP("fetch-pool", host="127.0.0.1", port=ns.port, stateless_http=True, log_level="WARNING")
    server = app._mcp_server
    state: Dict[str, Any] = {}

    async def start(stack: contextlib.AsyncExitStack) -> None:
        pool: "asyncio.Queue[ClientSession]" = asyncio.Queue()
        env = {"PATH": "/nonexistent"}  # readabilipy in its pure-Python mode (conftest.py says why)
        for k in range(ns.size):
            params = StdioServerParameters(command=ns.python, args=[TAP, f"{ns.taps}/fetch-tap-{k}.jsonl", "--", *command], env=env)
            r, w = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(r, w))
            await session.initialize()
            pool.put_nowait(session)
        first = await pool.get()
        state["tools"] = (await first.list_tools()).tools
        pool.put_nowait(first)
        state["pool"] = pool

    @server.list_tools()
    async def list_tools() -> List[types.Tool]:
        return list(state["tools"])

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: Dict[str, Any]) -> types.CallToolResult:
        pool = state["pool"]
        session = await pool.get()
        try:
            return await session.call_tool(name, arguments)
        finally:
            pool.put_nowait(session)

    starlette = app.streamable_http_app()
    inner = starlette.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            await start(stack)
            async with inner(a):
                print("fetch-pool: ready", file=sys.stderr, flush=True)
                yield

    starlette.router.lifespan_context = lifespan
    import uvicorn

    uvicorn.run(starlette, host="127.0.0.1", port=ns.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
