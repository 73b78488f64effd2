// The `scorer` import on the sync API (SPEC §14, issue 22): one guest call
// (`pruner.prune`), the guest calling the import at most once, the worker
// handing the request to the main thread, which scores it with the
// scorer's `scoreSync`. The async API keeps jobs. Both give the same bytes.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { Pruner } from '../src/index.js';
import { REQUEST, capture, loopingGen, notes, scripted } from './helpers.js';

const TEXT = notes(12);
let pruner;
let jobsLoop;

before(async () => {
  pruner = await Pruner.load();
  // A guest whose job constructor loops: only the async API uses it.
  jobsLoop = await loopingGen('#[constructor]prune-job');
});

after(() => {
  pruner.close();
  if (jobsLoop) rmSync(jobsLoop, { recursive: true, force: true });
});

/** Busy-waits `ms` on this thread (a blocking scorer's work). */
function spin(ms) {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // blocking on purpose
  }
}

test('the sync API prunes in one guest call through the import, the async API through a job', async () => {
  const looping = await Pruner.load({ genDir: jobsLoop, limits: { wallMs: 300 } });
  const scorer = scripted();
  const turn = looping.conversation({ enabled: true, scorer, log: capture() }).turn(REQUEST);
  const sync = turn.onToolResultSync({ text: TEXT, prunable: true });
  assert.deepEqual([sync.outcome, sync.id, sync.scorerCalls], ['ok', 'P1', 1]);
  const jobs = await turn.onToolResult({ text: TEXT, prunable: true });
  assert.deepEqual([jobs.outcome, jobs.failure?.limit], ['failed', 'wall_time']);
  assert.equal(scorer.state.calls, 1, 'the job never reached its scorer');
  looping.close();
});

test('both forms give the same bytes, line and counts; the scorer is asked once per result', async () => {
  const forms = [];
  for (const form of ['import', 'jobs']) {
    const scorer = scripted();
    const log = capture();
    const turn = pruner.conversation({ enabled: true, scorer, log }).turn(REQUEST);
    const input = { text: TEXT, prunable: true, report: true };
    const r = form === 'import' ? turn.onToolResultSync(input) : await turn.onToolResult(input);
    assert.equal(scorer.state.calls, 1);
    assert.equal(r.scorerCalls, 1);
    forms.push({ body: r.body, counts: { ...r.counts, ms: null }, paragraphs: r.paragraphs, line: log.lines[0].replace(/ms=\d+/, 'ms=*') });
  }
  assert.deepEqual(forms[0], forms[1]);
});

test('the wall-time guard stops while the main thread scores: a slow scorer is not a guest trap', async () => {
  const quick = await Pruner.load({ limits: { wallMs: 300 } });
  const inner = scripted();
  const slow = { name: 'slow', scoreSync: (request) => (spin(700), inner.scoreSync(request)) };
  const r = quick.conversation({ enabled: true, scorer: slow, log: capture() }).turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true });
  assert.deepEqual([r.outcome, r.failure], ['ok', null]);
  assert.ok(r.counts.ms >= 700, `ms=${r.counts.ms}`);
  quick.close();
});

test('inside the import, the scorer asks the guest for retry delays (a second instance answers)', () => {
  const inner = scripted();
  const waits = [];
  const retrying = {
    name: 'retrying',
    scoreSync(request, context) {
      for (const attempt of [1, 2]) {
        waits.push(context.retryDelay({ attempt, status: 429, retryAfterMs: '30', nowUnixMs: BigInt(Date.now()), remainingMs: context.remainingMs() }));
      }
      waits.push(context.retryDelay({ attempt: 1, status: 402, nowUnixMs: BigInt(Date.now()), remainingMs: context.remainingMs() }));
      return inner.scoreSync(request);
    },
  };
  const r = pruner.conversation({ enabled: true, scorer: retrying, log: capture() }).turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true });
  assert.deepEqual([r.outcome, r.id], ['ok', 'P1']);
  // The guest's rule (SPEC §11): retry once on 429 (after Retry-After-Ms), never on 402.
  assert.deepEqual(waits, [30, null, null]);
});

test('a re-entrant prune from inside the scorer fails open; the outer result goes on', () => {
  const conversation = pruner.conversation({ enabled: true, log: capture() });
  const inner = scripted();
  let nested;
  const reentrant = {
    name: 'reentrant',
    scoreSync(request) {
      nested = conversation.turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true, scorer: 'offline' });
      return inner.scoreSync(request);
    },
  };
  const r = conversation.turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true, scorer: reentrant });
  assert.deepEqual([nested.outcome, nested.failure.reason, nested.body === TEXT], ['failed', 'guest_trap', true]);
  assert.deepEqual([r.outcome, r.id], ['ok', 'P1']);
});

