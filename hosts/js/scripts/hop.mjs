#!/usr/bin/env node
// Benchmark (not a test): what running the guest in a worker thread costs
// per call (src/engine.js). The same guest calls are timed in this thread
// (jco's bindings instantiated here, as the host did before 0.2) and
// through the engine (post the call, `Atomics.wait` / `Atomics.waitAsync`
// for the answer, `receiveMessageOnPort`), on the first 100,000 characters
// of ../shared/corpus/pep-0817-wheel-variants.rst; median of BENCH_RUNS
// (default 50) after a warm-up, the three forms interleaved in each round so
// that load bursts on a shared machine hit them alike. The hop is the
// median of the per-round differences: copying the arguments and the
// answer between threads, the wake-ups, and the `call-limits-for`
// question asked before each sized call.
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
});

const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median times of `forms` (functions, maybe async), run in turn each round, and of each form's difference to the first. */
async function measure(forms) {
  for (const f of forms) await f();
  const times = forms.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [k, f] of forms.entries()) {
      const t = performance.now();
      await f();
      times[k].push(performance.now() - t);
    }
  }
  return { medians: times.map(mid), hops: times.slice(1).map((ts) => mid(ts.map((t, i) => t - times[0][i]))) };
}

const component = await loadComponent();
// In this thread: jco's instantiate with the same compiled modules.
const { instantiate } = await import(component.bindingsUrl);
const local = instantiate((name) => component.modules.get(name), {});
const engine = await Engine.start(component);

function localPrune(scorer, stub) {
  const job = new local.pruner.PruneJob(input(scorer));
  const request = job.scoringRequest();
  const response = request && stub ? local.pruner.stubScores(request) : undefined;
  const pruned = job.finish(response, 1);
  job[Symbol.dispose]();
  return pruned;
}

const rows = [
  ['inspect, 100,000 chars', () => local.pruner.inspect(text), () => engine.callSync('inspect', { text }), () => engine.call('inspect', { text })],
  ['prune, offline, 100,000 chars', () => localPrune({ tag: 'offline' }), () => engine.callSync('prune', { input: input({ tag: 'offline' }), idNumber: 1 }), () => engine.call('prune', { input: input({ tag: 'offline' }), idNumber: 1 })],
  ['prune, stub, 100,000 chars', () => localPrune({ tag: 'host', val: 'stub' }, true), () => engine.callSync('prune', { input: input({ tag: 'host', val: 'stub' }), idNumber: 1, stub: true }), () => engine.call('prune', { input: input({ tag: 'host', val: 'stub' }), idNumber: 1, stub: true })],
  ['a small call (is-prunable)', () => local.settings.isPrunable('WebFetch', ['WebFetch']), () => engine.callSync('isPrunable', { tool: 'WebFetch', globs: ['WebFetch'] }), () => engine.call('isPrunable', { tool: 'WebFetch', globs: ['WebFetch'] })],
];

console.log('| guest call | in this thread | worker, sync | worker, async | hop (sync) | hop (async) |');
console.log('|---|---|---|---|---|---|');
for (const [name, ...forms] of rows) {
  const { medians, hops } = await measure(forms);
  const f = (x) => `${x.toFixed(3)} ms`;
  console.log(`| ${name} | ${medians.map(f).join(' | ')} | ${hops.map(f).join(' | ')} |`);
}
engine.close();
