// Fail-open for the log sink (SPEC §11, §12): a `log` that throws, or a
// stderr that is gone, never reaches a result. The line is dropped; the
// result is returned as the guest computed it (its body, its id, its
// stored record), `omitted` answers, the judge decides.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { Pruner } from '../src/index.js';
import { REQUEST, notes, scripted } from './helpers.js';

const pruner = await Pruner.load();
const TEXT = notes(12);
const JUDGE = new URL('../../../tests/conformance/judge/', import.meta.url);
const RULES = readFileSync(new URL('rules.toml', JUDGE), 'utf8');
const ANSWERS = readFileSync(new URL('answers.json', JUDGE), 'utf8');

/** A sink that throws on every call, counting its calls. */
function throwing() {
  const sink = () => {
    sink.calls += 1;
    throw new Error('the log sink is broken');
  };
  sink.calls = 0;
  return sink;
}

for (const form of ['import', 'jobs']) {
  test(`a log that throws: the pruned result comes back with its id, and omitted serves it [${form}]`, async () => {
    const log = throwing();
    const conversation = pruner.conversation({ enabled: true, scorer: scripted(), log });
    const turn = conversation.turn(REQUEST);
    const prune = (input) => (form === 'import' ? turn.onToolResultSync(input) : turn.onToolResult(input));
    const r = await prune({ tool: 'fetch', text: TEXT, prunable: true, arguments: '{"url": "a"}' });
    assert.deepEqual([r.outcome, r.id, r.body === TEXT, typeof r.logLine], ['ok', 'P1', false, 'string']);
    assert.match(r.body, /id=P1\]/);
    assert.equal(log.calls, 1, 'the sink was asked once');
    const back = conversation.omitted('{"id": "P1", "from": 1, "to": 1}');
    assert.deepEqual([back.outcome, typeof back.logLine], ['ok', 'string']);
    assert.match(back.text, /^Note 2\./);
    assert.equal(log.calls, 2);
    // A skipped result with a line (the repeat gate) and a failed one (the guest's failure line) too.
    const again = await prune({ tool: 'fetch', text: TEXT, prunable: true, arguments: '{"url": "a"}' });
    assert.deepEqual([again.outcome, again.gate, again.body === TEXT], ['skipped', 'repeated', true]);
    const bad = await prune({ tool: 'fetch', text: `${TEXT}\n\n\ud800`, prunable: true });
    assert.deepEqual([bad.outcome, bad.failure.reason, typeof bad.logLine], ['failed', 'invalid_text', 'string']);
    assert.equal(log.calls, 4);
  });
}

test('a log that throws: an omitted call the guest could not answer still answers "try again"', () => {
  const log = throwing();
  const conversation = pruner.conversation({ enabled: true, log, resultStore: { count: () => 1, push() {}, find() { throw new Error('store down'); } } });
  const back = conversation.omitted('{"id": "P1", "from": 0, "to": 0}');
  assert.equal(back.outcome, 'failed');
  assert.equal(back.failure.reason, 'store');
  assert.ok(back.text.length > 0);
  assert.equal(log.calls, 1);
});

test('a log that throws: the judge still decides, both forms', async () => {
  const message = 'Compare the pricing of three CI services';
  for (const decide of [() => pruner.routeSync(RULES, message, { answers: ANSWERS, log: throwing() }), () => pruner.route(RULES, message, { answers: ANSWERS, log: throwing() })]) {
    const d = await decide();
    assert.deepEqual([d.verdict, d.to], ['routed', ['agent_3']]);
  }
});

test('the default log sink on a stderr that is a closed pipe: the agent goes on', async (t) => {
  // A child whose stderr is a pipe nobody reads any more: the default sink's
  // write fails (EPIPE), which must neither throw nor crash the process.
  const script = `
    import { Pruner } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    import { REQUEST, notes, scripted } from ${JSON.stringify(new URL('./helpers.js', import.meta.url).href)};
    process.stdin.once('data', async () => {
      const pruner = await Pruner.load();
      const turn = pruner.conversation({ enabled: true, scorer: scripted() }).turn(REQUEST);
      const r = turn.onToolResultSync({ text: notes(12), prunable: true });
      const s = await turn.onToolResult({ text: notes(13), prunable: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
      process.stdout.write(r.outcome + ' ' + s.outcome + ' ' + r.id + ' ' + s.id + '\\n');
      process.exit(0);
    });`;
  const dir = mkdtempSync(join(tmpdir(), 'toolprune-log-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'child.mjs');
  writeFileSync(file, script);
  const child = spawn(process.execPath, [file], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.destroy();
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stdin.end('go\n');
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.deepEqual([code, out], [0, 'ok ok P1 P2\n']);
});
