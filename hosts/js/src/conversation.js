// One agent conversation (the id counter and the bounded store of pruned
// results, SPEC §10) and its user turns; the fail-open rules (SPEC §11);
// writing the log lines (SPEC §12). Host design "Rules every host
// implements identically".
//
// Two forms of the same exchange (SPEC §14), the same bytes:
// - the sync API (`onToolResultSync`) makes one call, `pruner.prune(input,
//   count + 1)`; the guest calls the `scorer` import at most once, and the
//   worker hands that request to this thread, which scores it with the
//   scorer's `scoreSync` (src/engine.js, src/worker.js);
// - the async API (`await onToolResult`) keeps jobs: `new(input)` → the
//   job's `scoring-request` → scored here without blocking → `finish(
//   response, count + 1)`.
// Guest calls are posted one at a time (src/engine.js) and a call's
// arguments are made when it is posted, so `count + 1` is read after every
// earlier result was settled: ids in the order results finish, unique, no
// gaps. A result whose id moved while it was scored (a shared store
// another process wrote meanwhile) is finished again by a fresh job with
// the response already scored: the scorer is never asked twice. The host
// never parses the text, counts characters or decides a gate.

import { checkScorer, scoreAsync, scoreSync } from './scoring.js';
import * as wit from './wit.js';

/** The fixed line when even the guest's `settings.failure-line` fails (host design rule 4). */
export const INSTANTIATE_LINE = 'tool prune: outcome=failed reason=instantiate';
/** What the model reads when even `omitted.unavailable` fails (as the Rust host). */
const UNAVAILABLE = 'omitted is unavailable right now; try again';

/** WIT enum `lang` and `omitted.dialect`: checked here so that a typo is a TypeError, not a guest failure. */
const LANGS = new Set(['ja', 'en']);
const DIALECTS = new Set(['plain', 'openai', 'anthropic', 'mcp']);

export function checkLang(lang) {
  if (!LANGS.has(lang)) throw new TypeError(`toolprune: lang must be 'ja' or 'en', not ${JSON.stringify(lang)}`);
  return lang;
}

export function checkDialect(dialect) {
  if (!DIALECTS.has(dialect)) {
    throw new TypeError(`toolprune: dialect must be one of ${[...DIALECTS].join(', ')}, not ${JSON.stringify(dialect)}`);
  }
  return dialect;
}

const NOOP = () => {};
let stderrGuarded = false;

/**
 * The default log sink: each line to stderr. A stderr that is gone (a
 * closed pipe: EPIPE, reported by Node asynchronously as an `error` event
 * that would crash the process) drops the line: a log never stops the
 * agent. The guard is set once, when this sink is first used.
 */
export function defaultLog(line) {
  const stderr = process.stderr;
  if (!stderrGuarded) {
    stderrGuarded = true;
    stderr.on('error', NOOP);
  }
  if (stderr.destroyed || !stderr.writable) return;
  stderr.write(`${line}\n`);
}

/**
 * A log sink whose failures never reach the caller: `log(line)` with
 * anything it throws dropped (fail-open, SPEC §11: the result is
 * returned as computed; only its line is lost).
 */
export function safeLog(log) {
  return (line) => {
    try {
      log(line);
    } catch {
      // dropped: a log sink's failure never reaches a result
    }
  };
}

/** How many lone surrogates `s` holds (for messages: a count, never text). */
function loneSurrogates(s) {
  return s.match(/\p{Cs}/gu)?.length ?? 0;
}

/** Throws a TypeError when `s` cannot cross a WIT string unchanged (for calls whose answer would describe another text). */
export function wellFormed(what, s) {
  if (!s.isWellFormed()) {
    throw new TypeError(`toolprune: ${what} holds ${loneSurrogates(s)} lone surrogate(s); a WIT string cannot carry them`);
  }
}

