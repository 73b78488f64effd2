#!/usr/bin/env node
// toolprune (npm): the launcher of the `toolprune` command.
//
// The npm package carries the native binary (the Rust CLI: hooks, `mcp`,
// `mcp-proxy`, `install`, `doctor`, `stats`, …) in a platform package taken
// through `optionalDependencies`, as esbuild and biome do: `@toolprune/linux-x64`
// (os linux, cpu x64, libc glibc; npm skips it elsewhere). When it is
// installed, every command goes to that binary, arguments, stdin, stdout and
// exit status unchanged: one CLI, the same bytes as the release binary.
//
// Without it (another platform, `--omit=optional`, an offline install of
// the main tarball alone):
//   - `prune`, `split`, `route` (and help, usage errors) run the Node
//     implementation, `main(argv)` of ../src/cli.js, imported only then;
//   - `hook AGENT` gives the agent's "no change" answer: stdin read and
//     discarded (at most 5 s), the answer the binary gives when it passes
//     (Gemini CLI and Cursor `{}`, Cursor's prompt event `{"continue":true}`,
//     else nothing), exit 0, nothing on stderr — never an error in the agent;
//   - every other command of the binary says this platform has no native
//     binary, exit 1.
// The same decisions are those of the wheel's launcher (_toolprune_launcher.py).
//
// `toolprune install AGENT` run through here writes the binary's own path
// into the agent's settings, so no launcher runs on a tool call.

import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The platform package carrying the binary, by `${process.platform}-${process.arch}`. */
const PLATFORM_PACKAGES = { 'linux-x64': '@toolprune/linux-x64' };

/** Commands only the native binary has (`hook` is answered apart). */
const NATIVE_ONLY = new Set(['mcp', 'mcp-proxy', 'install', 'uninstall', 'doctor', 'stats', 'eval', 'jev', 'plugin']);

/** How long a hook without the binary keeps reading the agent's event (the binary's DRAIN_LIMIT). */
const DRAIN_MS = 5000;

/** Of the event, this much is kept to read its name (Cursor's prompt event); the rest is discarded. */
const HEAD_BYTES = 1 << 20;

/** The binary's path, or null when this platform's package is not installed (or has none). */
function nativeBinary() {
  const name = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (name === undefined) return null;
  try {
    const binary = join(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)), 'bin', 'toolprune');
    accessSync(binary, constants.X_OK);
    return binary;
  } catch {
    return null;
  }
}

/** The binary's "no change" answer of `hook AGENT` (cli/src/agents/*.rs `pass`). */
function passAnswer(args, head) {
  const [agent, ...more] = args;
  if (more.length > 1 || (more.length === 1 && more[0] !== '--plugin')) return '';
  if (agent === 'gemini') return '{}';
  if (agent !== 'cursor') return '';
  try {
    if (JSON.parse(head.toString('utf8')).hook_event_name === 'beforeSubmitPrompt') return '{"continue":true}';
  } catch {
    // Not JSON, or more than HEAD_BYTES: the plain answer.
  }
  return '{}';
}

/** `hook` without the binary: read the event (bounded in time), answer "no change", exit 0. */
function hookWithoutBinary(args) {
  const chunks = [];
  let size = 0;
  let done = false;
  const answer = () => {
    if (done) return;
    done = true;
    const head = size <= HEAD_BYTES ? Buffer.concat(chunks) : Buffer.alloc(0);
    process.stdout.write(passAnswer(args, head), () => process.exit(0));
  };
  process.stdin.on('data', (chunk) => {
    if (size + chunk.length <= HEAD_BYTES) chunks.push(chunk);
    size += chunk.length;
  });
  process.stdin.on('end', answer);
  process.stdin.on('error', answer);
  process.stdout.on('error', () => process.exit(0));
  setTimeout(answer, DRAIN_MS);
}

function noBinary(command) {
  const platform = `${process.platform}-${process.arch}`;
  const name = PLATFORM_PACKAGES[platform];
  const why =
    name === undefined
      ? `this platform (${platform}) has no native toolprune binary in the npm package (it carries one for ${Object.keys(PLATFORM_PACKAGES).join(', ')})`
      : `the native toolprune binary for ${platform} is not installed (the optional dependency ${name}: install it beside toolprune, without --omit=optional)`;
  process.stderr.write(`toolprune ${command}: ${why}. Here only prune, split and route work (docs/install.md).\n`);
  return 1;
}

/** Runs the binary with our arguments and stdio; resolves to its exit status. */
function runBinary(binary, args) {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { stdio: 'inherit' });
    const forward = (signal) => child.kill(signal);
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    for (const signal of signals) process.on(signal, forward);
    child.on('error', (error) => resolve({ error }));
    child.on('exit', (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve({ code, signal });
    });
  });
}

async function launch(argv) {
  const [command, ...rest] = argv;
  const binary = nativeBinary();
  if (binary !== null) {
    const { code, signal, error } = await runBinary(binary, argv);
    if (command === 'hook') {
      // The agent must go on whatever happened to the binary (it could not
      // start: stdin is still unread, so answer as without it).
      if (error) return hookWithoutBinary(rest);
      return 0;
    }
    if (error) {
      process.stderr.write(`toolprune: could not start ${binary}: ${error.message}\n`);
      return 1;
    }
    if (signal) {
      process.kill(process.pid, signal);
      return 1;
    }
    return code ?? 1;
  }
  if (command === 'hook') return hookWithoutBinary(rest);
  if (NATIVE_ONLY.has(command)) return noBinary(command);
  const { main } = await import('../src/cli.js');
  return main(argv);
}

const argv = process.argv.slice(2);
launch(argv).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error) => {
    if (argv[0] === 'hook') {
      process.exit(0); // never an error in the agent
    }
    process.stderr.write(`toolprune: ${error?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
