// The `toolprune` command's launcher (bin/toolprune.mjs), without and with
// the native binary of the platform package (issue 23 §1):
//   - without it (this repository: @toolprune/linux-x64 is not installed
//     here), `hook AGENT` reads and discards the event and gives the
//     agent's "no change" answer, exit 0, nothing on stderr, also when
//     stdin never ends (it stops reading after 5 s); the binary's other
//     commands exit 1 saying there is no native binary; `prune`, `split`
//     and `route` are cli.js's (test/cli.test.js);
//   - with it (a scratch node_modules holding a copy of the launcher and a
//     stand-in platform package whose `bin/toolprune` is a shell script),
//     every command goes to the binary: arguments, stdin, stdout and exit
//     status unchanged; a hook exits 0 whatever the binary did; a binary
//     that is not executable is as none.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { ROOT } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/toolprune.mjs', import.meta.url));
const FIXTURES = join(ROOT, 'tests', 'fixtures', 'hooks');
const SCRATCH = mkdtempSync(join(tmpdir(), 'toolprune-launcher-'));

after(() => rmSync(SCRATCH, { recursive: true, force: true }));

function run(bin, args, input) {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: SCRATCH } },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
    child.stdin.end(input);
  });
}

const fixture = (agent, name) => readFileSync(join(FIXTURES, agent, name));

describe('without the native binary', () => {
  for (const [agent, name, answer] of [
    ['claude-code', 'post_tool_use.mcp_fetch.json', ''],
    ['claude-code', 'user_prompt_submit.json', ''],
    ['codex', 'post_tool_use.mcp_fetch.json', ''],
    ['gemini', 'AfterTool.mcp_fetch_fetch.stdin.json', '{}'],
    ['cursor', 'postToolUse.mcp.stdin.json', '{}'],
    ['cursor', 'beforeSubmitPrompt.stdin.json', '{"continue":true}'],
  ]) {
    test(`hook ${agent} answers "no change" to ${name}: ${JSON.stringify(answer)}, exit 0, nothing on stderr`, async () => {
      for (const args of [['hook', agent], ['hook', agent, '--plugin']]) {
        const { code, stdout, stderr } = await run(BIN, args, fixture(agent, name));
        assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: answer, stderr: '' }, args.join(' '));
      }
    });
  }

  test('a mistyped hook command (no agent, an unknown one, extra words) answers nothing, exit 0', async () => {
    for (const args of [['hook'], ['hook', 'vim'], ['hook', 'gemini', 'extra', 'words']]) {
      const { code, stdout, stderr } = await run(BIN, args, '{}');
      assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: '', stderr: '' }, args.join(' '));
    }
  });

  test('hook stops reading a stdin that never ends and answers, exit 0', async () => {
    const child = spawn(process.execPath, [BIN, 'hook', 'gemini'], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.write('{"hook_event_name": "AfterTool", ');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // It reads for 5 s; past 30 s it is killed and the test fails.
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(signal ?? c)));
    clearTimeout(guard);
    child.stdin.destroy();
    assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: '{}', stderr: '' });
  });

  test('the binary-only commands exit 1 saying there is no native binary', async () => {
    for (const command of ['mcp', 'mcp-proxy', 'install', 'uninstall', 'doctor', 'stats']) {
      const { code, stdout, stderr } = await run(BIN, [command, 'claude-code'], '');
      assert.equal(code, 1, command);
      assert.equal(stdout, '', command);
      assert.match(stderr, new RegExp(`^toolprune ${command}: .*native toolprune binary.* only prune, split and route work`), command);
    }
  });
});

describe('with the native binary', { skip: process.platform !== 'linux' || process.arch !== 'x64' }, () => {
  // node_modules/toolprune/bin/toolprune.mjs beside node_modules/@toolprune/linux-x64.
  const modules = join(SCRATCH, 'project', 'node_modules');
  const launcher = join(modules, 'toolprune', 'bin', 'toolprune.mjs');
  const platform = join(modules, '@toolprune', 'linux-x64');
  const binary = join(platform, 'bin', 'toolprune');
  mkdirSync(join(modules, 'toolprune', 'bin'), { recursive: true });
  copyFileSync(BIN, launcher);
  writeFileSync(join(modules, 'toolprune', 'package.json'), '{"name": "toolprune", "type": "module"}\n');
  mkdirSync(join(platform, 'bin'), { recursive: true });
  writeFileSync(join(platform, 'package.json'), '{"name": "@toolprune/linux-x64"}\n');
  // The stand-in: its argument count, its arguments one per line, then its stdin; exit `status`.
  const standIn = (status) => {
    writeFileSync(binary, `#!/bin/sh\necho $#\nfor a in "$@"; do printf '<%s>\\n' "$a"; done\ncat\nexit ${status}\n`);
    chmodSync(binary, 0o755);
  };

  test('every command goes to the binary: arguments, stdin, stdout and exit status unchanged', async () => {
    standIn(7);
    for (const args of [
      ['prune', '--request', 'a request with spaces', '--threshold', '-1', 'page.md'],
      ['mcp-proxy', '--', 'npx', 'server'],
      ['install', 'claude-code'],
      ['doctor'],
      [],
    ]) {
      const { code, stdout, stderr } = await run(launcher, args, 'the event');
      const echoed = `${args.length}\n${args.map((a) => `<${a}>\n`).join('')}`;
      assert.deepEqual({ code, stdout, stderr }, { code: 7, stdout: `${echoed}the event`, stderr: '' }, args.join(' '));
    }
  });

  test('a hook exits 0 whatever the binary exited with', async () => {
    standIn(3);
    const { code, stdout, stderr } = await run(launcher, ['hook', 'claude-code'], 'the event');
    assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: '2\n<hook>\n<claude-code>\nthe event', stderr: '' });
  });

  test('a binary that is not executable is as none: hook "no change", mcp-proxy exit 1', async () => {
    standIn(0);
    chmodSync(binary, 0o644);
    const hook = await run(launcher, ['hook', 'gemini'], '{}');
    assert.deepEqual(hook, { code: 0, stdout: '{}', stderr: '' });
    const proxy = await run(launcher, ['mcp-proxy'], '');
    assert.equal(proxy.code, 1);
    assert.match(proxy.stderr, /not installed/);
  });
});
