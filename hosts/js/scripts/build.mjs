#!/usr/bin/env node
// `npm run build`: transpile the toolprune component with jco into gen/.
//
// The component is `dist/toolprune.wasm` at the repository root (or
// $TOOLPRUNE_WASM). When it is missing, or with `--refresh` /
// TOOLPRUNE_REFRESH_WASM=1, it is (re)built first with
// `cargo run -p toolprune-artifacts --bin toolprune-dist`.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const root = join(pkg, '..', '..');
const gen = join(pkg, 'gen');
const refresh = process.argv.includes('--refresh') || process.env.TOOLPRUNE_REFRESH_WASM === '1';

function fail(message) {
  console.error(`build: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  console.error(`build: ${[command, ...args].join(' ')}`);
  const r = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (r.error) fail(`${command}: ${r.error.message}`);
  if (r.status !== 0) fail(`${command} exited with ${r.status}`);
}

let wasm = process.env.TOOLPRUNE_WASM;
if (!wasm) {
  wasm = join(root, 'dist', 'toolprune.wasm');
  if (!existsSync(wasm) || refresh) {
    if (!existsSync(join(root, 'Cargo.toml'))) fail(`${wasm} is missing and there is no Cargo workspace at ${root}`);
    run('cargo', ['run', '-q', '-p', 'toolprune-artifacts', '--bin', 'toolprune-dist'], { cwd: root });
  }
}
if (!existsSync(wasm)) fail(`${wasm} is missing: run \`cargo run -p toolprune-artifacts --bin toolprune-dist\` at the repository root`);

const jco = join(pkg, 'node_modules', '.bin', process.platform === 'win32' ? 'jco.cmd' : 'jco');
if (!existsSync(jco)) fail('jco is not installed: run `npm ci` first');

rmSync(gen, { recursive: true, force: true });
mkdirSync(gen, { recursive: true });
// --instantiation sync: one compiled component, a fresh instance per turn
// and after every trap, made synchronously. --no-wasi-shim: the component
// imports no WASI at all.
run(jco, ['transpile', wasm, '-o', gen, '--name', 'toolprune', '--instantiation', 'sync', '--no-wasi-shim', '-q']);

// jco decodes strings from the guest with `new TextDecoder()`, which drops a
// leading U+FEFF (WHATWG "BOM sniffing"): a body starting with a BOM would
// come back one character short. Keep every character (SPEC §1: verbatim).
const bindings = join(gen, 'toolprune.js');
const source = readFileSync(bindings, 'utf8');
const patched = source
  .replaceAll('new TextDecoder()', "new TextDecoder('utf-8', { ignoreBOM: true })")
  .replaceAll("new TextDecoder('utf-16')", "new TextDecoder('utf-16', { ignoreBOM: true })");
if (!patched.includes("new TextDecoder('utf-8', { ignoreBOM: true })") || /new TextDecoder\((?:'utf-8'|'utf-16')?\)/.test(patched)) {
  fail('the jco output no longer matches the TextDecoder patch: check how it decodes strings (leading U+FEFF)');
}
writeFileSync(bindings, patched);

const bytes = readFileSync(wasm);
const info = {
  component: relative(pkg, wasm),
  bytes: bytes.length,
  sha256: createHash('sha256').update(bytes).digest('hex'),
  jco: JSON.parse(readFileSync(join(pkg, 'node_modules', '@bytecodealliance', 'jco', 'package.json'), 'utf8')).version,
};
writeFileSync(join(gen, 'build.json'), `${JSON.stringify(info, null, 2)}\n`);
console.error(`build: gen/ from ${info.component} (${info.bytes} bytes, sha256 ${info.sha256.slice(0, 16)}…, jco ${info.jco})`);
