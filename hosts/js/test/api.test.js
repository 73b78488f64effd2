// The public API (host design "Contract 0.3"): conversations and turns,
// skipped results and their gates, ids across turns and under concurrency,
// the bounded store, thresholds refused, the deadline and cancellation for
// every scorer, scorer failures, the opt-in report, the omitted tool in
// every dialect, inspection, and the guest's defaults.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { Pruner } from '../src/index.js';
import { REQUEST, capture, notes, readShared, scripted } from './helpers.js';

const pruner = await Pruner.load();
const TEXT = notes(12);

test('pruning is off unless enabled: skipped with its gate, the input itself back, no line', async () => {
  const log = capture();
  const turn = pruner.conversation({ log }).turn(REQUEST);
  const r = await turn.onToolResult({ tool: 'fetch', prunable: true, text: TEXT });
  assert.equal(r.outcome, 'skipped');
  assert.equal(r.gate, 'disabled');
  assert.equal(r.id, null);
  assert.ok(r.body === TEXT && r.raw === TEXT, 'the very same string');
  assert.equal(r.logLine, null);
  assert.deepEqual(log.lines, []);
});

test('each gate is named, and only an ok result has an id', async () => {
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, scorer: scripted(), log });
  const turn = conversation.turn(REQUEST);
  const gates = [
    [{ text: TEXT, ok: false, prunable: true }, 'tool_failed'],
    [{ text: TEXT }, 'not_prunable'],
    [{ text: notes(3), prunable: true }, 'too_short'],
  ];
  for (const [result, gate] of gates) {
    const r = turn.onToolResultSync(result);
    assert.deepEqual([r.outcome, r.gate, r.id, r.logLine], ['skipped', gate, null, null]);
  }
  const pruned = turn.onToolResultSync({ text: TEXT, prunable: true });
  assert.deepEqual([pruned.outcome, pruned.gate, pruned.id], ['ok', null, 'P1']);
  assert.ok(pruned.body.length < TEXT.length);
  const kept = turn.onToolResultSync({ text: TEXT, prunable: true, scorer: scripted({ score: () => 1 }) });
  assert.deepEqual([kept.outcome, kept.id], ['nothing_dropped', null]);
  assert.ok(kept.body === TEXT);
  assert.equal(log.lines.length, 2, 'lines only once the cheap gates passed');
});

test('ids count across turns; an old id still answers its own text', async () => {
  const conversation = pruner.conversation({ enabled: true, scorer: scripted(), log: capture() });
  const first = await conversation.turn(REQUEST).onToolResult({ text: notes(12, 'Alpha'), prunable: true });
  const second = await conversation.turn(REQUEST).onToolResult({ text: notes(12, 'Bravo'), prunable: true });
  assert.deepEqual([first.id, second.id], ['P1', 'P2']);
  assert.match(conversation.omitted('{"id": "P1", "from": 1, "to": 1}').text, /^Alpha 2\./);
  assert.match(conversation.omitted('{"id": "P2", "from": 1, "to": 1}').text, /^Bravo 2\./);
  assert.equal(conversation.count, 2);
});

test('concurrent results get ids in the order they finish: unique, no gaps', async () => {
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, log });
  const turn = conversation.turn(REQUEST);
  const [slow, fast, skipped, middle, sync] = await Promise.all([
    turn.onToolResult({ text: notes(12, 'Alpha'), prunable: true, scorer: scripted({ ms: 600 }) }),
    turn.onToolResult({ text: notes(12, 'Bravo'), prunable: true, scorer: scripted() }),
    turn.onToolResult({ text: notes(12, 'Charlie'), prunable: false, scorer: scripted() }),
    turn.onToolResult({ text: notes(12, 'Delta'), prunable: true, scorer: scripted({ ms: 300 }) }),
    Promise.resolve(turn.onToolResultSync({ text: notes(12, 'Echo'), prunable: true, scorer: scripted() })),
  ]);
  // The blocking call ran first (it waited for nothing), then the others as they finished.
  assert.deepEqual([sync.id, fast.id, middle.id, slow.id, skipped.id], ['P1', 'P2', 'P3', 'P4', null]);
  assert.match(slow.body, /id=P4\]/, 'the marker names the id the result was stored under');
  assert.deepEqual(conversation.storedIds, ['P1', 'P2', 'P3', 'P4']);
  assert.match(conversation.omitted('{"id": "P4", "from": 1, "to": 1}').text, /^Alpha 2\./);
});

