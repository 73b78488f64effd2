"""Stand-in for toolprune's MCP server in the Gemini CLI design probe (not toolprune's code).

One tool, ``omitted(id, session="", part="dropped")``: reads ``<store>/<session>/<id>.json``
(written by gemini_design_hook.py) and returns its ``part`` ("body": the pruned body,
"dropped": the dropped text). Without a session, or for an unknown id, it answers the
SPEC §10 ``not_found`` wording. Used by test_gemini_probe.py's design test to show that the
recommended Gemini flow works: AfterTool tail call for the pruned body, BeforeTool injection of
the session for the model's own ``omitted`` calls.

Run: ``python gemini_design_store_mcp.py --store DIR`` (needs the ``mcp`` package).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

from mcp.server import MCPServer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    opts = ap.parse_args()
    store = Path(opts.store)
    server = MCPServer("toolprune-design-probe")

    @server.tool(
        name="omitted",
        description="Read paragraphs omitted from a tool result: pass the id written in the omission marker.",
        structured_output=False,
    )
    async def omitted(id: str, session: str = "", part: str = "dropped") -> str:
        not_found = (f"There is no text with id={id} here (it may have expired). "
                     "Pass the id written in the omission marker, or call the tool again.")
        if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", session or "-") or not re.fullmatch(r"P\d{1,9}", id):
            return not_found
        path = store / session / f"{id}.json"
        if not session or not path.exists() or part not in ("body", "dropped"):
            return not_found
        return json.loads(path.read_text(encoding="utf-8"))[part]

    asyncio.run(server.run_stdio_async())


if __name__ == "__main__":
    main()
