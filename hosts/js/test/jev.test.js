// The Jev transport against a loopback server on 127.0.0.1: the request
// shape, ≤ 4 in flight, a 429 retried, a 500 kept, a stall → timeout, an
// abort → cancelled. The server plays Jev; the transport never parses JSON.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';

import { JevConfigError, Pruner, jevScorer } from '../src/index.js';
import { capture, readShared, sha256 } from './helpers.js';

const TOKEN = 'tok-SECRET-1234';
const PEP = readShared('corpus/pep-0817-wheel-variants.rst');
const PEP_REQUEST = 'How does PEP 817 encode a wheel variant in the wheel filename, and what about security?';
const HEADINGS = readShared('cases/headings.md');
const REQUEST = 'How do I configure the retry limit for the upload client?';

/** What the server does with the next request: set per test. */
let behaviour;
let seen = [];
let inFlight = 0;
let maxInFlight = 0;
let server;
let base;

/** Jev's answer for a request body: odd paragraphs 0.05, even 0.9, 100 tokens. */
function answer(body, envelope) {
  const request = JSON.parse(body);
  const answers = Object.fromEntries(
    Object.keys(request.questions).map((k) => [k, { type: 'noul', noul: Number(k.slice(1)) % 2 ? 0.05 : 0.9 }]),
  );
  const bare = { model: 'jev-1.13.0', answers, usage: { input_tokens: 100, output_tokens: 0 } };
  return JSON.stringify(envelope ? { success: true, result: bare, errors: [], messages: [] } : bare);
}

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', async () => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const record = { method: req.method, url: req.url, headers: req.headers, body };
      seen.push(record);
      try {
        await behaviour(record, res);
      } finally {
        inFlight -= 1;
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

function reset(fn) {
  behaviour = fn;
  seen = [];
  inFlight = 0;
  maxInFlight = 0;
}

const ok = (envelope = true, wait = 0) => async (record, res) => {
  if (wait) await new Promise((r) => setTimeout(r, wait));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(answer(record.body, envelope));
};

async function prune(scorer, text = HEADINGS, request = REQUEST, signal) {
  const pruner = await Pruner.load({ scorer });
  const log = capture();
  const turn = pruner.beginTurn(request, { enabled: true, log, agent: 'jev-test' });
  const result = await turn.onToolResult({ tool: 'fetch', prunable: true, text }, { signal });
  return { result, log };
}

test('cloudflare: the request shape, the token only in the header, raw bodies decoded by the guest', async () => {
  reset(ok(true));
  const scorer = jevScorer({ route: 'cloudflare', accountId: 'acc_1', token: TOKEN, baseUrl: base });
  assert.equal(scorer.url, `${base}/client/v4/accounts/acc_1/ai/run/typesafe/jev`);
  const { result, log } = await prune(scorer);
  assert.equal(result.outcome, 'ok');
  assert.equal(result.report.counts.calls, 2);
  assert.equal(result.report.counts.jevTokens, 200);
  assert.equal(seen.length, 2);
  for (const r of seen) {
    assert.equal(r.method, 'POST');
    assert.equal(r.url, '/client/v4/accounts/acc_1/ai/run/typesafe/jev');
    assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(r.headers['content-type'], 'application/json');
    const body = JSON.parse(r.body);
    assert.equal(body.model, undefined, 'Cloudflare takes the model from the URL');
    assert.equal(body.state.request, REQUEST);
    assert.ok(!r.body.includes(TOKEN) && !r.body.includes('fetch'), 'no token, no tool name in the body');
  }
  const everything = JSON.stringify({ result, log: log.lines, scorer });
  assert.ok(!everything.includes(TOKEN), 'the token appears in no result, log or scorer serialization');
});

test('typesafe route: /v1/systemone, the model in the body, bare responses', async () => {
  reset(ok(false));
  const scorer = jevScorer({ route: 'typesafe', token: TOKEN, baseUrl: `${base}/` });
  assert.equal(scorer.jevModel, 'jev-1.13.0');
  const { result } = await prune(scorer);
  assert.equal(result.outcome, 'ok');
  assert.equal(seen[0].url, '/v1/systemone');
  assert.equal(JSON.parse(seen[0].body).model, 'jev-1.13.0');
  const vercel = jevScorer({ route: 'vercel', token: TOKEN, model: 'jev-2' });
  assert.equal(vercel.url, 'https://ai-gateway.vercel.sh/typesafe/v1/systemone');
  assert.equal(vercel.jevModel, 'jev-2');
});

test('at most 4 requests in flight over the 22 batches of a 121,429-character page', async () => {
  reset(ok(true, 40));
  const scorer = jevScorer({ accountId: 'a', token: TOKEN, baseUrl: base });
  const { result } = await prune(scorer, PEP, PEP_REQUEST);
  assert.equal(result.outcome, 'ok');
  assert.equal(seen.length, 22);
  assert.equal(maxInFlight, 4);
  assert.equal(result.report.counts.calls, 22);
  assert.equal(result.report.counts.jevTokens, 2200);
});

test('a 429 is retried once (after Retry-After) and then scores', async () => {
  const statuses = new Map();
  reset(async (record, res) => {
    const n = (statuses.get(record.body) ?? 0) + 1;
    statuses.set(record.body, n);
    if (n === 1) {
      res.writeHead(429, { 'retry-after': '0' });
      return res.end('slow down (echo: Authorization: Bearer tok-SECRET-1234)');
    }
    return ok(true)(record, res);
  });
  const scorer = jevScorer({ accountId: 'a', token: TOKEN, baseUrl: base });
  const { result } = await prune(scorer);
  assert.equal(result.outcome, 'ok');
  assert.equal(seen.length, 4, 'two batches, each sent twice');
  assert.deepEqual(result.report.failures, []);
  assert.equal(result.report.counts.calls, 2);
});

test('a 500 twice: that batch is kept, the other pruned; a 402 is never retried', async () => {
  let first = null;
  reset(async (record, res) => {
    first ??= record.body;
    if (record.body === first) {
      res.writeHead(500);
      return res.end('internal');
    }
    return ok(true)(record, res);
  });
  const scorer = jevScorer({ accountId: 'a', token: TOKEN, baseUrl: base });
  const { result, log } = await prune(scorer, readShared('cases/inline-backticks.md'));
  assert.equal(seen.length, 3, 'the failing batch was retried once');
  assert.deepEqual(result.report.failures, [{ batch: 0, status: 500, class: 'http-5xx' }]);
  assert.equal(result.report.counts.calls, 1);
  assert.ok(result.report.paragraphs.slice(0, 16).every((p) => p.fate === 'unscored'), 'its paragraphs are kept');
  assert.match(log.lines[0], / calls=1 /);

  reset(async (record, res) => {
    res.writeHead(402);
    res.end();
  });
  const { result: poor } = await prune(scorer);
  assert.equal(seen.length, 2, 'one request per batch: 402 is final');
  assert.equal(poor.outcome, 'failed');
  assert.deepEqual(poor.report.failures.map((f) => f.class), ['out-of-credit', 'out-of-credit']);
  assert.equal(poor.body, HEADINGS);
});

test('a stalled server: timeout at the (test) deadline, every finished batch discarded', async () => {
  let n = 0;
  reset(async (record, res) => {
    n += 1;
    if (n === 1) return ok(true)(record, res); // one batch answers…
    // …the other never does.
  });
  const scorer = jevScorer({ accountId: 'a', token: TOKEN, baseUrl: base, deadlineCapMs: 300 });
  const started = performance.now();
  const { result, log } = await prune(scorer);
  const took = performance.now() - started;
  assert.equal(result.outcome, 'timeout');
  assert.equal(result.body, HEADINGS);
  assert.ok(took >= 290 && took < 3000, `${took} ms`);
  assert.match(log.lines[0], / outcome=timeout .* calls=0 jev_tokens=0 /);
});

test('an abort while waiting: cancelled at once, nothing more sent', async () => {
  reset(async () => {});
  const scorer = jevScorer({ accountId: 'a', token: TOKEN, baseUrl: base });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const started = performance.now();
  const { result } = await prune(scorer, HEADINGS, REQUEST, controller.signal);
  assert.equal(result.outcome, 'cancelled');
  assert.equal(result.body, HEADINGS);
  assert.ok(performance.now() - started < 2000);
  // Already aborted: nothing is sent at all.
  reset(ok(true));
  const { result: early } = await prune(scorer, HEADINGS, REQUEST, AbortSignal.abort());
  assert.equal(early.outcome, 'cancelled');
  assert.equal(seen.length, 0);
});

test('no server at all: every batch fails with network, the full text comes back', async () => {
  const scorer = jevScorer({ accountId: 'a', token: TOKEN, baseUrl: 'http://127.0.0.1:9' });
  const { result } = await prune(scorer);
  assert.equal(result.outcome, 'failed');
  assert.deepEqual(result.report.failures.map((f) => f.class), ['network', 'network']);
  assert.equal(sha256(result.body), sha256(HEADINGS));
});

test('configuration errors say what to set and never echo the token', () => {
  assert.throws(() => jevScorer({ accountId: 'a' }), JevConfigError);
  assert.throws(() => jevScorer({ token: TOKEN }), /account id/);
  assert.throws(() => jevScorer({ accountId: 'a', token: TOKEN, baseUrl: 'http://example.com' }), /loopback/);
  assert.throws(() => jevScorer({ route: 'other', token: TOKEN }), /unknown route/);
  assert.throws(() => jevScorer({ accountId: 'a', token: 'zz top' }), (e) => e instanceof JevConfigError && !e.message.includes('zz top'));
  assert.equal(jevScorer.fromEnv({}), null);
  const s = jevScorer.fromEnv({ TOOLPRUNE_JEV_TOKEN: TOKEN, TOOLPRUNE_JEV_ROUTE: 'typesafe' });
  assert.equal(s.url, 'https://api.typesafe.ai/v1/systemone');
});
