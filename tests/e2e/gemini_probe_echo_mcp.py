"""A one-tool stdio MCP server for the Gemini CLI probe: ``echo(text, session="")`` returns ``text``.

The probe's AfterTool hook names it in ``hookSpecificOutput.tailToolCallRequest`` to show
that a tail call's result *replaces* the original tool's result (Gemini CLI 0.61). It stands
in for toolprune's own MCP server, which is not part of this branch.

Run with the ``mcp`` package (the fetch venv has it): ``python gemini_probe_echo_mcp.py``.
It also appends one JSON line per call (arguments and the server's environment keys that
mention GEMINI) to the file named by ``--log``, so the probe can see what an MCP server
learns from Gemini CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

from mcp.server import MCPServer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True, help="JSONL file: one line per tools/call")
    opts = ap.parse_args()
    server = MCPServer("probe-echo")

    @server.tool(name="echo", description="Return the given text unchanged.", structured_output=False)
    async def echo(text: str, session: str = "") -> str:
        with open(opts.log, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "tool": "echo",
                        "text_len": len(text),
                        "session": session,
                        "ppid": os.getppid(),
                        "env": {k: v for k, v in os.environ.items() if "GEMINI" in k.upper()},
                    }
                )
                + "\n"
            )
        return text

    asyncio.run(server.run_stdio_async())


if __name__ == "__main__":
    main()
