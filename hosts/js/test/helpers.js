// Shared helpers of the JS host's tests.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root (hosts/js/../..). */
export const ROOT = join(here, '..', '..', '..');

/** `shared/` beside the repository, or $TOOLPRUNE_SHARED (as the Rust generator). */
export const SHARED = process.env.TOOLPRUNE_SHARED ?? join(ROOT, '..', 'shared');

export function readShared(relative) {
  return readFileSync(join(SHARED, relative), 'utf8');
}

/** Every case of tests/vectors/vectors.json. */
export function vectors() {
  return JSON.parse(readFileSync(join(ROOT, 'tests', 'vectors', 'vectors.json'), 'utf8'));
}

/** The tool result text of a vector. */
export function vectorText(v) {
  return v.text ?? readShared(v.text_file);
}

export function sha256(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Characters = Unicode scalar values. */
export function chars(text) {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/**
 * The scripted scorer of tests/vectors/README.md: one answer per batch from
 * the vector's description. `calls` counts score + scoreSync calls.
 */
export function scriptedScorer(spec) {
  const scoreOf = (p) => {
    const key = String(p);
    const s = Object.hasOwn(spec.scores, key) ? spec.scores[key] : spec.default;
    return s === null ? undefined : s;
  };
  const state = { calls: 0, requests: [] };
  const answer = (request) => {
    state.calls += 1;
    state.requests.push(request);
    if (spec.stop) return { answers: { tag: 'err', val: spec.stop }, elapsedMs: spec.elapsed_ms };
    const val = request.batches.map((batch, i) => {
      const key = String(i);
      if (Object.hasOwn(spec.fail_batches, key)) {
        const f = spec.fail_batches[key];
        return { tag: 'failed', val: f === 'network' ? { tag: 'network' } : { tag: 'http', val: f.http } };
      }
      if (Object.hasOwn(spec.jev_responses, key)) return { tag: 'jev-response', val: spec.jev_responses[key] };
      return { tag: 'scores', val: Array.from(batch.paragraphs, scoreOf) };
    });
    return { answers: { tag: 'ok', val }, elapsedMs: spec.elapsed_ms };
  };
  return {
    name: 'scripted',
    state,
    score: async (request) => answer(request),
    scoreSync: answer,
  };
}

/** A log sink that keeps the lines. */
export function capture() {
  const lines = [];
  const log = (line) => lines.push(line);
  log.lines = lines;
  return log;
}
