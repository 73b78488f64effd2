// The conformance suite (tests/conformance/README.md), run unchanged by the
// Node host: every scenario through the public API and a loopback Jev
// server (test/conformance-runner.js), each step's result compared with the
// scenario's hand-written expectations and with the results the Rust host
// generated (expected/NAME.json), byte for byte after the README's one
// normalisation. Scenarios are skipped only for a README capability this
// host lacks (fuel) or `slow` without TOOLPRUNE_SLOW=1; each skip says why.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { DIR, comparable, expected, partial, run, scenarios, skipReason } from './conformance-runner.js';

const present = existsSync(join(DIR, 'scenarios'));

describe('conformance', { skip: !present && `no conformance suite at ${DIR} (set TOOLPRUNE_CONFORMANCE_DIR)` }, () => {
  for (const [name, scenario] of present ? scenarios() : []) {
    const reason = skipReason(scenario);
    test(name, { skip: reason ?? false, timeout: 120_000 }, async () => {
      const results = await run(scenario);
      for (const [i, step] of scenario.steps.entries()) {
        if (step.expect === undefined) continue;
        const problem = partial(step.expect, results[i], `step ${i}`);
        assert.equal(problem, null, `${name}: ${problem}`);
      }
      const generated = expected(name);
      if (generated === null) {
        assert.ok(scenario.steps.some((s) => s.expect !== undefined), `${name}: no expected/ file and no hand-written expectation`);
        return;
      }
      const mine = comparable(results);
      assert.equal(mine.length, generated.steps.length, `${name}: the number of steps`);
      for (const [i, want] of generated.steps.entries()) {
        assert.deepStrictEqual(mine[i], want, `${name}: step ${i} differs from expected/${name}.json`);
      }
    });
  }
});