test('the store is bounded, oldest first: an evicted id answers not_found, counting goes on', async () => {
  const byRecords = pruner.conversation({ enabled: true, scorer: scripted(), store: { maxRecords: 2 }, log: capture() });
  const turn = byRecords.turn(REQUEST);
  for (const word of ['Alpha', 'Bravo', 'Charlie']) turn.onToolResultSync({ text: notes(12, word), prunable: true });
  assert.deepEqual(byRecords.storedIds, ['P2', 'P3']);
  assert.equal(byRecords.omitted('{"id": "P1", "from": 0, "to": 11}').outcome, 'not_found');
  assert.equal(byRecords.omitted('{"id": "P2", "from": 0, "to": 11}').outcome, 'ok');
  // Six dropped notes of ~370 characters weigh ~2,200: a 3,000 bound keeps one.
  const byChars = pruner.conversation({ enabled: true, scorer: scripted(), store: { maxChars: 3000 }, log: capture() });
  const t2 = byChars.turn(REQUEST);
  assert.equal(t2.onToolResultSync({ text: notes(12, 'Delta'), prunable: true }).id, 'P1');
  assert.equal(t2.onToolResultSync({ text: notes(12, 'Echo'), prunable: true }).id, 'P2');
  assert.deepEqual(byChars.storedIds, ['P2']);
  assert.equal(byChars.omitted('{"id": "P1", "from": 0, "to": 11}').outcome, 'not_found');
});

test('a threshold is checked by the guest and refused, never replaced', () => {
  for (const bad of ['0.25', -1, 'NaN', 0.25, '', 'abc', Number.POSITIVE_INFINITY]) {
    assert.throws(
      () => pruner.conversation({ threshold: bad }),
      (e) => e instanceof RangeError && /is not one of 0\.1 \(Light\), 0\.2 \(Standard, the default\), 0\.3 \(Strong\), 0\.5 \(Maximum\)/.test(e.message),
      String(bad),
    );
  }
  for (const [good, value] of [['0.30', 0.3], [0.5, 0.5], [' 0.1 ', 0.1], ['0.2', 0.2]]) {
    assert.equal(pruner.conversation({ threshold: good }).options.threshold, value);
  }
  assert.equal(pruner.conversation().options.threshold, pruner.defaults.threshold);
});

test('the event loop runs while the scorer answers, and while the guest works', async () => {
  let ticks = 0;
  const ticker = setInterval(() => (ticks += 1), 5);
  try {
    const turn = pruner.conversation({ enabled: true, scorer: scripted({ ms: 300 }), log: capture() }).turn(REQUEST);
    const pending = turn.onToolResult({ text: TEXT, prunable: true });
    await delay(100);
    assert.ok(ticks >= 5, `ticked ${ticks} times while the scorer waited`);
    assert.equal((await pending).outcome, 'ok');
    // A 3.6 MB text keeps the guest busy for a while, in its worker.
    const big = readShared('corpus/pep-0817-wheel-variants.rst').repeat(30);
    const offline = pruner.conversation({ enabled: true, log: capture() }).turn('How does PEP 817 encode a wheel variant?');
    ticks = 0;
    const started = performance.now();
    const r = await offline.onToolResult({ text: big, prunable: true });
    const took = performance.now() - started;
    assert.notEqual(r.outcome, 'failed');
    assert.ok(ticks >= (took / 5) * 0.3, `ticked ${ticks} times in ${took.toFixed(0)} ms of guest work`);
  } finally {
    clearInterval(ticker);
  }
});

test('the deadline holds for a custom scorer on both paths: timeout, the input back', async () => {
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, deadlineCapMs: 200, log });
  const turn = conversation.turn(REQUEST);
  const never = { name: 'never', score: () => new Promise(() => {}) };
  let started = performance.now();
  const r = await turn.onToolResult({ text: TEXT, prunable: true, scorer: never });
  assert.deepEqual([r.outcome, r.id], ['timeout', null]);
  assert.ok(r.body === TEXT);
  assert.ok(performance.now() - started < 2000);
  assert.match(r.logLine, / outcome=timeout .* calls=0 .* scorer=never$/);
  // A blocking scorer cannot be interrupted; what it answers past the deadline is discarded.
  const blocking = {
    name: 'blocking',
    scoreSync(request) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
      return request.batches.map((b) => ({ scores: Array.from(b.paragraphs, () => 0) }));
    },
  };
  started = performance.now();
  const s = turn.onToolResultSync({ text: TEXT, prunable: true, scorer: blocking });
  assert.deepEqual([s.outcome, s.id], ['timeout', null]);
  // A late async answer too, and then the next result is stored as P1.
  const late = await turn.onToolResult({ text: TEXT, prunable: true, scorer: scripted({ ms: 1000 }) });
  assert.equal(late.outcome, 'timeout');
  assert.equal((await turn.onToolResult({ text: TEXT, prunable: true, scorer: scripted() })).id, 'P1');
});

