"""The ``omitted`` tool as an MCP server over streamable HTTP, for a gateway
(SPEC §10, §15; ``docs/gateway.md``): register it in the gateway like any
server; it answers from the store the gateway plugin writes.

    python -m toolprune.omitted_server --redis redis://127.0.0.1:6379/0 --port 9811

One tool, defined by the component (``Pruner.omitted_tool("mcp")``). A call
is answered from the scope the gateway plugin puts in its
``toolprune_scope`` argument (:mod:`toolprune.gateway`): without one, or for
an id that scope does not hold, the guest's ``not_found`` text. The answer
is the guest's text whatever the outcome; a store that fails answers the
guest's "try again" text. Log lines (stderr) carry counts only.

Needs the ``mcp`` package (the official SDK; ``toolprune[gateway]``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence

from .gateway import SCOPE_ARGUMENT
from .pruner import Conversation, Pruner
from .store import MemoryStore, Store

log = logging.getLogger("toolprune")


class OmittedService:
    """Answers ``omitted`` calls: ``store_for(scope) → Store``. Thread-safe."""

    def __init__(self, pruner: Pruner, store_for: Any, *, lang: Optional[str] = None) -> None:
        self.pruner = pruner
        self.store_for = store_for
        self.lang = lang
        self.tool = pruner.omitted_tool("mcp", lang)
        self._lock = threading.Lock()
        self._conversations: Dict[str, Conversation] = {}
        self._nobody = pruner.conversation(agent="contextforge", lang=lang, backend=MemoryStore(pruner.settings.defaults().store), log=log.info)

    def _conversation(self, scope: Optional[str]) -> Conversation:
        if not isinstance(scope, str):
            return self._nobody
        try:
            store: Store = self.store_for(scope)
        except ValueError:  # not a scope the store accepts
            return self._nobody
        with self._lock:
            found = self._conversations.get(scope)
            if found is None:
                if len(self._conversations) > 1024:
                    self._conversations.clear()
                found = self.pruner.conversation(agent="contextforge", lang=self.lang, backend=store, log=log.info)
                self._conversations[scope] = found
        return found

    def answer(self, arguments: Optional[Dict[str, Any]]) -> str:
        """The text for the model (the guest's answer, whatever the outcome)."""
        args = dict(arguments or {})
        scope = args.pop(SCOPE_ARGUMENT, None)
        return self._conversation(scope).omitted(args).text


def redis_stores(url: str, *, ttl_s: int = 3600) -> Any:
    """``scope → RedisStore`` on ``url`` (short socket timeouts)."""
    import redis

    from .redis_store import RedisStore

    client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
    return lambda scope: RedisStore(client, scope, ttl_s=ttl_s)


def serve(service: OmittedService, host: str, port: int) -> None:
    """Runs the server (streamable HTTP at ``/mcp``, stateless) until killed."""
    import anyio
    from mcp import types
    from mcp.server.fastmcp import FastMCP

    app = FastMCP("toolprune-omitted", host=host, port=port, stateless_http=True, log_level="WARNING")
    server = app._mcp_server  # the low-level server: the guest's schema, not one derived from a signature
    tool = service.tool

    @server.list_tools()
    async def list_tools() -> List[types.Tool]:
        return [types.Tool(name=tool["name"], description=tool.get("description"), inputSchema=tool["inputSchema"])]

    @server.call_tool(validate_input=False)  # the guest checks the arguments (`invalid`)
    async def call_tool(name: str, arguments: Dict[str, Any]) -> List[types.TextContent]:
        if name != tool["name"]:
            raise ValueError(f"unknown tool {name!r}")
        text = await anyio.to_thread.run_sync(service.answer, arguments)
        return [types.TextContent(type="text", text=text)]

    app.run(transport="streamable-http")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolprune.omitted_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", required=True, help="the store the gateway plugin writes (redis://…)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9811)
    parser.add_argument("--lang", choices=["en", "ja"], default=None)
    parser.add_argument("--ttl", type=int, default=3600, help="seconds (only for new records' bookkeeping)")
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    service = OmittedService(Pruner.load(), redis_stores(ns.redis, ttl_s=ns.ttl), lang=ns.lang)
    serve(service, ns.host, ns.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
