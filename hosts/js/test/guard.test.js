// The guest's limits in Node (issue 12: no host hangs, none gives up
// early). The guest runs in a worker thread; each call waits no longer
// than its wall time (`settings.call-limits-for`), past which the worker is
// terminated; its memory is bounded per call. Any of these fails open: the
// input back, outcome `failed`, `failure.reason` `guest_trap` with the
// limit, the guest's failure line from a fresh instance; the conversation
// goes on (ids continue, the store survives).

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { Pruner } from '../src/index.js';
import { REQUEST, capture, loopingGen, notes, scripted } from './helpers.js';

let looping;

before(async () => {
  // Both forms: the sync API's one call (`pruner.prune`) and the async API's job.
  looping = await loopingGen('#[constructor]prune-job', '#prune"');
});

after(() => {
  if (looping) rmSync(looping, { recursive: true, force: true });
});

test('a guest that loops forever is stopped at its wall time, on both paths, and the next call is served', async () => {
  const pruner = await Pruner.load({ genDir: looping });
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, agent: 'my agent', log });
  const turn = conversation.turn(REQUEST);
  const text = notes(12);
  // Default limits: the guest's wall time for this text (guest/src/limits.rs:
  // 30 s + 1 ms per 100 bytes, a far-above safety net, SPEC §7).
  let started = performance.now();
  const r = turn.onToolResultSync({ tool: 'web fetch', text, prunable: true });
  const took = performance.now() - started;
  assert.equal(r.outcome, 'failed');
  assert.ok(r.body === text && r.raw === text);
  assert.deepEqual({ reason: r.failure.reason, limit: r.failure.limit }, { reason: 'guest_trap', limit: 'wall_time' });
  assert.equal(r.logLine, 'tool prune: agent=my_agent name=web_fetch outcome=failed reason=guest_trap limit=wall_time');
  assert.deepEqual(log.lines, [r.logLine]);
  assert.ok(took >= 30_000 + Buffer.byteLength(text) / 100, `gave up after ${took.toFixed(0)} ms, before the guest's wall time`);
  assert.ok(took < 36_000, `${took.toFixed(0)} ms`);
  // The async path with a shorter (overridden) limit; the event loop runs meanwhile.
  const quick = await Pruner.load({ genDir: looping, limits: { wallMs: 300 } });
  let ticks = 0;
  const ticker = setInterval(() => (ticks += 1), 10);
  started = performance.now();
  const a = await quick.conversation({ enabled: true, log: capture() }).turn(REQUEST).onToolResult({ text, prunable: true });
  clearInterval(ticker);
  assert.equal(a.failure.limit, 'wall_time');
  assert.ok(ticks >= 10, `the loop ticked ${ticks} times`);
  // A fresh worker serves what does not loop.
  assert.equal(pruner.isPrunable('WebFetch', ['WebFetch']), true);
  assert.equal(conversation.omitted('{"id": "P1", "from": 0, "to": 0}').outcome, 'not_found');
  pruner.close();
  quick.close();
});

test('the wall-time limit override stops a long call (limit=wall_time); the conversation goes on', async () => {
  const pruner = await Pruner.load({ limits: { wallMs: 1 } });
  const log = capture();
  const turn = pruner.conversation({ enabled: true, scorer: scripted(), agent: 'conformance', log }).turn(REQUEST);
  const text = notes(4000);
  for (const r of [turn.onToolResultSync({ tool: 'fetch', text, prunable: true }), await turn.onToolResult({ tool: 'fetch', text, prunable: true })]) {
    assert.equal(r.outcome, 'failed');
    assert.ok(r.body === text);
    assert.equal(r.counts, null);
    assert.deepEqual({ reason: r.failure.reason, limit: r.failure.limit }, { reason: 'guest_trap', limit: 'wall_time' });
    assert.equal(r.logLine, 'tool prune: agent=conformance name=fetch outcome=failed reason=guest_trap limit=wall_time');
  }
  assert.equal(log.lines.length, 2);
  pruner.close();
});

