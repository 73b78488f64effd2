// A whole agent loop with toolprune (README "Use it in your own agent"): one
// conversation per chat, a static tool list with `omitted` in it, every tool
// result through the turn, every `omitted` call answered by the conversation.
// The model speaks the Anthropic Messages shape; any SDK works the same way.
// `callModel(messages, tools)` and `runTool(call)` are yours; the test in
// hosts/js/test/agent-loop.test.js drives this file with a scripted model.
import { Pruner } from 'toolprune';

// README:begin
const pruner = await Pruner.load(); // scores offline, in the guest; Jev: JevScorer.fromEnv + await turn.onToolResult (hosts/js/README.md)
const conversation = pruner.conversation({ enabled: true });
const PRUNABLE = new Set(['fetch']); // tools whose results may be pruned
export const tools = [fetchTool(), conversation.omittedTool('anthropic')];

export async function chat(userMessage, messages, callModel, runTool) {
  const turn = conversation.turn(userMessage); // the basis: the user's own words
  messages.push({ role: 'user', content: userMessage });
  for (;;) {
    const reply = await callModel(messages, tools);
    messages.push({ role: 'assistant', content: reply.content });
    const calls = reply.content.filter((block) => block.type === 'tool_use');
    if (calls.length === 0) return reply;
    const results = [];
    for (const call of calls) {
      const text = call.name === pruner.omittedToolName
        ? conversation.omitted(call.input).text // every outcome's text goes back
        : turn.onToolResultSync({ // one guest call; `arguments`: a repeated call gets everything
            tool: call.name, text: await runTool(call), prunable: PRUNABLE.has(call.name), arguments: call.input,
          }).body;
      results.push({ type: 'tool_result', tool_use_id: call.id, content: text });
    }
    messages.push({ role: 'user', content: results });
  }
}
// README:end

function fetchTool() {
  return {
    name: 'fetch',
    description: 'Fetch a web page as markdown.',
    input_schema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
  };
}
