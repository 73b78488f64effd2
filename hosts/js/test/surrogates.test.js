// Lone UTF-16 surrogates (README "The fault matrix"). A JS string may hold
// one ('\uD800', a tool output cut mid-pair); a WIT `string` cannot, and
// jco's encoder would silently replace it by U+FFFD, so the body would not
// be the text the tool returned. The host checks first. With pruning on, a
// succeeded call and a prunable tool it fails open without calling the
// guest: the very same string back, outcome `failed`, reason `invalid_text`
// (the result text) or `invalid_input` (the request, tool name, agent,
// scorer name, Jev model), and its `tool prune:` line; the turn goes on.
// When one of those cheap gates fails, the answer is the guest's own, as for
// a well-formed text: no line (SPEC §12), the same string back. `omitted`
// arguments with lone surrogates get the guest's `invalid` answer, never a
// throw.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Pruner } from '../src/index.js';
import { capture, readShared, scriptedScorer } from './helpers.js';

const REQUEST = 'How does PEP 817 encode a wheel variant in the wheel filename?';
const PEP = readShared('corpus/pep-0817-wheel-variants.rst');

/** Texts that are not well-formed UTF-16, each in a different way. */
const ILL_FORMED = {
  'lone high in the middle': `${PEP.slice(0, 5000)}\uD800${PEP.slice(5000)}`,
  'lone low': `${PEP}\uDC00`,
  'cut mid-pair at the end': `${PEP}${'😀'.slice(0, 1)}`,
  'pair in the wrong order': `\uDE00\uD83D${PEP}`,
  'short text': 'a \uD800 b',
};

const LINE = 'tool prune: agent=my_agent name=fetch outcome=failed reason=invalid_text';

function assertPassedThrough(r, text, reason, line) {
  assert.equal(r.outcome, 'failed');
  assert.ok(r.body === text, 'the very same string: every code unit, the lone surrogate included');
  assert.ok(r.raw === text);
  assert.equal(r.report, null);
  assert.equal(r.failure.reason, reason);
  assert.match(r.failure.message, / holds [12] lone surrogate\(s\); the guest was not called$/);
  assert.equal(r.logLine, line);
}

for (const [name, text] of Object.entries(ILL_FORMED)) {
  test(`an ill-formed text (${name}) comes back unchanged, and the turn goes on`, async () => {
    assert.equal(text.isWellFormed(), false);
    const pruner = await Pruner.load();
    const log = capture();
    const turn = pruner.beginTurn(REQUEST, { enabled: true, agent: 'my agent', log });

    assertPassedThrough(await turn.onToolResult({ tool: 'fetch', prunable: true, text }), text, 'invalid_text', LINE);
    assertPassedThrough(turn.onToolResultSync({ tool: 'fetch', prunable: true, text }), text, 'invalid_text', LINE);
    assert.deepEqual(log.lines, [LINE, LINE], 'one line each, counts and labels only');
    assert.deepEqual(turn.stored, [], 'nothing stored');

    // The same turn prunes the next result normally (the first stored id is P1).
    const next = await turn.onToolResult({ tool: 'fetch', prunable: true, text: PEP });
    assert.equal(next.outcome, 'ok');
    assert.equal(next.report.record.id, 'P1');
    const nextSync = turn.onToolResultSync({ tool: 'fetch', prunable: true, text: PEP });
    assert.equal(nextSync.outcome, 'ok');
    assert.equal(nextSync.report.record.id, 'P2');
    const d = next.report.record.dropped[0];
    assert.equal(turn.omitted({ id: 'P1', from: d, to: d }).outcome, 'ok');
  });
}

test('the guest is not called for an ill-formed text with the cheap gates passed: no scorer call', async () => {
  const spec = { default: 0.9, scores: {}, fail_batches: {}, jev_responses: {}, stop: null, elapsed_ms: 7 };
  const scorer = scriptedScorer(spec);
  const pruner = await Pruner.load({ scorer });
  const text = ILL_FORMED['lone high in the middle'];
  const on = pruner.beginTurn(REQUEST, { enabled: true, log: capture() });
  assertPassedThrough(await on.onToolResult({ tool: 'fetch', prunable: true, text }), text, 'invalid_text',
    'tool prune: agent=agent name=fetch outcome=failed reason=invalid_text');
  assertPassedThrough(on.onToolResultSync({ tool: 'fetch', prunable: true, text }), text, 'invalid_text',
    'tool prune: agent=agent name=fetch outcome=failed reason=invalid_text');
  assert.equal(scorer.state.calls, 0);
  // A well-formed text with surrogate pairs is pruned as usual.
  const emoji = `${PEP}\n\n😀 done`;
  assert.equal(emoji.isWellFormed(), true);
  assert.notEqual((await on.onToolResult({ tool: 'fetch', prunable: true, text: emoji })).outcome, 'failed');
  assert.ok(scorer.state.calls > 0);
});

