// The CLI (`node bin/toolprune.mjs`), run as the conformance suite runs
// CLIs (only PATH and a fresh empty HOME in the environment): on every
// offline vector (every corpus document with its request, every shared
// case) the body on stdout and the log line on stderr are the Rust host's,
// byte for byte; a refused threshold (also a negative-looking one) exits 2
// with the guest's message and the text passed through; `split` shows
// `pruner.inspect`; stdin, `--json`, non-UTF-8 input, usage errors.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Pruner } from '../src/index.js';
import { REQUEST, ROOT, SHARED, notes, readShared } from './helpers.js';

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

const vectors = JSON.parse(readFileSync(join(ROOT, 'tests', 'vectors', 'vectors.json'), 'utf8'));
const offline = vectors.filter((v) => v.scorer.kind === 'offline' && v.text_file && v.enabled && v.prunable && v.succeeded);

describe('the CLI matches the offline vectors', { concurrency: 4 }, () => {
  for (const v of offline) {
    test(v.name, async () => {
      const args = ['prune', '--request', v.request, '--threshold', String(v.threshold), '--lang', v.lang, '--agent', v.agent, '--tool', v.tool, join(SHARED, v.text_file)];
      const { code, stdout, stderr } = await run(args);
      assert.equal(code, 0, stderr);
      assert.equal(createHash('sha256').update(stdout).digest('hex'), v.expect.body_sha256);
      assert.equal(stderr, v.expect.log_line === null ? '' : `${v.expect.log_line}\n`);
    });
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
  const v = offline.find((x) => x.name === 'offline-mcp-spec-2025-11-25-transports-0.3');
  const text = readFileSync(join(SHARED, v.text_file));
  const { code, stdout, stderr } = await run(['prune', '--request', v.request, '--threshold', '0.3', '--json', '-'], text);
  assert.equal(code, 0);
  const raw = stdout.toString('utf8');
  const report = JSON.parse(raw);
  assert.deepEqual(Object.keys(report), ['outcome', 'gate', 'shape', 'counts', 'ratio', 'threshold', 'scorer', 'id', 'served_model', 'paragraphs', 'failures']);
  assert.equal(report.outcome, 'ok');
  assert.equal(report.scorer, 'offline');
  assert.equal(report.id, 'P1');
  const { ms, ...counts } = report.counts;
  assert.equal(ms, null);
  const { ms: _, ...expected } = v.expect.counts;
  assert.deepEqual(counts, expected);
  assert.equal(report.ratio, v.expect.ratio);
  assert.equal(report.paragraphs.map((p) => p.fate[0]).join(''), v.expect.fates);
  assert.match(raw, /\n  "threshold": 0\.3,\n/);
  assert.match(raw, /"score": (null|\d\.\d+|\d\.\d+e-\d+)[,\n]/);
  assert.equal(stderr, `${v.expect.log_line.replace('agent=vectors name=fetch', 'agent=cli name=cli')}\n`);
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