/**
 * A WIT `string` holds Unicode scalar values only: jco would turn each lone
 * surrogate into U+FFFD, so the body would no longer be the text the tool
 * returned. The host failure for such an input, or null.
 */
function illFormed(input, scorerName) {
  if (!input.text.isWellFormed()) {
    return { reason: 'invalid_text', limit: null, message: `the tool result text holds ${loneSurrogates(input.text)} lone surrogate(s); it was not pruned` };
  }
  for (const [what, s] of [
    ['the request', input.request],
    ['the tool name', input.tool],
    ['the agent', input.agent],
    ['the scorer name', scorerName],
    ['the Jev model', input.jevModel],
  ]) {
    if (typeof s === 'string' && !s.isWellFormed()) {
      return { reason: 'invalid_input', limit: null, message: `${what} holds ${loneSurrogates(s)} lone surrogate(s); it was not pruned` };
    }
  }
  return null;
}

/** The same input with every string well-formed (lone surrogates → U+FFFD, as jco would send them). */
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

/** How deep `arguments` may nest (objects and arrays), in every host: deeper gives no arguments. */
export const ARGUMENTS_MAX_DEPTH = 128;

/** Thrown inside `jsonText` for a value that is not JSON. */
const NOT_JSON = Symbol('toolprune.notJson');

