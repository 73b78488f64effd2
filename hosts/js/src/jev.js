// The Jev transport on `fetch` (SPEC §5, §11, §14): POST each batch's
// `jevBody` unchanged to the endpoint the guest resolved
// (`settings.resolve`: route, URL, model, loopback), with the token as a
// Bearer header, at most `policy.max-in-flight` at once; after a failed
// attempt ask the guest whether and when to retry (`settings.retry-delay`);
// hand 2xx bodies back raw for the guest to decode. This file never builds
// or parses Jev JSON, and knows no route, URL, model, variable name or
// retry rule: they are the guest's.

/** Every byte as text, a leading BOM included (`response.text()` would drop it). */
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** A configuration that cannot send: the message says what to set. Never holds the token. */
export class ConfigError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ConfigError';
  }
}

function failed(status) {
  return status === undefined ? { tag: 'failed', val: { tag: 'network' } } : { tag: 'failed', val: { tag: 'http', val: status } };
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

const KEY = Symbol('toolprune.jev');

/**
 * A Jev scorer (name `jev`). Make one from the configuration the guest
 * resolved: `JevScorer.fromConfig(pruner.config(env), env)` or
 * `await JevScorer.fromEnv(env, { pruner })`.
 *
 * `score(request, context)` POSTs every batch (`context.signal` stops
 * everything at once: the host's deadline or a cancellation), retries as
 * `context.retryDelay` says, and answers one batch answer per batch:
 * `jev-response` (a 2xx body), or `failed` with the last HTTP status
 * (`network` when there was none). Bodies of non-2xx answers are never read.
 */
export class JevScorer {
  #url;
  #headers;
  #fetch;

  /** @private use `JevScorer.fromConfig` / `fromEnv` */
  constructor(key, endpoint, token, fetchImpl) {
    if (key !== KEY) throw new TypeError('toolprune: use JevScorer.fromConfig(config, env) or JevScorer.fromEnv(env)');
    this.#url = endpoint.url;
    this.#fetch = fetchImpl;
    // The token lives only here, inside this object's private header set.
    this.#headers = Object.freeze({
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json',
    });
    /** For the log line's `scorer=`. */
    this.name = 'jev';
    /** `cloudflare`, `typesafe` or `vercel` (the guest's). */
    this.route = endpoint.route;
    /** Where batches are POSTed (no secret in it). */
    this.url = endpoint.url;
    /** The model named in request bodies (native routes), or undefined. */
    this.jevModel = endpoint.model ?? undefined;
    /** The URL's host is loopback (Node's fetch uses no proxy either way). */
    this.loopback = endpoint.loopback;
    Object.freeze(this);
  }

  /**
   * A Jev scorer from a configuration (`pruner.config(env)`): null when the
   * token variable it names is not set in `env`. Throws a `ConfigError`
   * with the guest's message when the token is set but the endpoint is
   * incomplete, or when the token cannot be sent in a header.
   */
  static fromConfig(config, env = process.env, { fetch: fetchImpl = globalThis.fetch } = {}) {
    const raw = env[config.tokenVariable];
    const token = typeof raw === 'string' ? raw.trim() : '';
    if (!token) return null;
    if (!config.jev) throw new ConfigError(config.jevError);
    if (!/^[\x21-\x7e]+$/.test(token)) {
      throw new ConfigError(`${config.tokenVariable} has spaces or characters an HTTP header cannot carry`);
    }
    if (typeof fetchImpl !== 'function') throw new ConfigError('no fetch available');
    return new JevScorer(KEY, config.jev, token, fetchImpl);
  }

  /**
   * `fromConfig` with the configuration resolved by `pruner` (default: the
   * shared offline pruner) from `env`'s variables and the config file.
   */
  static async fromEnv(env = process.env, { pruner, fetch: fetchImpl } = {}) {
    const p = pruner ?? (await (await import('./pruner.js')).Pruner.shared());
    return JevScorer.fromConfig(p.config(env), env, { fetch: fetchImpl });
  }

  /** One batch with its retries; resolves to a batch answer, never rejects. */
  async #batch(body, context) {
    const signal = context.signal;
    for (let attempt = 1; ; attempt += 1) {
      let status;
      let retryAfter;
      let retryAfterMs;
      try {
        const response = await this.#fetch(this.#url, { method: 'POST', headers: this.#headers, body, signal, redirect: 'error' });
        status = response.status;
        if (status >= 200 && status < 300) {
          try {
            return { tag: 'jev-response', val: UTF8.decode(await response.arrayBuffer()) };
          } catch {
            status = undefined; // the body broke off: a network error
          }
        } else {
          retryAfter = response.headers.get('retry-after') ?? undefined;
          retryAfterMs = response.headers.get('retry-after-ms') ?? undefined;
          response.body?.cancel().catch(() => {});
        }
      } catch {
        status = undefined;
      }
      if (signal.aborted) return failed(status);
      const wait = await context.retryDelay({
        attempt,
        status,
        retryAfter,
        retryAfterMs,
        nowUnixMs: BigInt(Date.now()),
        remainingMs: context.remainingMs(),
      });
      if (wait === null || wait === undefined || !(await sleep(wait, signal))) return failed(status);
    }
  }

  /** Every batch of `request`, at most `policy.maxInFlight` in flight. */
  async score(request, context) {
    const bodies = request.batches.map((b) => b.jevBody);
    const answers = new Array(bodies.length);
    let next = 0;
    const lane = async () => {
      while (!context.signal.aborted) {
        const i = next++;
        if (i >= bodies.length) return;
        answers[i] = await this.#batch(bodies[i], context);
      }
    };
    const lanes = Math.min(Math.max(request.policy.maxInFlight, 1), bodies.length);
    await Promise.all(Array.from({ length: lanes }, lane));
    return answers.map((a) => a ?? failed(undefined));
  }

  toJSON() {
    return { name: this.name, route: this.route, url: this.url };
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `JevScorer { route: ${this.route}, url: ${this.url} }`;
  }
}
