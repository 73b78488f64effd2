// toolprune from Node: the WebAssembly component (transpiled by jco into
// ../gen/ by `npm run build`), a turn store, and fail-open calls.
//
// Every rule (gates, split, batches, decisions, markers, counts, log lines)
// is the guest's. This host supplies mechanism only (SPEC §14): the scorer
// (awaited between `prune-job` calls, so the event loop never blocks on it),
// the deadline and cancellation, the turn store, the instance's life.

import { readFile, readdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

import { DEFAULT_MEMORY_BYTES, MAX_MEMORY_BYTES, limitMemory } from './limits.js';
import { stubScorer } from './stub.js';

export { jevScorer, JevConfigError, JEV_ENV_VARS, DEFAULT_JEV_MODEL } from './jev.js';
export { stubScorer } from './stub.js';
export { DEFAULT_MEMORY_BYTES, MAX_MEMORY_BYTES } from './limits.js';

const GEN_DIR = new URL('../gen/', import.meta.url);
const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');
const U32_MAX = 0xffff_ffff;
const KEY = Symbol('toolprune.internal');
const LANGS = new Set(['ja', 'en']);
/** An instance whose memory grew past this is replaced after the call. */
const RECYCLE_BYTES = 64 * 2 ** 20;

/** The guest's offline lexical scorer: `Pruner.load({ scorer: 'offline' })`. */
const OFFLINE = Object.freeze({ name: 'offline', offline: true });

/** `no-basis` → `no_basis`: the SPEC's names, as in the log line. */
const snake = (name) => (name === undefined || name === null ? null : name.replaceAll('-', '_'));

// ----- the transpiled component -----

const sourceCache = new Map();
const bindingsCache = new Map();

/** jco's `instantiate` and the core modules' bytes, read once per `genDir`. */
function loadSource(genDir) {
  const key = String(genDir);
  let pending = sourceCache.get(key);
  if (!pending) {
    pending = (async () => {
      const entry = new URL('toolprune.js', genDir);
      let mod;
      try {
        mod = await import(entry.href);
      } catch (cause) {
        throw new Error(
          `toolprune: cannot load the component bindings at ${entry.pathname}; run \`npm run build\` in hosts/js`,
          { cause },
        );
      }
      const files = (await readdir(genDir)).filter((f) => f.endsWith('.wasm'));
      const bytes = new Map(await Promise.all(files.map(async (f) => [f, await readFile(new URL(f, genDir))])));
      return { instantiate: mod.instantiate, bytes };
    })();
    sourceCache.set(key, pending);
    pending.catch(() => sourceCache.delete(key));
  }
  return pending;
}

/** The core modules compiled with the memory limit, once per (genDir, limit). */
function loadBindings(genDir, maxMemoryBytes) {
  const key = `${genDir} ${maxMemoryBytes}`;
  let pending = bindingsCache.get(key);
  if (!pending) {
    pending = (async () => {
      const source = await loadSource(genDir);
      const modules = new Map(
        await Promise.all(
          [...source.bytes].map(async ([f, bytes]) => [f, await WebAssembly.compile(limitMemory(bytes, maxMemoryBytes))]),
        ),
      );
      return { instantiate: source.instantiate, modules };
    })();
    bindingsCache.set(key, pending);
    pending.catch(() => bindingsCache.delete(key));
  }
  return pending;
}

function failedAll(request) {
  return {
    answers: { tag: 'ok', val: request.batches.map(() => ({ tag: 'failed', val: { tag: 'network' } })) },
    elapsedMs: 0,
  };
}

/** Disposes a `prune-job` handle; never throws (its instance may be dead). */
function dispose(job) {
  try {
    job?.[DISPOSE]?.();
  } catch {
    // The instance trapped: it is discarded anyway.
  }
}

function message(error) {
  return String(error?.message ?? error);
}

// ----- scorer answers: friendly or jco-shaped → exactly what jco lowers -----

function u32(x, fallback) {
  return Number.isFinite(x) && x >= 0 ? Math.min(Math.round(x), U32_MAX) : fallback;
}

function failure(value) {
  if (value === 'network' || value?.tag === 'network') return { tag: 'network' };
  const status = value?.tag === 'http' ? value.val : value?.http;
  if (Number.isInteger(status) && status >= 0 && status <= 0xffff) return { tag: 'http', val: status };
  return { tag: 'network' };
}

const NETWORK = Object.freeze({ tag: 'failed', val: Object.freeze({ tag: 'network' }) });

function batchAnswer(answer) {
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
  return typeof body === 'string' ? { tag: 'jev-response', val: body } : NETWORK;
}

/**
 * A scorer's answer in the shape jco lowers. Accepts the WIT shape
 * (`{answers: {tag:'ok', val:[…]} | {tag:'err', val:'timeout'}, elapsedMs}`)
 * or the friendly one (`{answers: [...]} | {stop: 'timeout'}`, batch answers
 * `{scores}`, `{jevResponse}`, `{failed: {http} | 'network'}`). Anything
 * malformed fails its batch (`network`), never the process.
 */
export function normalizeResponse(response, request, measuredMs = 0) {
  const count = request.batches.length;
  if (!response || typeof response !== 'object') return { ...failedAll(request), elapsedMs: measuredMs };
  const elapsedMs = u32(response.elapsedMs ?? response.elapsed_ms, u32(measuredMs, 0));
  const stop = response.answers?.tag === 'err' ? response.answers.val : response.stop;
  if (stop !== undefined && stop !== null) {
    return { answers: { tag: 'err', val: stop === 'cancelled' ? 'cancelled' : 'timeout' }, elapsedMs };
  }
  const list = response.answers?.tag === 'ok' ? response.answers.val : response.answers;
  if (!Array.isArray(list)) return { ...failedAll(request), elapsedMs };
  return { answers: { tag: 'ok', val: list.slice(0, count).map(batchAnswer) }, elapsedMs };
}

function checkScorer(scorer) {
  if (scorer === 'offline' || scorer === undefined) return OFFLINE;
  if (scorer === 'stub') return stubScorer();
  if (
    scorer &&
    typeof scorer === 'object' &&
    typeof scorer.name === 'string' &&
    (typeof scorer.score === 'function' || typeof scorer.scoreSync === 'function')
  ) {
    return scorer;
  }
  throw new TypeError(
    "toolprune: scorer must be 'offline', 'stub', or an object { name, score(request, { signal }) }",
  );
}

// ----- reports -----

function report(pruned) {
  const c = pruned.counts;
  return {
    outcome: snake(pruned.outcome),
    shape: snake(pruned.shape),
    counts: {
      rawChars: c.rawChars,
      keptChars: c.keptChars,
      paragraphs: c.paragraphs,
      dropped: c.dropped,
      calls: c.calls,
      jevTokens: Number(c.jevTokens),
      ms: c.ms,
    },
    ratio: pruned.ratio ?? null,
    threshold: pruned.threshold,
    logLine: pruned.logLine ?? null,
    record: pruned.record ? storedRecord(pruned.record) : null,
    paragraphs: pruned.paragraphs.map((p) => ({
      index: p.index,
      chars: p.chars,
      score: p.score ?? null,
      fate: p.fate,
    })),
    failures: pruned.failures.map((f) => ({ batch: f.batch, status: f.status ?? null, class: f.class })),
  };
}

function storedRecord(r) {
  return { id: r.id, text: r.text, dropped: Array.from(r.dropped) };
}

function logLabel(s) {
  if (s === '') return '-';
  // \p{Cs}: a lone surrogate (the guest never sees one) is written `_` too.
  return Array.from(s, (ch) => (/[\s=\p{Cc}\p{Cs}]/u.test(ch) ? '_' : ch)).join('');
}

/** How many lone surrogates `s` holds (for failure messages: a count, never text). */
function loneSurrogates(s) {
  return s.match(/\p{Cs}/gu)?.length ?? 0;
}

/**
 * Throws a TypeError when `s` holds lone surrogates, which jco would turn
 * into U+FFFD on the way in (for `paragraphs` and `route`, whose answers
 * would then describe another text). Pruning fails open instead: see `illFormed`.
 */
function wellFormed(what, s) {
  if (!s.isWellFormed()) {
    throw new TypeError(`toolprune: ${what} holds ${loneSurrogates(s)} lone surrogate(s); a WIT string cannot carry them`);
  }
}

/**
 * A WIT `string` holds Unicode scalar values only: jco would replace each
 * lone surrogate by U+FFFD, so an ill-formed text would come back changed.
 * The failure to settle with instead of calling the guest, or null when
 * every string of the prune input crosses the boundary unchanged.
 * `isWellFormed` costs ≈ 75 µs on 100 KB of two-byte text, < 1 µs on ASCII.
 */
function illFormed(r, o, scorer) {
  if (!r.text.isWellFormed()) {
    const n = loneSurrogates(r.text);
    return {
      ok: false,
      failure: { reason: 'invalid_text', message: `the tool result text holds ${n} lone surrogate(s); the guest was not called` },
    };
  }
  const fields = [
    ['the request', o.request],
    ['the tool name', r.tool],
    ['the agent', o.agent],
    // The `scorer-choice` `host(name)` label: jco would send U+FFFD instead.
    ['the scorer name', scorer.offline ? undefined : scorer.name],
    ['the Jev model', scorer.jevModel],
  ];
  for (const [what, s] of fields) {
    if (typeof s === 'string' && !s.isWellFormed()) {
      const n = loneSurrogates(s);
      return {
        ok: false,
        failure: { reason: 'invalid_input', message: `${what} holds ${n} lone surrogate(s); the guest was not called` },
      };
    }
  }
  return null;
}

/**
 * Whether a host-known cheap gate fails (pruning off, the call failed, the
 * tool not prunable): then the guest skips the text without scoring it, and
 * no `tool prune:` line is written (SPEC §12). The 4,000-character gate is
 * the guest's to count.
 */
function gatedOff(r, o) {
  return !o.enabled || !r.ok || !r.prunable;
}

/** A copy of a prune input whose strings are well-formed (lone surrogates → U+FFFD). */
function wellFormedInput(input) {
  const fix = (s) => (typeof s === 'string' ? s.toWellFormed() : s);
  return {
    ...input,
    request: fix(input.request),
    text: fix(input.text),
    scorer: input.scorer.tag === 'host' ? { tag: 'host', val: fix(input.scorer.val) } : input.scorer,
    jevModel: fix(input.jevModel),
    agent: fix(input.agent),
    tool: fix(input.tool),
  };
}

/**
 * Asks `scorer` for `request` without blocking the event loop, within the
 * request's deadline (capped by `deadlineCapMs`); any of `signals` cancels.
 * Always resolves to a response in the shape jco lowers.
 */
async function scoreRequest(scorer, request, signals, deadlineCapMs) {
  signals = signals.filter(Boolean);
  const start = performance.now();
  const elapsed = () => u32(performance.now() - start, 0);
  const cancelled = () => ({ answers: { tag: 'err', val: 'cancelled' }, elapsedMs: elapsed() });
  if (signals.some((s) => s.aborted)) return cancelled();
  const controller = new AbortController();
  const scorerSignal = AbortSignal.any([...signals, controller.signal]);
  let budget = request.policy.deadlineMs;
  if (Number.isFinite(deadlineCapMs)) budget = Math.min(budget, deadlineCapMs);
  let timer;
  let onAbort;
  const stopped = new Promise((resolve) => {
    timer = setTimeout(() => resolve('timeout'), budget);
    onAbort = () => resolve('cancelled');
    for (const s of signals) s.addEventListener('abort', onAbort, { once: true });
  });
  const scored = (async () => {
    if (typeof scorer.score === 'function') {
      return scorer.score(request, { signal: scorerSignal });
    }
    return scorer.scoreSync(request);
  })().then(
    (response) => ({ response }),
    () => ({ response: failedAll(request) }),
  );
  try {
    const first = await Promise.race([scored, stopped]);
    // Cancellation wins over the deadline and over late answers (SPEC §11).
    if (signals.some((s) => s.aborted)) return cancelled();
    if (first === 'timeout') return { answers: { tag: 'err', val: 'timeout' }, elapsedMs: elapsed() };
    if (first === 'cancelled') return cancelled();
    return normalizeResponse(first.response, request, elapsed());
  } finally {
    clearTimeout(timer);
    for (const s of signals) s.removeEventListener('abort', onAbort);
    controller.abort();
  }
}

// ----- the judge router (wit/judge.wit) -----

/**
 * A rules file the guest refused: `errors` holds every problem in line
 * order; the message has one `FILE:LINE:COL: message` line per problem.
 */
export class RulesError extends Error {
  constructor(file, errors) {
    super(renderLoadErrors(file, errors).trimEnd());
    this.name = 'RulesError';
    this.file = file;
    this.errors = errors;
  }
}

/** `FILE:LINE:COLUMN: message`, one line (with its newline) per problem. */
export function renderLoadErrors(file, errors) {
  return errors.map((e) => `${file}:${e.line}:${e.column}: ${e.message}\n`).join('');
}

function loadErrors(error) {
  const payload = error?.payload;
  if (Array.isArray(payload) && payload.every((e) => e && typeof e.line === 'number' && typeof e.message === 'string')) {
    return payload.map((e) => ({ line: e.line, column: e.column, message: e.message }));
  }
  return null;
}

function decision(d) {
  const v = d.verdict;
  return {
    verdict: v.tag,
    to: v.tag === 'routed' ? Array.from(v.val) : null,
    note: v.tag === 'returned' ? (v.val ?? null) : null,
    reason: v.tag === 'failed' ? v.val : null,
    rule: d.rule ?? null,
    answers: d.answers.map((a) => ({
      question: a.question,
      kind: a.kind,
      value: a.value ?? null,
      p: a.p,
      margin: a.margin ?? null,
      mean: a.mean ?? null,
    })),
    jevTokens: Number(d.jevTokens),
    logLine: d.logLine,
  };
}

// ----- the public API -----

/**
 * The toolprune component, compiled once, ready for turns.
 * Make one with `await Pruner.load({ scorer })`.
 */
export class Pruner {
  #bindings;
  #scorer;
  #maxMemoryBytes;

  /** @private use `Pruner.load` */
  constructor(key, bindings, scorer, maxMemoryBytes) {
    if (key !== KEY) throw new TypeError('toolprune: use `await Pruner.load({ scorer })`');
    this.#bindings = bindings;
    this.#scorer = scorer;
    this.#maxMemoryBytes = maxMemoryBytes;
  }

  /**
   * Loads and compiles the component (once per process, `genDir` and limit).
   * `scorer`: `'offline'` (default: the guest's BM25 scorer, nothing leaves
   * the machine), `'stub'`, `jevScorer(...)`, or any
   * `{ name, score(request, { signal }) }`. `maxMemoryBytes`: the guest's
   * linear memory at most (default 256 MiB, at most 2 GiB − 64 KiB);
   * growing past it traps and the call fails open.
   */
  static async load({ scorer = 'offline', maxMemoryBytes = DEFAULT_MEMORY_BYTES, genDir } = {}) {
    const checked = checkScorer(scorer);
    if (!Number.isFinite(maxMemoryBytes) || maxMemoryBytes <= 0) {
      throw new TypeError('toolprune: maxMemoryBytes must be a positive number');
    }
    const limit = Math.min(maxMemoryBytes, MAX_MEMORY_BYTES);
    const dir = genDir === undefined ? GEN_DIR : new URL(genDir, `file://${process.cwd()}/`);
    const bindings = await loadBindings(dir, limit);
    return new Pruner(KEY, bindings, checked, limit);
  }

  /** The guest's memory limit in bytes. */
  get maxMemoryBytes() {
    return this.#maxMemoryBytes;
  }

  /** The default scorer's name (`offline`, `stub`, `jev`, …). */
  get scorerName() {
    return this.#scorer.name;
  }

  /**
   * Starts a user turn. Pruning is **off** unless `enabled: true` (SPEC §2).
   * Options: `threshold` (0.2), `lang` ('en'), `agent` ('agent'), `enabled`
   * (false), `scorer` (the pruner's), `log` (line => void; stderr),
   * `signal` (cancels the turn's scoring), `deadlineCapMs` (tests only).
   */
  beginTurn(request, options = {}) {
    return new Turn(KEY, this, request, options);
  }

  /** The `omitted` tool's name, description and JSON schema (SPEC §10). */
  omittedTool(lang = 'en') {
    checkLang(lang);
    const spec = this.#callOrThrow((api) => api.omittedTool(lang));
    return { name: spec.name, description: spec.description, inputSchema: spec.inputSchema };
  }

  /** The paragraphs of `text` exactly as pruning splits it (SPEC §4, §14). */
  paragraphs(text) {
    if (typeof text !== 'string') throw new TypeError('toolprune: text must be a string');
    wellFormed('text', text);
    return this.#callOrThrow((api) => api.paragraphs(text)).map((p) => ({ ...p }));
  }

  /**
   * The judge router (README "Judge router", `wit/judge.wit`): decides where
   * `message` goes with the rules file's text `rules`. With `answers` (the
   * text of a Jev response) no call is made (the `route` export); otherwise
   * the one Jev call goes to `scorer` (default: the pruner's) through the
   * `judge-job` resource, awaited without blocking. Writes the `judge:` line
   * to `log` (stderr). Throws a `RulesError` for an invalid rules file.
   */
  async route(rules, message, options = {}) {
    if (typeof rules !== 'string') throw new TypeError('toolprune: rules must be a string (the TOML text)');
    if (typeof message !== 'string') throw new TypeError('toolprune: message must be a string');
    const { answers, scorer, signal, jevModel, log = defaultLog, rulesFile = 'rules', deadlineCapMs } = options ?? {};
    if (answers !== undefined && answers !== null && typeof answers !== 'string') {
      throw new TypeError('toolprune: answers must be a string (the text of a Jev response)');
    }
    if (typeof log !== 'function') throw new TypeError('toolprune: log must be a function');
    wellFormed('rules', rules);
    wellFormed('message', message);
    if (typeof answers === 'string') wellFormed('answers', answers);
    if (typeof jevModel === 'string') wellFormed('jevModel', jevModel);
    const settle = (answer) => {
      if (answer.ok) {
        if (answer.value.errors) throw new RulesError(rulesFile, answer.value.errors);
        const d = decision(answer.value.decision);
        log(d.logLine);
        return d;
      }
      log(`judge: rule=- failed reason=${answer.failure.reason}`);
      const error = new Error(`toolprune: the component failed (${answer.failure.reason}): ${answer.failure.message}`);
      error.reason = answer.failure.reason;
      throw error;
    };
    const guarded = (fn) => (api, instance) => {
      try {
        return fn(instance.judge, instance);
      } catch (error) {
        const errors = loadErrors(error);
        if (errors) return { errors };
        throw error;
      }
    };
    if (typeof answers === 'string') {
      const model = typeof jevModel === 'string' ? jevModel : undefined;
      return settle(this.#call(guarded((judge) => ({ decision: judge.route(rules, message, model, answers) }))));
    }
    const s = scorer === undefined ? this.#scorer : checkScorer(scorer);
    if (s.offline) {
      throw new TypeError("toolprune: route needs `answers` or a Jev scorer (jevScorer(...)); the offline scorer cannot judge");
    }
    const model = typeof jevModel === 'string' ? jevModel : typeof s.jevModel === 'string' ? s.jevModel : undefined;
    if (model !== undefined) wellFormed('jevModel', model);
    const load = (judge) => {
      const job = judge.JudgeJob.load(rules, message, model);
      try {
        return { job, request: job.scoringRequest() };
      } catch (error) {
        dispose(job);
        throw error;
      }
    };
    const started = this.#call(guarded(load));
    if (!started.ok || started.value.errors) return settle(started);
    const { job, request } = started.value;
    const response = await scoreRequest(s, request, [signal], deadlineCapMs);
    return settle(
      this.#call(
        guarded((judge, instance) => {
          // The instance was replaced meanwhile (a trap elsewhere): the same
          // rules and message load the same job on the new one.
          const live = instance === started.instance ? job : load(judge).job;
          if (live !== job) dispose(job);
          try {
            return { decision: live.finish(response) };
          } finally {
            dispose(live);
          }
        }),
      ),
    );
  }

  #callOrThrow(fn) {
    const answer = this.#call(fn);
    if (!answer.ok) {
      const error = new Error(`toolprune: the component failed (${answer.failure.reason}): ${answer.failure.message}`);
      error.reason = answer.failure.reason;
      throw error;
    }
    return answer.value;
  }

  // One live instance serves every turn of this Pruner: guest calls are
  // synchronous and never interleave, the guest keeps no state between
  // calls (the turn store is the host's), and jco's instantiation costs
  // ~20 ms of JS set-up. It is replaced after a trap, and after a call that
  // left its memory over RECYCLE_BYTES (linear memory never shrinks).
  #instance = null;
  #syncScorer = null;

  /** The `scorer` import: only `onToolResultSync` ever reaches it. */
  #importScore = (request) => {
    const scorer = this.#syncScorer;
    if (!scorer) return failedAll(request);
    const start = performance.now();
    try {
      return normalizeResponse(scorer.scoreSync(request), request, performance.now() - start);
    } catch {
      return { ...failedAll(request), elapsedMs: u32(performance.now() - start, 0) };
    }
  };

  #instantiate() {
    const bindings = this.#bindings;
    const instance = { api: null, memory: null };
    const root = bindings.instantiate(
      (path) => {
        const m = bindings.modules.get(path);
        if (!m) throw new Error(`toolprune: core module ${path} is missing from the build`);
        return m;
      },
      {
        // jco looks the imports up by their unversioned names.
        'toolprune:pruner/scorer': { score: this.#importScore },
        'toolprune:pruner/types': {},
      },
      (module, imports) => {
        const core = new WebAssembly.Instance(module, imports);
        if (core.exports.memory instanceof WebAssembly.Memory) instance.memory = core.exports.memory;
        return core;
      },
    );
    instance.api = root.pruner;
    instance.judge = root.judge;
    return instance;
  }

  /**
   * One export call on the live instance (made if needed). Any throw
   * discards the instance: `{ok: false, failure}`; else `{ok, value, instance}`.
   */
  #call(fn, syncScorer = null) {
    let instance = this.#instance;
    if (!instance) {
      try {
        instance = this.#instantiate();
      } catch (error) {
        return { ok: false, failure: { reason: 'instantiate', message: message(error) } };
      }
      this.#instance = instance;
    }
    this.#syncScorer = syncScorer;
    try {
      return { ok: true, value: fn(instance.api, instance), instance };
    } catch (error) {
      if (this.#instance === instance) this.#instance = null;
      return { ok: false, failure: { reason: 'guest_trap', message: message(error) } };
    } finally {
      this.#syncScorer = null;
      if (this.#instance === instance && (instance.memory?.buffer.byteLength ?? 0) > RECYCLE_BYTES) {
        this.#instance = null;
      }
    }
  }

  /** @private internals shared with Turn. */
  get [KEY]() {
    return {
      scorer: this.#scorer,
      call: (fn, syncScorer) => this.#call(fn, syncScorer),
    };
  }
}