test('cancellation through the turn or the call: cancelled at once, and it wins over the deadline', async () => {
  const conversation = pruner.conversation({ enabled: true, scorer: scripted({ ms: 5000 }), log: capture() });
  const controller = new AbortController();
  const turn = conversation.turn(REQUEST, { signal: controller.signal });
  setTimeout(() => controller.abort(), 100);
  const started = performance.now();
  const r = await turn.onToolResult({ text: TEXT, prunable: true });
  assert.equal(r.outcome, 'cancelled');
  assert.ok(r.body === TEXT);
  assert.ok(performance.now() - started < 2000);
  // The turn stays cancelled: the next result is cancelled too, sync or async, and its scorer never runs.
  const after = scripted();
  assert.equal(turn.onToolResultSync({ text: TEXT, prunable: true, scorer: after }).outcome, 'cancelled');
  assert.equal((await turn.onToolResult({ text: TEXT, prunable: true, scorer: after })).outcome, 'cancelled');
  assert.equal(after.state.calls, 0);
  // The guest's own scorers (offline, stub) send nothing and wait for nothing: cancellation does not apply.
  for (const scorer of ['stub', 'offline']) {
    const s = turn.onToolResultSync({ text: TEXT, prunable: true, scorer });
    const a = await turn.onToolResult({ text: TEXT, prunable: true, scorer });
    assert.notEqual(s.outcome, 'cancelled');
    assert.deepEqual([a.outcome, a.body, a.scorerCalls], [s.outcome, s.body, 0]);
  }
  // A call's own signal.
  const t2 = conversation.turn(REQUEST);
  assert.equal((await t2.onToolResult({ text: TEXT, prunable: true }, { signal: AbortSignal.abort() })).outcome, 'cancelled');
  // Both at once: cancellation wins.
  const racing = pruner.conversation({ enabled: true, scorer: scripted({ ms: 5000 }), deadlineCapMs: 100, log: capture() });
  const r3 = await racing.turn(REQUEST, { signal: AbortSignal.timeout(100) }).onToolResult({ text: TEXT, prunable: true });
  assert.ok(['cancelled', 'timeout'].includes(r3.outcome));
});

test('a scorer that throws, or answers the wrong number of batches, fails every batch: the guest\'s outcome and line', async () => {
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, log });
  const turn = conversation.turn(REQUEST);
  const scorers = [
    { name: 'scripted', score: async () => { throw new Error('boom'); } },
    { name: 'scripted', scoreSync: () => { throw new Error('boom'); } },
    { name: 'scripted', score: async () => [] },
    { name: 'scripted', score: async (request) => request.batches.map(() => 42) },
  ];
  for (const scorer of scorers) {
    const r = await turn.onToolResult({ text: notes(40), prunable: true, scorer });
    assert.equal(r.outcome, 'failed');
    assert.equal(r.failure, null, 'a scorer failure is no host failure');
    assert.ok(r.failures.length >= 3 && r.failures.every((f) => f.class === 'network' && f.status === null));
    assert.ok(r.body.length === notes(40).length);
    assert.equal(log.lines.at(-1), r.logLine);
    assert.match(r.logLine, /^tool prune: .* outcome=failed .* scorer=scripted$/);
  }
});

test('the paragraph report only when asked; counts.ms null when nothing was measured', () => {
  const turn = pruner.conversation({ enabled: true, log: capture() }).turn(REQUEST);
  const plain = turn.onToolResultSync({ text: TEXT, prunable: true, scorer: scripted() });
  assert.deepEqual(plain.paragraphs, []);
  assert.equal(typeof plain.counts.ms, 'number');
  const reported = turn.onToolResultSync({ text: TEXT, prunable: true, scorer: scripted(), report: true });
  assert.equal(reported.paragraphs.length, 12);
  assert.deepEqual(reported.paragraphs[0], { index: 0, chars: reported.paragraphs[0].chars, score: 1, fate: 'kept' });
  assert.equal(reported.paragraphs[1].fate, 'dropped');
  const offline = turn.onToolResultSync({ text: TEXT, prunable: true, report: true });
  assert.equal(offline.counts.ms, null);
  assert.match(offline.logLine, / ms=- /);
});

