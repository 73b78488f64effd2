// The JS API: defaults, the turn store across results, the non-blocking
// path (the event loop runs while a scorer answers; the `scorer` import is
// never called on it), the deadline and cancellation, inspection calls.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { Pruner, normalizeResponse } from '../src/index.js';
import { capture, readShared } from './helpers.js';

const REQUEST = 'How do I configure the retry limit for the upload client?';
const TEXT = readShared('cases/headings.md');
const pruner = await Pruner.load();

/** Odd paragraphs 0.05, the rest 0.9, after `ms` of waiting (a timer, not a busy loop). */
function slowScorer(ms, calls = { score: 0, sync: 0 }) {
  return {
    name: 'slow',
    calls,
    async score(request, { signal }) {
      calls.score += 1;
      await delay(ms, undefined, { signal }).catch(() => {});
      return {
        answers: request.batches.map((b) => ({ scores: Array.from(b.paragraphs, (p) => (p % 2 ? 0.05 : 0.9)) })),
        elapsedMs: 7,
      };
    },
    scoreSync() {
      calls.sync += 1;
      throw new Error('never on the prune-job path');
    },
  };
}

test('pruning is off unless enabled, and tools are not prunable unless declared', async () => {
  const log = capture();
  const off = pruner.beginTurn(REQUEST, { log });
  const r = await off.onToolResult({ tool: 'fetch', prunable: true, text: TEXT });
  assert.equal(r.body, TEXT);
  assert.equal(r.outcome, 'ok');
  assert.equal(r.logLine, null);
  const on = pruner.beginTurn(REQUEST, { enabled: true, log });
  const r2 = await on.onToolResult({ tool: 'fetch', text: TEXT });
  assert.equal(r2.body, TEXT, 'prunable defaults to false');
  assert.deepEqual(log.lines, []);
});

test('the event loop keeps running while the scorer answers; the import is never called', async () => {
  const calls = { score: 0, sync: 0 };
  const turn = pruner.beginTurn(REQUEST, { enabled: true, scorer: slowScorer(300, calls), log: capture() });
  let ticks = 0;
  const ticker = setInterval(() => (ticks += 1), 10);
  const started = performance.now();
  const pending = turn.onToolResult({ tool: 'fetch', prunable: true, text: TEXT });
  await delay(100);
  const ticksWhileWaiting = ticks;
  const r = await pending;
  clearInterval(ticker);
  assert.ok(performance.now() - started >= 290);
  assert.ok(ticksWhileWaiting >= 5, `the loop ticked ${ticksWhileWaiting} times in 100 ms`);
  assert.equal(r.outcome, 'ok');
  assert.equal(r.report.counts.ms, 7);
  assert.deepEqual(calls, { score: 1, sync: 0 });
});

test('parallel results in one turn get P1, P2 in finishing order, and omitted reads both', async () => {
  const log = capture();
  const other = readShared('cases/emoji.md');
  // The first call waits longer, so the second finishes first and takes P1.
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const waiting = {
    name: 'slow',
    async score(request) {
      await gate;
      return { answers: request.batches.map((b) => ({ scores: Array.from(b.paragraphs, (p) => (p % 2 ? 0.05 : 0.9)) })), elapsedMs: 7 };
    },
  };
  const t = pruner.beginTurn(REQUEST, { enabled: true, log, scorer: waiting });
  const first = t.onToolResult({ tool: 'a', prunable: true, text: TEXT });
  await delay(10);
  release();
  const [a, b] = await Promise.all([first, t.onToolResult({ tool: 'b', prunable: true, text: other })]);
  const ids = [a.report.record.id, b.report.record.id].sort();
  assert.deepEqual(ids, ['P1', 'P2']);
  assert.ok(a.body.includes(`id=${a.report.record.id}]`), 'the marker names the stored id');
  assert.ok(b.body.includes(`id=${b.report.record.id}]`));
  assert.deepEqual(t.stored.map((s) => s.id), ['P1', 'P2']);
  // Each body equals what a sequential turn gives for the same id.
  const seq = pruner.beginTurn(REQUEST, { enabled: true, scorer: slowScorer(0), log: capture() });
  const order = a.report.record.id === 'P1' ? [[TEXT, a], [other, b]] : [[other, b], [TEXT, a]];
  for (const [text, got] of order) {
    const want = await seq.onToolResult({ tool: 'x', prunable: true, text });
    assert.equal(got.body, want.body);
  }
  for (const r of [a, b]) {
    const d = r.report.record.dropped[0];
    const back = t.omitted({ id: r.report.record.id, from: d, to: d });
    assert.equal(back.outcome, 'ok');
  }
});

