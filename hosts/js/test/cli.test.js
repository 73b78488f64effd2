// The CLI (`node bin/toolprune.mjs`), run as the conformance suite runs
// CLIs (only PATH and a fresh empty HOME in the environment): on every
// corpus document with its request (en, and ja where there is one) and
// every shared case, at two thresholds, the body on stdout and the log line
// on stderr are the library's, byte for byte (the library is pinned to the
// Rust host by the conformance suite); a refused threshold (also a
// negative-looking one) exits 2 with the guest's message and the text
// passed through; `split` shows `pruner.inspect`; stdin, `--json`,
// non-UTF-8 input, usage errors.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Pruner } from '../src/index.js';
import { REQUEST, SHARED, notes, readShared } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/toolprune.mjs', import.meta.url));
const HOME = mkdtempSync(join(tmpdir(), 'toolprune-cli-home-'));
const pruner = await Pruner.load();

after(() => rmSync(HOME, { recursive: true, force: true }));

function run(args, input, env = {}) {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      { encoding: 'buffer', maxBuffer: 64 << 20, env: { PATH: process.env.PATH, HOME, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr: stderr.toString('utf8') }),
    );
    child.stdin.end(input);
  });
}

/** Every corpus document with its request(s) and every shared case with its own, offline. */
const documents = [
  ...JSON.parse(readShared('corpus/manifest.json')).flatMap((d) => [
    { file: `corpus/${d.file}`, request: d.request_en, lang: 'en' },
    ...(d.request_ja ? [{ file: `corpus/${d.file}`, request: d.request_ja, lang: 'ja' }] : []),
  ]),
  ...JSON.parse(readShared('cases/cases.json')).map((c) => ({ file: `cases/${c.file}`, request: c.request, lang: 'en' })),
];

describe('the CLI prints what the library answers, byte for byte', { concurrency: 4 }, () => {
  for (const d of documents) {
    for (const threshold of ['0.2', '0.3']) {
      test(`${d.file} ${d.lang} ${threshold}`, async () => {
        const args = ['prune', '--request', d.request, '--threshold', threshold, '--lang', d.lang, '--agent', 'cli agent', '--tool', 'web=fetch', join(SHARED, d.file)];
        const { code, stdout, stderr } = await run(args);
        assert.equal(code, 0, stderr);
        const lines = [];
        const conversation = pruner.conversation({ enabled: true, threshold, lang: d.lang, agent: 'cli agent', log: (l) => lines.push(l) });
        const r = conversation.turn(d.request).onToolResultSync({ tool: 'web=fetch', text: readShared(d.file), prunable: true });
        assert.ok(stdout.equals(Buffer.from(r.body, 'utf8')), 'the body');
        assert.equal(stderr, lines.map((l) => `${l}\n`).join(''));
      });
    }
  }
});

test('a refused threshold, also a negative-looking one, exits 2 with the guest\'s message; the text passes through', async () => {
  const text = notes(12);
  for (const threshold of ['-1', '0.25', 'NaN', '-0.2']) {
    const { code, stdout, stderr } = await run(['prune', '--threshold', threshold, '--request', REQUEST, '--scorer', 'offline'], text);
    assert.equal(code, 2, threshold);
    assert.equal(stdout.toString('utf8'), text);
    let message;
    try {
      pruner.threshold(threshold);
    } catch (error) {
      message = error.guestMessage;
    }
    assert.ok(stderr.includes(message), stderr);
    assert.doesNotMatch(stderr, /^tool /m);
  }
  const ok = await run(['prune', '--threshold', '0.30', '--request', REQUEST, '--scorer', 'stub', '--agent', '-x', '--tool', '-y'], text);
  assert.equal(ok.code, 0);
  assert.match(ok.stderr, /^tool prune: agent=-x name=-y outcome=\w+ .* threshold=0\.3 .* scorer=stub\n$/);
});

test('stdin, --json (fields in the Rust CLI\'s order, f64 as serde_json writes them), defaults', async () => {
  const request = JSON.parse(readShared('corpus/manifest.json')).find((d) => d.file === 'mcp-spec-2025-11-25-transports.mdx').request_en;
  const text = readShared('corpus/mcp-spec-2025-11-25-transports.mdx');
  const { code, stdout, stderr } = await run(['prune', '--request', request, '--threshold', '0.3', '--json', '-'], text);
  assert.equal(code, 0);
  const raw = stdout.toString('utf8');
  const report = JSON.parse(raw);
  assert.deepEqual(Object.keys(report), ['outcome', 'gate', 'shape', 'counts', 'ratio', 'threshold', 'scorer', 'id', 'served_model', 'paragraphs', 'failures']);
  const lines = [];
  const r = pruner.conversation({ enabled: true, threshold: 0.3, agent: 'cli', log: (l) => lines.push(l) }).turn(request).onToolResultSync({ tool: 'cli', text, prunable: true, report: true });
  assert.deepEqual(report.outcome, r.outcome);
  assert.equal(report.scorer, 'offline');
  assert.equal(report.id, 'P1');
  assert.deepEqual(report.counts, { raw_chars: r.counts.rawChars, kept_chars: r.counts.keptChars, paragraphs: r.counts.paragraphs, dropped: r.counts.dropped, calls: 0, jev_tokens: 0, ms: null });
  assert.equal(report.ratio, r.ratio);
  assert.deepEqual(report.paragraphs, r.paragraphs);
  assert.match(raw, /\n  "threshold": 0\.3,\n/);
  assert.match(raw, /"score": (null|\d\.\d+|\d\.\d+e-\d+)[,\n]/);
  assert.equal(stderr, `${lines[0]}\n`);
  // The bytes are the guest's rendering (report.prune-json), not the host's.
  assert.equal(raw, `${pruner.pruneJson(r, 'offline')}\n`);
});

