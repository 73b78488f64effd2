// The OpenCode plugin (`toolprune/opencode`) driven with OpenCode's hook
// shapes (tests/e2e/FACTS-opencode.md), and its on-disk store in the Rust
// CLI's format (src/store.js). The real client runs it in
// tests/e2e/test_toolprune_opencode.py.

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Pruner } from '../src/index.js';
import { ToolprunePlugin } from '../src/opencode.js';
import { REQUEST_KEPT_CHARS, Root, sessionName } from '../src/store.js';
import { notes, readShared, scripted, REQUEST as NOTES_REQUEST } from './helpers.js';

const PAGE = readShared('corpus/nvm-README.md');
const REQUEST = 'How do I set a default Node version with nvm alias?';

let scratch;
const savedEnv = { ...process.env };

function freshEnv(extra = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'toolprune-opencode-'));
  for (const key of Object.keys(process.env)) if (key.startsWith('TOOLPRUNE_') || key.startsWith('XDG_')) delete process.env[key];
  process.env.TOOLPRUNE_STORE_DIR = join(dir, 'store');
  process.env.HOME = dir;
  process.env.XDG_CONFIG_HOME = join(dir, 'config');
  Object.assign(process.env, extra);
  return dir;
}

async function plugin(extra) {
  scratch = freshEnv(extra);
  const hooks = await ToolprunePlugin({}, {});
  await hooks.config?.({ mcp: { docs: { type: 'local', command: ['x'] } } });
  return hooks;
}

const say = (hooks, sessionID, text) =>
  hooks['chat.message']({ sessionID }, { message: { role: 'user', sessionID }, parts: [{ type: 'text', text }] });

let fetches = 0;

/** A `tool.execute.after` of `tool` with `args` (default: a URL of its own, so that no call repeats another). */
async function fetched(hooks, sessionID, text, tool = 'docs_fetch', args = { url: `http://127.0.0.1/page/${(fetches += 1)}` }) {
  const output = { content: [{ type: 'text', text }], isError: false };
  await hooks['tool.execute.after']({ tool, sessionID, callID: `call_${fetches}`, args }, output);
  return output;
}