/** `value` (a JSON value: see `argumentsText`) as compact JSON text; throws NOT_JSON for anything else. */
function jsonText(value, depth) {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw NOT_JSON;
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw NOT_JSON;
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      throw NOT_JSON;
  }
  if (value === null) return 'null';
  if (depth > ARGUMENTS_MAX_DEPTH) throw NOT_JSON;
  if (Array.isArray(value)) {
    const items = [];
    for (let i = 0; i < value.length; i += 1) items.push(jsonText(value[i], depth + 1));
    return `[${items.join(',')}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw NOT_JSON;
  const members = [];
  for (const key of Object.keys(value)) {
    const member = value[key];
    if (member === undefined) continue; // left out, as JSON.stringify does
    if (!key.isWellFormed()) throw NOT_JSON;
    members.push(`${JSON.stringify(key)}:${jsonText(member, depth + 1)}`);
  }
  return `{${members.join(',')}}`;
}

/**
 * A tool call's arguments as the text the repeat gate keys on (SPEC §2;
 * the guest canonicalizes JSON), or undefined: no arguments, no repeat
 * detected. The same rule in every host: a string is the JSON text the
 * door received, taken as it is; a plain object (or one without a
 * prototype) or an array is encoded when every value in it is a JSON value
 * — a string, a finite number, a boolean, null, a plain object or an array,
 * at most ARGUMENTS_MAX_DEPTH levels deep (an undefined member is left
 * out). Anything else — a Map, a Set, a Date, another class, a scalar,
 * NaN, ±Infinity, a BigInt, a function, a cycle, or a lone surrogate
 * anywhere (a WIT string cannot carry it) — gives no arguments: never a
 * TypeError, never a failed result (the arguments are only hashed).
 */
export function argumentsText(args) {
  if (typeof args === 'string') return args.isWellFormed() ? args : undefined;
  if (args === null || typeof args !== 'object') return undefined;
  try {
    return jsonText(args, 1);
  } catch {
    // NOT_JSON, or whatever a getter or a proxy threw: no arguments.
    return undefined;
  }
}

function toolResult(result) {
  if (!result || typeof result !== 'object') throw new TypeError('toolprune: a tool result is an object { tool, text, ok, prunable }');
  const { tool = 'tool', ok = true, prunable = false, report = false, scorer, text } = result;
  if (typeof text !== 'string') throw new TypeError('toolprune: the tool result text must be a string');
  if (typeof tool !== 'string') throw new TypeError('toolprune: tool must be a string');
  return { tool, text, ok: ok === true, prunable: prunable === true, report: report === true, scorer, arguments: argumentsText(result.arguments) };
}

/** Where a result keeps the guest's `pruned` answer as jco gave it (for `report.prune-json`), not enumerable by name. */
export const GUEST = Symbol('toolprune.guest');

/** A result with the guest's answer. `body` is the input string itself when the guest kept it. */
function fromGuest(text, pruned) {
  return {
    body: pruned.body ?? text,
    raw: text,
    outcome: wit.snake(pruned.outcome),
    gate: wit.snake(pruned.gate),
    id: pruned.record?.id ?? null,
    shape: wit.snake(pruned.shape),
    counts: wit.counts(pruned.counts),
    ratio: pruned.ratio ?? null,
    threshold: pruned.threshold,
    logLine: pruned.logLine ?? null,
    servedModel: pruned.servedModel ?? null,
    paragraphs: pruned.paragraphs.map(wit.paragraphReport),
    failures: pruned.failures.map(wit.batchFailure),
    failure: null,
    scorerCalls: 0,
    // For `report.prune-json`, without the stored record's dropped text (it would double the result's weight).
    [GUEST]: pruned.record ? { ...pruned, record: { ...pruned.record, data: '' } } : pruned,
  };
}

/** A result the guest gave no answer for: the input itself, outcome `failed`. */
function failedOpen(text, failure, logLine) {
  return {
    body: text,
    raw: text,
    outcome: 'failed',
    gate: null,
    id: null,
    shape: null,
    counts: null,
    ratio: null,
    threshold: null,
    logLine,
    servedModel: null,
    paragraphs: [],
    failures: [],
    failure,
    scorerCalls: 0,
    [GUEST]: null,
  };
}

function hostFailure(trap) {
  return { reason: 'guest_trap', limit: trap.limit ?? null, message: trap.message };
}

/** A result store that could not give the next id or keep or read a record (WIT `host-failure.store`). */
function storeFailure(error) {
  return { reason: 'store', limit: null, message: `the result store failed: ${error?.message ?? error}` };
}

/** An answer's failure: the store's (set by `#settled`) or the guest's trap. */
function answerFailure(answer) {
  return answer.storeFailure ?? hostFailure(answer.trap);
}

/** Checks a `resultStore` option: an object with `count`, `push` and `find` functions. */
export function checkResultStore(store) {
  if (store === undefined || store === null) return null;
  if (typeof store !== 'object' || !['count', 'push', 'find'].every((k) => typeof store[k] === 'function')) {
    throw new TypeError('toolprune: resultStore must be an object { count(), push(record), find(id) }');
  }
  return store;
}

/**
 * Runs a flow (a generator yielding guest calls and scoring requests) with
 * blocking calls. Effects: `{call, args, onAnswer, onScore}` → the answer
 * (`onScore` answers the `scorer` import of an import op);
 * `{score, request}` → a scoring response.
 */
function runSync(flow, engine, scoring) {
  let step = flow.next();
  while (!step.done) {
    const effect = step.value;
    const value = effect.call ? engine.callSync(effect.call, effect.args, effect.onAnswer, effect.onScore) : scoring(effect);
    step = flow.next(value);
  }
  return step.value;
}

/** The same, awaiting each effect (the event loop runs meanwhile). */
async function runAsync(flow, engine, scoring) {
  let step = flow.next();
  while (!step.done) {
    const effect = step.value;
    const value = effect.call ? await engine.call(effect.call, effect.args, effect.onAnswer) : await scoring(effect);
    step = flow.next(value);
  }
  return step.value;
}

/**
 * One agent conversation: its options, the id counter and the bounded
 * store of pruned results (ids `P1`, `P2`, … unique across all its turns).
 * Make one with `pruner.conversation(options)`.
 */
export class Conversation {
  #engine;
  #options;
  #scorer;
  /** Results stored so far: never decremented, never reset per turn. */
  #count = 0;
  /** Stored results, oldest first, and the characters they weigh together. */
  #store = [];
  #storeChars = 0n;
  /** The `resultStore` option (counter and records kept there), or null: the in-memory store above. */
  #results;
  /** The counter as last read from `#results` (the fallback when a read fails; `push` then refuses the record). */
  #lastCount = 0;

  /** @private use `pruner.conversation(options)` */
  constructor(engine, options, scorer, results = null) {
    this.#engine = engine;
    this.#options = options;
    this.#scorer = scorer;
    this.#results = results;
  }

  /** Writes a line to the conversation's log sink; what the sink throws is dropped. */
  #log(line) {
    safeLog(this.#options.log)(line);
  }

  /** The options in effect (threshold as the guest checked it, store limits). */
  get options() {
    return this.#options;
  }

  /** The scorer's name (`offline`, `stub`, `jev`, …). */
  get scorerName() {
    return this.#scorer.name;
  }

  /** Results stored so far (the last id is `P{count}`). */
  get count() {
    return this.#results ? this.#results.count() : this.#count;
  }

  /** The ids the store holds, oldest first (the in-memory store's; empty with a `resultStore`). */
  get storedIds() {
    return this.#store.map((r) => r.id);
  }

  /** The number the next stored result gets (`P{n}`), read when the guest call is posted. */
  #nextNumber() {
    if (!this.#results) return this.#count + 1;
    try {
      this.#lastCount = this.#results.count();
    } catch {
      // `push` refuses a record whose number is not the counter + 1: the result fails open.
    }
    return this.#lastCount + 1;
  }

  /**
   * Starts a user turn: `request` is the user's message (the guest takes
   * the basis). `signal` cancels the turn's scoring (outcome `cancelled`).
   */
  turn(request, { signal } = {}) {
    if (typeof request !== 'string') throw new TypeError('toolprune: the request must be a string');
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('toolprune: signal must be an AbortSignal');
    return new Turn(this, request, signal);
  }

  /**
   * The answer to a model's `omitted` tool call (SPEC §10): `args` is its
   * JSON text (or an object, serialized). `text` goes back to the model
   * whatever the outcome; the `tool omitted:` line is written to the log.
   * Never throws for a guest failure: outcome `failed`, the guest's
   * "try again" text.
   */
  omitted(args) {
    let text = typeof args === 'string' ? args : JSON.stringify(args ?? null);
    // Lone surrogates: not JSON text (and jco would send U+FFFD). An empty
    // text gets the guest's own `invalid` answer.
    if (typeof text !== 'string' || !text.isWellFormed()) text = '';
    const { lang, agent } = this.#options;
    const engine = this.#engine;
    let failure = null;
    let answer;
    const id = engine.callSync('requestedId', { args: text });
    if (id.ok) {
      let found;
      try {
        found = id.value === undefined ? undefined : this.#find(id.value);
      } catch (error) {
        failure = storeFailure(error);
      }
      if (!failure) {
        const answered = engine.callSync('answer', { args: text, lang, agent, found });
        if (answered.ok) answer = { outcome: wit.snake(answered.value.outcome), text: answered.value.text, logLine: answered.value.logLine, failure: null };
        else failure = hostFailure(answered.trap);
      }
    } else {
      failure = hostFailure(id.trap);
    }
    if (!answer) {
      const unavailable = engine.callSync('unavailable', { lang });
      const line = engine.callSync('failureLine', { operation: 'omitted', agent, tool: '', failure: wit.kebab(failure.reason), limit: wit.kebab(failure.limit) });
      answer = {
        outcome: 'failed',
        text: unavailable.ok ? unavailable.value : UNAVAILABLE,
        logLine: line.ok ? line.value : INSTANTIATE_LINE,
        failure,
      };
    }
    this.#log(answer.logLine);
    return answer;
  }

  /**
   * The `omitted` tool as the model sees it (SPEC §10), in an SDK's shape:
   * `plain` (`{name, description, parameters}`), `openai`, `anthropic`,
   * `mcp`; the guest's JSON, parsed. `lang` defaults to the conversation's.
   */
  omittedTool(dialect = 'plain', lang = this.#options.lang) {
    checkDialect(dialect);
    checkLang(lang);
    const answer = this.#engine.callSync('tool', { lang, dialect });
    if (!answer.ok) throw new Error(`toolprune: the component failed (guest_trap): ${answer.trap.message}`);
    return JSON.parse(answer.value);
  }

  /** The held record with this id (`P3`), or undefined. Throws when a `resultStore` cannot be read. */
  #find(id) {
    if (this.#results) return this.#results.find(id) ?? undefined;
    return this.#store.find((r) => r.id === id);
  }

  /** Stores a result the guest stored as `P{count + 1}`; evicts the oldest past the bounds. Throws when a `resultStore` refuses it. */
  #keep(pruned) {
    const record = pruned.record;
    if (!record) return;
    if (this.#results) {
      this.#results.push(record);
      return;
    }
    this.#count += 1;
    this.#store.push(record);
    this.#storeChars += BigInt(record.chars);
    const { maxRecords, maxChars } = this.#options.store;
    while (this.#store.length > 0 && (this.#store.length > maxRecords || this.#storeChars > BigInt(maxChars))) {
      this.#storeChars -= BigInt(this.#store.shift().chars);
    }
  }

  /**
   * The `call` keys (wit `stored-result.call`) of the results the store
   * holds, for the repeat gate (SPEC §2). A `resultStore` gives them with
   * `calls()` (optional: without it no repeat is detected). Throws when a
   * `resultStore` cannot be read.
   */
  #prunedCalls() {
    if (this.#results) return typeof this.#results.calls === 'function' ? [...this.#results.calls()].filter((c) => typeof c === 'string') : [];
    return this.#store.map((r) => r.call).filter((c) => typeof c === 'string');
  }

  #input(request, r, scorer) {
    const o = this.#options;
    return {
      request,
      text: r.text,
      enabled: o.enabled,
      succeeded: r.ok,
      prunable: r.prunable,
      threshold: o.threshold,
      lang: o.lang,
      scorer: scorer.kind === 'host' ? { tag: 'host', val: scorer.name } : { tag: scorer.kind },
      jevModel: o.jevModel ?? (typeof scorer.scorer?.jevModel === 'string' ? scorer.scorer.jevModel : undefined),
      agent: o.agent,
      tool: r.tool,
      report: r.report,
      arguments: r.arguments,
      prunedCalls: [],
      workBudget: o.workBudget === undefined ? undefined : BigInt(o.workBudget),
    };
  }

  /**
   * Settles a guest answer that may carry a result to store (as
   * `P{idNumber}`): stored at once (in order), unless the store's count
   * moved since the call was posted (`{moved: true}`: the result is
   * finished again with the next number) or the store refused it
   * (`storeFailure`).
   */
  #settled(answer, idNumber) {
    if (!answer.ok || !answer.value.pruned?.record) return answer;
    try {
      if (this.#nextNumber() !== idNumber) return { ok: true, value: { moved: true } };
      this.#keep(answer.value.pruned);
    } catch (error) {
      // The id must not be handed out: the result fails open (`reason=store`).
      return { ok: false, storeFailure: storeFailure(error) };
    }
    return answer;
  }

  /**
   * A guest call that ends one result (`pruneCall`, `prune`, `finish`),
   * its id number read when it is posted and its record stored when it is
   * settled.
   */
  #ending(call, args, onScore) {
    const effect = { call, onScore };
    effect.args = () => {
      effect.posted = args();
      effect.posted.idNumber = this.#nextNumber();
      return effect.posted;
    };
    // (Never posted: the pruner was closed; the answer is a failure.)
    effect.onAnswer = (answer) => (effect.posted ? this.#settled(answer, effect.posted.idNumber) : answer);
    return effect;
  }

  /**
   * After an answer that ends a result: while its id moved (or its job's
   * instance was lost), the same input makes the same job again, finished
   * with the response already scored (`response`; none when nothing was
   * scored) and the next number. The scorer is never asked again. Returns
   * the final answer.
   */
  *#again(answer, input, response) {
    for (let tries = 0; answer.ok && (answer.value.moved || answer.value.missing); tries += 1) {
      if (tries === 8) return { ok: false, storeFailure: storeFailure(new Error('the next id kept moving')) };
      answer = yield this.#ending('finishFresh', () => ({ input, response }));
    }
    return answer;
  }

  /**
   * The whole of one result, as a flow of effects (run by `runSync` /
   * `runAsync`): the guest's calls and, in between, the scoring. `form`:
   * `import` (the sync API: one `pruner.prune` call, its `scorer` import
   * answered by `scoreSync` on this thread) or `jobs` (the async API).
   */
  *#flow(request, result, signals, form) {
    const r = toolResult(result);
    const scorer = r.scorer === undefined ? this.#scorer : checkScorer(r.scorer);
    const input = this.#input(request, r, scorer);
    const o = this.#options;

    const invalid = illFormed(input, scorer.kind === 'host' ? scorer.name : undefined);
    if (invalid) {
      // The guest decides on a well-formed copy whether the result is
      // skipped (a gate): then its answer stands, with the input itself as
      // body. Otherwise the input is not pruned: the host failure.
      let calls = [];
      try {
        calls = this.#prunedCalls();
      } catch {
        // no repeat detected
      }
      const probe = yield { call: 'prune', args: () => ({ input: { ...wellFormedInput(input), prunedCalls: calls }, idNumber: this.#nextNumber(), probe: true }) };
      if (probe.ok && probe.value.pruned?.outcome === 'skipped') return this.#done(fromGuest(r.text, probe.value.pruned), 0);
      return yield* this.#failOpen(r, invalid);
    }

    try {
      // The store must give the next id (and its call keys) before anything is pruned (else: no id, the text unchanged).
      if (this.#results) this.#lastCount = this.#results.count();
      input.prunedCalls = this.#prunedCalls();
    } catch (error) {
      return yield* this.#failOpen(r, storeFailure(error));
    }

    let scorerCalls = 0;
    let response;
    let answer;
    if (form === 'import') {
      const onScore = (scoringRequest) => {
        if (scorer.kind !== 'host') throw new Error(`toolprune: the ${scorer.name} scorer scores in the guest; the import was not due`);
        scorerCalls += 1;
        response = this.#scoreSync(scorer, scoringRequest, signals);
        return response;
      };
      answer = yield this.#ending('pruneCall', () => ({ input }), onScore);
    } else {
      answer = yield this.#ending('prune', () => ({ input }));
      if (answer.ok && answer.value.job !== undefined) {
        const { job, request: scoringRequest } = answer.value;
        if (scorer.kind === 'host') {
          scorerCalls += 1;
          response = yield { score: scoringRequest, scorer: scorer.scorer, signals, deadlineCapMs: o.deadlineCapMs };
        }
        // (The guest's own scorers never make a request; were there one, `none`: `failed`.)
        answer = yield this.#ending('finish', () => ({ job, response }));
      }
    }
    answer = yield* this.#again(answer, input, response);
    if (!answer.ok) return yield* this.#failOpen(r, answerFailure(answer), scorerCalls);
    return this.#done(fromGuest(r.text, answer.value.pruned), scorerCalls);
  }

  /** A guest answer's result: its line written, `scorerCalls` noted. */
  #done(out, scorerCalls) {
    out.scorerCalls = scorerCalls;
    if (out.logLine !== null) this.#log(out.logLine);
    return out;
  }

  /** The scoring of the `scorer` import on this thread: `scoreSync`, retries asked of the guest (a nested call). */
  #scoreSync(scorer, request, signals) {
    const engine = this.#engine;
    return scoreSync(scorer.scorer, request, {
      signals,
      deadlineCapMs: this.#options.deadlineCapMs,
      retryDelay: (facts) => {
        const answer = engine.callSync('retryDelay', { facts });
        return answer.ok ? (answer.value ?? null) : null;
      },
    });
  }

  /** The input back, outcome `failed`, and the guest's failure line (from a fresh instance). */
  *#failOpen(r, failure, scorerCalls = 0) {
    const { agent } = this.#options;
    const line = yield {
      call: 'failureLine',
      args: { operation: 'prune', agent, tool: r.tool, failure: wit.kebab(failure.reason), limit: wit.kebab(failure.limit) },
    };
    const logLine = line.ok ? line.value : INSTANTIATE_LINE;
    this.#log(logLine);
    const out = failedOpen(r.text, failure, logLine);
    out.scorerCalls = scorerCalls;
    return out;
  }

  /** @private used by Turn: the jobs form. */
  pruneAsync(request, result, signals) {
    const engine = this.#engine;
    return runAsync(this.#flow(request, result, signals, 'jobs'), engine, (effect) =>
      scoreAsync(effect.scorer, effect.score, {
        signals: effect.signals,
        deadlineCapMs: effect.deadlineCapMs,
        retryDelay: async (facts) => {
          const answer = await engine.call('retryDelay', { facts });
          return answer.ok ? (answer.value ?? null) : null;
        },
      }),
    );
  }

  /** @private used by Turn: the import form. */
  pruneSync(request, result, signals) {
    return runSync(this.#flow(request, result, signals, 'import'), this.#engine, () => {
      throw new Error('toolprune: the import form scores inside the guest call');
    });
  }

  /** @private whether the result's scorer can run on the blocking path. */
  canScoreSync(result) {
    const scorer = result?.scorer === undefined ? this.#scorer : checkScorer(result.scorer);
    return scorer.kind !== 'host' || typeof scorer.scorer.scoreSync === 'function';
  }
}

