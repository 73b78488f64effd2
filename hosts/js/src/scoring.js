// Who scores a result's paragraphs (SPEC §5, §14), and how the host runs a
// scorer: on the main thread, under the deadline (`transport-policy.deadline-ms`,
// for every scorer, custom ones included), cancellable, with any failure
// folded into per-batch `failed(network)` (SPEC §11). Every number comes
// from the guest's request; nothing here knows a rule.

import { performance } from 'node:perf_hooks';

const U32_MAX = 0xffff_ffff;
const NETWORK = Object.freeze({ tag: 'failed', val: Object.freeze({ tag: 'network' }) });

/** The guest's offline lexical scorer: no request, nothing leaves the machine. */
export const OFFLINE = Object.freeze({ kind: 'offline', name: 'offline' });
/** The guest's word-overlap stub (`scorer-choice.stub`: scored in the guest, no request; not a relevance model). */
export const STUB = Object.freeze({ kind: 'stub', name: 'stub' });

/**
 * A scorer option as the host uses it: `'offline'`, `'stub'`, or a host
 * scorer `{ name, score(request, context) }` (and/or `scoreSync`).
 * Throws a TypeError for anything else.
 */
export function checkScorer(scorer) {
  if (scorer === undefined || scorer === 'offline') return OFFLINE;
  if (scorer === 'stub') return STUB;
  if (scorer === OFFLINE || scorer === STUB) return scorer;
  if (
    scorer &&
    typeof scorer === 'object' &&
    typeof scorer.name === 'string' &&
    (typeof scorer.score === 'function' || typeof scorer.scoreSync === 'function')
  ) {
    return { kind: 'host', name: scorer.name, scorer };
  }
  throw new TypeError("toolprune: scorer must be 'offline', 'stub', or an object { name, score(request, context) }");
}

function u32(x) {
  return Number.isFinite(x) && x >= 0 ? Math.min(Math.floor(x), U32_MAX) : 0;
}

function failure(value) {
  if (value === 'network' || value?.tag === 'network') return { tag: 'network' };
  const status = value?.tag === 'http' ? value.val : value?.http;
  if (Number.isInteger(status) && status >= 0 && status <= 0xffff) return { tag: 'http', val: status };
  return { tag: 'network' };
}

/**
 * One batch answer in the shape jco lowers. Accepts the WIT shape
 * (`{tag: 'scores', val}`, `{tag: 'jev-response', val}`, `{tag: 'failed', val}`)
 * or the friendly one (`{scores}` with `null` for not scored, `{jevResponse}`,
 * `{failed: {http} | 'network'}`). Anything else fails the batch (`network`).
 */
export function batchAnswer(answer) {
  if (!answer || typeof answer !== 'object') return NETWORK;
  let scores;
  let body;
  if (answer.tag === 'scores') scores = answer.val;
  else if (answer.tag === 'jev-response') body = answer.val;
  else if (answer.tag === 'failed') return { tag: 'failed', val: failure(answer.val) };
  else if ('scores' in answer) scores = answer.scores;
  else if ('jevResponse' in answer) body = answer.jevResponse;
  else if ('failed' in answer) return { tag: 'failed', val: failure(answer.failed) };
  else return NETWORK;
  if (scores !== undefined) {
    if (!Array.isArray(scores) && !ArrayBuffer.isView(scores)) return NETWORK;
    return { tag: 'scores', val: Array.from(scores, (s) => (typeof s === 'number' ? s : undefined)) };
  }
  return typeof body === 'string' && body.isWellFormed() ? { tag: 'jev-response', val: body } : NETWORK;
}

/** Every batch `failed(network)`: a scorer that threw, or answered the wrong number of batches. */
export function failedAll(request) {
  return { tag: 'ok', val: request.batches.map(() => NETWORK) };
}

/**
 * A host scorer's answer as the response's `answers`: an array with one
 * answer per batch (or `{answers: [...]}`). A wrong count is a scorer
 * failure: every batch `failed(network)`.
 */
export function normalizeAnswers(value, request) {
  const list = Array.isArray(value) ? value : Array.isArray(value?.answers) ? value.answers : value?.answers?.tag === 'ok' ? value.answers.val : undefined;
  if (!Array.isArray(list) || list.length !== request.batches.length) return failedAll(request);
  return { tag: 'ok', val: list.map(batchAnswer) };
}