describe('the OpenCode plugin', () => {
  before(() => {});
  after(() => {
    process.env = savedEnv;
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('a prunable MCP result is pruned in output.content, kept text verbatim, with the marker and a stored id', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_a', REQUEST);
    const output = await fetched(hooks, 'ses_a', PAGE);
    const body = output.content[0].text;
    assert.equal(output.content.length, 1);
    assert.ok(body.length < PAGE.length, 'pruned');
    assert.match(body, /P1/);
    // Every kept paragraph is byte-identical to one of the page's.
    const paragraphs = new Set(PAGE.split('\n\n'));
    const kept = body.split('\n\n').filter((p) => paragraphs.has(p));
    assert.ok(kept.length > 3);
    // The store holds it in the Rust CLI's format.
    const dir = join(process.env.TOOLPRUNE_STORE_DIR, sessionName('opencode', 'ses_a'));
    assert.deepEqual(readdirSync(dir).sort(), ['P1.json', 'request.json', 'state.json']);
    const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8'));
    assert.equal(state.count, 1);
    const record = JSON.parse(readFileSync(join(dir, 'P1.json'), 'utf8'));
    assert.deepEqual(Object.keys(record), ['id', 'chars', 'call', 'data']);
    assert.deepEqual(state.calls, { 1: record.call }, 'the index holds the call key, as the Rust CLI writes it');
    assert.match(record.call, /^[0-9a-f]{32}$/, 'a key of the call, never its arguments');
    assert.equal(JSON.parse(readFileSync(join(dir, 'request.json'), 'utf8')).request, REQUEST);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, 'P1.json')).mode & 0o777, 0o600);
    // The log line carries the session tag and the id, counts only.
    const log = readFileSync(join(process.env.TOOLPRUNE_STORE_DIR, 'toolprune.log'), 'utf8');
    assert.match(log, /^\d+ session=[0-9a-f]{16} id=P1 tool prune: agent=opencode name=docs_fetch outcome=ok /m);
    assert.ok(!log.includes('nvm alias default'), 'no text in the log');
  });

  test('the same call again after its result was pruned passes unpruned (gate repeated, a log line), also in a new plugin', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_rep', REQUEST);
    const args = { url: 'http://127.0.0.1/nvm', max_length: 50000 };
    assert.match((await fetched(hooks, 'ses_rep', PAGE, 'docs_fetch', args)).content[0].text, /id=P1(?!\d)/);
    // The model asks again (keys in another order: the same arguments): it gets everything.
    const again = await fetched(hooks, 'ses_rep', PAGE, 'docs_fetch', { max_length: 50000, url: 'http://127.0.0.1/nvm' });
    assert.equal(again.content[0].text, PAGE);
    // A process started later (`opencode run --continue`) knows it from the store.
    const later = await ToolprunePlugin({}, {});
    await later.config?.({ mcp: { docs: { type: 'local', command: ['x'] } } });
    assert.equal((await fetched(later, 'ses_rep', PAGE, 'docs_fetch', args)).content[0].text, PAGE);
    // Other arguments, or another session, are pruned as usual.
    assert.match((await fetched(hooks, 'ses_rep', PAGE, 'docs_fetch', { url: 'http://127.0.0.1/other' })).content[0].text, /id=P2(?!\d)/);
    await say(hooks, 'ses_rep2', REQUEST);
    assert.match((await fetched(hooks, 'ses_rep2', PAGE, 'docs_fetch', args)).content[0].text, /id=P1(?!\d)/);
    const log = readFileSync(join(process.env.TOOLPRUNE_STORE_DIR, 'toolprune.log'), 'utf8').split('\n');
    const repeats = log.filter((l) => / name=docs_fetch outcome=skipped /.test(l));
    assert.equal(repeats.length, 2, log.join('\n'));
    for (const line of repeats) {
      assert.match(line, /^\d+ session=[0-9a-f]{16} tool prune: agent=opencode name=docs_fetch outcome=skipped gate=repeated .*paragraphs=- /);
      assert.ok(!line.includes('nvm') && !line.includes('50000'), 'no arguments in the log');
    }
  });

  test('omitted answers the dropped text verbatim from the store, also from another process (a new plugin)', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_b', REQUEST);
    const body = (await fetched(hooks, 'ses_b', PAGE)).content[0].text;
    const tool = Object.values(hooks.tool)[0];
    assert.deepEqual(Object.keys(hooks.tool), ['omitted']);
    assert.deepEqual(Object.keys(tool.args).sort(), ['from', 'id', 'to']);
    const answer = await tool.execute({ id: 'P1', from: 0, to: 5 }, { sessionID: 'ses_b' });
    // The page's first paragraphs were dropped (the logo, badges): they come back byte for byte.
    const first = PAGE.split('\n\n')[0];
    assert.ok(!body.includes(first));
    assert.ok(answer.includes(first), 'dropped paragraphs come back verbatim');
    const paragraphs = [first];
    // A second plugin (as `opencode run --continue` starts one) reads the same store.
    const again = await ToolprunePlugin({}, {});
    assert.equal(await Object.values(again.tool)[0].execute({ id: 'P1', from: 0, to: 5 }, { sessionID: 'ses_b' }), answer);
    // Another session never reads it.
    const other = await tool.execute({ id: 'P1', from: 0, to: 5 }, { sessionID: 'ses_other' });
    assert.ok(!other.includes(paragraphs[0]));
  });

  test('ids go on across plugin instances of one session and start again in another session', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_c', REQUEST);
    assert.match((await fetched(hooks, 'ses_c', PAGE)).content[0].text, /P1/);
    const again = await ToolprunePlugin({}, {});
    await say(again, 'ses_c', REQUEST);
    assert.match((await fetched(again, 'ses_c', PAGE)).content[0].text, /P2/);
    await say(again, 'ses_d', REQUEST);
    assert.match((await fetched(again, 'ses_d', PAGE)).content[0].text, /P1/);
  });

  test('results of one session pruned at once get distinct ids, each stored once', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_par', REQUEST);
    const outputs = await Promise.all([0, 1, 2].map(() => fetched(hooks, 'ses_par', PAGE)));
    const ids = outputs.map((o) => o.content[0].text.match(/id=(P\d+)\]/)[1]).sort();
    assert.deepEqual(ids, ['P1', 'P2', 'P3']);
    const dir = join(process.env.TOOLPRUNE_STORE_DIR, sessionName('opencode', 'ses_par'));
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).records.map(([n]) => n), [1, 2, 3]);
  });

  test('a tool that is not prunable, a non-text or several-block result, an error result pass unchanged', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_e', REQUEST);
    assert.equal((await fetched(hooks, 'ses_e', PAGE, 'docs_search')).content[0].text, PAGE);
    for (const content of [
      [{ type: 'image', data: 'x', mimeType: 'image/png' }],
      [{ type: 'text', text: PAGE }, { type: 'text', text: PAGE }],
    ]) {
      const output = { content, isError: false };
      await hooks['tool.execute.after']({ tool: 'docs_fetch', sessionID: 'ses_e', callID: 'c', args: {} }, output);
      assert.equal(output.content, content);
    }
    const failed = { content: [{ type: 'text', text: PAGE }], isError: true };
    await hooks['tool.execute.after']({ tool: 'docs_fetch', sessionID: 'ses_e', callID: 'c', args: {} }, failed);
    assert.equal(failed.content[0].text, PAGE);
    // A built-in tool's result shape is left alone.
    const builtin = { title: 't', metadata: {}, output: PAGE };
    await hooks['tool.execute.after']({ tool: 'webfetch', sessionID: 'ses_e', callID: 'c', args: {} }, builtin);
    assert.equal(builtin.output, PAGE);
  });

  test('a broken store passes the page through unchanged and the hooks do not throw', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolprune-opencode-broken-'));
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    let hooks = await plugin({ TOOLPRUNE_STORE_DIR: file });
    assert.deepEqual(hooks, {});
    // A root that is fine at start and a session that breaks later (state.json corrupt).
    hooks = await plugin();
    await say(hooks, 'ses_f', REQUEST);
    const session = join(process.env.TOOLPRUNE_STORE_DIR, sessionName('opencode', 'ses_f'));
    writeFileSync(join(session, 'state.json'), '{not json');
    const output = await fetched(hooks, 'ses_f', PAGE);
    assert.equal(output.content[0].text, PAGE);
    const log = readFileSync(join(process.env.TOOLPRUNE_STORE_DIR, 'toolprune.log'), 'utf8');
    assert.match(log, /tool prune: .*outcome=failed reason=store/);
    // A session directory others can read is refused: the page passes.
    hooks = await plugin();
    await say(hooks, 'ses_g', REQUEST);
    chmodSync(join(process.env.TOOLPRUNE_STORE_DIR, sessionName('opencode', 'ses_g')), 0o755);
    const open = await ToolprunePlugin({}, {});
    await say(open, 'ses_g', REQUEST);
    assert.equal((await fetched(open, 'ses_g', PAGE)).content[0].text, PAGE);
    rmSync(dir, { recursive: true, force: true });
  });

  test('at start, sessions untouched for max_age_hours are swept, at most hourly; fresh ones stay', async () => {
    let hooks = await plugin();
    await say(hooks, 'ses_old', REQUEST);
    await say(hooks, 'ses_new', REQUEST);
    const root = process.env.TOOLPRUNE_STORE_DIR;
    const old = join(root, sessionName('opencode', 'ses_old'));
    const past = new Date(Date.now() - 49 * 3600 * 1000);
    for (const f of readdirSync(old)) utimesSync(join(old, f), past, past);
    utimesSync(old, past, past);
    // The first start swept already (an empty root): within the hour nothing more goes.
    hooks = await ToolprunePlugin({}, {});
    assert.ok(existsSync(old));
    utimesSync(join(root, '.swept'), past, past);
    hooks = await ToolprunePlugin({}, {});
    assert.ok(!existsSync(old), 'the stale session is gone');
    assert.ok(existsSync(join(root, sessionName('opencode', 'ses_new'))), 'the fresh one stays');
  });

  test('a session OpenCode deletes loses its records and keeps its counter; an old id then answers not_found', async () => {
    const hooks = await plugin();
    await say(hooks, 'ses_del', REQUEST);
    assert.match((await fetched(hooks, 'ses_del', PAGE)).content[0].text, /P1/);
    const dir = join(process.env.TOOLPRUNE_STORE_DIR, sessionName('opencode', 'ses_del'));
    await hooks.event({ event: { type: 'session.deleted', properties: { sessionID: 'ses_del', info: { id: 'ses_del' } } } });
    assert.deepEqual(readdirSync(dir), ['state.json']);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')), { count: 1, records: [] });
    const answer = await hooks.tool.omitted.execute({ id: 'P1', from: 0, to: 5 }, { sessionID: 'ses_del' });
    assert.match(answer, /^There is no text with id=P1/);
    // Another session's deletion, or one never seen, creates nothing.
    await hooks.event({ event: { type: 'session.deleted', properties: { sessionID: 'ses_never', info: { id: 'ses_never' } } } });
    assert.ok(!existsSync(join(process.env.TOOLPRUNE_STORE_DIR, sessionName('opencode', 'ses_never'))));
    await hooks.event({ event: { type: 'session.updated', properties: {} } });
  });

  test('a bad config file turns the plugin into hooks that change nothing', async () => {
    scratch = freshEnv();
    process.env.TOOLPRUNE_CONFIG = join(scratch, 'config.toml');
    writeFileSync(process.env.TOOLPRUNE_CONFIG, 'threshold = "lots"\n');
    const hooks = await ToolprunePlugin({}, {});
    assert.deepEqual(hooks, {});
  });

  test('a config file with a byte that is not UTF-8 (in a comment) turns the plugin off, as the Rust CLI and hooks refuse it', async () => {
    scratch = freshEnv();
    process.env.TOOLPRUNE_CONFIG = join(scratch, 'config.toml');
    writeFileSync(process.env.TOOLPRUNE_CONFIG, Buffer.from('threshold = 0.3\n# caf\xe9\n', 'latin1'));
    assert.deepEqual(await ToolprunePlugin({}, {}), {});
  });

  test('a file reader of a server named fetch is never pruned, whatever glob its names match (SPEC §2)', async () => {
    scratch = freshEnv();
    process.env.TOOLPRUNE_CONFIG = join(scratch, 'config.toml');
    writeFileSync(process.env.TOOLPRUNE_CONFIG, 'prunable = ["fetch_*", "mcp__fetch__*", "mcp_fetch_*"]\n');
    const hooks = await ToolprunePlugin({}, {});
    await hooks.config?.({ mcp: { fetch: { type: 'local', command: ['x'] } } });
    await say(hooks, 'ses_r', REQUEST);
    for (const tool of ['fetch_read_file', 'fetch_read_text_file', 'fetch_edit_file']) {
      assert.equal((await fetched(hooks, 'ses_r', PAGE, tool)).content[0].text, PAGE, tool);
    }
    assert.ok((await fetched(hooks, 'ses_r', PAGE, 'fetch_fetch')).content[0].text.length < PAGE.length, 'the control: fetch_fetch is pruned');
  });

  test("OpenCode's config that takes omitted from the model (tools or permission) leaves every result whole; one that keeps it, pruned", async () => {
    const pruned = async (cfg) => {
      scratch = freshEnv();
      const hooks = await ToolprunePlugin({}, {});
      await hooks.config({ mcp: { docs: { type: 'local', command: ['x'] } }, ...cfg });
      await say(hooks, 'ses_w', REQUEST);
      return (await fetched(hooks, 'ses_w', PAGE)).content[0].text !== PAGE;
    };
    const gone = [
      { tools: { omitted: false } },
      { tools: { 'omit*': false } },
      { permission: 'deny' },
      { permission: { '*': 'deny', read: 'allow' } },
      { permission: { omitted: { '*': 'deny' } } },
      { tools: { omitted: true }, permission: { omitted: 'deny' } },
    ];
    for (const cfg of gone) assert.equal(await pruned(cfg), false, JSON.stringify(cfg));
    const kept = [
      {},
      { tools: { omitted: true, websearch: false } },
      { tools: { '*': false, omitted: true } },
      { permission: { '*': 'ask' } },
      { permission: { '*': 'deny', omitted: 'allow' } },
      { permission: { omitted: { '*': 'deny', 'P1*': 'allow' } } },
      { tools: { omitted: false }, permission: { omitted: 'allow' } },
      { permission: 42, tools: 'x' },
    ];
    for (const cfg of kept) assert.equal(await pruned(cfg), true, JSON.stringify(cfg));
  });

  test('disabled in the config: nothing is pruned', async () => {
    scratch = freshEnv();
    process.env.TOOLPRUNE_CONFIG = join(scratch, 'config.toml');
    writeFileSync(process.env.TOOLPRUNE_CONFIG, 'enabled = false\n');
    const hooks = await ToolprunePlugin({}, {});
    await say(hooks, 'ses_h', REQUEST);
    assert.equal((await fetched(hooks, 'ses_h', PAGE)).content[0].text, PAGE);
  });
});

