// The Jev transport on `fetch` (SPEC §5, §11, §14): POST each batch's
// `jevBody` unchanged with the Bearer token, under the guest's transport
// policy, and hand 2xx bodies back raw (`jev-response`). This file never
// parses or builds Jev JSON; the guest does.

import { performance } from 'node:perf_hooks';

/** The environment variables `jevScorer.fromEnv` reads (as the Rust host). */
export const JEV_ENV_VARS = Object.freeze([
  'TOOLPRUNE_JEV_ROUTE',
  'TOOLPRUNE_JEV_ACCOUNT_ID',
  'TOOLPRUNE_JEV_TOKEN',
  'TOOLPRUNE_JEV_BASE_URL',
  'TOOLPRUNE_JEV_MODEL',
]);

/** The model named in the body on the TypeSafe and Vercel routes unless configured. */
export const DEFAULT_JEV_MODEL = 'jev-1.13.0';

const ROUTES = Object.freeze({
  cloudflare: { base: 'https://api.cloudflare.com', namesModel: false },
  typesafe: { base: 'https://api.typesafe.ai', namesModel: true },
  vercel: { base: 'https://ai-gateway.vercel.sh/typesafe', namesModel: true },
});

const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** A configuration that cannot send: the message says what to set. Never holds the token. */
export class JevConfigError extends Error {
  constructor(message) {
    super(message);
    this.name = 'JevConfigError';
  }
}

