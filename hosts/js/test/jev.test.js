// The Jev transport against a loopback server on 127.0.0.1, configured as
// users configure it (variables resolved by the guest's settings): the
// request shape, the token only in the header, ≤ max-in-flight requests,
// retries as the guest's retry rule says (Retry-After, retry-after-ms, an
// HTTP-date), 402 never retried, a stall → timeout, an abort → cancelled,
// no server → network, the served model, configuration errors.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';

import { ConfigError, JevScorer, Pruner } from '../src/index.js';
import { REQUEST, capture, notes, readShared, sha256 } from './helpers.js';

const TOKEN = 'tok-SECRET-1234';
const PEP = readShared('corpus/pep-0817-wheel-variants.rst');
const PEP_REQUEST = 'How does PEP 817 encode a wheel variant in the wheel filename, and what about security?';
const TEXT = notes(12);
const pruner = await Pruner.load();

/** What the server does with each request: set per test. */
let behaviour;
let seen = [];
let inFlight = 0;
let maxInFlight = 0;
let server;
let base;

/** Jev's answer for a request body: odd paragraphs 0.05, even 0.9, 100 tokens per chunk. */
function answer(body, { envelope = false, model = 'jev-1.13.0' } = {}) {
  const request = JSON.parse(body);
  const names = Object.keys(request.state.chunks);
  const answers = Object.fromEntries(names.map((k) => [k, { type: 'noul', noul: Number(k.slice(1)) % 2 ? 0.05 : 0.9 }]));
  const bare = { model, answers, usage: { input_tokens: 100 * names.length, output_tokens: 0 } };
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
      const record = { method: req.method, url: req.url, headers: req.headers, body, n: seen.length };
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

const ok = (options = {}, wait = 0) => async (record, res) => {
  if (wait) await new Promise((r) => setTimeout(r, wait));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(answer(record.body, options));
};

/** A Jev scorer for this server through the guest's configuration. */
function jev(vars = {}) {
  const env = { TOOLPRUNE_JEV_ROUTE: 'typesafe', TOOLPRUNE_JEV_BASE_URL: base, HOME: '/nonexistent', ...vars };
  const config = pruner.config(env);
  return JevScorer.fromConfig(config, { ...env, [config.tokenVariable]: TOKEN });
}

async function prune(scorer, { text = TEXT, request = REQUEST, signal, deadlineCapMs } = {}) {
  const log = capture();
  const conversation = pruner.conversation({ enabled: true, log, agent: 'jev-test', scorer, deadlineCapMs });
  const result = await conversation.turn(request).onToolResult({ tool: 'fetch', prunable: true, text }, { signal });
  return { result, log };
}

test('typesafe route: /v1/systemone, the guest\'s model in the body, the token only in the header', async () => {
  reset(ok());
  const scorer = jev();
  assert.equal(scorer.url, `${base}/v1/systemone`);
  assert.equal(scorer.loopback, true);
  assert.equal(typeof scorer.jevModel, 'string');
  const { result, log } = await prune(scorer);
  assert.equal(result.outcome, 'ok');
  assert.equal(result.counts.calls, 1);
  assert.equal(result.counts.jevTokens, 1200);
  assert.equal(result.servedModel, 'jev-1.13.0');
  assert.equal(seen.length, 1);
  const r = seen[0];
  assert.equal(r.method, 'POST');
  assert.equal(r.url, '/v1/systemone');
  assert.equal(r.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(r.headers['content-type'], 'application/json');
  const body = JSON.parse(r.body);
  assert.equal(body.model, scorer.jevModel);
  assert.ok(!r.body.includes(TOKEN) && !r.body.includes('fetch'), 'no token, no tool name in the body');
  const everything = JSON.stringify({ result, log: log.lines, scorer, inspected: String(scorer) });
  assert.ok(!everything.includes(TOKEN), 'the token appears in no result, log or scorer serialization');
});

test('cloudflare route: the account in the path, no model in the body, the envelope decoded, the served model', async () => {
  reset(ok({ envelope: true, model: 'jev-9.9.9' }));
  const scorer = jev({ TOOLPRUNE_JEV_ROUTE: 'cloudflare', TOOLPRUNE_JEV_ACCOUNT_ID: 'acc_1' });
  assert.equal(scorer.url, `${base}/client/v4/accounts/acc_1/ai/run/typesafe/jev`);
  assert.equal(scorer.jevModel, undefined);
  const { result } = await prune(scorer);
  assert.equal(result.outcome, 'ok');
  assert.equal(JSON.parse(seen[0].body).model, undefined);
  assert.equal(result.servedModel, 'jev-9.9.9');
});

test('at most max-in-flight requests over the 22 batches of a 121,429-character page', async () => {
  reset(ok({}, 40));
  const { result } = await prune(jev(), { text: PEP, request: PEP_REQUEST });
  assert.equal(result.outcome, 'ok');
  assert.equal(seen.length, 22);
  assert.equal(maxInFlight, 4);
  assert.equal(result.counts.calls, 22);
});

test('a 429 or 503 is retried after the wait the guest reads from Retry-After / retry-after-ms', async () => {
  for (const headers of [{ 'retry-after': '0' }, { 'retry-after-ms': '30' }, { 'retry-after': new Date(Date.now() - 1000).toUTCString() }]) {
    for (const status of [429, 503]) {
      reset(async (record, res) => {
        if (record.n === 0) {
          res.writeHead(status, headers);
          return res.end('slow down (echo: Authorization: Bearer tok-SECRET-1234)');
        }
        return ok()(record, res);
      });
      const { result } = await prune(jev());
      assert.equal(result.outcome, 'ok', JSON.stringify({ status, headers }));
      assert.equal(seen.length, 2);
      assert.deepEqual(result.failures, []);
    }
  }
});

test('a 500 twice fails the batch (one retry); a 402 and a 404 are never retried; a long Retry-After is not waited for', async () => {
  const always = (status, headers = {}) => async (record, res) => {
    res.writeHead(status, headers);
    res.end('{"error":"no"}');
  };
  const cases = [
    [always(500), 2, { batch: 0, status: 500, class: 'http_5xx' }],
    [always(402), 1, { batch: 0, status: 402, class: 'out_of_credit' }],
    [always(404), 1, { batch: 0, status: 404, class: 'http_4xx' }],
    [always(429, { 'retry-after': '3600' }), 1, { batch: 0, status: 429, class: 'rate_limited' }],
  ];
  for (const [fn, requests, failure] of cases) {
    reset(fn);
    const { result, log } = await prune(jev());
    assert.equal(result.outcome, 'failed');
    assert.equal(seen.length, requests, failure.class);
    assert.deepEqual(result.failures, [failure]);
    assert.ok(result.body === TEXT);
    assert.match(log.lines[0], / outcome=failed /);
  }
});

test('a 2xx body the guest cannot read is undecodable; a partial failure keeps that batch\'s paragraphs', async () => {
  reset(async (record, res) => {
    res.writeHead(200);
    res.end('<html>not jev</html>');
  });
  const { result } = await prune(jev());
  assert.deepEqual(result.failures, [{ batch: 0, status: null, class: 'undecodable' }]);
  reset(async (record, res) => {
    if ('p0' in JSON.parse(record.body).state.chunks) {
      res.writeHead(500); // the first batch, every time
      return res.end();
    }
    return ok()(record, res);
  });
  const { result: partial } = await prune(jev(), { text: notes(40) });
  assert.notEqual(partial.outcome, 'failed', 'the other batches scored');
  assert.equal(partial.failures.length, 1);
  assert.deepEqual(partial.failures, [{ batch: 0, status: 500, class: 'http_5xx' }]);
  assert.equal(partial.counts.calls, 2);
  assert.equal(seen.length, 4, 'the failing batch was retried once');
});

test('a stalled server: timeout at the deadline, finished batches discarded', async () => {
  reset(async (record, res) => {
    if (record.n === 0) return ok()(record, res); // one batch answers, the others never do
  });
  const started = performance.now();
  const { result, log } = await prune(jev(), { text: notes(40), deadlineCapMs: 300 });
  const took = performance.now() - started;
  assert.equal(result.outcome, 'timeout');
  assert.ok(result.body === notes(40) || result.body === result.raw);
  assert.ok(took >= 290 && took < 3000, `${took} ms`);
  assert.match(log.lines[0], / outcome=timeout .* calls=0 jev_tokens=0 /);
});

test('an abort while waiting, also during a retry wait: cancelled at once, nothing more sent', async () => {
  reset(async () => {});
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  let started = performance.now();
  const { result } = await prune(jev(), { signal: controller.signal });
  assert.equal(result.outcome, 'cancelled');
  assert.ok(performance.now() - started < 2000);
  reset(async (record, res) => {
    res.writeHead(429, { 'retry-after-ms': '2000' });
    res.end();
  });
  started = performance.now();
  const { result: waiting } = await prune(jev(), { signal: AbortSignal.timeout(150) });
  assert.equal(waiting.outcome, 'cancelled');
  assert.equal(seen.length, 1, 'the retry was never sent');
  assert.ok(performance.now() - started < 1500);
  reset(ok());
  const { result: early } = await prune(jev(), { signal: AbortSignal.abort() });
  assert.equal(early.outcome, 'cancelled');
  assert.equal(seen.length, 0);
});

test('no server at all: every batch fails with network (not retried), the full text comes back', async () => {
  const config = pruner.config({ TOOLPRUNE_JEV_ROUTE: 'typesafe', TOOLPRUNE_JEV_BASE_URL: 'http://127.0.0.1:9', HOME: '/nonexistent' });
  const scorer = JevScorer.fromConfig(config, { [config.tokenVariable]: TOKEN });
  const { result } = await prune(scorer, { text: notes(40) });
  assert.equal(result.outcome, 'failed');
  assert.deepEqual(result.failures.map((f) => f.class), ['network', 'network', 'network']);
  assert.equal(sha256(result.body), sha256(notes(40)));
});

test('configuration: the guest\'s messages, no Jev without the token, never the token in an error', async () => {
  const env = { HOME: '/nonexistent' };
  const cloudflare = pruner.config(env);
  assert.equal(JevScorer.fromConfig(cloudflare, env), null, 'no token: no Jev');
  assert.throws(() => JevScorer.fromConfig(cloudflare, { ...env, [cloudflare.tokenVariable]: TOKEN }), { name: 'ConfigError', message: /account id/ });
  const http = pruner.config({ ...env, TOOLPRUNE_JEV_ROUTE: 'typesafe', TOOLPRUNE_JEV_BASE_URL: 'http://example.com' });
  assert.throws(() => JevScorer.fromConfig(http, { [http.tokenVariable]: TOKEN }), /loopback/);
  assert.throws(() => pruner.config({ ...env, TOOLPRUNE_JEV_ROUTE: 'other' }), ConfigError);
  const typesafe = pruner.config({ ...env, TOOLPRUNE_JEV_ROUTE: 'typesafe' });
  assert.throws(
    () => JevScorer.fromConfig(typesafe, { [typesafe.tokenVariable]: 'zz top' }),
    (e) => e instanceof ConfigError && !e.message.includes('zz top'),
  );
  const fromEnv = await JevScorer.fromEnv({ ...env, TOOLPRUNE_JEV_ROUTE: 'vercel', [typesafe.tokenVariable]: TOKEN }, { pruner });
  assert.equal(fromEnv.url, 'https://ai-gateway.vercel.sh/typesafe/v1/systemone');
  await assert.rejects(Pruner.load({ scorer: 'jev', env }), ConfigError);
  const loaded = await Pruner.load({ scorer: 'jev', env: { ...env, TOOLPRUNE_JEV_ROUTE: 'typesafe', [typesafe.tokenVariable]: TOKEN } });
  assert.equal(loaded.scorerName, 'jev');
  loaded.close();
});