describe('resultStore (a conversation keeping its records elsewhere)', () => {
  test('a store whose push throws fails the result open with reason=store and hands out no id', async () => {
    const pruner = await Pruner.load();
    const lines = [];
    const store = { count: () => 0, push: () => { throw new Error('disk full'); }, find: () => undefined };
    const c = pruner.conversation({ enabled: true, resultStore: store, log: (l) => lines.push(l) });
    const result = await c.turn(REQUEST).onToolResult({ tool: 'fetch', prunable: true, text: PAGE });
    assert.equal(result.body, PAGE);
    assert.equal(result.id, null);
    assert.equal(result.failure.reason, 'store');
    assert.match(lines.at(-1), /outcome=failed reason=store/);
    pruner.close();
  });

  test('a huge prompt is recorded by its first 65,536 characters, whole characters, as the Rust CLI keeps it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolprune-request-'));
    const session = new Root(join(dir, 'store')).session('test', 'huge');
    const prompt = '質問😀'.repeat(300_000);
    session.recordRequest(prompt);
    const kept = session.request().request;
    assert.equal([...kept].length, REQUEST_KEPT_CHARS);
    assert.ok(prompt.startsWith(kept));
    session.recordRequest('short');
    assert.equal(session.request().request, 'short');
    rmSync(dir, { recursive: true, force: true });
  });

  test('records go to the store numbered from its counter; omitted reads them back from it', async () => {
    const pruner = await Pruner.load();
    const dir = mkdtempSync(join(tmpdir(), 'toolprune-rs-'));
    const session = new Root(join(dir, 'store')).session('test', 's1');
    const c = pruner.conversation({ enabled: true, resultStore: session, log: () => {} });
    const first = await c.turn(REQUEST).onToolResult({ tool: 'fetch', prunable: true, text: PAGE });
    assert.equal(first.id, 'P1');
    const d = pruner.conversation({ enabled: true, resultStore: session, log: () => {} });
    const second = await d.turn(REQUEST).onToolResult({ tool: 'fetch', prunable: true, text: PAGE });
    assert.equal(second.id, 'P2');
    assert.equal(d.omitted({ id: 'P1', from: 0, to: 5 }).outcome, 'ok');
    assert.equal(d.count, 2);
    rmSync(dir, { recursive: true, force: true });
    pruner.close();
  });

  test('call keys live in the index as the Rust CLI keeps them: evicted with their records, dropped at the end, read from a Rust-written state', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolprune-calls-'));
    const root = new Root(join(dir, 'store'));
    const session = root.session('test', 'calls', { maxRecords: 2, maxChars: 1000 });
    const rec = (n, call) => ({ id: `P${n}`, chars: 10n, call, data: `d${n}` });
    session.push(rec(1, 'key1'));
    session.push(rec(2, undefined));
    assert.deepEqual(session.calls(), ['key1']);
    session.push(rec(3, 'key3'));
    assert.deepEqual(session.calls(), ['key3'], 'P1 was evicted, and its key with it');
    const state = JSON.parse(readFileSync(join(session.path, 'state.json'), 'utf8'));
    assert.deepEqual(state, { count: 3, records: [[2, 10], [3, 10]], calls: { 3: 'key3' } });
    assert.equal(session.find('P3').call, 'key3');
    // Another process (a new Session on the same directory) sees the same keys.
    assert.deepEqual(root.existingSession('test', 'calls').calls(), ['key3']);
    session.end();
    assert.deepEqual(session.calls(), []);
    assert.deepEqual(JSON.parse(readFileSync(join(session.path, 'state.json'), 'utf8')), { count: 3, records: [] });
    // A state the Rust CLI wrote (cli/src/store.rs: `calls` keyed by the number as text).
    const rust = root.session('test', 'rust');
    writeFileSync(join(rust.path, 'state.json'), '{"count":2,"records":[[1,5],[2,7]],"calls":{"2":"abc"}}');
    assert.deepEqual(rust.calls(), ['abc']);
    writeFileSync(join(rust.path, 'state.json'), '{"count":2,"records":[[1,5],[2,7]],"calls":{"2":7}}');
    assert.throws(() => rust.calls(), /corrupt/);
    rmSync(dir, { recursive: true, force: true });
  });

  test('results scored at once by a slow scorer get distinct ids in the store, in the order they finish', async () => {
    const pruner = await Pruner.load();
    const dir = mkdtempSync(join(tmpdir(), 'toolprune-rs-'));
    const session = new Root(join(dir, 'store')).session('test', 's2');
    const c = pruner.conversation({ enabled: true, resultStore: session, log: () => {} });
    const turn = c.turn(NOTES_REQUEST);
    // Delays far apart: the guest calls that start each result take tens of ms on a loaded machine.
    const results = await Promise.all([600, 100, 350].map((ms) => turn.onToolResult({ tool: 'fetch', prunable: true, text: notes(40), scorer: scripted({ ms }) })));
    assert.deepEqual(results.map((r) => r.id), ['P3', 'P1', 'P2']);
    assert.equal(session.count(), 3);
    for (const r of results) assert.equal(session.find(r.id).id, r.id);
    rmSync(dir, { recursive: true, force: true });
    pruner.close();
  });
});