test('split and split --json print the guest\'s report exports; pruneJson reports a host failure and refuses a copied result', async () => {
  const text = readShared('cases/wrapper-ascii-escaped.json');
  const table = await run(['split', '-'], text);
  assert.equal(table.stdout.toString('utf8'), pruner.split(text));
  const json = await run(['split', '--json', '-'], text);
  assert.equal(json.stdout.toString('utf8'), `${pruner.split(text, { json: true })}\n`);
  // A host failure has no guest answer: the report says why (reason, limit).
  const failed = { outcome: 'failed', failure: { reason: 'guest_trap', limit: 'wall_time' } };
  const report = JSON.parse(pruner.pruneJson(failed, 'offline'));
  assert.deepEqual([report.outcome, report.reason, report.limit, report.counts], ['failed', 'guest_trap', 'wall_time', null]);
  // A copy loses the guest's answer: refused, never reported as a trap.
  const skipped = pruner.conversation({ log: () => {} }).turn(REQUEST).onToolResultSync({ text: 'short', prunable: true });
  assert.equal(skipped.outcome, 'skipped');
  assert.equal(JSON.parse(pruner.pruneJson(skipped, 'offline')).outcome, 'skipped');
  assert.throws(() => pruner.pruneJson(structuredClone(skipped), 'offline'), TypeError);
});

test('split shows pruner.inspect: the shape line and a row per unit, or JSON', async () => {
  const file = join(SHARED, 'cases/wrapper-ascii-escaped.json');
  const inspection = pruner.inspect(readShared('cases/wrapper-ascii-escaped.json'));
  const table = await run(['split', file]);
  assert.equal(table.code, 0);
  const lines = table.stdout.toString('utf8').split('\n');
  assert.equal(lines[0], `shape: json_wrapper (string literal at bytes ${inspection.wrapperSpan[0]}..${inspection.wrapperSpan[1]})`);
  assert.equal(lines[1], 'index  bytes               chars  kind    text');
  assert.equal(lines.length, inspection.units.length + 3);
  assert.match(lines[2], /^ {4}0  0\.\.\d+ +\d+  scored  Section 0 on retries: /);
  const json = await run(['split', '--json'], readFileSync(file));
  const parsed = JSON.parse(json.stdout.toString('utf8'));
  assert.equal(parsed.shape, 'json_wrapper');
  assert.deepEqual(parsed.wrapper_span, inspection.wrapperSpan);
  assert.deepEqual(Object.keys(parsed.units[0]), ['index', 'byte_start', 'byte_end', 'char_start', 'char_end', 'chars', 'kind']);
  const structured = await run(['split'], '{"a": 1, "b": [1, 2, 3]}');
  assert.equal(structured.stdout.toString('utf8'), 'shape: none (not pruned: structured)\n');
});

test('input that is not UTF-8 is written back unchanged, with a warning; a leading BOM survives', async () => {
  const bytes = Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0xff, 0x0a]);
  const { code, stdout, stderr } = await run(['prune', '--request', 'anything at all, twenty chars'], bytes);
  assert.equal(code, 0);
  assert.deepEqual(stdout, bytes);
  assert.match(stderr, /not UTF-8; passed through unchanged/);
  const bom = Buffer.from('\ufeffshort text\n', 'utf8');
  assert.deepEqual((await run(['prune', '--request', 'anything at all, twenty chars'], bom)).stdout, bom);
});

test('--scorer jev without a configuration is a usage error that passes the text through', async () => {
  const text = notes(12);
  const { code, stdout, stderr } = await run(['prune', '--request', REQUEST, '--scorer', 'jev'], text);
  assert.equal(code, 2);
  assert.equal(stdout.toString('utf8'), text);
  assert.match(stderr, /--scorer jev: /);
});

test('usage errors exit 2, unreadable input exits 1', async () => {
  assert.equal((await run(['prune'], '')).code, 2);
  assert.equal((await run(['prune', '--request', 'x', '--lang', 'fr'], '')).code, 2);
  assert.equal((await run(['prune', '--request', 'x', '--scorer', 'magic'], '')).code, 2);
  assert.equal((await run(['frobnicate'], '')).code, 2);
  const missing = await run(['prune', '--request', 'x', '/nonexistent/file.md'], '');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read/);
});