test('a non-string text or a bad option is a TypeError before any guest call', async () => {
  const conversation = pruner.conversation({ enabled: true });
  const turn = conversation.turn(REQUEST);
  assert.throws(() => turn.onToolResultSync({ text: 42, prunable: true }), TypeError);
  await assert.rejects(turn.onToolResult({ text: null, prunable: true }), TypeError);
  await assert.rejects(turn.onToolResult({ text: TEXT, scorer: 'magic' }), TypeError);
  assert.throws(() => conversation.turn(42), TypeError);
  assert.throws(() => pruner.conversation({ lang: 'de' }), TypeError);
  assert.throws(() => pruner.conversation({ store: { maxRecords: -1 } }), TypeError);
  assert.throws(() => conversation.omittedTool('gemini'), TypeError);
  const asyncOnly = { name: 'async-only', score: async () => [] };
  assert.throws(() => turn.onToolResultSync({ text: TEXT, prunable: true, scorer: asyncOnly }), /has no scoreSync/);
});

test('the omitted tool is the guest\'s object in every dialect; its name is read from it', () => {
  const conversation = pruner.conversation({ lang: 'ja' });
  const plain = conversation.omittedTool();
  assert.equal(plain.name, pruner.omittedToolName);
  assert.deepEqual(plain.parameters.required, ['id', 'from', 'to']);
  assert.equal(typeof plain.parameters, 'object', 'a schema object, never a string');
  assert.notEqual(plain.description, pruner.omittedTool('plain', 'en').description, 'the conversation\'s language');
  assert.equal(conversation.omittedTool('openai').type, 'function');
  assert.equal(conversation.omittedTool('openai').function.name, plain.name);
  assert.deepEqual(conversation.omittedTool('anthropic').input_schema, plain.parameters);
  assert.deepEqual(conversation.omittedTool('mcp').inputSchema, plain.parameters);
});

test('omitted answers every argument form with the guest\'s texts and lines', () => {
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, scorer: scripted(), agent: 'my agent', log });
  const r = conversation.turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true });
  assert.equal(r.id, 'P1');
  const cases = [
    ['{"id": "P1", "from": 0, "to": 99999999999999999999}', 'ok'],
    ['{"id": "P1", "from": 0, "to": 0}', 'not_dropped'],
    [{ id: 'P1', from: 1, to: 1 }, 'ok'],
    ['{"id": "P9", "from": 0, "to": 1}', 'not_found'],
    ['not json', 'invalid'],
    ['{"id": 1}', 'invalid'],
  ];
  for (const [args, outcome] of cases) {
    const answer = conversation.omitted(args);
    assert.equal(answer.outcome, outcome, JSON.stringify(args));
    assert.equal(answer.failure, null);
    assert.equal(log.lines.at(-1), answer.logLine);
    assert.match(answer.logLine, /^tool omitted: agent=my_agent /);
  }
});

test('inspect, isPrunable, the configuration and the defaults are the guest\'s', () => {
  const inspection = pruner.inspect(readShared('cases/wrapper-ascii-escaped.json'));
  assert.equal(inspection.shape, 'json_wrapper');
  assert.equal(inspection.wrapperSpan.length, 2);
  assert.ok(inspection.units.length > 1 && inspection.units.every((u) => ['scored', 'fixed', 'blank'].includes(u.kind)));
  assert.deepEqual(pruner.inspect('{"a": 1, "b": [1, 2, 3]}'), { shape: null, wrapperSpan: null, units: [] });
  assert.equal(pruner.isPrunable('WebFetch', ['WebFetch']), true);
  assert.equal(pruner.isPrunable('Read', ['*']), false);
  // Every name a door knows: never prunable under any name wins (SPEC §2).
  assert.equal(pruner.isPrunable(['read_file', 'mcp_fetch_read_file'], ['mcp_fetch_*']), false);
  assert.equal(pruner.isPrunable(['fetch', 'mcp__fetch__fetch'], ['mcp__fetch__*']), true);
  assert.throws(() => pruner.isPrunable([1], ['*']), TypeError);
  assert.equal(pruner.isPrunable(pruner.omittedToolName, ['*']), false);
  assert.equal(pruner.version, '0.3.0');
  const config = pruner.config({ HOME: '/nonexistent', TOOLPRUNE_THRESHOLD: '0.3', TOOLPRUNE_JEV_ROUTE: 'typesafe' });
  assert.equal(config.threshold, 0.3);
  assert.equal(config.jev.route, 'typesafe');
  assert.equal(typeof config.tokenVariable, 'string');
  assert.throws(() => pruner.config({ HOME: '/nonexistent', TOOLPRUNE_THRESHOLD: '0.25' }), { name: 'ConfigError', message: /TOOLPRUNE_THRESHOLD/ });
  assert.deepEqual(pruner.conversation().options.store, { maxRecords: pruner.defaults.store.maxRecords, maxChars: pruner.defaults.store.maxChars });
});

