// The conformance suite (tests/conformance/README.md), run unchanged by the
// Node host: every scenario in both forms (`import`: the sync API, one
// guest call through the `scorer` import; `jobs`: the async API) through
// the public API and a loopback Jev server (test/conformance-runner.js),
// each step's result compared with the scenario's hand-written
// expectations and with the results the Rust host generated
// (expected/NAME.json, the same file for both forms), byte for byte after
// the README's one normalisation; the runner also fails a step whose
// scorer was asked twice for one result, or at all for a gated one or one
// the guest scores. Scenarios are skipped only for a README capability this
// host lacks (fuel) or `slow` without TOOLPRUNE_SLOW=1; each skip says why.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { DIR, FORMS, comparable, expected, partial, run, scenarios, skipReason } from './conformance-runner.js';

const present = existsSync(join(DIR, 'scenarios'));

describe('conformance', { skip: !present && `no conformance suite at ${DIR} (set TOOLPRUNE_CONFORMANCE_DIR)` }, () => {
  for (const [name, scenario] of present ? scenarios() : []) {
    const reason = skipReason(scenario);
    for (const form of FORMS) {
    test(`${name} [${form}]`, { skip: reason ?? false, timeout: 120_000 }, async () => {
      const results = await run(scenario, form);
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
        assert.deepStrictEqual(mine[i], want, `${name} [${form}]: step ${i} differs from expected/${name}.json`);
      }
    });
    }
  }
});
