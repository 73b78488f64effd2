#!/usr/bin/env node
// Benchmark (not a test): what running the guest in a worker thread costs
// per call (src/engine.js). The same guest calls are timed in this thread
// (jco's bindings instantiated here, as the host did before 0.2) and
// through the engine (post the call, `Atomics.wait` / `Atomics.waitAsync`
// for the answer, `receiveMessageOnPort`), on the first 100,000 characters
// of ../shared/corpus/pep-0817-wheel-variants.rst; median of BENCH_RUNS
// (default 50) after a warm-up, the three forms interleaved in each round so
// that load bursts on a shared machine hit them alike. The hop is the
// median, over the calls, of the call's time on the main thread minus the
// guest's own time in the worker (which the worker reports): copying the
// arguments and the answer between threads, the wake-ups, the
// `call-limits-for` question asked before each sized call, the memory
// bound. The in-thread column is for comparison (guest speed differs a
// little between threads and with the load).
//
//   npm ci && npm run build && node scripts/hop.mjs

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { Engine, loadComponent } from '../src/engine.js';

const runs = Number.parseInt(process.env.BENCH_RUNS ?? '50', 10);
const PEP = new URL('../../../../shared/corpus/pep-0817-wheel-variants.rst', import.meta.url);
const text = Array.from(readFileSync(PEP, 'utf8')).slice(0, 100_000).join('');
const REQUEST = 'How does PEP 817 encode a wheel variant in the wheel filename?';
const input = (scorer) => ({
  request: REQUEST, text, enabled: true, succeeded: true, prunable: true, threshold: 0.2, lang: 'en',
  scorer, jevModel: undefined, agent: 'bench', tool: 'fetch', report: false,
  arguments: undefined, prunedCalls: [], workBudget: undefined,
});
/** A host scorer answering every paragraph 1.0 at once (what the import costs, not a scorer's work). */
const answerAll = (request) => ({
  answers: { tag: 'ok', val: request.batches.map((b) => ({ tag: 'scores', val: Array.from(b.paragraphs, () => 1) })) },
  elapsedMs: 0,
});

const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Median times of `forms` (functions, maybe async), run in turn each round;
 * and for the engine's forms (answers with `guestMs`), the median hop.
 */
async function measure(forms) {
  for (const f of forms) await f();
  const times = forms.map(() => []);
  const hops = forms.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [k, f] of forms.entries()) {
      const t = performance.now();
      const answer = await f();
      const took = performance.now() - t;
      times[k].push(took);
      if (typeof answer?.guestMs === 'number') hops[k].push(took - answer.guestMs);
    }
  }
  return { medians: times.map(mid), hops: hops.slice(1).map(mid) };
}

const component = await loadComponent();
// In this thread: jco's instantiate with the same compiled modules.
const { instantiate } = await import(component.bindingsUrl);
const local = instantiate((name) => component.modules.get(name), { 'toolprune:pruner/scorer': { score: answerAll } });
const engine = await Engine.start(component);

/** The jobs form through the engine: `prune` (new + request), then `finish` with the answer; `guestMs` summed. */
async function jobs(scorer) {
  const started = await engine.call('prune', { input: input(scorer), idNumber: 1 });
  if (!started.value.job) return started;
  const finished = await engine.call('finish', { job: started.value.job, response: answerAll(started.value.request), idNumber: 1 });
  return { ...finished, guestMs: started.guestMs + finished.guestMs };
}

const host = { tag: 'host', val: 'bench' };
const rows = [
  ['inspect, 100,000 chars', () => local.pruner.inspect(text), () => engine.callSync('inspect', { text }), () => engine.call('inspect', { text })],
  ['prune, offline, 100,000 chars', () => local.pruner.prune(input({ tag: 'offline' }), 1), () => engine.callSync('pruneCall', { input: input({ tag: 'offline' }), idNumber: 1 }), () => jobs({ tag: 'offline' })],
  ['prune, stub, 100,000 chars', () => local.pruner.prune(input({ tag: 'stub' }), 1), () => engine.callSync('pruneCall', { input: input({ tag: 'stub' }), idNumber: 1 }), () => jobs({ tag: 'stub' })],
  ['prune, host scorer (sync: the import; async: a job)', () => local.pruner.prune(input(host), 1), () => engine.callSync('pruneCall', { input: input(host), idNumber: 1 }, undefined, answerAll), () => jobs(host)],
  ['a small call (is-prunable)', () => local.settings.isPrunable('WebFetch', ['WebFetch']), () => engine.callSync('isPrunable', { tool: 'WebFetch', globs: ['WebFetch'] }), () => engine.call('isPrunable', { tool: 'WebFetch', globs: ['WebFetch'] })],
];

console.log('| guest call | in this thread | worker, sync (import) | worker, async (jobs) | hop (sync) | hop (async) |');
console.log('|---|---|---|---|---|---|');
for (const [name, ...forms] of rows) {
  const { medians, hops } = await measure(forms);
  const f = (x) => `${x.toFixed(3)} ms`;
  console.log(`| ${name} | ${medians.map(f).join(' | ')} | ${hops.map(f).join(' | ')} |`);
}
engine.close();
