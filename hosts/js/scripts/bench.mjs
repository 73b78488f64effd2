#!/usr/bin/env node
// Benchmark (not a test): what one call through the Node host's public API
// costs on a 100 KB tool result, timed exactly as the Rust host's rows of
// `hosts/rust/examples/bench.rs` ("Rust host: per call through
// `Turn::on_tool_result`"): a new turn per call, a prunable `fetch` result
// made of the first 100,000 characters (Unicode scalar values) of
// ../shared/corpus/pep-0817-wheel-variants.rst, bench.rs's REQUEST, pruning
// enabled, the default threshold; median of BENCH_RUNS (default 30) calls
// after one warm-up. Prints Markdown rows in bench.rs's column layout.
//
//   npm ci && npm run build && node scripts/bench.mjs     (scripts/bench runs it)
//
// The call is `await turn.onToolResult(…)` (the async API: `prune-job`, the
// guest in its worker thread), with the offline scorer and the stub (both
// scored in the guest, `scorer-choice.stub`: one worker call). A conversation's
// turns run on the Pruner's worker and live instance (this host's design),
// so "new turn" is not "new instance" here as it is in the Rust host.
// `scripts/hop.mjs` measures what the worker thread itself costs.

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { Pruner } from '../src/index.js';

const root = new URL('../../../', import.meta.url);
const BENCH_RS = new URL('hosts/rust/examples/bench.rs', root);
const PEP = new URL('../shared/corpus/pep-0817-wheel-variants.rst', root);

/** bench.rs's REQUEST constant: one copy of the request for every host's bench. */
function benchRequest() {
  const m = /const REQUEST: &str = "((?:[^"\\]|\\.)*)";/.exec(readFileSync(BENCH_RS, 'utf8'));
  if (!m || m[1].includes('\\')) throw new Error(`bench: no plain REQUEST constant in ${BENCH_RS.pathname}`);
  return m[1];
}

const runs = Number.parseInt(process.env.BENCH_RUNS ?? '30', 10);
if (!(runs > 0)) throw new Error('bench: BENCH_RUNS must be a positive integer');
const REQUEST = benchRequest();
const text = Array.from(readFileSync(PEP, 'utf8')).slice(0, 100_000).join('');
const quiet = () => {};

async function time(fn) {
  await fn(); // warm-up
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

for (const scorer of ['offline', 'stub']) {
  const pruner = await Pruner.load({ scorer });
  const conversation = pruner.conversation({ enabled: true, log: quiet });
  let outcome;
  const median = await time(async () => {
    const turn = conversation.turn(REQUEST);
    outcome = (await turn.onToolResult({ tool: 'fetch', ok: true, prunable: true, text })).outcome;
  });
  pruner.close();
  if (outcome === 'failed') throw new Error(`bench: the ${scorer} call failed open`);
  console.log(
    `| Node host: per call through \`turn.onToolResult\` (async, new turn), ${scorer} scorer, first 100,000 chars | ${median.toFixed(2)} ms | | | | — |`,
  );
}
