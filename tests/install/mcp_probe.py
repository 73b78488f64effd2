"""A small MCP exchange for scripts/test-packages (stdio, newline-delimited JSON-RPC).

    python3 mcp_probe.py server                  an MCP server with one tool, `fetch`
    python3 mcp_probe.py client -- CMD [ARG…]    starts CMD (e.g. `toolprune mcp-proxy -- …
                                                 mcp_probe.py server`), initializes it, lists
                                                 its tools, prints their names on one line,
                                                 closes its stdin; exit 1 when CMD does not
                                                 answer within 60 s or exits non-zero

Standard library only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading


def server() -> int:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "probe", "version": "1"},
            }
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
            result = {"tools": [{"name": "fetch", "description": "Fetch a URL.", "inputSchema": schema}]}
        else:
            result = {}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    return 0


def client(command: list) -> int:
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    timer = threading.Timer(60, child.kill)
    timer.start()

    def send(message: dict) -> None:
        child.stdin.write((json.dumps(message) + "\n").encode())
        child.stdin.flush()

    def answer(wanted: int) -> dict:
        for line in child.stdout:
            message = json.loads(line)
            if message.get("id") == wanted:
                return message
        raise SystemExit(f"mcp_probe: no answer to request {wanted} (exit {child.wait()})")

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp_probe", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = answer(2)["result"]["tools"]
        print(" ".join(tool["name"] for tool in tools))
        child.stdin.close()
        status = child.wait()
    finally:
        timer.cancel()
    return 0 if status == 0 else 1


def main(argv: list) -> int:
    if argv[:1] == ["server"]:
        return server()
    if argv[:2] == ["client", "--"] and len(argv) > 2:
        return client(argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
