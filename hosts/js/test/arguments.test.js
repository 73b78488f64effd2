// The tool call's `arguments` (the repeat gate's only input, SPEC §2), the
// same rule in every host (tests/test_arguments.py is the Python twin): a
// JSON text is taken as it is; a plain object or an array whose values are
// JSON values (strings, finite numbers, booleans, null, plain objects,
// arrays; at most 128 levels deep) is encoded as JSON. Anything else — a
// Map, a Set, a Date, a class instance, a scalar, NaN, a BigInt, a cycle,
// a lone surrogate (a WIT string cannot carry it) — gives no arguments: no
// repeat is detected and the result is pruned as usual, never failed.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { argumentsText } from '../src/conversation.js';
import { Pruner } from '../src/index.js';
import { REQUEST, notes, scripted } from './helpers.js';

const pruner = await Pruner.load();
const TEXT = notes(12);

/**
 * Prunes TEXT with `first`, then with `second` (default the same value),
 * in a fresh conversation: whether the second is the repeat of the first.
 * Both results must be pruned or skipped, never failed.
 */
async function repeated(form, first, second = first) {
  const turn = pruner.conversation({ enabled: true, scorer: scripted(), log: () => {} }).turn(REQUEST);
  const prune = (args) => (form === 'import' ? turn.onToolResultSync({ tool: 'fetch', text: TEXT, prunable: true, arguments: args }) : turn.onToolResult({ tool: 'fetch', text: TEXT, prunable: true, arguments: args }));
  const a = await prune(first);
  assert.deepEqual([a.outcome, a.id, a.failure], ['ok', 'P1', null], 'the first result is pruned');
  const b = await prune(second);
  assert.notEqual(b.outcome, 'failed');
  if (b.outcome === 'skipped') {
    assert.equal(b.gate, 'repeated');
    return true;
  }
  assert.deepEqual([b.outcome, b.id], ['ok', 'P2']);
  return false;
}

function cycle() {
  const c = { url: 'a' };
  c.self = c;
  return c;
}

function deep(levels) {
  let v = 'a';
  for (let i = 0; i < levels; i += 1) v = [v];
  return v;
}

const bare = Object.create(null);
bare.url = 'a';

/** [what, first, second]: taken, so the second is a repeat of the first. */
const TAKEN = [
  ['a JSON text', '{"url": "a", "n": 1}', '{"n":1,"url":"a"}'],
  ['a whole number with a fraction (as Python writes it) is the integer', '{"url": "a", "n": 1.0}', { url: 'a', n: 1 }],
  ['a text that is not JSON (keyed as it is)', 'not json', 'not json'],
  ['a plain object, keys in another order', { url: 'a', n: 1 }, '{"n": 1, "url": "a"}'],
  ['an object without a prototype', bare, { url: 'a' }],
  ['an array of JSON values', ['a', 1, { b: null, c: true, d: [1.5, -2] }], '["a",1,{"b":null,"c":true,"d":[1.5,-2]}]'],
  ['an undefined member is left out (as JSON.stringify does)', { url: 'a', skip: undefined }, { url: 'a' }],
  ['128 levels deep', deep(128), deep(128)],
];

/** [what, value]: not taken: no arguments, no repeat detected. */
const NOT_TAKEN = [
  ['a Map', new Map([['url', 'a']])],
  ['a Set', new Set(['a'])],
  ['a Date', new Date(0)],
  ['a class instance inside', { url: new URL('https://example.com/a') }],
  ['NaN', { n: Number.NaN }],
  ['Infinity', [Number.POSITIVE_INFINITY]],
  ['a BigInt', { n: 10n }],
  ['a function', { f: () => 1 }],
  ['undefined in an array', ['a', undefined]],
  ['a number', 42],
  ['a boolean', true],
  ['a cycle', cycle()],
  ['129 levels deep', deep(129)],
  ['a JSON text with a lone surrogate', '{"q": "\ud800"}'],
  ['a string with a lone surrogate inside', { q: 'caf\udc00' }],
  ['a key with a lone surrogate', { '\ud800': 1 }],
];

test('arguments are encoded as the Python host encodes them', () => {
  assert.equal(argumentsText({ b: [1, 2.5, null, true], a: 'é\n' }), '{"b":[1,2.5,null,true],"a":"é\\n"}');
  assert.equal(argumentsText(' {"a": 1} '), ' {"a": 1} ', 'a text is taken as it is');
});

for (const form of ['import', 'jobs']) {
  test(`arguments that are JSON are one call whatever their form: the second is a repeat [${form}]`, async () => {
    for (const [what, first, second] of TAKEN) assert.equal(await repeated(form, first, second), true, what);
  });

  test(`arguments that are not JSON give no arguments: pruned, never failed, never a repeat [${form}]`, async () => {
    for (const [what, value] of NOT_TAKEN) assert.equal(await repeated(form, value), false, what);
    // Two Maps with other contents are not "the same call" either (both used to be `{}`).
    assert.equal(await repeated(form, new Map([['url', 'a']]), new Map([['url', 'b']])), false, 'two Maps');
  });
}
