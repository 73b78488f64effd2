// The README's JavaScript agent loop (examples/agent-loop/agent_loop.mjs)
// with a scripted model: the tool list is static and holds `omitted` in the
// Anthropic shape, a fetched page comes back pruned with its marker, and the
// model's `omitted` call gets the dropped paragraphs verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const shared = process.env.TOOLPRUNE_SHARED ?? here('../../../../shared/');
const PAGE = readFileSync(join(shared, 'corpus/mcp-spec-2025-11-25-transports.mdx'), 'utf8');
const REQUEST = 'In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server messages? Also, when does the client have to send the MCP-Protocol-Version header?';

// The example imports the published name; point it at this package's source.
async function loadExample() {
  const source = readFileSync(here('../../../examples/agent-loop/agent_loop.mjs'), 'utf8');
  const dir = mkdtempSync(join(tmpdir(), 'toolprune-loop-'));
  const file = join(dir, 'agent_loop.mjs');
  writeFileSync(file, source.replace("from 'toolprune'", `from ${JSON.stringify(pathToFileURL(here('../src/index.js')).href)}`));
  return import(pathToFileURL(file).href);
}

function firstRun(body) {
  const m = body.match(/\[… paragraphs? (\d+)(?:–(\d+))? omitted/);
  assert.ok(m, 'a run marker');
  return [Number(m[1]), Number(m[2] ?? m[1])];
}

test('the README agent loop prunes a page and answers omitted verbatim', async () => {
  const { chat, tools } = await loadExample();
  assert.equal(tools.length, 2);
  assert.equal(tools[1].name, 'omitted');
  assert.equal(typeof tools[1].input_schema, 'object', 'the Anthropic shape, no conversion by hand');
  const seen = [];
  let step = 0;
  const callModel = async (messages) => {
    step += 1;
    seen.push(structuredClone(messages.at(-1)));
    if (step === 1) return { content: [{ type: 'tool_use', id: 't1', name: 'fetch', input: { url: 'x' } }] };
    if (step === 2) {
      const [from, to] = firstRun(messages.at(-1).content[0].content);
      return { content: [{ type: 'tool_use', id: 't2', name: 'omitted', input: { id: 'P1', from, to } }] };
    }
    return { content: [{ type: 'text', text: 'done' }] };
  };
  const reply = await chat(REQUEST, [], callModel, async () => PAGE);
  assert.equal(reply.content[0].text, 'done');
  const body = seen[1].content[0].content;
  assert.ok(body.startsWith('[Omitted by relevance: '), 'the page came back pruned');
  const readBack = seen[2].content[0].content;
  assert.ok(readBack.length > 0 && PAGE.includes(readBack.trimEnd()), 'omitted gives dropped text verbatim');
  assert.ok(!body.includes(readBack.trim()));
});

test('the README agent loop: the model fetching the same page again gets it whole (the repeat gate)', async () => {
  const { chat } = await loadExample();
  const seen = [];
  let step = 0;
  const callModel = async (messages) => {
    step += 1;
    seen.push(structuredClone(messages.at(-1)));
    if (step <= 2) return { content: [{ type: 'tool_use', id: `t${step}`, name: 'fetch', input: { url: 'https://example.com/streamable-http' } }] };
    return { content: [{ type: 'text', text: 'done' }] };
  };
  await chat(REQUEST, [], callModel, async () => PAGE);
  assert.ok(seen[1].content[0].content.startsWith('[Omitted by relevance: '), 'the first fetch was pruned');
  assert.equal(seen[2].content[0].content, PAGE, 'the second, identical fetch passes unpruned');
});