test('the memory bound traps a call (limit=memory); a fresh instance serves the next one, ids continue', async () => {
  const pruner = await Pruner.load({ limits: { memoryBytes: 2 << 20 } });
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, scorer: scripted(), agent: 'my agent\nsecond=line', log });
  const turn = conversation.turn(REQUEST);
  const big = notes(2000);
  const trapped = turn.onToolResultSync({ tool: 'web fetch=x\ty', text: big, prunable: true });
  assert.equal(trapped.outcome, 'failed');
  assert.ok(trapped.body === big);
  assert.deepEqual({ reason: trapped.failure.reason, limit: trapped.failure.limit }, { reason: 'guest_trap', limit: 'memory' });
  assert.equal(trapped.logLine, 'tool prune: agent=my_agent_second_line name=web_fetch_x_y outcome=failed reason=guest_trap limit=memory');
  const next = await turn.onToolResult({ tool: 'fetch', text: notes(12), prunable: true });
  assert.deepEqual([next.outcome, next.id], ['ok', 'P1']);
  assert.equal((await turn.onToolResult({ text: big, prunable: true })).failure.limit, 'memory');
  // omitted traps on arguments too large for 2 MiB: the guest's "try again" text, never a throw.
  const answer = conversation.omitted(JSON.stringify({ id: 'P1', from: 0, to: 1, pad: 'x'.repeat(3 << 20) }));
  assert.equal(answer.outcome, 'failed');
  assert.equal(answer.failure.limit, 'memory');
  assert.match(answer.text, /\S/);
  assert.equal(log.lines.at(-1), 'tool omitted: agent=my_agent_second_line outcome=failed reason=guest_trap limit=memory');
  assert.equal(conversation.omitted('{"id": "P1", "from": 1, "to": 1}').outcome, 'ok', 'the store outlives the instance');
  pruner.close();
});

test('a job whose instance was lost while its scorer was awaited is made again: the same body', async () => {
  const pruner = await Pruner.load({ limits: { memoryBytes: 2 << 20 } });
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const inner = scripted();
  const waiting = { name: 'scripted', async score(request) { await gate; return inner.scoreSync(request); } };
  const conversation = pruner.conversation({ enabled: true, scorer: waiting, log: capture() });
  const turn = conversation.turn(REQUEST);
  const pending = turn.onToolResult({ text: notes(12), prunable: true });
  // Meanwhile another result traps the instance (before any scoring).
  const trapped = await turn.onToolResult({ text: notes(2000), prunable: true, scorer: scripted() });
  assert.equal(trapped.failure.limit, 'memory');
  release();
  const r = await pending;
  assert.deepEqual([r.outcome, r.id], ['ok', 'P1']);
  const fresh = (await Pruner.load()).conversation({ enabled: true, scorer: scripted(), log: capture() });
  assert.equal(r.body, fresh.turn(REQUEST).onToolResultSync({ text: notes(12), prunable: true }).body);
  pruner.close();
});

test('an async call past its wall time settles even when the wait\'s timeout is delivered late (a loaded machine)', async () => {
  // A pending Atomics.waitAsync keeps no Node event loop alive. Under load
  // its timeout can arrive after the engine's keep-alive timer: here it is
  // held back 200 ms on an unref'd timer, so only that timer can go on.
  const real = Atomics.waitAsync;
  Atomics.waitAsync = (...args) => {
    const wait = real(...args);
    if (!wait.async) return wait;
    const late = wait.value.then((v) => (v === 'timed-out' ? new Promise((res) => setTimeout(() => res(v), 200).unref()) : v));
    return { async: true, value: late };
  };
  try {
    const quick = await Pruner.load({ genDir: looping, limits: { wallMs: 300 } });
    const a = await quick.conversation({ enabled: true, scorer: scripted(), log: capture() }).turn(REQUEST).onToolResult({ text: notes(12), prunable: true });
    assert.deepEqual([a.outcome, a.failure?.limit], ['failed', 'wall_time']);
    quick.close();
  } finally {
    Atomics.waitAsync = real;
  }
});

test('a closed pruner fails open', async () => {
  const pruner = await Pruner.load();
  const conversation = pruner.conversation({ enabled: true, log: capture() });
  pruner.close();
  const r = conversation.turn(REQUEST).onToolResultSync({ text: notes(12), prunable: true });
  assert.equal(r.outcome, 'failed');
  assert.equal(r.logLine, 'tool prune: outcome=failed reason=instantiate');
  const a = await conversation.turn(REQUEST).onToolResult({ text: notes(12), prunable: true });
  assert.equal(a.outcome, 'failed', 'the async path settles too, never hangs');
});
