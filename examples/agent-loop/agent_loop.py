"""A whole agent loop with toolprune (README "Use it in your own agent"): one
conversation per chat, a static tool list with ``omitted`` in it, every tool
result through the turn, every ``omitted`` call answered by the conversation.
The model speaks the OpenAI chat-completions shape; any SDK works the same
way. ``call_model(messages, tools)`` and ``run_tool(name, args)`` are yours;
hosts/python/tests/test_agent_loop.py drives this file with a scripted model."""

import json

from toolprune import Pruner

# README:begin
pruner = Pruner.load()  # scores offline; for Jev: scorer="jev" (hosts/python/README.md)
conversation = pruner.conversation(enabled=True)
PRUNABLE = {"fetch"}  # tools whose results may be pruned
FETCH = {"type": "function", "function": {"name": "fetch", "description": "Fetch a web page as markdown.",
         "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}}
TOOLS = [FETCH, conversation.omitted_tool("openai")]


def chat(user_message, messages, call_model, run_tool):
    turn = conversation.turn(user_message)  # the basis: the user's own words
    messages.append({"role": "user", "content": user_message})
    while True:
        reply = call_model(messages, TOOLS)  # an assistant message: {"content", "tool_calls"}
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply
        for call in reply["tool_calls"]:
            name, args = call["function"]["name"], call["function"]["arguments"]
            if name == pruner.omitted_tool_name:
                text = conversation.omitted(args).text  # every outcome's text goes back
            else:
                raw = run_tool(name, json.loads(args))
                # arguments: the same call again after a pruned one passes whole (the repeat gate)
                text = turn.on_tool_result(tool=name, text=raw, prunable=name in PRUNABLE, arguments=args).body
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
# README:end
