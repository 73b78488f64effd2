// The version check before instantiation (host design rule 8): every
// `toolprune:pruner/*` export must carry 0.3.x, else `Pruner.load` refuses
// with a message naming both versions. The components under test are the
// refusal stand-in `dist/contract-0.2.0.wasm` (wit/since_v0.2.0 with a
// dummy core module, written by `toolprune-dist`; transpiled by jco as it
// is: it has no memory to bound) and the real one with its package version
// rewritten (`@0.3.0` → `@0.3.7`, same length, so the binary stays valid),
// transpiled by the package's own build script.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { checkVersion } from '../src/engine.js';
import { CONTRACT, Pruner, VersionError } from '../src/index.js';
import { ROOT } from './helpers.js';

const BUILD = fileURLToPath(new URL('../scripts/build.mjs', import.meta.url));
const COMPONENT = process.env.TOOLPRUNE_WASM ?? join(ROOT, 'dist', 'toolprune.wasm');
const CONTRACT_0_2 = join(dirname(COMPONENT), 'contract-0.2.0.wasm');
const JCO = fileURLToPath(new URL('../node_modules/.bin/jco', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'toolprune-version-'));

/** The component with every `@0.3.0` renamed `@VERSION`, transpiled into a directory of its own. */
function build(version) {
  const wasm = join(work, `toolprune-${version}.wasm`);
  const bytes = readFileSync(COMPONENT);
  const from = Buffer.from('@0.3.0');
  const to = Buffer.from(`@${version}`);
  assert.equal(to.length, from.length);
  const parts = [];
  let at = 0;
  for (let i = bytes.indexOf(from); i !== -1; i = bytes.indexOf(from, at)) {
    parts.push(bytes.subarray(at, i), to);
    at = i + from.length;
  }
  parts.push(bytes.subarray(at));
  assert.ok(parts.length > 10, 'the component names its package version');
  writeFileSync(wasm, Buffer.concat(parts));
  const out = join(work, `gen-${version}`);
  const r = spawnSync(process.execPath, [BUILD, '--out', out], { env: { ...process.env, TOOLPRUNE_WASM: wasm }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

let other;
let patch;

before(() => {
  if (existsSync(CONTRACT_0_2)) {
    other = join(work, 'gen-0.2.0');
    const r = spawnSync(JCO, ['transpile', CONTRACT_0_2, '-o', other, '--name', 'toolprune', '--instantiation', 'sync', '--no-wasi-shim', '-q'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
  if (existsSync(COMPONENT)) patch = build('0.3.7');
});

after(() => rmSync(work, { recursive: true, force: true }));

test('a component of contract 0.2 is refused before instantiation, naming both versions', { skip: !existsSync(CONTRACT_0_2) && 'no dist/contract-0.2.0.wasm' }, async () => {
  await assert.rejects(Pruner.load({ genDir: other }), (error) => {
    assert.ok(error instanceof VersionError);
    assert.equal(error.message, 'toolprune: this component implements contract 0.2.0, this host needs 0.3.x (rebuild or reinstall toolprune)');
    assert.equal(error.found, '0.2.0');
    return true;
  });
});

test('another patch version of 0.3 is accepted', { skip: !existsSync(COMPONENT) && 'no dist/toolprune.wasm' }, async () => {
  const pruner = await Pruner.load({ genDir: patch });
  assert.equal(pruner.isPrunable('WebFetch', ['WebFetch']), true);
  pruner.close();
});

test('the built component speaks this host\'s contract', async () => {
  const pruner = await Pruner.load();
  assert.ok(pruner.version.startsWith(`${CONTRACT}.`), pruner.version);
  pruner.close();
});

test('a directory without bindings, or with a component instead of jco\'s output, is a clear error', async () => {
  const empty = mkdtempSync(join(work, 'empty-'));
  await assert.rejects(Pruner.load({ genDir: empty }), /no core modules in .*; run `npm run build`/);
  writeFileSync(join(empty, 'toolprune.core.wasm'), readFileSync(COMPONENT));
  await assert.rejects(Pruner.load({ genDir: empty }), /toolprune\.core\.wasm in .* is not a core module jco wrote/);
});

/** A core module exporting one empty function under each of `names`. */
function moduleExporting(names) {
  const uleb = (n) => {
    const out = [];
    do {
      let byte = n & 0x7f;
      n >>>= 7;
      if (n) byte |= 0x80;
      out.push(byte);
    } while (n);
    return out;
  };
  const vec = (items) => [...uleb(items.length), ...items.flat()];
  const section = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];
  const name = (s) => vec([...Buffer.from(s)].map((b) => [b]));
  const bytes = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, 0x00, 0x00]])),
    ...section(3, vec(names.map(() => [0x00]))),
    ...section(7, vec(names.map((n, i) => [...name(n), 0x00, ...uleb(i)]))),
    ...section(10, vec(names.map(() => [0x02, 0x00, 0x0b]))),
  ];
  return new WebAssembly.Module(new Uint8Array(bytes));
}

test('the version is read from both manglings of core names: legacy (`@0.3.0#`) and standard (`cm32p2|…@0.3|`)', () => {
  const legacy = moduleExporting(['toolprune:pruner/settings@0.3.0#version', 'toolprune:pruner/pruner@0.3.0#[constructor]prune-job']);
  assert.deepEqual(checkVersion(new Map([['legacy', legacy]])), ['0.3.0']);
  const standard = moduleExporting(['cm32p2|toolprune:pruner/settings@0.3|version', 'cm32p2|toolprune:pruner/settings@0.3|version_post']);
  assert.deepEqual(checkVersion(new Map([['standard', standard]])), ['0.3']);
  const old = moduleExporting(['cm32p2|toolprune:pruner/settings@0.2|version', 'cm32p2|toolprune:pruner/pruner@0.2|[method]prune-job.finish']);
  assert.throws(() => checkVersion(new Map([['old', old]])), (error) => {
    assert.ok(error instanceof VersionError);
    assert.equal(error.message, `toolprune: this component implements contract 0.2, this host needs ${CONTRACT}.x (rebuild or reinstall toolprune)`);
    return true;
  });
});