function checkLang(lang) {
  if (!LANGS.has(lang)) throw new TypeError(`toolprune: lang must be 'ja' or 'en', not ${JSON.stringify(lang)}`);
}

function defaultLog(line) {
  process.stderr.write(`${line}\n`);
}

/**
 * One user turn: its request and settings and the turn store (memory only,
 * gone with the turn). Calls run on the pruner's live instance; after a trap
 * the next call gets a fresh one, and the turn store is untouched.
 */
export class Turn {
  #pruner;
  #scorer;
  #options;
  #stored = [];

  /** @private use `pruner.beginTurn(request, options)` */
  constructor(key, pruner, request, options) {
    if (key !== KEY) throw new TypeError('toolprune: use `pruner.beginTurn(request, options)`');
    if (typeof request !== 'string') throw new TypeError('toolprune: the request must be a string');
    const {
      threshold = 0.2,
      lang = 'en',
      agent = 'agent',
      enabled = false,
      scorer,
      log = defaultLog,
      signal,
      deadlineCapMs,
    } = options ?? {};
    checkLang(lang);
    if (typeof threshold !== 'number') throw new TypeError('toolprune: threshold must be a number');
    if (typeof agent !== 'string') throw new TypeError('toolprune: agent must be a string');
    if (typeof log !== 'function') throw new TypeError('toolprune: log must be a function');
    this.#pruner = pruner;
    this.#scorer = scorer === undefined ? pruner[KEY].scorer : checkScorer(scorer);
    this.#options = Object.freeze({
      request,
      threshold,
      lang,
      agent,
      enabled: enabled === true,
      log,
      signal,
      deadlineCapMs,
    });
  }

  /** The turn's settings. */
  get options() {
    return this.#options;
  }

  /** The scorer's name (`offline`, `jev`, …). */
  get scorerName() {
    return this.#scorer.name;
  }

  /** Every `ok` result pruned in this turn (`P1`, `P2`, …), as copies. */
  get stored() {
    return this.#stored.map((r) => ({ id: r.id, text: r.text, dropped: Array.from(r.dropped) }));
  }

  #input(result, sequence) {
    const o = this.#options;
    const s = this.#scorer;
    return {
      request: o.request,
      text: result.text,
      enabled: o.enabled,
      succeeded: result.ok,
      prunable: result.prunable,
      threshold: o.threshold,
      lang: o.lang,
      sequence: Math.min(sequence, U32_MAX),
      scorer: s.offline ? { tag: 'offline' } : { tag: 'host', val: s.name },
      jevModel: typeof s.jevModel === 'string' ? s.jevModel : undefined,
      agent: o.agent,
      tool: result.tool,
    };
  }

  #call(fn, syncScorer) {
    return this.#pruner[KEY].call(fn, syncScorer);
  }

  /** Stores the record, writes the log line, or fails open with the raw text. */
  #settle(result, answer) {
    const log = this.#options.log;
    if (answer.ok) {
      const pruned = answer.value;
      const r = report(pruned);
      if (pruned.record) this.#stored.push(storedRecord(pruned.record));
      if (r.logLine !== null) log(r.logLine);
      return { body: pruned.body, raw: result.text, outcome: r.outcome, report: r, logLine: r.logLine, failure: null };
    }
    const line = `tool prune: agent=${logLabel(this.#options.agent)} name=${logLabel(result.tool)} outcome=failed reason=${answer.failure.reason}`;
    log(line);
    return { body: result.text, raw: result.text, outcome: 'failed', report: null, logLine: line, failure: answer.failure };
  }

  /**
   * A prune input that cannot cross the WIT boundary unchanged. When a
   * host-known cheap gate fails, the answer is the guest's own, as for a
   * well-formed text: the guest skips a copy whose lone surrogates are
   * U+FFFD (it cannot call the scorer then: no scorer is behind the import
   * anyway), and the original string is put back as body and raw; no line.
   * Otherwise (or if the guest did anything but pass the copy through) the
   * call fails open: the same string, `invalid_text` / `invalid_input`, and
   * the host's `tool prune:` line.
   */
  #illFormed(r, invalid) {
    if (!gatedOff(r, this.#options)) return this.#settle(r, invalid);
    const input = wellFormedInput(this.#input(r, this.#stored.length + 1));
    const answer = this.#call((api) => api.prune(input), null);
    if (!answer.ok) return this.#settle(r, answer);
    const pruned = answer.value;
    if (pruned.record || (pruned.logLine ?? null) !== null || pruned.body !== input.text) {
      return this.#settle(r, invalid);
    }
    const rep = report(pruned);
    return { body: r.text, raw: r.text, outcome: rep.outcome, report: rep, logLine: null, failure: null };
  }

  /**
   * Prunes one tool result without blocking the event loop: the guest
   * prepares the scoring request (`prune-job`), the scorer is awaited, the
   * guest finishes. Never throws for a guest failure: the raw text comes
   * back (outcome `failed`). `signal` cancels this call's scoring.
   */
  async onToolResult(result, { signal } = {}) {
    const r = toolResult(result);
    const invalid = illFormed(r, this.#options, this.#scorer);
    if (invalid) return this.#illFormed(r, invalid);
    const input = this.#input(r, this.#stored.length + 1);
    const started = this.#call((api) => {
      const job = new api.PruneJob(input);
      try {
        return { job, request: job.scoringRequest() };
      } catch (error) {
        dispose(job);
        throw error;
      }
    });
    if (!started.ok) return this.#settle(r, started);
    const { job, request } = started.value;
    const response = request === undefined ? undefined : await this.#score(request, signal);
    // Results pruned meanwhile (parallel tool calls) took the next id, or the
    // instance was replaced: the same input with the new sequence gives the
    // same batches, so the answers still fit a job made now.
    const sequence = this.#stored.length + 1;
    const answer = this.#call((api, instance) => {
      if (instance === started.instance && sequence === input.sequence) {
        try {
          return job.finish(response);
        } finally {
          dispose(job);
        }
      }
      dispose(job);
      const fresh = new api.PruneJob({ ...input, sequence });
      try {
        return fresh.finish(response);
      } finally {
        dispose(fresh);
      }
    });
    if (!answer.ok) dispose(job);
    return this.#settle(r, answer);
  }

  /**
   * The same pruning on the blocking `prune` export: for the offline scorer,
   * or a scorer with `scoreSync(request)`. Blocks while that scorer runs.
   */
  onToolResultSync(result) {
    const r = toolResult(result);
    const scorer = this.#scorer;
    if (!scorer.offline && typeof scorer.scoreSync !== 'function') {
      throw new TypeError(`toolprune: scorer ${scorer.name} has no scoreSync; use await turn.onToolResult(…)`);
    }
    const invalid = illFormed(r, this.#options, scorer);
    if (invalid) return this.#illFormed(r, invalid);
    const input = this.#input(r, this.#stored.length + 1);
    return this.#settle(r, this.#call((api) => api.prune(input), scorer.offline ? null : scorer));
  }

  #score(request, callSignal) {
    return scoreRequest(this.#scorer, request, [this.#options.signal, callSignal], this.#options.deadlineCapMs);
  }

  /**
   * The `omitted` tool (SPEC §10): `args` is the model's JSON text (or an
   * object, serialized). Writes the `tool omitted:` line. Throws when the
   * guest trapped (tell the model the tool failed).
   */
  omitted(args) {
    let text = typeof args === 'string' ? args : JSON.stringify(args ?? null);
    // Lone surrogates: not JSON text (and jco would turn them into U+FFFD).
    // An empty text gets the guest's own `invalid` answer (argument
    // `arguments`), in the turn's language, with its log line.
    if (typeof text === 'string' && !text.isWellFormed()) text = '';
    const { lang, agent, log } = this.#options;
    const answer = this.#call((api) => api.omitted(text, lang, agent, this.#stored));
    if (!answer.ok) {
      log(`tool omitted: agent=${logLabel(agent)} outcome=failed reason=${answer.failure.reason}`);
      const error = new Error(`toolprune: omitted failed (${answer.failure.reason}): ${answer.failure.message}`);
      error.reason = answer.failure.reason;
      throw error;
    }
    const { outcome, text: body, logLine } = answer.value;
    log(logLine);
    return { outcome: snake(outcome), text: body, logLine };
  }

  /** The `omitted` tool's spec in the turn's language. */
  omittedTool() {
    return this.#pruner.omittedTool(this.#options.lang);
  }
}

function toolResult(result) {
  if (!result || typeof result !== 'object') throw new TypeError('toolprune: a tool result is an object { tool, ok, prunable, text }');
  const { tool = 'tool', ok = true, prunable = false, text } = result;
  if (typeof text !== 'string') throw new TypeError('toolprune: the tool result text must be a string');
  if (typeof tool !== 'string') throw new TypeError('toolprune: tool must be a string');
  return { tool, ok: ok === true, prunable: prunable === true, text };
}
