// The CLI: on every offline vector (every corpus document with its request,
// every shared case) the body on stdout and the log line on stderr are the
// Rust host's, byte for byte; flags, stdin, non-UTF-8 input, usage errors.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SHARED, vectors } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/toolprune.mjs', import.meta.url));

function run(args, input) {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { encoding: 'buffer', maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr: stderr.toString('utf8') });
    });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

const offline = vectors().filter((v) => v.scorer.kind === 'offline' && v.text_file && v.enabled && v.prunable && v.succeeded);

describe('the CLI matches the offline vectors', { concurrency: 6 }, () => {
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

test('stdin, --json, defaults', async () => {
  const v = offline.find((x) => x.name === 'offline-mcp-spec-2025-11-25-transports-0.3');
  const { readFileSync } = await import('node:fs');
  const text = readFileSync(join(SHARED, v.text_file));
  const { code, stdout, stderr } = await run(['prune', '--request', v.request, '--threshold', '0.3', '--json', '-'], text);
  assert.equal(code, 0);
  const report = JSON.parse(stdout.toString('utf8'));
  assert.equal(report.outcome, 'ok');
  assert.equal(report.scorer, 'offline');
  assert.equal(report.id, 'P1');
  assert.deepEqual(report.counts, v.expect.counts);
  assert.equal(report.ratio, v.expect.ratio);
  assert.equal(report.paragraphs.map((p) => p.fate[0]).join(''), v.expect.fates);
  assert.equal(stderr, `${v.expect.log_line.replace('agent=vectors name=fetch', 'agent=cli name=cli')}\n`);
});

test('input that is not UTF-8 is written back unchanged, with a warning', async () => {
  const bytes = Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0xff, 0x0a]);
  const { code, stdout, stderr } = await run(['prune', '--request', 'anything at all, twenty chars'], bytes);
  assert.equal(code, 0);
  assert.deepEqual(stdout, bytes);
  assert.match(stderr, /not UTF-8; passed through unchanged/);
});

test('a leading BOM survives a pass-through', async () => {
  const text = Buffer.from('\ufeffshort text\n', 'utf8');
  const { code, stdout } = await run(['prune', '--request', 'anything at all, twenty chars'], text);
  assert.equal(code, 0);
  assert.deepEqual(stdout, text);
});

test('usage errors exit 2, unreadable input exits 1', async () => {
  assert.equal((await run(['prune'])).code, 2);
  assert.equal((await run(['prune', '--request', 'x', '--lang', 'fr'])).code, 2);
  assert.equal((await run(['prune', '--request', 'x', '--threshold', 'abc'])).code, 2);
  assert.equal((await run(['prune', '--request', 'x', '--scorer', 'magic'])).code, 2);
  assert.equal((await run(['frobnicate'])).code, 2);
  const missing = await run(['prune', '--request', 'x', '/nonexistent/file.md']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read/);
});