test('a result whose id moved while it was scored is finished again with the same response: one scorer call, the next id', () => {
  const records = [];
  const store = {
    count: () => records.length,
    push(record) {
      if (record.id !== `P${records.length + 1}`) throw new Error(`expected P${records.length + 1}, got ${record.id}`);
      records.push(record);
    },
    find: (id) => records.find((r) => r.id === id),
    calls: () => records.map((r) => r.call).filter(Boolean),
  };
  const inner = scripted();
  const sharing = {
    name: 'sharing',
    scoreSync(request) {
      // Another process of the same session stores P1 meanwhile.
      records.push({ id: 'P1', chars: 1n, call: undefined, data: 'elsewhere' });
      return inner.scoreSync(request);
    },
  };
  const log = capture();
  const turn = pruner.conversation({ enabled: true, scorer: sharing, resultStore: store, log }).turn(REQUEST);
  const r = turn.onToolResultSync({ text: TEXT, prunable: true });
  assert.deepEqual([r.outcome, r.id, r.scorerCalls, inner.state.calls], ['ok', 'P2', 1, 1]);
  assert.match(r.body, /id=P2\]/);
  assert.deepEqual(records.map((x) => x.id), ['P1', 'P2']);
  assert.equal(log.lines.length, 1);
});

test('a scorer that throws inside the import gives the outcome and line of the job form', async () => {
  const lines = [];
  for (const form of ['import', 'jobs']) {
    const boom = () => {
      throw new Error('scorer down');
    };
    const scorer = { name: 'scripted', scoreSync: boom, score: async () => boom() };
    const log = capture();
    const turn = pruner.conversation({ enabled: true, scorer, agent: 'conformance', log }).turn(REQUEST);
    const r = form === 'import' ? turn.onToolResultSync({ text: TEXT, prunable: true }) : await turn.onToolResult({ text: TEXT, prunable: true });
    assert.deepEqual([r.outcome, r.body === TEXT, r.failure, r.scorerCalls], ['failed', true, null, 1], form);
    lines.push(log.lines.map((l) => l.replace(/ms=\d+/, 'ms=*')));
  }
  assert.deepEqual(lines[0], lines[1]);
});

test('a late blocking answer is a timeout, and a cancellation seen after it wins', () => {
  const conversation = pruner.conversation({ enabled: true, deadlineCapMs: 100, log: capture() });
  const inner = scripted();
  const late = { name: 'late', scoreSync: (request) => (spin(250), inner.scoreSync(request)) };
  assert.equal(conversation.turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true, scorer: late }).outcome, 'timeout');
  const controller = new AbortController();
  const cancelling = { name: 'cancelling', scoreSync: (request) => (spin(250), controller.abort(), inner.scoreSync(request)) };
  const r = conversation.turn(REQUEST, { signal: controller.signal }).onToolResultSync({ text: TEXT, prunable: true, scorer: cancelling });
  assert.deepEqual([r.outcome, r.body === TEXT, r.scorerCalls], ['cancelled', true, 1]);
});

test('a blocking scorer that stops when its remainingMs() says 0 gets timeout, never failed', () => {
  // remainingMs() floors: it says 0 up to 1 ms before the deadline. A
  // scorer that obeys it and gives up there must see the host's timeout.
  const conversation = pruner.conversation({ enabled: true, deadlineCapMs: 50, log: capture() });
  for (let i = 0; i < 5; i++) {
    const obeying = {
      name: 'obeying',
      scoreSync(_request, context) {
        while (context.remainingMs() > 0) {
          // blocking on purpose, until the host's own clock says 0
        }
        throw new Error('given up at the deadline');
      },
    };
    const r = conversation.turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true, scorer: obeying });
    assert.deepEqual([r.outcome, r.body === TEXT, r.scorerCalls], ['timeout', true, 1], `try ${i}`);
  }
});

test('an async guest call made from inside a blocking scorer does not stop the clock-paused call', async () => {
  const quick = await Pruner.load({ limits: { wallMs: 200 } });
  const inner = scripted();
  let pending;
  const scorer = {
    name: 'mixed',
    scoreSync(request) {
      spin(400);
      // Queued (answered after this call); it must not make the engine think the call is overdue.
      pending = quick.conversation({ log: capture() }).turn(REQUEST).onToolResult({ text: 'short', prunable: true });
      return inner.scoreSync(request);
    },
  };
  const r = quick.conversation({ enabled: true, scorer, log: capture() }).turn(REQUEST).onToolResultSync({ text: TEXT, prunable: true });
  assert.deepEqual([r.outcome, r.failure], ['ok', null]);
  assert.equal((await pending).outcome, 'skipped');
  quick.close();
});
