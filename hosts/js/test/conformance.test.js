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

// The runner itself, on scenarios written here (the README's new keys),
// in both forms: PRUNE `arguments` reaches the repeat gate, LIMITS `work`
// the guest's budget, and `scorer_calls` / `counts.work` are reported.
describe('the conformance runner', () => {
  const request = 'How do I configure the retry limit for the upload client?';
  const notes = { numbered: 'Note {i}. The upload client keeps a small queue of pending parts and sends them in order; when a part fails it is put back at the head of the queue and tried again after a pause that grows with each failure. Operators who watch the queue see the same part name several times in a row, which is expected and harmless, and the dashboard marks it amber until it goes through.', count: 12 };
  const scorer = { scripted: { default: 1.0, scores: { 1: 0.0, 3: 0.0, 5: 0.0, 7: 0.0, 9: 0.0, 11: 0.0 } } };
  for (const form of FORMS) {
    test(`PRUNE arguments: the same call again is skipped (repeated) with scorer_calls 0 [${form}]`, async () => {
      const results = await run({
        name: 'runner-arguments',
        conversation: { enabled: true, agent: 'conformance', scorer },
        steps: [
          { turn: { request } },
          { prune: { text: notes, arguments: '{"url": "https://example.com/a"}' } },
          { prune: { text: notes, arguments: '{"url":"https://example.com/a"}' } },
          { prune: { text: notes } },
        ],
      }, form);
      assert.deepEqual(results.slice(1).map((r) => [r.outcome, r.gate, r.id, r.scorer_calls]), [['ok', null, 'P1', 1], ['skipped', 'repeated', null, 0], ['ok', null, 'P2', 1]]);
      assert.equal(results[2].log.length, 1);
      assert.ok(results[1].counts.work > 0);
      assert.equal(results[1].counts.work, results[3].counts.work);
    });

    test(`LIMITS work: past the guest's budget, failed with reason=budget, the scorer never asked [${form}]`, async () => {
      const results = await run({
        name: 'runner-work',
        pruner: { limits: { work: 1000 } },
        conversation: { enabled: true, agent: 'conformance', scorer },
        steps: [{ turn: { request } }, { prune: { text: notes } }],
      }, form);
      assert.deepEqual([results[1].outcome, results[1].body_is_input, results[1].scorer_calls, results[1].failure], ['failed', true, 0, null]);
      assert.match(results[1].log[0], /reason=budget/);
    });
  }

});
