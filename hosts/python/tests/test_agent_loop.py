"""The README's Python agent loop (examples/agent-loop/agent_loop.py) with a
scripted model: the tool list is static and holds ``omitted`` in the OpenAI
shape, a fetched page comes back pruned with its marker, and the model's
``omitted`` call gets the dropped paragraphs verbatim."""

from __future__ import annotations

import importlib.util
import json
import re
from typing import Any, Dict, List

from conftest import REPO, shared_dir

REQUEST = (
    "In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server "
    "messages? Also, when does the client have to send the MCP-Protocol-Version header?"
)


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("agent_loop", REPO / "examples" / "agent-loop" / "agent_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_agent_loop_prunes_a_page_and_answers_omitted_verbatim() -> None:
    page = (shared_dir() / "corpus" / "mcp-spec-2025-11-25-transports.mdx").read_text(encoding="utf-8")
    loop = load_example()
    assert [t["function"]["name"] for t in loop.TOOLS] == ["fetch", "omitted"]
    assert isinstance(loop.TOOLS[1]["function"]["parameters"], dict), "the OpenAI shape, no conversion by hand"
    seen: List[Dict[str, Any]] = []

    def call_model(messages: List[Dict[str, Any]], _tools: Any) -> Dict[str, Any]:
        seen.append(dict(messages[-1]))
        if len(seen) == 1:
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "fetch", "arguments": '{"url": "x"}'}}]}
        if len(seen) == 2:
            m = re.search(r"\[… paragraphs? (\d+)(?:–(\d+))? omitted", messages[-1]["content"])
            assert m, "a run marker"
            args = json.dumps({"id": "P1", "from": int(m[1]), "to": int(m[2] or m[1])})
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"id": "t2", "type": "function", "function": {"name": "omitted", "arguments": args}}]}
        return {"role": "assistant", "content": "done"}

    reply = loop.chat(REQUEST, [], call_model, lambda _name, _args: page)
    assert reply["content"] == "done"
    body = seen[1]["content"]
    assert body.startswith("[Omitted by relevance: ") and len(body) < len(page)
    read_back = seen[2]["content"]
    assert read_back and read_back.rstrip() in page
    assert read_back.strip() not in body