test('the deadline stops waiting for a scorer that never answers: timeout, raw text', async () => {
  const never = { name: 'never', score: () => new Promise(() => {}) };
  const turn = pruner.beginTurn(REQUEST, { enabled: true, scorer: never, deadlineCapMs: 100, log: capture() });
  const started = performance.now();
  const r = await turn.onToolResult({ tool: 'fetch', prunable: true, text: TEXT });
  assert.equal(r.outcome, 'timeout');
  assert.equal(r.body, TEXT);
  assert.ok(performance.now() - started < 2000);
  assert.match(r.logLine, / outcome=timeout shape=text .* calls=0 .* ratio=- scorer=never$/);
});

test('cancellation through the turn signal or the call signal: cancelled at once, raw text', async () => {
  const controller = new AbortController();
  const turn = pruner.beginTurn(REQUEST, { enabled: true, scorer: slowScorer(5000), signal: controller.signal, log: capture() });
  setTimeout(() => controller.abort(), 50);
  const started = performance.now();
  const r = await turn.onToolResult({ tool: 'fetch', prunable: true, text: TEXT });
  assert.equal(r.outcome, 'cancelled');
  assert.equal(r.body, TEXT);
  assert.ok(performance.now() - started < 1000);

  const t2 = pruner.beginTurn(REQUEST, { enabled: true, scorer: slowScorer(5000), log: capture() });
  const r2 = await t2.onToolResult({ tool: 'fetch', prunable: true, text: TEXT }, { signal: AbortSignal.abort() });
  assert.equal(r2.outcome, 'cancelled');
});

test('a scorer that rejects or answers nonsense fails open', async () => {
  const rejecting = { name: 'bad', score: async () => { throw new Error('boom'); } };
  const r = await pruner.beginTurn(REQUEST, { enabled: true, scorer: rejecting, log: capture() }).onToolResult({ prunable: true, text: TEXT });
  assert.equal(r.outcome, 'failed');
  assert.equal(r.body, TEXT);
  const junk = { name: 'junk', score: async () => ({ answers: [{ scores: 'x' }, 42] }) };
  const r2 = await pruner.beginTurn(REQUEST, { enabled: true, scorer: junk, log: capture() }).onToolResult({ prunable: true, text: TEXT });
  assert.equal(r2.outcome, 'failed');
  assert.deepEqual(r2.report.failures.map((f) => f.class), ['network', 'network']);
});

test('normalizeResponse accepts the WIT and the friendly shapes', () => {
  const request = { batches: [{}, {}, {}] };
  assert.deepEqual(
    normalizeResponse({ answers: [{ scores: [0.1, null] }, { jevResponse: '{}' }, { failed: { http: 429 } }] }, request, 3.4),
    {
      answers: {
        tag: 'ok',
        val: [
          { tag: 'scores', val: [0.1, undefined] },
          { tag: 'jev-response', val: '{}' },
          { tag: 'failed', val: { tag: 'http', val: 429 } },
        ],
      },
      elapsedMs: 3,
    },
  );
  assert.deepEqual(normalizeResponse({ stop: 'cancelled', elapsedMs: 5 }, request), { answers: { tag: 'err', val: 'cancelled' }, elapsedMs: 5 });
  assert.deepEqual(normalizeResponse({ answers: { tag: 'err', val: 'timeout' } }, request, 9), { answers: { tag: 'err', val: 'timeout' }, elapsedMs: 9 });
  assert.equal(normalizeResponse(null, request).answers.val.length, 3);
});

test('the omitted tool spec in ja and en, and the paragraphs export', () => {
  const en = pruner.omittedTool('en');
  const ja = pruner.omittedTool('ja');
  assert.equal(en.name, 'omitted');
  assert.equal(ja.name, 'omitted');
  assert.notEqual(en.description, ja.description);
  assert.deepEqual(JSON.parse(en.inputSchema).required, ['id', 'from', 'to']);
  const paragraphs = pruner.paragraphs(TEXT);
  assert.equal(paragraphs.length, 25);
  assert.equal(paragraphs.at(-1).byteEnd, Buffer.byteLength(TEXT));
  assert.throws(() => pruner.omittedTool('fr'), TypeError);
  assert.throws(() => pruner.beginTurn(REQUEST, { lang: 'de' }), TypeError);
});

test('onToolResultSync needs the offline scorer or scoreSync', () => {
  const turn = pruner.beginTurn(REQUEST, { enabled: true, scorer: { name: 'async-only', score: async () => ({}) } });
  assert.throws(() => turn.onToolResultSync({ prunable: true, text: TEXT }), TypeError);
});
