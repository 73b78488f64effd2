// The config file (`settings.config-path`'s answer, e.g. TOOLPRUNE_CONFIG)
// as every host reads it: opened without blocking, refused unless it is a
// regular file, read no further than 1 MiB + 1 byte (the guest refuses a
// larger one with its own line: guest/src/limits.rs CONFIG_MAX_BYTES), and
// refused unless it is UTF-8, in the Rust host's words. A refusal is a
// ConfigError: pruning is off, the agent goes on.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { ConfigError, Pruner } from '../src/index.js';

const pruner = await Pruner.load();
const dir = mkdtempSync(join(tmpdir(), 'toolprune-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const MIB = 1 << 20;

const config = (path) => pruner.config({ TOOLPRUNE_CONFIG: path });

test('a config file that is not a regular file (a FIFO, /dev/zero, a folder) is refused at once, naming the path', { skip: process.platform === 'win32' }, () => {
  const fifo = join(dir, 'fifo.toml');
  const made = spawnSync('mkfifo', [fifo]);
  assert.equal(made.status, 0, String(made.stderr));
  // In a child: before the fix, opening the FIFO blocked forever.
  const child = `
    import { Pruner } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const pruner = await Pruner.load();
    for (const path of process.argv.slice(2)) {
      try {
        pruner.config({ TOOLPRUNE_CONFIG: path });
        console.log('accepted ' + path);
      } catch (error) {
        console.log(error.name + ': ' + error.message);
      }
    }
    pruner.close();`;
  const script = join(dir, 'child.mjs');
  writeFileSync(script, child);
  const run = spawnSync(process.execPath, [script, fifo, '/dev/zero', dir], { timeout: 30_000, encoding: 'utf8' });
  assert.equal(run.signal, null, `the child hung: ${run.stdout}`);
  assert.equal(run.stderr, '');
  assert.deepEqual(run.stdout.split('\n'), [
    `ConfigError: cannot read ${fifo}: not a regular file`,
    'ConfigError: cannot read /dev/zero: not a regular file',
    `ConfigError: cannot read ${dir}: not a regular file`,
    '',
  ]);
});

test('a config file over 1 MiB is read no further than 1 MiB + 1 byte: the guest refuses it in its own line', () => {
  // 64 MiB (sparse: NUL bytes, valid UTF-8). Before the fix the host read all of it.
  const big = join(dir, 'big.toml');
  writeFileSync(big, '');
  truncateSync(big, 64 * MIB);
  assert.throws(() => config(big), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.message, `configuration ${big}: larger than the 1048576 bytes a configuration file may have`);
    return true;
  });
  // At the bound: read and resolved; one byte more: refused.
  const head = 'threshold = 0.3\n#';
  const fits = join(dir, 'fits.toml');
  writeFileSync(fits, `${head}${'x'.repeat(MIB - head.length - 1)}\n`);
  assert.equal(config(fits).threshold, 0.3);
  const over = join(dir, 'over.toml');
  writeFileSync(over, `${head}${'x'.repeat(MIB - head.length)}\n`);
  assert.throws(() => config(over), { name: 'ConfigError', message: `configuration ${over}: larger than the 1048576 bytes a configuration file may have` });
  // Cut inside a character at 1 MiB + 1 byte: still the guest's size refusal, not "not UTF-8".
  const cut = join(dir, 'cut.toml');
  writeFileSync(cut, `#${'é'.repeat(MIB)}\n`);
  assert.throws(() => config(cut), { name: 'ConfigError', message: /^configuration .*cut\.toml: larger than the 1048576 bytes a configuration file may have$/ });
});

test('a config file with a byte that is not UTF-8 is refused as the Rust host refuses it (pruning off)', () => {
  const latin1 = join(dir, 'latin1.toml');
  writeFileSync(latin1, Buffer.from('threshold = 0.3\n# caf\xe9\n', 'latin1'));
  assert.throws(() => config(latin1), { name: 'ConfigError', message: `cannot read ${latin1}: stream did not contain valid UTF-8` });
  // The same text in UTF-8 is read.
  const utf8 = join(dir, 'utf8.toml');
  writeFileSync(utf8, 'threshold = 0.3\n# café\n');
  assert.equal(config(utf8).threshold, 0.3);
});

test('a config file that does not exist: none when found by HOME, the guest\'s refusal when named', () => {
  assert.equal(pruner.config({ HOME: join(dir, 'nowhere') }).threshold, pruner.defaults.threshold);
  assert.throws(() => config(join(dir, 'missing.toml')), { name: 'ConfigError', message: /no such file \(named by TOOLPRUNE_CONFIG\)/ });
});