/** Without `ms` (a measured time), the rest of a report as the guest gave it. */
function withoutMs(report) {
  return { ...report, counts: { ...report.counts, ms: 0 } };
}

const GATES = {
  'pruning off': { enabled: false, result: { ok: true, prunable: true } },
  'the call failed': { enabled: true, result: { ok: false, prunable: true } },
  'not prunable': { enabled: true, result: { ok: true, prunable: false } },
};

for (const [gate, { enabled, result }] of Object.entries(GATES)) {
  test(`${gate}: an ill-formed input gets the guest's own answer, as a well-formed one, and no line (SPEC §12)`, async () => {
    const spec = { default: 0.9, scores: {}, fail_batches: {}, jev_responses: {}, stop: null, elapsed_ms: 7 };
    const scorer = scriptedScorer(spec);
    const pruner = await Pruner.load({ scorer });
    const cases = [
      ...Object.values(ILL_FORMED).map((text) => ({ request: REQUEST, tool: 'fetch', agent: 'agent', text })),
      { request: `${REQUEST}\uD83D`, tool: 'fetch', agent: 'agent', text: PEP },
      { request: REQUEST, tool: 'f\uDC00', agent: 'agent', text: PEP },
      { request: REQUEST, tool: 'fetch', agent: 'a\uD800', text: PEP },
    ];
    for (const c of cases) {
      const log = capture();
      const turn = pruner.beginTurn(c.request, { enabled, agent: c.agent, log });
      const clean = pruner.beginTurn(c.request.toWellFormed(), { enabled, agent: c.agent.toWellFormed(), log: capture() });
      const text = c.text;
      for (const flavour of ['async', 'sync']) {
        const call = (t, r) => (flavour === 'async' ? t.onToolResult(r) : t.onToolResultSync(r));
        const r = await call(turn, { ...result, tool: c.tool, text });
        const expected = await call(clean, { ...result, tool: c.tool.toWellFormed(), text: text.toWellFormed() });
        assert.ok(r.body === text && r.raw === text, 'the very same string, lone surrogates included');
        assert.equal(r.outcome, expected.outcome);
        assert.notEqual(r.outcome, 'failed');
        assert.equal(r.failure, null);
        assert.equal(r.logLine, null);
        assert.equal(expected.logLine, null);
        assert.deepEqual(withoutMs(r.report), withoutMs(expected.report));
        assert.equal(r.report.record, null);
      }
      assert.deepEqual(log.lines, [], 'no `tool prune:` line before the cheap gates passed');
      assert.deepEqual(turn.stored, []);
    }
    assert.equal(scorer.state.calls, 0, 'the scorer is never called');
  });
}

test('an ill-formed short text with the cheap gates passed still fails open with its line (the guest counts the 4,000)', async () => {
  const pruner = await Pruner.load();
  const log = capture();
  const turn = pruner.beginTurn(REQUEST, { enabled: true, log });
  const text = ILL_FORMED['short text'];
  const line = 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_text';
  assertPassedThrough(turn.onToolResultSync({ tool: 'fetch', prunable: true, text }), text, 'invalid_text', line);
  assert.deepEqual(log.lines, [line]);
  // The same short text well-formed: the guest's own skip, no line.
  assert.equal(turn.onToolResultSync({ tool: 'fetch', prunable: true, text: text.toWellFormed() }).logLine, null);
  assert.deepEqual(log.lines, [line]);
});

test('a scorer name with a lone surrogate: invalid_input, never a U+FFFD label; its Jev model too', async () => {
  const spec = { default: 0.9, scores: {}, fail_batches: {}, jev_responses: {}, stop: null, elapsed_ms: 7 };
  const scripted = scriptedScorer(spec);
  const pruner = await Pruner.load();
  const line = 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_input';
  for (const [what, scorer] of [
    ['the scorer name', { ...scripted, name: 'odd\uD800' }],
    ['the Jev model', { ...scripted, jevModel: 'jev\uDC00' }],
  ]) {
    const log = capture();
    const turn = pruner.beginTurn(REQUEST, { enabled: true, scorer, log });
    for (const r of [await turn.onToolResult({ tool: 'fetch', prunable: true, text: PEP }),
      turn.onToolResultSync({ tool: 'fetch', prunable: true, text: PEP })]) {
      assertPassedThrough(r, PEP, 'invalid_input', line);
      assert.ok(r.failure.message.startsWith(`${what} holds 1 `), r.failure.message);
    }
    assert.deepEqual(log.lines, [line, line]);
    // Pruning off: the guest's own answer, as with a well-formed scorer, no line.
    const off = pruner.beginTurn(REQUEST, { scorer, log });
    const r = await off.onToolResult({ tool: 'fetch', prunable: true, text: PEP });
    const expected = await pruner.beginTurn(REQUEST, { scorer: scripted, log: capture() })
      .onToolResult({ tool: 'fetch', prunable: true, text: PEP });
    assert.ok(r.body === PEP && r.raw === PEP);
    assert.equal(r.outcome, expected.outcome);
    assert.deepEqual(withoutMs(r.report), withoutMs(expected.report));
    assert.equal(r.failure, null);
    assert.equal(r.logLine, null);
    assert.deepEqual(log.lines, [line, line]);
  }
  assert.equal(scripted.state.calls, 0);
  // The offline scorer sends no name: its turn prunes.
  assert.equal(pruner.beginTurn(REQUEST, { enabled: true, log: capture() })
    .onToolResultSync({ tool: 'fetch', prunable: true, text: PEP }).outcome, 'ok');
  // route: the scorer's own Jev model is checked, not only the option.
  await assert.rejects(pruner.route('[questions.a]', 'hello', { scorer: { ...scripted, jevModel: 'jev\uDC00' } }), {
    name: 'TypeError',
    message: /jevModel holds 1 lone surrogate\(s\)/,
  });
  assert.equal(scripted.state.calls, 0);
});

