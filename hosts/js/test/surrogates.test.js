// Lone UTF-16 surrogates (README "The fault matrix"). A JS string may hold
// one ('\uD800', a tool output cut mid-pair); a WIT `string` cannot, and
// jco's encoder would silently replace it by U+FFFD, so the body would not
// be the text the tool returned. The host checks every string of the input
// first. The guest decides, on a well-formed copy, whether the result is
// skipped (a gate): then its answer stands, with the very same string as
// body and raw, and no line. Otherwise the result is not pruned: the same
// string back, outcome `failed`, reason `invalid_text` (the result text) or
// `invalid_input` (the request, tool name, agent, scorer name, Jev model),
// and the guest's failure line. `omitted` arguments with lone surrogates
// get the guest's `invalid` answer; `inspect` and `route`, whose answers
// would describe another text, refuse them with a TypeError.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Pruner } from '../src/index.js';
import { REQUEST, capture, notes, scripted } from './helpers.js';

const pruner = await Pruner.load();
const TEXT = notes(12);

/** Texts that are not well-formed UTF-16, each in a different way. */
const ILL_FORMED = {
  'lone high in the middle': `${TEXT.slice(0, 2000)}\uD800${TEXT.slice(2000)}`,
  'lone low': `${TEXT}\uDC00`,
  'cut mid-pair at the end': `${TEXT}${'😀'.slice(0, 1)}`,
  'pair in the wrong order': `\uDE00\uD83D${TEXT}`,
};

function assertPassedThrough(r, text, reason, line) {
  assert.equal(r.outcome, 'failed');
  assert.ok(r.body === text && r.raw === text, 'the very same string: every code unit, the lone surrogate included');
  assert.equal(r.id, null);
  assert.equal(r.counts, null);
  assert.deepEqual({ reason: r.failure.reason, limit: r.failure.limit }, { reason, limit: null });
  assert.match(r.failure.message, / holds [12] lone surrogate\(s\); it was not pruned$/);
  assert.equal(r.logLine, line);
}

for (const [name, text] of Object.entries(ILL_FORMED)) {
  test(`an ill-formed text (${name}) comes back unchanged on both paths, and the conversation goes on`, async () => {
    assert.equal(text.isWellFormed(), false);
    const log = capture();
    const scorer = scripted();
    const conversation = pruner.conversation({ enabled: true, agent: 'my agent', scorer, log });
    const turn = conversation.turn(REQUEST);
    const line = 'tool prune: agent=my_agent name=fetch outcome=failed reason=invalid_text';
    assertPassedThrough(await turn.onToolResult({ tool: 'fetch', prunable: true, text }), text, 'invalid_text', line);
    assertPassedThrough(turn.onToolResultSync({ tool: 'fetch', prunable: true, text }), text, 'invalid_text', line);
    assert.deepEqual(log.lines, [line, line], 'one line each, counts and labels only');
    assert.equal(scorer.state.calls, 0, 'nothing was scored');
    const next = await turn.onToolResult({ tool: 'fetch', prunable: true, text: TEXT });
    assert.deepEqual([next.outcome, next.id], ['ok', 'P1'], 'the first stored id is P1');
  });
}

const GATES = {
  'pruning off': { enabled: false, result: { ok: true, prunable: true }, gate: 'disabled' },
  'the call failed': { enabled: true, result: { ok: false, prunable: true }, gate: 'tool_failed' },
  'not prunable': { enabled: true, result: { ok: true, prunable: false }, gate: 'not_prunable' },
};

for (const [name, { enabled, result, gate }] of Object.entries(GATES)) {
  test(`${name}: an ill-formed input is skipped by the guest as a well-formed one, the same string back, no line`, async () => {
    const scorer = scripted();
    const cases = [
      ...Object.values(ILL_FORMED).map((text) => ({ request: REQUEST, tool: 'fetch', agent: 'agent', text })),
      { request: `${REQUEST}\uD83D`, tool: 'fetch', agent: 'agent', text: TEXT },
      { request: REQUEST, tool: 'f\uDC00', agent: 'agent', text: TEXT },
      { request: REQUEST, tool: 'fetch', agent: 'a\uD800', text: TEXT },
    ];
    for (const c of cases) {
      const log = capture();
      const turn = pruner.conversation({ enabled, agent: c.agent, scorer, log }).turn(c.request);
      for (const r of [await turn.onToolResult({ ...result, tool: c.tool, text: c.text }), turn.onToolResultSync({ ...result, tool: c.tool, text: c.text })]) {
        assert.ok(r.body === c.text && r.raw === c.text, 'the very same string');
        assert.deepEqual([r.outcome, r.gate, r.failure, r.logLine], ['skipped', gate, null, null]);
      }
      assert.deepEqual(log.lines, []);
    }
    assert.equal(scorer.state.calls, 0, 'the scorer is never called');
  });
}