/**
 * One user turn of a conversation: its request and cancellation. Results
 * of one turn may be pruned concurrently.
 */
export class Turn {
  #conversation;
  #request;
  #signal;

  /** @private use `conversation.turn(request, { signal })` */
  constructor(conversation, request, signal) {
    this.#conversation = conversation;
    this.#request = request;
    this.#signal = signal;
  }

  /** The user's request (raw). */
  get request() {
    return this.#request;
  }

  /** The conversation this turn belongs to. */
  get conversation() {
    return this.#conversation;
  }

  /**
   * Prunes one tool result without blocking the event loop, through a
   * job (SPEC §14's job form): the guest prepares the scoring request, the
   * scorer's `score` is awaited, the guest finishes. Use it on an event
   * loop (an agent, a server, OpenCode) and for scorers that only have an
   * async `score` (`JevScorer`). Never rejects for a guest or scorer
   * failure: the input comes back (outcome `failed`, `timeout`,
   * `cancelled`). `signal` cancels this result's scoring (as the turn's does).
   */
  async onToolResult(result, { signal } = {}) {
    return this.#conversation.pruneAsync(this.#request, result, [this.#signal, signal]);
  }

  /**
   * The same, blocking, in one guest call (`pruner.prune`, SPEC §14's
   * import form): the guest calls the `scorer` import at most once, and
   * this thread answers it with the scorer's `scoreSync(request,
   * context)` under the request's deadline (a late answer is a
   * `timeout`: a blocking call cannot be interrupted). For the offline
   * scorer, the stub, or a scorer with `scoreSync` (a TypeError otherwise).
   */
  onToolResultSync(result, { signal } = {}) {
    if (!this.#conversation.canScoreSync(result)) {
      const name = result?.scorer?.name ?? this.#conversation.scorerName;
      throw new TypeError(`toolprune: scorer ${name} has no scoreSync; use await turn.onToolResult(…)`);
    }
    return this.#conversation.pruneSync(this.#request, result, [this.#signal, signal]);
  }
}
