// A trapped instance is discarded, the raw text returned (outcome `failed`,
// reason `guest_trap`), and the next call gets a fresh instance. The trap is
// real: the guest's memory is limited (as the Rust host's StoreLimits), a
// large text makes its allocator fail, and it aborts (`unreachable`).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Pruner } from '../src/index.js';
import { capture, readShared, scriptedScorer } from './helpers.js';

const REQUEST = 'How does PEP 817 encode a wheel variant in the wheel filename?';
const PEP = readShared('corpus/pep-0817-wheel-variants.rst');
const HUGE = PEP.repeat(30); // 3.6 M characters: far over a 4 MiB guest

test('a trap fails open, and the next call runs in a fresh instance', async () => {
  const pruner = await Pruner.load({ maxMemoryBytes: 4 << 20 });
  const log = capture();
  const turn = pruner.beginTurn(REQUEST, { enabled: true, agent: 'my agent', log });

  const trapped = await turn.onToolResult({ tool: 'fetch', prunable: true, text: HUGE });
  assert.equal(trapped.outcome, 'failed');
  assert.equal(trapped.body, HUGE, 'the raw text, byte for byte');
  assert.equal(trapped.raw, HUGE);
  assert.equal(trapped.report, null);
  assert.equal(trapped.failure.reason, 'guest_trap');
  assert.match(trapped.failure.message, /unreachable/);
  assert.equal(trapped.logLine, 'tool prune: agent=my_agent name=fetch outcome=failed reason=guest_trap');
  assert.deepEqual(log.lines, [trapped.logLine]);

  const next = await turn.onToolResult({ tool: 'fetch', prunable: true, text: PEP });
  assert.equal(next.outcome, 'ok');
  assert.equal(next.report.record.id, 'P1', 'nothing was stored by the trapped call');
  const d = next.report.record.dropped[0];
  assert.equal(turn.omitted({ id: 'P1', from: d, to: d }).outcome, 'ok');

  // The blocking form fails open the same way, and the turn store survives.
  const sync = turn.onToolResultSync({ tool: 'fetch', prunable: true, text: HUGE });
  assert.equal(sync.outcome, 'failed');
  assert.equal(sync.body, HUGE);
  assert.equal(turn.omitted({ id: 'P1', from: d, to: d }).outcome, 'ok', 'the store outlives the instance');
});

test('a trap while the scorer was awaited: the job is remade in the fresh instance', async () => {
  const pruner = await Pruner.load({ maxMemoryBytes: 4 << 20 });
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const odd = Object.fromEntries(Array.from({ length: 13 }, (_, i) => [String(2 * i + 1), 0.05]));
  const spec = { default: 0.9, scores: odd, fail_batches: {}, jev_responses: {}, stop: null, elapsed_ms: 7 };
  const scripted = scriptedScorer(spec);
  const waiting = { name: 'scripted', async score(request) { await gate; return scripted.scoreSync(request); } };
  const turn = pruner.beginTurn(REQUEST, { enabled: true, scorer: waiting, log: capture() });
  const text = readShared('cases/headings.md');
  const pending = turn.onToolResult({ tool: 'a', prunable: true, text });
  // Meanwhile another result traps the turn's instance (no scorer call:
  // the guest traps before it asks).
  const trapped = await turn.onToolResult({ tool: 'b', prunable: true, text: HUGE });
  assert.equal(trapped.outcome, 'failed');
  release();
  const r = await pending;
  assert.equal(r.outcome, 'ok');
  const fresh = (await Pruner.load()).beginTurn(REQUEST, { enabled: true, scorer: scriptedScorer(spec), log: capture() });
  assert.equal(r.body, (await fresh.onToolResult({ tool: 'a', prunable: true, text })).body);
});

test('omitted throws after a trap and logs it; the turn goes on', async () => {
  const pruner = await Pruner.load({ maxMemoryBytes: 4 << 20 });
  const log = capture();
  const turn = pruner.beginTurn(REQUEST, { enabled: true, log });
  const r = await turn.onToolResult({ prunable: true, text: PEP });
  assert.equal(r.outcome, 'ok');
  const d = r.report.record.dropped[0];
  // Arguments too large for the guest's memory make it trap.
  const huge = JSON.stringify({ id: 'P1', from: 0, to: 1, pad: 'x'.repeat(6 << 20) });
  assert.throws(() => turn.omitted(huge), (e) => e.reason === 'guest_trap');
  assert.equal(log.lines.at(-1), 'tool omitted: agent=agent outcome=failed reason=guest_trap');
  assert.equal(turn.omitted({ id: 'P1', from: d, to: d }).outcome, 'ok');
});
