// The judge router from Node: `pruner.route` with the fixed answers of the
// judge fixtures (copies of examples/judge plus variations; in
// tests/conformance/judge, formerly tests/vectors/judge), through the
// one-shot `route` export and through the `judge-job` resource with a scorer
// (under the host's deadline, cancellable); load errors; `toolprune route`.
// Byte parity of decisions and of the CLI's output with the Rust host is
// the conformance suite's (scenarios `judge`, `judge-cli`).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Pruner, RulesError } from '../src/index.js';

const BIN = fileURLToPath(new URL('../bin/toolprune.mjs', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../../../tests/conformance/judge/', import.meta.url));
const fixture = (name) => readFileSync(`${FIXTURES}${name}`, 'utf8');
const RULES = fixture('rules.toml');
const MESSAGE = 'Compare the pricing of three CI services';

const pruner = await Pruner.load();

async function route(answersFile, options = {}) {
  const lines = [];
  const d = await pruner.route(options.rules ?? RULES, MESSAGE, { answers: fixture(answersFile), log: (l) => lines.push(l), ...options });
  assert.deepEqual(lines, [d.logLine]);
  return d;
}

test('the example rules file is examples/judge', () => {
  const examples = fileURLToPath(new URL('../../../examples/judge/', import.meta.url));
  assert.equal(RULES, readFileSync(`${examples}rules.toml`, 'utf8'));
  assert.equal(fixture('answers.json'), readFileSync(`${examples}answers.json`, 'utf8'));
});

test('routed: the example answers route to agent_3 by rule 3', async () => {
  const d = await route('answers.json');
  assert.deepEqual(d, {
    verdict: 'routed',
    to: ['agent_3'],
    note: null,
    reason: null,
    rule: 3,
    answers: [
      { question: 'risky', kind: 'noul', value: null, p: 0.03, margin: null, mean: null },
      { question: 'kind', kind: 'choice', value: 'research', p: 0.99, margin: 0.98, mean: null },
      { question: 'size', kind: 'score', value: '1', p: 0.8, margin: 0.65, mean: 1.25 },
    ],
    jevTokens: 534,
    logLine: 'judge: risky=0.03 kind=research/0.99/0.98 size=1/0.80/0.65 size.mean=1.25 rule=3 routed to=agent_3',
  });
});

test('routed to several targets (fan out)', async () => {
  const d = await route('fanout.json');
  assert.equal(d.verdict, 'routed');
  assert.deepEqual(d.to, ['agent_3', 'agent_10']);
  assert.equal(d.rule, 2);
});

test('returned, with the rule\'s note', async () => {
  const d = await route('returned.json');
  assert.equal(d.verdict, 'returned');
  assert.equal(d.rule, 1);
  assert.equal(d.note, 'Contains an operation that cannot be undone: not routed');
  assert.equal(d.to, null);
});

test('otherwise: no rule holds', async () => {
  const d = await route('otherwise.json');
  assert.equal(d.verdict, 'returned');
  assert.equal(d.rule, null);
  assert.equal(d.note, null);
  assert.match(d.logLine, / rule=otherwise returned$/);
});

test('failed is never otherwise', async () => {
  const d = await route('no-answer.json');
  assert.deepEqual({ verdict: d.verdict, reason: d.reason, rule: d.rule, answers: d.answers }, { verdict: 'failed', reason: 'no_answer', rule: null, answers: [] });
});

test('a load error lists each FILE:LINE:COL message', async () => {
  const lines = [];
  await assert.rejects(
    pruner.route(fixture('invalid.toml'), MESSAGE, { answers: fixture('answers.json'), rulesFile: 'invalid.toml', log: (l) => lines.push(l) }),
    (error) => {
      assert.ok(error instanceof RulesError);
      assert.equal(error.errors.length, 2);
      assert.deepEqual(error.errors[0], { line: 7, column: 17, message: 'rule 1: `kind` has no option `c` (options: a, b)' });
      assert.equal(`${error.message}\n`, error.errors.map((e) => `invalid.toml:${e.line}:${e.column}: ${e.message}\n`).join(''));
      return true;
    },
  );
  assert.deepEqual(lines, []);
});

describe('the judge-job resource with a scorer', () => {
  test('one Jev call: the request carries the judge body, the answer decides', async () => {
    const requests = [];
    const scorer = {
      name: 'jev',
      jevModel: 'jev-test',
      async score(request, { signal }) {
        assert.ok(signal instanceof AbortSignal);
        requests.push(request);
        await new Promise((r) => setTimeout(r, 5));
        return [{ jevResponse: fixture('answers.json') }];
      },
    };
    const viaJob = await pruner.route(RULES, MESSAGE, { scorer, log: () => {} });
    const fixed = await route('answers.json');
    assert.deepEqual(viaJob, fixed);
    assert.equal(requests.length, 1);
    assert.equal(requests[0].batches.length, 1);
    const body = JSON.parse(requests[0].batches[0].jevBody);
    assert.deepEqual(body.state, { message: MESSAGE });
    assert.deepEqual(Object.keys(body.questions), ['risky', 'kind', 'size']);
    assert.equal(body.model, 'jev-test');
  });

  test('routeSync: one judge.decide call whose scorer import a blocking scorer answers; the same decision and line as the job', async () => {
    const requests = [];
    const lines = [];
    const scorer = {
      name: 'jev',
      jevModel: 'jev-test',
      scoreSync(request) {
        requests.push(request);
        return [{ jevResponse: fixture('answers.json') }];
      },
    };
    const viaImport = pruner.routeSync(RULES, MESSAGE, { scorer, log: (l) => lines.push(l) });
    assert.deepEqual(viaImport, await route('answers.json'));
    assert.equal(requests.length, 1, 'the scorer is asked once per message');
    assert.equal(JSON.parse(requests[0].batches[0].jevBody).model, 'jev-test');
    assert.deepEqual(lines, [viaImport.logLine]);
    // Failures are answers on this path too: a scorer that throws fails the batch (network), never a trap.
    const down = pruner.routeSync(RULES, MESSAGE, { scorer: { name: 'jev', scoreSync: () => { throw new Error('down'); } }, log: () => {} });
    assert.deepEqual([down.verdict, down.reason], ['failed', 'network']);
    // An async-only scorer cannot block: a TypeError (use await pruner.route).
    assert.throws(() => pruner.routeSync(RULES, MESSAGE, { scorer: { name: 'jev', score: async () => [] }, log: () => {} }), TypeError);
    assert.throws(() => pruner.routeSync('x', MESSAGE, { answers: fixture('answers.json'), log: () => {} }), RulesError);
  });

  test('an HTTP failure is failed; a cancelled call is failed cancelled; a hanging one times out', async () => {
    const http = await pruner.route(RULES, MESSAGE, { scorer: { name: 'jev', score: async () => [{ failed: { http: 503 } }] }, log: () => {} });
    assert.equal(http.verdict, 'failed');
    assert.equal(http.reason, 'http_5xx');
    const hanging = { name: 'jev', score: () => new Promise(() => {}) };
    const late = await pruner.route(RULES, MESSAGE, { scorer: hanging, deadlineCapMs: 100, log: () => {} });
    assert.deepEqual([late.verdict, late.reason], ['failed', 'timeout']);
    const throwing = { name: 'jev', score: async () => { throw new Error('boom'); } };
    const broken = await pruner.route(RULES, MESSAGE, { scorer: throwing, log: () => {} });
    assert.deepEqual([broken.verdict, broken.reason], ['failed', 'network']);
    const controller = new AbortController();
    const never = { name: 'jev', score: (_r, { signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) };
    const pending = pruner.route(RULES, MESSAGE, { scorer: never, signal: controller.signal, log: () => {} });
    controller.abort();
    const d = await pending;
    assert.deepEqual([d.verdict, d.reason], ['failed', 'cancelled']);
  });

  test('a load error is thrown before any call', async () => {
    let calls = 0;
    const scorer = { name: 'jev', score: async () => { calls += 1; return []; } };
    await assert.rejects(pruner.route(fixture('invalid.toml'), MESSAGE, { scorer, log: () => {} }), RulesError);
    assert.equal(calls, 0);
  });

  test('the offline scorer and the stub cannot judge', async () => {
    await assert.rejects(pruner.route(RULES, MESSAGE, { log: () => {} }), TypeError);
    await assert.rejects(pruner.route(RULES, MESSAGE, { scorer: 'stub', log: () => {} }), TypeError);
  });
});

function run(args) {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH, HOME: FIXTURES };
    execFile(process.execPath, [BIN, ...args], { cwd: FIXTURES, encoding: 'utf8', env }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

const ARGS = ['route', '--rules', 'rules.toml', '--message', MESSAGE, '--answers'];

test('toolprune route: the summary on stdout, the judge: line on stderr, the exit code by verdict', async () => {
  const cases = [
    ['answers.json', 0, 'routed to agent_3 (rule 3)\n'],
    ['fanout.json', 0, 'routed to agent_3, agent_10 (rule 2)\n'],
    ['returned.json', 0, 'returned (rule 1): Contains an operation that cannot be undone: not routed\n'],
    ['otherwise.json', 0, 'returned (otherwise)\n'],
    ['no-answer.json', 3, 'failed: no_answer\n'],
  ];
  for (const [answers, code, stdout] of cases) {
    const got = await run([...ARGS, answers]);
    const d = await route(answers);
    assert.deepEqual(got, { code, stdout, stderr: `${d.logLine}\n` }, answers);
  }
});

test('toolprune route --json: serde_json\'s pretty form (keys sorted, f64 with a fraction)', async () => {
  const got = await run([...ARGS, 'answers.json', '--json']);
  assert.equal(got.code, 0);
  const d = JSON.parse(got.stdout);
  assert.deepEqual(Object.keys(d), ['answers', 'jev_tokens', 'log', 'note', 'reason', 'rule', 'to', 'verdict']);
  assert.deepEqual(Object.keys(d.answers[0]), ['margin', 'mean', 'p', 'question', 'type', 'value']);
  assert.match(got.stdout, /\n {6}"mean": 1\.25,\n/);
  assert.match(got.stdout, /\n {6}"p": 0\.8,\n/);
  assert.equal(got.stdout.split('\n')[1], '  "answers": [');
});

test('toolprune route: a rules file with problems exits 2 with FILE:LINE:COL lines; no Jev without its token', async () => {
  const bad = await run(['route', '--rules', 'invalid.toml', '--message', MESSAGE, '--answers', 'answers.json']);
  assert.equal(bad.code, 2);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^invalid\.toml:7:17: rule 1: `kind` has no option `c` \(options: a, b\)\n/);
  const live = await run(['route', '--rules', 'rules.toml', '--message', MESSAGE]);
  assert.equal(live.code, 2);
  assert.ok(live.stderr.includes(pruner.defaults.tokenVariable), live.stderr);
});