function isLoopback(host) {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The URL every batch is POSTed to (no secret in it). */
function endpoint(route, baseUrl, accountId, model) {
  const base = (baseUrl ?? ROUTES[route].base).replace(/\/+$/, '');
  let url;
  try {
    url = new URL(base);
  } catch {
    throw new JevConfigError(`bad base URL: ${JSON.stringify(base)} is not an http(s) URL`);
  }
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    throw new JevConfigError(
      `bad base URL: ${JSON.stringify(base)}: plain http is allowed to a loopback host only (the token would travel in clear)`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new JevConfigError(`bad base URL: ${JSON.stringify(base)} is not an http(s) URL`);
  }
  if (url.search || url.hash || base.includes('?') || base.includes('#')) {
    throw new JevConfigError(`bad base URL: ${JSON.stringify(base)} has a query or fragment`);
  }
  if (url.username || url.password) {
    throw new JevConfigError('bad base URL: credentials belong in the token, not the URL');
  }
  if (route === 'cloudflare') {
    const account = (accountId ?? '').trim();
    if (!account) {
      throw new JevConfigError(
        'no account id: the cloudflare route needs TOOLPRUNE_JEV_ACCOUNT_ID (accountId)',
      );
    }
    if (!/^[A-Za-z0-9_-]+$/.test(account)) {
      throw new JevConfigError("the account id may hold only letters, digits, '-' and '_'");
    }
    return `${base}/client/v4/accounts/${account}/ai/run/typesafe/jev`;
  }
  if (model !== undefined && model.trim() === '') throw new JevConfigError('the model name is empty');
  return `${base}/v1/systemone`;
}

function retryable(policy, status) {
  return policy.retryOn.some(([lo, hi]) => status >= lo && status <= hi);
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const done = (slept) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(slept);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After` in seconds (the only form Jev's gateways send), in ms. */
function retryAfterMs(response) {
  const v = response.headers.get('retry-after');
  if (v === null || !/^\s*\d+\s*$/.test(v)) return undefined;
  return Number(v.trim()) * 1000;
}

/**
 * A Jev scorer on `fetch`.
 *
 * - `route`: `'cloudflare'` (default; `accountId` needed), `'typesafe'`,
 *   `'vercel'`; `baseUrl` overrides the route's (https, or http to loopback);
 * - `token`: the API token, sent only as `Authorization: Bearer …` by this
 *   transport, never passed to the guest, never logged;
 * - `model`: named in the body on the TypeSafe and Vercel routes
 *   (default `jev-1.13.0`); Cloudflare takes it from the URL;
 * - up to `policy.maxInFlight` requests in flight; one deadline
 *   (`policy.deadlineMs`) for the whole result → stop `timeout`; the
 *   `signal` → stop `cancelled` at once (it wins over the deadline);
 * - a status in `policy.retryOn` is retried `policy.maxRetries` times
 *   (after `Retry-After` seconds, else 250 ms, if that ends before the
 *   deadline); other non-2xx are final (`failed(http(status))`); no status →
 *   `failed(network)`. Bodies of non-2xx answers are never read;
 * - `fetch`: another fetch (tests, proxies); `deadlineCapMs`: **tests only**,
 *   lowers the deadline.
 */
export function jevScorer({
  route = 'cloudflare',
  accountId,
  token,
  baseUrl,
  model,
  fetch: fetchImpl = globalThis.fetch,
  deadlineCapMs,
} = {}) {
  const routeName = String(route).trim().toLowerCase();
  if (!Object.hasOwn(ROUTES, routeName)) {
    throw new JevConfigError(`unknown route ${JSON.stringify(route)}: cloudflare, typesafe or vercel`);
  }
  const secret = typeof token === 'string' ? token.trim() : '';
  if (!secret) {
    throw new JevConfigError(
      'no token: set TOOLPRUNE_JEV_TOKEN (a Cloudflare API token with Workers AI access, or a TypeSafe / Vercel gateway key)',
    );
  }
  if (!/^[\x21-\x7e]+$/.test(secret)) {
    throw new JevConfigError('the token has spaces or characters an HTTP header cannot carry');
  }
  if (typeof fetchImpl !== 'function') throw new JevConfigError('no fetch available');
  const url = endpoint(routeName, baseUrl, accountId, model);
  const jevModel = ROUTES[routeName].namesModel ? (model?.trim() || DEFAULT_JEV_MODEL) : undefined;
  const headers = Object.freeze({
    authorization: `Bearer ${secret}`,
    'content-type': 'application/json',
    accept: 'application/json',
  });

  /** One batch with its retries; resolves to a batch answer, never rejects. */
  async function batch(body, policy, deadline, signal) {
    let retries = 0;
    let lastStatus;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0 || signal.aborted) {
        return lastStatus === undefined
          ? { tag: 'failed', val: { tag: 'network' } }
          : { tag: 'failed', val: { tag: 'http', val: lastStatus } };
      }
      let response;
      try {
        response = await fetchImpl(url, { method: 'POST', headers, body, signal, redirect: 'error' });
      } catch {
        return { tag: 'failed', val: { tag: 'network' } };
      }
      const status = response.status;
      if (status >= 200 && status < 300) {
        try {
          // Every byte as text, a leading BOM included (`response.text()`
          // would drop it): the guest judges the body, as in the Rust host.
          return { tag: 'jev-response', val: UTF8.decode(await response.arrayBuffer()) };
        } catch {
          return { tag: 'failed', val: { tag: 'network' } };
        }
      }
      // Never read a non-2xx body (it may echo request headers).
      const wait = retryAfterMs(response) ?? policy.retryBackoffMs;
      response.body?.cancel().catch(() => {});
      lastStatus = status;
      if (retries >= policy.maxRetries || !retryable(policy, status)) {
        return { tag: 'failed', val: { tag: 'http', val: status } };
      }
      if (performance.now() + wait >= deadline || !(await sleep(wait, signal))) {
        return { tag: 'failed', val: { tag: 'http', val: status } };
      }
      retries += 1;
    }
  }

  async function score(request, { signal } = {}) {
    const start = performance.now();
    const elapsed = () => Math.min(Math.floor(performance.now() - start), 0xffff_ffff);
    const policy = request.policy;
    let budget = policy.deadlineMs;
    if (Number.isFinite(deadlineCapMs)) budget = Math.min(budget, deadlineCapMs);
    const deadline = start + budget;
    if (signal?.aborted) return { answers: { tag: 'err', val: 'cancelled' }, elapsedMs: 0 };
    const bodies = request.batches.map((b) => b.jevBody);
    if (bodies.length === 0) return { answers: { tag: 'ok', val: [] }, elapsedMs: elapsed() };

    // Aborted when scoring ends for any reason: in-flight requests stop.
    const stop = new AbortController();
    const requestSignal = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
    const answers = new Array(bodies.length);
    let next = 0;
    const worker = async () => {
      while (!requestSignal.aborted) {
        const i = next++;
        if (i >= bodies.length) return;
        answers[i] = await batch(bodies[i], policy, deadline, requestSignal);
      }
    };
    const workers = Math.min(Math.max(policy.maxInFlight, 1), bodies.length);
    const all = Promise.all(Array.from({ length: workers }, worker)).then(() => 'done');
    let timer;
    let onAbort;
    const ended = new Promise((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - performance.now()));
      onAbort = () => resolve('cancelled');
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const first = await Promise.race([all, ended]);
      // Cancellation wins over the deadline (SPEC §11).
      if (signal?.aborted) return { answers: { tag: 'err', val: 'cancelled' }, elapsedMs: elapsed() };
      if (first === 'timeout') return { answers: { tag: 'err', val: 'timeout' }, elapsedMs: elapsed() };
      const val = answers.map((a) => a ?? { tag: 'failed', val: { tag: 'network' } });
      return { answers: { tag: 'ok', val }, elapsedMs: elapsed() };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      stop.abort();
    }
  }

  const scorer = { name: 'jev', route: routeName, url, jevModel, score };
  // The token is only inside `headers`, in this closure.
  Object.defineProperty(scorer, 'toJSON', { value: () => ({ name: 'jev', route: routeName, url }) });
  Object.defineProperty(scorer, Symbol.for('nodejs.util.inspect.custom'), {
    value: () => `JevScorer { route: ${routeName}, url: ${url} }`,
  });
  return Object.freeze(scorer);
}

/**
 * A Jev scorer from `TOOLPRUNE_JEV_*` variables (as the Rust host reads
 * them), or `null` when no token is set. Throws `JevConfigError` when the
 * settings are incomplete.
 */
jevScorer.fromEnv = function fromEnv(env = process.env, extra = {}) {
  const token = env.TOOLPRUNE_JEV_TOKEN;
  if (!token || !token.trim()) return null;
  return jevScorer({
    route: env.TOOLPRUNE_JEV_ROUTE || 'cloudflare',
    accountId: env.TOOLPRUNE_JEV_ACCOUNT_ID,
    token,
    baseUrl: env.TOOLPRUNE_JEV_BASE_URL || undefined,
    model: env.TOOLPRUNE_JEV_MODEL || undefined,
    ...extra,
  });
};
