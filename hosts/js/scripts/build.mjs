#!/usr/bin/env node
// `npm run build`: transpile the toolprune component with jco into gen/
// (or `--out DIR`), then patch two things in jco's output:
//
// - the bindings keep a leading U+FEFF in strings from the guest (jco's
//   TextDecoder would drop it: SPEC §1, verbatim);
// - the core module's memory gets a per-call bound (src/worker.js sets it
//   from `settings.call-limits-for` before every call): V8 can neither
//   change a memory's maximum after instantiation nor call back on growth,
//   so the module's `memory.grow` goes through a function appended to the
//   module that refuses growth past the bound and remembers it (the log
//   line then names `limit=memory`, as wasmtime's limiter does).
//
// The component is `dist/toolprune.wasm` at the repository root (or
// $TOOLPRUNE_WASM). When it is missing, or with `--refresh` /
// TOOLPRUNE_REFRESH_WASM=1, it is (re)built first with
// `cargo run -p toolprune-artifacts --bin toolprune-dist`.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, '..');
const root = join(pkg, '..', '..');
const outAt = process.argv.indexOf('--out');
const gen = outAt > 0 && process.argv[outAt + 1] ? resolve(process.argv[outAt + 1]) : join(pkg, 'gen');
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

/** Wasm pages the guest may use at most: below 2 GiB, where jco's pointers stay positive. */
const MAX_PAGES = 32767;

/**
 * Routes the core module's `memory.grow` through `$toolprune_grow`, which
 * refuses to grow past the exported global `toolprune-host:memory-limit-pages`
 * and then sets `toolprune-host:memory-refused` to 1; caps the memory at
 * MAX_PAGES. Appended definitions shift no index (functions and globals are
 * numbered in order of definition).
 */
function boundMemory(file) {
  const work = mkdtempSync(join(tmpdir(), 'toolprune-build-'));
  try {
    const wat = join(work, 'core.wat');
    run(jco, ['print', file, '-o', wat]);
    let text = readFileSync(wat, 'utf8');
    let grows = 0;
    text = text.replace(/^(\s*)memory\.grow\s*$/gm, (_, indent) => {
      grows += 1;
      return `${indent}call $toolprune_grow`;
    });
    let memories = 0;
    text = text.replace(/^  \(memory \(;0;\) (\d+)(?: (\d+))?\)$/m, (_, min, max) => {
      memories += 1;
      const cap = Math.min(max === undefined ? MAX_PAGES : Number(max), MAX_PAGES);
      return `  (memory (;0;) ${min} ${Math.max(cap, Number(min))})`;
    });
    if (grows === 0 || memories !== 1) {
      fail(`${file}: expected one memory and a memory.grow (found ${memories} / ${grows}): check jco's output`);
    }
    const end = text.trimEnd().lastIndexOf(')');
    const appended = [
      `  (global $toolprune_limit (mut i32) i32.const ${MAX_PAGES})`,
      '  (global $toolprune_refused (mut i32) i32.const 0)',
      '  (func $toolprune_grow (param $pages i32) (result i32)',
      '    memory.size',
      '    i64.extend_i32_u',
      '    local.get $pages',
      '    i64.extend_i32_u',
      '    i64.add',
      '    global.get $toolprune_limit',
      '    i64.extend_i32_u',
      '    i64.gt_u',
      '    if (result i32)',
      '      i32.const 1',
      '      global.set $toolprune_refused',
      '      i32.const -1',
      '    else',
      '      local.get $pages',
      '      memory.grow',
      '    end)',
      '  (export "toolprune-host:memory-limit-pages" (global $toolprune_limit))',
      '  (export "toolprune-host:memory-refused" (global $toolprune_refused))',
      '',
    ].join('\n');
    writeFileSync(wat, `${text.slice(0, end)}${appended}${text.slice(end)}`);
    run(jco, ['parse', wat, '-o', file]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const withMemory = readdirSync(gen).filter(
  (f) => f.endsWith('.wasm') && WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(join(gen, f)))).some((e) => e.kind === 'memory'),
);
if (withMemory.length !== 1) fail(`expected one core module with a memory in ${gen}, found ${withMemory.length}`);
boundMemory(join(gen, withMemory[0]));

const bytes = readFileSync(wasm);
const info = {
  component: relative(pkg, wasm),
  bytes: bytes.length,
  sha256: createHash('sha256').update(bytes).digest('hex'),
  jco: JSON.parse(readFileSync(join(pkg, 'node_modules', '@bytecodealliance', 'jco', 'package.json'), 'utf8')).version,
};
writeFileSync(join(gen, 'build.json'), `${JSON.stringify(info, null, 2)}\n`);
console.error(`build: ${relative(pkg, gen) || '.'}/ from ${info.component} (${info.bytes} bytes, sha256 ${info.sha256.slice(0, 16)}…, jco ${info.jco})`);
