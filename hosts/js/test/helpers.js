// Shared helpers of the JS host's tests.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root (hosts/js/../..). */
export const ROOT = join(here, '..', '..', '..');

/** `shared/` beside the repository, or $TOOLPRUNE_SHARED (as the Rust runner). */
export const SHARED = process.env.TOOLPRUNE_SHARED ?? join(ROOT, '..', 'shared');

export function readShared(relative) {
  return readFileSync(join(SHARED, relative), 'utf8');
}

export function sha256(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** A log sink that keeps the lines. */
export function capture() {
  const lines = [];
  const log = (line) => lines.push(line);
  log.lines = lines;
  return log;
}

/** `count` numbered paragraphs of ~370 characters (the conformance suite's text): 12 make one batch. */
export function notes(count, word = 'Note') {
  return Array.from(
    { length: count },
    (_, i) =>
      `${word} ${i + 1}. The upload client keeps a small queue of pending parts and sends them in order; when a part fails it is put back at the head of the queue and tried again after a pause that grows with each failure. Operators who watch the queue see the same part name several times in a row, which is expected and harmless, and the dashboard marks it amber until it goes through.`,
  ).join('\n\n');
}

export const REQUEST = 'How do I configure the retry limit for the upload client?';

/**
 * A scorer answering every paragraph `score(n)` (default: odd ones 0, even
 * ones 1: half is dropped), after `ms` of waiting (cancellable by the
 * host's signal). `calls` counts its calls.
 */
export function scripted({ ms = 0, score = (n) => (n % 2 ? 0 : 1), name = 'scripted', sync = true } = {}) {
  const state = { calls: 0, requests: [] };
  const answer = (request) => {
    state.calls += 1;
    state.requests.push(request);
    return request.batches.map((b) => ({ scores: Array.from(b.paragraphs, score) }));
  };
  const scorer = {
    name,
    state,
    async score(request, { signal }) {
      if (ms > 0) await delay(ms, undefined, { signal }).catch(() => {});
      return answer(request);
    },
  };
  if (sync) scorer.scoreSync = answer;
  return scorer;
}

/**
 * A copy of the built bindings (gen/) whose guest loops forever in each
 * of the exports named (core export names containing them, e.g.
 * `[constructor]prune-job`, `#prune"`): a guest no fuel could stop in
 * Node. Made with jco's print / parse; resolves to the directory (remove
 * it after).
 */
export async function loopingGen(...exportNames) {
  const { cpSync, mkdtempSync, readdirSync, readFileSync: read, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { spawnSync } = await import('node:child_process');
  const pkg = join(here, '..');
  const dir = mkdtempSync(join(tmpdir(), 'toolprune-looping-'));
  cpSync(join(pkg, 'gen'), dir, { recursive: true });
  const jco = join(pkg, 'node_modules', '.bin', 'jco');
  const core = readdirSync(dir).find((f) => f.endsWith('.wasm') && read(join(dir, f)).includes(Buffer.from(exportNames[0].replaceAll('"', ''))));
  const wat = join(dir, 'core.wat');
  const run = (...args) => {
    const r = spawnSync(jco, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`jco ${args[0]}: ${r.stderr}`);
  };
  run('print', join(dir, core), '-o', wat);
  const lines = read(wat, 'utf8').split('\n');
  for (const exportName of exportNames) {
    const exported = lines.find((l) => l.includes('(export "') && l.includes(exportName) && !l.includes('cabi_post'));
    const index = /\(func (\d+)\)\)$/.exec(exported)[1];
    let at = lines.findIndex((l) => l.startsWith(`  (func (;${index};)`)) + 1;
    while (lines[at].trimStart().startsWith('(local')) at += 1;
    lines.splice(at, 0, '    loop', '      br 0', '    end');
  }
  writeFileSync(wat, lines.join('\n'));
  run('parse', wat, '-o', join(dir, core));
  return dir;
}
