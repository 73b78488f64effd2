"""`toolprune mcp-proxy --url` in front of the real server-everything speaking
Streamable HTTP (on 127.0.0.1 only), with the official Python SDK client on the
proxy's stdio: the result is pruned and `omitted` reads it back; what is not pruned
is the same as over a direct HTTP connection (at the level of the SDK's model:
over HTTP the proxy goes through rmcp's typed transport, docs/mcp-proxy.md).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from mcp.client.client import Client

from conftest import HERE, stack
from test_everything import REQUEST, long_message
from test_fetch import text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_on_loopback_only(port: int) -> bool:
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:] + Path("/proc/net/tcp6").read_text().splitlines()[1:]
    local = [r.split()[1] for r in rows if r.split()[3] == "0A" and int(r.split()[1].rsplit(":", 1)[1], 16) == port]
    return bool(local) and all(a.startswith("0100007F:") for a in local)


@pytest.fixture
def http_everything(tools, user):
    port = free_port()
    proc = subprocess.Popen(
        ["node", "--require", str(HERE / "loopback.cjs"), tools.everything, "streamableHttp"],
        env={**user.env(), "PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    assert listening_on_loopback_only(port), "the test server must listen on 127.0.0.1 only"
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


async def test_a_streamable_http_server_is_pruned_and_read_back_and_the_rest_matches_a_direct_connection(tools, toolprune, user, http_everything):
    user.config('prunable = ["echo"]\nthreshold = 0.3\n[proxy]\nbasis = "argument"\n')
    s = stack(toolprune, user, [], proxy_args=("--name", "everything", "--url", http_everything))
    # `stack` puts the upstream after `--`; with --url there is none.
    s.params.args = s.params.args[: s.params.args.index("mcp-proxy") + 5]
    async with Client(s.params, mode="legacy") as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed[-1] == "omitted" and "echo" in listed
        result = await client.call_tool("echo", {"message": long_message(), "user_request": REQUEST})
        body = text_of(result)
        assert body.startswith("[Omitted by relevance:")
        pid = body.split("id=")[1].split("]")[0]
        back = await client.call_tool("omitted", {"id": pid, "from": 3, "to": 3})
        assert text_of(back).startswith("Paragraph 3 (0): dune0 ")
        resources = await client.list_resources()
        via_proxy = await client.read_resource(resources.resources[0].uri)
        prompts = await client.list_prompts()
        image = await client.call_tool("get-tiny-image", {})
    async with Client(http_everything, mode="legacy") as direct:
        direct_read = await direct.read_resource(resources.resources[0].uri)
        direct_prompts = await direct.list_prompts()
        direct_image = await direct.call_tool("get-tiny-image", {})
    assert via_proxy.model_dump() == direct_read.model_dump()
    assert prompts.model_dump() == direct_prompts.model_dump()
    assert image.model_dump() == direct_image.model_dump()