function response(answers, start) {
  return { answers, elapsedMs: u32(performance.now() - start) };
}

const stop = (why) => ({ tag: 'err', val: why });

/**
 * What a host scorer gets with a request: `signal` aborts when the host
 * stops waiting (deadline, cancellation); `deadline` (a `performance.now()`
 * time) and `remainingMs()`; `retryDelay(facts)`: the guest's retry rule
 * (`settings.retry-delay`), resolving to the wait in ms or null.
 */
function context(signal, deadline, retryDelay) {
  return {
    signal,
    deadline,
    remainingMs: () => u32(deadline - performance.now()),
    retryDelay,
  };
}

function budgetOf(request, deadlineCapMs) {
  const budget = request.policy.deadlineMs;
  return Number.isFinite(deadlineCapMs) && deadlineCapMs >= 0 ? Math.min(budget, deadlineCapMs) : budget;
}

/**
 * Asks a host scorer for `request` without blocking the event loop, within
 * the request's deadline; any of `signals` cancels (cancellation wins over
 * the deadline and over late answers, SPEC §11). Resolves to the
 * `scoring-response` jco lowers, `elapsed-ms` measured here.
 */
export async function scoreAsync(scorer, request, { signals = [], deadlineCapMs, retryDelay } = {}) {
  const live = signals.filter(Boolean);
  const start = performance.now();
  if (live.some((s) => s.aborted)) return response(stop('cancelled'), start);
  const budget = budgetOf(request, deadlineCapMs);
  const ended = new AbortController();
  const signal = AbortSignal.any([...live, ended.signal]);
  let timer;
  let onAbort;
  const stopped = new Promise((resolve) => {
    timer = setTimeout(() => resolve('timeout'), budget);
    onAbort = () => resolve('cancelled');
    for (const s of live) s.addEventListener('abort', onAbort, { once: true });
  });
  const asked = (async () => {
    const ctx = context(signal, start + budget, retryDelay ?? (async () => null));
    return typeof scorer.score === 'function' ? scorer.score(request, ctx) : scorer.scoreSync(request, ctx);
  })().then(
    (value) => ({ answers: normalizeAnswers(value, request) }),
    () => ({ answers: failedAll(request) }),
  );
  try {
    const first = await Promise.race([asked, stopped]);
    if (live.some((s) => s.aborted)) return response(stop('cancelled'), start);
    if (first === 'timeout' || first === 'cancelled') return response(stop(first), start);
    return response(first.answers, start);
  } finally {
    clearTimeout(timer);
    for (const s of live) s.removeEventListener('abort', onAbort);
    ended.abort();
  }
}

/**
 * The blocking form, for the `scorer` import of `onToolResultSync` and the
 * sync judge: `scorer.scoreSync(request, context)` on this thread, whose
 * `context.retryDelay(facts)` answers synchronously (the guest's
 * `settings.retry-delay`, asked of a second instance: the first is inside
 * the call being scored). A cancelled signal stops before the call, and
 * wins after it; an answer that comes past the deadline is a `timeout`
 * (the host cannot interrupt a blocking call, it discards what came late).
 * Never throws: a scorer that throws fails every batch (`network`).
 */
export function scoreSync(scorer, request, { signals = [], deadlineCapMs, retryDelay } = {}) {
  const live = signals.filter(Boolean);
  const start = performance.now();
  if (live.some((s) => s.aborted)) return response(stop('cancelled'), start);
  const deadline = start + budgetOf(request, deadlineCapMs);
  const ended = new AbortController();
  let answers;
  try {
    const ctx = context(AbortSignal.any([...live, ended.signal]), deadline, retryDelay ?? (() => null));
    answers = normalizeAnswers(scorer.scoreSync(request, ctx), request);
  } catch {
    answers = failedAll(request);
  } finally {
    ended.abort();
  }
  if (live.some((s) => s.aborted)) return response(stop('cancelled'), start);
  // The deadline is reached when the scorer's own `remainingMs()` says 0
  // (less than 1 ms left): a scorer that stops then gets `timeout`, never
  // `failed` for having obeyed its context.
  if (u32(deadline - performance.now()) === 0) return response(stop('timeout'), start);
  return response(answers, start);
}