test('a request with a lone surrogate: every result of the turn passes through (invalid_input)', async () => {
  const pruner = await Pruner.load();
  const log = capture();
  const turn = pruner.beginTurn(`${REQUEST}\uD83D`, { enabled: true, log });
  const line = 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_input';
  for (const r of [await turn.onToolResult({ tool: 'fetch', prunable: true, text: PEP }),
    turn.onToolResultSync({ tool: 'fetch', prunable: true, text: PEP })]) {
    assertPassedThrough(r, PEP, 'invalid_input', line);
    assert.match(r.failure.message, /^the request holds/);
  }
  // A lone surrogate in the tool name: the same, and the log label writes `_`.
  const good = pruner.beginTurn(REQUEST, { enabled: true, log });
  const odd = await good.onToolResult({ tool: 'f\uDC00', prunable: true, text: PEP });
  assertPassedThrough(odd, PEP, 'invalid_input', 'tool prune: agent=agent name=f_ outcome=failed reason=invalid_input');
  assert.equal(odd.logLine.isWellFormed(), true);
  // ...and that turn's next result is pruned.
  assert.equal((await good.onToolResult({ tool: 'fetch', prunable: true, text: PEP })).outcome, 'ok');
  // An ill-formed text wins over an ill-formed request: it is the text's reason.
  const r = turn.onToolResultSync({ tool: 'fetch', prunable: true, text: ILL_FORMED['lone low'] });
  assert.equal(r.failure.reason, 'invalid_text');
});

test('omitted arguments with lone surrogates: the guest\'s invalid answer, never a throw', async () => {
  const pruner = await Pruner.load();
  for (const lang of ['en', 'ja']) {
    const log = capture();
    const turn = pruner.beginTurn(REQUEST, { enabled: true, lang, log });
    const pruned = turn.onToolResultSync({ tool: 'fetch', prunable: true, text: PEP });
    assert.equal(pruned.outcome, 'ok');
    const d = pruned.report.record.dropped[0];
    const expected = turn.omitted('not json');
    assert.equal(expected.outcome, 'invalid');
    for (const args of [
      `{"id":"P1\uD800","from":${d},"to":${d}}`, // in the id: jco would have sent P1\uFFFD (not_found)
      `{"id":"P1","from":${d},"to":${d},"note":"\uDC00"}`, // in another field: jco would have answered ok
      { id: 'P1\uD800', from: d, to: d }, // an object: JSON.stringify escapes it, serde_json refuses the escape
    ]) {
      const r = turn.omitted(args);
      assert.equal(r.outcome, 'invalid', JSON.stringify(args));
      assert.equal(r.text, expected.text);
      assert.equal(r.logLine, 'tool omitted: agent=agent id=- from=- to=- chars=0 outcome=invalid');
    }
    assert.equal(turn.omitted({ id: 'P1', from: d, to: d }).outcome, 'ok', 'the next call is served');
  }
});

test('paragraphs and route refuse a lone surrogate with a clear TypeError (their answers would describe another text)', async () => {
  const pruner = await Pruner.load();
  assert.throws(() => pruner.paragraphs(`${PEP}\uD800`), { name: 'TypeError', message: /text holds 1 lone surrogate\(s\)/ });
  assert.ok(pruner.paragraphs(PEP).length > 1, 'a well-formed text still splits');
  await assert.rejects(pruner.route('[questions.a]', 'hello \uDC00', { answers: '{}' }), {
    name: 'TypeError',
    message: /message holds 1 lone surrogate\(s\)/,
  });
  await assert.rejects(pruner.route('# \uD800', 'hello', { answers: '{}' }), { name: 'TypeError', message: /rules holds 1/ });
});