test('a short ill-formed text is skipped by the guest (too_short), as a well-formed one', () => {
  const log = capture();
  const turn = pruner.conversation({ enabled: true, log }).turn(REQUEST);
  const text = 'a \uD800 b';
  const r = turn.onToolResultSync({ tool: 'fetch', prunable: true, text });
  assert.deepEqual([r.outcome, r.gate, r.logLine], ['skipped', 'too_short', null]);
  assert.ok(r.body === text);
  assert.deepEqual(log.lines, []);
});

test('a request, tool, agent, scorer name or Jev model with a lone surrogate: invalid_input (U+FFFD in the line\'s label)', async () => {
  const cases = [
    ['the request', { request: `${REQUEST}\uD83D` }, 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_input'],
    ['the tool name', { tool: 'f\uDC00' }, 'tool prune: agent=agent name=f\uFFFD outcome=failed reason=invalid_input'],
    ['the agent', { agent: 'a\uD800' }, 'tool prune: agent=a\uFFFD name=fetch outcome=failed reason=invalid_input'],
    ['the scorer name', { scorer: { ...scripted(), name: 'odd\uD800' } }, 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_input'],
    ['the Jev model', { scorer: { ...scripted(), jevModel: 'jev\uDC00' } }, 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_input'],
    ['the Jev model', { jevModel: 'jev\uDC00' }, 'tool prune: agent=agent name=fetch outcome=failed reason=invalid_input'],
  ];
  for (const [what, c, line] of cases) {
    const log = capture();
    const conversation = pruner.conversation({ enabled: true, agent: c.agent ?? 'agent', scorer: c.scorer ?? scripted(), jevModel: c.jevModel, log });
    const turn = conversation.turn(c.request ?? REQUEST);
    for (const r of [await turn.onToolResult({ tool: c.tool ?? 'fetch', prunable: true, text: TEXT }), turn.onToolResultSync({ tool: c.tool ?? 'fetch', prunable: true, text: TEXT })]) {
      assertPassedThrough(r, TEXT, 'invalid_input', line);
      assert.ok(r.failure.message.startsWith(`${what} holds 1 `), r.failure.message);
      assert.ok(r.logLine.isWellFormed());
    }
  }
  // An ill-formed text wins over an ill-formed request: it is the text's reason.
  const turn = pruner.conversation({ enabled: true, log: capture() }).turn(`${REQUEST}\uD83D`);
  assert.equal(turn.onToolResultSync({ tool: 'fetch', prunable: true, text: ILL_FORMED['lone low'] }).failure.reason, 'invalid_text');
});

test('a well-formed text with surrogate pairs is pruned as usual', () => {
  const text = `${TEXT}\n\n😀 done, and a last paragraph that is long enough to be one on its own, about nothing in particular at all.`;
  const r = pruner.conversation({ enabled: true, scorer: scripted(), log: capture() }).turn(REQUEST).onToolResultSync({ prunable: true, text });
  assert.equal(r.outcome, 'ok');
});

test('omitted arguments with lone surrogates: the guest\'s invalid answer, never a throw', () => {
  for (const lang of ['en', 'ja']) {
    const log = capture();
    const conversation = pruner.conversation({ enabled: true, lang, scorer: scripted(), log });
    assert.equal(conversation.turn(REQUEST).onToolResultSync({ tool: 'fetch', prunable: true, text: TEXT }).id, 'P1');
    const expected = conversation.omitted('');
    assert.equal(expected.outcome, 'invalid');
    for (const args of [
      '{"id":"P1\uD800","from":1,"to":1}', // in the id: jco would have sent P1\uFFFD (not_found)
      '{"id":"P1","from":1,"to":1,"note":"\uDC00"}', // in another field: jco would have answered ok
      { id: 'P1\uD800', from: 1, to: 1 }, // an object: JSON.stringify escapes it; the guest refuses the escape
    ]) {
      const r = conversation.omitted(args);
      assert.equal(r.outcome, 'invalid', JSON.stringify(args));
      assert.equal(r.text, expected.text);
    }
    assert.equal(conversation.omitted({ id: 'P1', from: 1, to: 1 }).outcome, 'ok', 'the next call is served');
  }
});

test('inspect and route refuse a lone surrogate with a clear TypeError (their answers would describe another text)', async () => {
  assert.throws(() => pruner.inspect(`${TEXT}\uD800`), { name: 'TypeError', message: /text holds 1 lone surrogate\(s\)/ });
  assert.ok(pruner.inspect(TEXT).units.length > 1, 'a well-formed text still splits');
  await assert.rejects(pruner.route('[questions.a]', 'hello \uDC00', { answers: '{}' }), { name: 'TypeError', message: /message holds 1 lone surrogate\(s\)/ });
  await assert.rejects(pruner.route('# \uD800', 'hello', { answers: '{}' }), { name: 'TypeError', message: /rules holds 1/ });
  await assert.rejects(pruner.route('[questions.a]', 'hello', { scorer: { ...scripted(), jevModel: 'jev\uDC00' } }), {
    name: 'TypeError',
    message: /jevModel holds 1 lone surrogate\(s\)/,
  });
});