test('the stub is the guest\'s (scorer-choice.stub, no request): the same answer on both paths', async () => {
  const turn = pruner.conversation({ enabled: true, scorer: 'stub', log: capture() }).turn('How does the upload client retry a failed part in its queue?');
  const text = readShared('corpus/mcp-spec-2025-11-25-transports.mdx');
  const a = await turn.onToolResult({ text, prunable: true, report: true });
  const b = turn.onToolResultSync({ text, prunable: true, report: true });
  assert.equal(a.body, b.body);
  assert.deepEqual(a.paragraphs, b.paragraphs);
  assert.match(a.logLine, / scorer=stub$/);
});

test('the same tool with the same arguments, after its result was pruned, passes unpruned: skipped, gate repeated, a line (both forms)', async () => {
  for (const form of ['import', 'jobs']) {
    const log = capture();
    const scorer = scripted();
    const turn = pruner.conversation({ enabled: true, scorer, log }).turn(REQUEST);
    const prune = (input) => (form === 'import' ? turn.onToolResultSync(input) : turn.onToolResult(input));
    const first = await prune({ tool: 'fetch', text: TEXT, prunable: true, arguments: '{"url": "https://example.com/a", "n": 1}' });
    assert.deepEqual([first.outcome, first.id], ['ok', 'P1'], form);
    // The same arguments (as an object, keys in another order): everything, unscored.
    const again = await prune({ tool: 'fetch', text: TEXT, prunable: true, arguments: { n: 1, url: 'https://example.com/a' } });
    assert.deepEqual([again.outcome, again.gate, again.id, again.body === TEXT, again.scorerCalls], ['skipped', 'repeated', null, true, 0], form);
    assert.equal(again.counts.paragraphs, null);
    assert.equal(log.lines.length, 2, 'the repeat gate writes a line');
    assert.match(log.lines[1], / outcome=skipped gate=repeated .*paragraphs=- /);
    assert.equal(scorer.state.calls, 1);
    // Another tool, other arguments, or no arguments: pruned as usual.
    for (const other of [{ tool: 'web_fetch', arguments: '{"url": "https://example.com/a", "n": 1}' }, { tool: 'fetch', arguments: '{"url": "https://example.com/b"}' }, { tool: 'fetch' }]) {
      assert.equal((await prune({ ...other, text: TEXT, prunable: true })).outcome, 'ok', `${form} ${JSON.stringify(other)}`);
    }
  }
});

test('the guest\'s work budget decides (limits.work): failed, reason=budget, the input back, the same in both forms', async () => {
  const tight = await Pruner.load({ limits: { work: 1000 } });
  const lines = [];
  for (const form of ['import', 'jobs']) {
    const log = capture();
    const scorer = scripted();
    const turn = tight.conversation({ enabled: true, scorer, agent: 'conformance', log }).turn(REQUEST);
    const r = form === 'import' ? turn.onToolResultSync({ text: TEXT, prunable: true }) : await turn.onToolResult({ text: TEXT, prunable: true });
    assert.deepEqual([r.outcome, r.body === TEXT, r.failure, scorer.state.calls], ['failed', true, null, 0], form);
    assert.match(log.lines[0], /reason=budget/);
    lines.push(log.lines);
  }
  assert.deepEqual(lines[0], lines[1]);
  // The default budget, sized from the text, lets the same text be pruned; `work` counts the same units in both forms.
  const turn = pruner.conversation({ enabled: true, scorer: scripted(), log: capture() }).turn(REQUEST);
  const [a, b] = [turn.onToolResultSync({ text: TEXT, prunable: true }), await turn.onToolResult({ text: TEXT, prunable: true })];
  assert.ok(a.counts.work > 1000);
  assert.equal(a.counts.work, b.counts.work);
  await assert.rejects(Pruner.load({ limits: { work: -1 } }), TypeError);
  await assert.rejects(Pruner.load({ limits: { fuel: 5 } }), /unknown limit fuel/);
  tight.close();
});
