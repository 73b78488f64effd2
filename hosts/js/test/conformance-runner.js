// The Node runner of the conformance suite (tests/conformance/README.md):
// every scenario, unchanged, through this host's public API and its own
// loopback Jev server, in both forms — `import` (the sync API:
// `onToolResultSync` / `routeSync`, one guest call whose `scorer` import
// this thread answers with `scoreSync`) and `jobs` (the async API) — each
// step's result as the JSON the README defines, compared with the
// hand-written expectations and, byte for byte (after the README's one
// normalisation), with the results the Rust host generated
// (expected/NAME.json), the same file for both forms. The Rust runner is
// tests/src/conformance.rs; this one mirrors it step for step.
//
// Every scorer the runner makes counts how often it is asked: a step fails
// when one result's scorer is asked twice, or at all for a result stopped
// by a gate or scored by the guest itself (offline, stub).
//
// Node specifics of the import form (the README's per-host notes):
// - a blocking scorer cannot be interrupted and this thread's timers do
//   not fire while it blocks: the runner's waiting scorers (`delay_ms`,
//   `hangs`) block in slices and stop when the host's deadline has passed
//   (the host then discards the late answer: `timeout`), and a turn's
//   `cancel_after_ms` is fired by them from inside the block when it is
//   due (as a user's own code would abort);
// - the Jev transport is async only (`fetch` cannot block), so a step
//   whose scorer is `{"jev": …}` runs the async API in both forms.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { JevScorer, Pruner, RulesError } from '../src/index.js';
import { ROOT, SHARED } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/toolprune.mjs', import.meta.url));

/** The suite: tests/conformance of this repository, or $TOOLPRUNE_CONFORMANCE_DIR. */
export const DIR = process.env.TOOLPRUNE_CONFORMANCE_DIR ?? join(ROOT, 'tests', 'conformance');

/** Every scenario file, by name, in name order. */
export function scenarios() {
  const dir = join(DIR, 'scenarios');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const scenario = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      const name = f.slice(0, -'.json'.length);
      if (scenario.name !== name) throw new Error(`${f}: name must be the file name`);
      return [name, scenario];
    });
}

/** Why this runner skips `scenario` (README "Capabilities"), or null. */
export function skipReason(scenario) {
  for (const need of scenario.requires ?? []) {
    if (need === 'fuel') return 'fuel: this host has no fuel (its guard is the wall time)';
    if (need === 'slow' && process.env.TOOLPRUNE_SLOW !== '1') return 'slow: set TOOLPRUNE_SLOW=1';
    if (!['cli', 'slow', 'wall_time'].includes(need)) return `unknown capability ${need}`;
  }
  return null;
}

// ----- texts -----

/** A TEXT of the README. */
export function text(spec) {
  if (typeof spec === 'string') return spec;
  const sep = (fallback) => spec.sep ?? fallback;
  if (spec.shared !== undefined) return readFileSync(join(SHARED, spec.shared), 'utf8');
  if (spec.conformance !== undefined) return readFileSync(join(DIR, spec.conformance), 'utf8');
  if (spec.join !== undefined) return spec.join.map(text).join(sep(''));
  if (spec.repeat !== undefined) return Array.from({ length: spec.times }, () => text(spec.repeat)).join(sep('\n\n'));
  if (spec.numbered !== undefined) {
    return Array.from({ length: spec.count }, (_, i) => spec.numbered.replaceAll('{i}', String(i + 1))).join(sep('\n\n'));
  }
  throw new Error(`unknown TEXT ${JSON.stringify(spec)}`);
}

// ----- results -----

/** `F`, `F_sha256`, `F_bytes` for a string field (README "Results"). */
function putString(out, field, value) {
  const bytes = Buffer.byteLength(value, 'utf8');
  out[field] = bytes <= 1000 ? value : null;
  out[`${field}_sha256`] = createHash('sha256').update(value, 'utf8').digest('hex');
  out[`${field}_bytes`] = bytes;
}

/** `ms=` followed by digits → `ms=*` (README "Normalisation"). */
export function normaliseLine(line) {
  return line.replace(/ms=\d+/g, 'ms=*');
}

const lines = (list) => list.map(normaliseLine);

/** PRUNED of the README. */
function pruned(result, log) {
  const out = {
    outcome: result.outcome,
    gate: result.gate,
    id: result.id,
    shape: result.shape,
  };
  putString(out, 'body', result.body);
  out.body_is_input = result.body === result.raw;
  const c = result.counts;
  out.counts = c && {
    raw_chars: c.rawChars,
    kept_chars: c.keptChars,
    paragraphs: c.paragraphs,
    dropped: c.dropped,
    calls: c.calls,
    jev_tokens: c.jevTokens,
    ms: c.ms === null ? null : '*',
    work: c.work,
  };
  out.scorer_calls = result.scorerCalls;
  out.ratio = result.ratio;
  out.threshold = result.threshold;
  out.served_model = result.servedModel;
  out.failures = result.failures.map((f) => ({ batch: f.batch, status: f.status, class: f.class }));
  out.failure = result.failure && { reason: result.failure.reason, limit: result.failure.limit };
  out.paragraphs = result.paragraphs.map((p) => ({ index: p.index, chars: p.chars, score: p.score, fate: p.fate }));
  out.log = lines(log);
  return out;
}

// ----- scorers -----

/** An ANSWER of the README, in the host's friendly shape. */
function answer(spec) {
  if (spec.scores !== undefined) return { scores: spec.scores };
  if (spec.jev_response !== undefined) return { jevResponse: spec.jev_response };
  if (spec.failed !== undefined) return { failed: spec.failed === 'network' || spec.failed?.http === undefined ? 'network' : { http: spec.failed.http } };
  throw new Error(`unknown ANSWER ${JSON.stringify(spec)}`);
}

const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocks this thread up to `ms`, in slices, firing a due turn
 * cancellation (`fire()`) and stopping early when `stop()` holds. Returns
 * whether the whole time passed.
 */
function block(ms, stop, fire) {
  const until = performance.now() + ms;
  for (;;) {
    fire();
    if (stop()) return false;
    const left = until - performance.now();
    if (left <= 0) return true;
    Atomics.wait(SLEEPER, 0, 0, Math.min(left, 5));
  }
}

/** The host has given up on a blocking scorer: its signal aborted, or its deadline passed. */
const givenUp = (context) => context.signal.aborted || context.remainingMs() === 0;

/**
 * `{"scripted": …}`: a custom scorer named `scripted`, with both forms: an
 * async `score` whose wait only the host's giving up ends, and a blocking
 * `scoreSync` (the import form) that waits in slices (see the header).
 */
function scripted(spec, live) {
  const fallback = spec.default === undefined ? 1.0 : spec.default;
  const scores = spec.scores ?? {};
  const batches = spec.batches ?? {};
  const wait = spec.delay_ms ?? 0;
  const answers = (request) =>
    request.batches.map((batch, b) =>
      Object.hasOwn(batches, String(b))
        ? answer(batches[String(b)])
        : { scores: Array.from(batch.paragraphs, (n) => (Object.hasOwn(scores, String(n)) ? scores[String(n)] : fallback)) },
    );
  return {
    name: 'scripted',
    async score(request, { signal }) {
      if (wait > 0) await delay(wait, undefined, { signal }).catch(() => {});
      return answers(request);
    },
    scoreSync(request, context) {
      if (wait > 0) block(wait, () => givenUp(context), live.fire);
      return answers(request);
    },
  };
}

/** One Jev RESPONSE of the README for the request body `body`. */
function reply(spec, body) {
  const status = spec.status ?? 200;
  let out;
  if (typeof spec.body === 'string') {
    out = spec.body;
  } else if (typeof spec.body_file === 'string') {
    out = text({ conformance: spec.body_file });
  } else if (status >= 200 && status < 300) {
    const a = spec.answer ?? {};
    const fallback = a.default ?? 1.0;
    const scores = a.scores ?? {};
    const names = Object.keys(JSON.parse(body).state.chunks);
    const answers = Object.fromEntries(
      names.map((name) => [name, { type: 'noul', noul: Object.hasOwn(scores, name.slice(1)) ? scores[name.slice(1)] : fallback }]),
    );
    const bare = JSON.stringify({ model: a.model ?? 'jev-1.13.0', answers, usage: { input_tokens: 100 * names.length, output_tokens: 0 } });
    out = a.envelope ? `{"success":true,"result":${bare},"errors":[],"messages":[]}` : bare;
  } else {
    out = `{"error":"status ${status}"}`;
  }
  return { status, headers: spec.headers ?? {}, body: out, delayMs: spec.delay_ms ?? 0, stall: spec.stall === true, close: spec.close === true };
}

/** A loopback HTTP/1.1 server on 127.0.0.1 playing JEV; `requests` counts what arrived. */
async function jevServer(spec) {
  const responses = spec.responses ?? [];
  const then = spec.then ?? { status: 200 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', async () => {
      const n = state.requests++;
      const r = reply(responses[n] ?? then, Buffer.concat(chunks).toString('utf8'));
      if (r.delayMs > 0) await delay(r.delayMs);
      if (r.stall) return; // never answered (until the server stops)
      if (r.close) return req.socket.destroy();
      res.writeHead(r.status, { 'content-type': 'application/json', ...r.headers });
      res.end(r.body);
    });
  });
  const state = { requests: 0, server, url: '' };
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${server.address().port}`;
  state.stop = () => {
    server.closeAllConnections();
    server.close();
  };
  return state;
}

/**
 * A SCORER of the README, and the server when it is `{"jev": …}` (the Jev
 * transport configured as users configure it: variables resolved by the
 * guest, the token in the variable the guest names). Host scorers are
 * wrapped to count how often they are asked (`asked.n`).
 */
async function scoring(pruner, spec, servers, live) {
  if (spec === 'offline' || spec === 'stub') return { scorer: spec, server: null };
  let scorer;
  let server = null;
  if (spec.scripted !== undefined) {
    scorer = scripted(spec.scripted, live);
  } else if (spec.throws !== undefined) {
    const fail = () => {
      throw new Error(spec.throws);
    };
    scorer = { name: 'scripted', score: async () => fail(), scoreSync: fail };
  } else if (spec.hangs !== undefined) {
    const hang = (_request, { signal }) =>
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
    const hangSync = (_request, context) => {
      block(Number.POSITIVE_INFINITY, () => givenUp(context), live.fire);
      throw new Error('stopped');
    };
    scorer = { name: 'scripted', score: hang, scoreSync: hangSync };
  } else if (spec.jev !== undefined) {
    server = await jevServer(spec.jev);
    servers.push(server);
    const vars = { TOOLPRUNE_JEV_ROUTE: 'typesafe', TOOLPRUNE_JEV_BASE_URL: server.url };
    const config = pruner.config(vars);
    const jev = JevScorer.fromConfig(config, { ...vars, [config.tokenVariable]: 'conformance-token' });
    scorer = { name: jev.name, jevModel: jev.jevModel, score: (request, context) => jev.score(request, context) };
  } else {
    throw new Error(`unknown SCORER ${JSON.stringify(spec)}`);
  }
  return { scorer: counted(scorer, live), server };
}

/** `scorer` with `score` / `scoreSync` counted in `live.asked` (one count per ask, whichever form). */
function counted(scorer, live) {
  const out = { name: scorer.name, jevModel: scorer.jevModel };
  if (scorer.score) {
    out.score = (request, context) => {
      live.asked += 1;
      return scorer.score(request, context);
    };
  }
  if (scorer.scoreSync) {
    out.scoreSync = (request, context) => {
      live.asked += 1;
      return scorer.scoreSync(request, context);
    };
  }
  return out;
}

// ----- steps -----

/** The forms every scenario runs in (README: both against the same expected/). */
export const FORMS = ['import', 'jobs'];

async function load(spec) {
  const limits = spec?.limits ?? {};
  return Pruner.load({
    limits: { wallMs: limits.wall_ms, memoryBytes: limits.memory_bytes, work: limits.work },
  });
}

/**
 * What the runner's scorers share in one scenario: `asked` counts the
 * asks of every host scorer; `fire()` aborts the current turn when its
 * `cancel_after_ms` is due (called by the blocking scorers, see the header).
 */
function scenarioState() {
  const state = {
    asked: 0,
    cancel: null,
    fire: () => {
      const c = state.cancel;
      if (c && !c.controller.signal.aborted && performance.now() >= c.at) c.controller.abort();
    },
  };
  return state;
}

async function conversation(pruner, spec, servers, state) {
  const log = [];
  const options = { log: (line) => log.push(line) };
  if (spec.enabled !== undefined) options.enabled = spec.enabled;
  if (spec.threshold !== undefined) options.threshold = spec.threshold; // numbers as numbers, strings as strings
  if (spec.lang !== undefined) options.lang = spec.lang;
  if (spec.agent !== undefined) options.agent = spec.agent;
  let server = null;
  let scorerSpec;
  if (spec.scorer !== undefined) ({ scorer: options.scorer, server } = await scoring(pruner, spec.scorer, servers, state));
  if (spec.scorer !== undefined) scorerSpec = spec.scorer;
  if (spec.store !== undefined) options.store = { maxRecords: spec.store.max_records, maxChars: spec.store.max_chars };
  if (spec.deadline_cap_ms !== undefined) options.deadlineCapMs = spec.deadline_cap_ms;
  if (spec.jev_model !== undefined) options.jevModel = spec.jev_model;
  return { conversation: pruner.conversation(options), scorer: options.scorer, scorerSpec, log, seen: 0, server };
}

function newLines(live) {
  const fresh = live.log.slice(live.seen);
  live.seen = live.log.length;
  return fresh;
}

async function toolResult(pruner, spec, servers, state) {
  const own = spec.scorer === undefined ? { scorer: undefined, server: null } : await scoring(pruner, spec.scorer, servers, state);
  return {
    result: {
      tool: spec.tool ?? 'fetch',
      text: text(spec.text),
      ok: spec.ok ?? true,
      prunable: spec.prunable ?? true,
      report: spec.report ?? false,
      scorer: own.scorer,
      arguments: spec.arguments,
    },
    scorerSpec: spec.scorer,
    server: own.server,
  };
}

const routeLines = [];
const routeLog = (line) => routeLines.push(line);

/** ROUTED of the README: the decision (or the rules file's problems) and the lines logged meanwhile. */
async function routed(decide) {
  routeLines.length = 0;
  try {
    const d = await decide();
    return {
      decision: {
        verdict: d.verdict,
        to: d.to,
        note: d.note,
        reason: d.reason,
        rule: d.rule,
        answers: d.answers.map((a) => ({ question: a.question, type: a.kind, value: a.value, p: a.p, margin: a.margin, mean: a.mean })),
        jev_tokens: d.jevTokens,
      },
      log: lines(routeLines),
    };
  } catch (error) {
    if (!(error instanceof RulesError)) throw error;
    return { errors: error.errors.map((e) => ({ line: e.line, column: e.column, message: e.message })), log: lines(routeLines) };
  }
}

/** Whether a step takes the sync API in the import form: every scorer but the Jev transport (async only). */
function blocking(scorer) {
  return scorer === undefined || typeof scorer === 'string' || typeof scorer.scoreSync === 'function';
}

/** Whether `spec` (a SCORER, or undefined: the conversation's) is scored in the guest: no host scorer may be asked. */
function guestScored(spec) {
  return spec === undefined || spec === 'offline' || spec === 'stub';
}

/** Outcomes that never reach a scorer (README: a gated result). */
const UNSCORED = new Set(['skipped', 'structured', 'no_basis']);

/**
 * The README's scorer rules for one PRUNED (`asked`: how often the host
 * scorers were asked meanwhile; `spec`: the result's SCORER): never more
 * than once, never for a gated result or one the guest scored itself, and
 * never more often than the host reports. A message, or null.
 */
function scorerRule(result, asked, spec, at) {
  if (result.scorer_calls > 1) return `${at}: scorer_calls ${result.scorer_calls}: the scorer was asked more than once for one result`;
  if (asked > result.scorer_calls) return `${at}: the scorer was asked ${asked} times, the host reports ${result.scorer_calls}`;
  if (asked > 0 && UNSCORED.has(result.outcome)) return `${at}: the scorer was asked for a ${result.outcome} result`;
  if (asked > 0 && guestScored(spec)) return `${at}: the scorer was asked for a result the guest scores (${spec ?? 'offline'})`;
  return null;
}

/** CLI of the README: `node bin/toolprune.mjs` in tests/conformance/, with the step's arguments, stdin and environment. */
function cli(spec) {
  const home = mkdtempSync(join(tmpdir(), 'toolprune-conformance-home-'));
  const stdin = spec.stdin === undefined ? '' : text(spec.stdin);
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...spec.args],
      { cwd: DIR, encoding: 'buffer', maxBuffer: 256 << 20, env: { PATH: process.env.PATH ?? '', HOME: home, ...(spec.env ?? {}) } },
      (error, stdout, stderr) => {
        rmSync(home, { recursive: true, force: true });
        const out = { exit: error ? (typeof error.code === 'number' ? error.code : null) : 0 };
        const printed = stdout.toString('utf8');
        putString(out, 'stdout', printed);
        out.stdout_is_stdin = printed === stdin;
        const err = stderr.toString('utf8');
        out.log = lines(err.split('\n').filter((l) => l.startsWith('tool ') || l.startsWith('judge:')));
        out.stderr = err;
        resolve(out);
      },
    );
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

/**
 * Runs one scenario in `form` (`import` or `jobs`): one result per step.
 * Throws on a malformed scenario, and when a scorer rule is broken
 * (`scorerRule`).
 */
export async function run(scenario, form = 'jobs') {
  if (!FORMS.includes(form)) throw new Error(`unknown form ${form}`);
  const servers = [];
  const state = scenarioState();
  const pruner = await load(scenario.pruner);
  try {
    let live = await conversation(pruner, scenario.conversation ?? {}, servers, state);
    let turn = null;
    const results = [];
    for (const [index, step] of scenario.steps.entries()) {
      let result;
      const at = `step ${index} (${form})`;
      if (step.conversation !== undefined) {
        try {
          live = await conversation(pruner, step.conversation, servers, state);
          turn = null;
          result = { ok: true };
        } catch (error) {
          if (!(error instanceof RangeError)) throw error;
          result = { error: { kind: 'threshold', message: error.guestMessage } };
        }
      } else if (step.turn !== undefined) {
        const ms = step.turn.cancel_after_ms;
        let signal;
        state.cancel = null;
        if (ms !== undefined) {
          const controller = new AbortController();
          setTimeout(() => controller.abort(), ms);
          state.cancel = { controller, at: performance.now() + ms };
          signal = controller.signal;
        }
        turn = live.conversation.turn(text(step.turn.request), { signal });
        result = { ok: true };
      } else if (step.prune !== undefined || step.prune_async !== undefined) {
        const { result: input, server: own, scorerSpec } = await toolResult(pruner, step.prune ?? step.prune_async, servers, state);
        const server = own ?? live.server;
        const before = server?.requests ?? 0;
        const askedBefore = state.asked;
        const sync = form === 'import' && step.prune !== undefined && blocking(input.scorer ?? live.scorer);
        const r = sync ? turn.onToolResultSync(input) : await turn.onToolResult(input);
        result = pruned(r, newLines(live));
        if (server) result.requests = server.requests - before;
        const problem = scorerRule(result, state.asked - askedBefore, scorerSpec ?? live.scorerSpec, at);
        if (problem) throw new Error(problem);
      } else if (step.concurrent !== undefined) {
        const inputs = await Promise.all(step.concurrent.map((s) => toolResult(pruner, s, servers, state)));
        const askedBefore = state.asked;
        const outputs = await Promise.all(inputs.map(({ result: input }) => turn.onToolResult(input)));
        newLines(live);
        result = outputs.map((r) => pruned(r, r.logLine === null ? [] : [r.logLine]));
        for (const [i, r] of result.entries()) {
          const problem = scorerRule(r, 0, inputs[i].scorerSpec ?? live.scorerSpec, `${at}[${i}]`);
          if (problem) throw new Error(problem);
        }
        const reported = result.reduce((n, r) => n + r.scorer_calls, 0);
        if (state.asked - askedBefore > reported) throw new Error(`${at}: the scorers were asked ${state.asked - askedBefore} times for ${reported} reported calls`);
      } else if (step.omitted !== undefined) {
        const a = live.conversation.omitted(step.omitted);
        result = { outcome: a.outcome };
        putString(result, 'text', a.text);
        result.log = lines(newLines(live));
      } else if (step.omitted_tool !== undefined) {
        const tool = live.conversation.omittedTool(step.omitted_tool.dialect, step.omitted_tool.lang);
        result = { tool, name: tool.name ?? tool.function?.name ?? null };
      } else if (step.inspect !== undefined) {
        const i = pruner.inspect(text(step.inspect));
        result = {
          shape: i.shape,
          wrapper_span: i.wrapperSpan,
          units: i.units.map((u) => ({
            index: u.index,
            byte_start: u.byteStart,
            byte_end: u.byteEnd,
            char_start: u.charStart,
            char_end: u.charEnd,
            kind: u.kind,
          })),
        };
      } else if (step.is_prunable !== undefined) {
        result = { prunable: pruner.isPrunable(step.is_prunable.names ?? step.is_prunable.tool, step.is_prunable.globs) };
      } else if (step.route !== undefined) {
        const spec = step.route;
        const options = { answers: text(spec.answers), jevModel: spec.jev_model, log: routeLog };
        result = await routed(() => (form === 'import' ? pruner.routeSync(text(spec.rules), spec.message, options) : pruner.route(text(spec.rules), spec.message, options)));
      } else if (step.route_live !== undefined) {
        const spec = step.route_live;
        const { scorer, server } = await scoring(pruner, spec.scorer, servers, state);
        const before = server?.requests ?? 0;
        const askedBefore = state.asked;
        const options = { scorer, jevModel: spec.jev_model, log: routeLog };
        const sync = form === 'import' && blocking(scorer);
        result = await routed(() => (sync ? pruner.routeSync(text(spec.rules), spec.message, options) : pruner.route(text(spec.rules), spec.message, options)));
        if (server) result.requests = server.requests - before;
        if (state.asked - askedBefore > 1) throw new Error(`${at}: the judge's scorer was asked ${state.asked - askedBefore} times for one message`);
      } else if (step.cli !== undefined) {
        result = await cli(step.cli);
      } else {
        throw new Error(`unknown step ${JSON.stringify(step)}`);
      }
      results.push(result);
    }
    return results;
  } finally {
    for (const server of servers) server.stop();
    pruner.close();
  }
}

// ----- comparing -----

/** A hand-written partial expectation (README "STEP"): null when it holds, else where it fails. */
export function partial(expected, actual, at) {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
    for (const [k, v] of Object.entries(expected)) {
      if (k === 'stderr_contains') {
        if (!(actual.stderr ?? '').includes(v)) return `${at}.stderr does not contain ${JSON.stringify(v)}: ${JSON.stringify(actual.stderr)}`;
        continue;
      }
      const problem = partial(v, actual[k] ?? null, `${at}.${k}`);
      if (problem) return problem;
    }
    return null;
  }
  if (Array.isArray(expected) && Array.isArray(actual) && expected.length === actual.length) {
    for (const [i, e] of expected.entries()) {
      const problem = partial(e, actual[i], `${at}[${i}]`);
      if (problem) return problem;
    }
    return null;
  }
  return isDeepStrictEqual(expected, actual) ? null : `${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

/** The generated results of `name` (expected/NAME.json), or null when the Rust host cannot generate them. */
export function expected(name) {
  const path = join(DIR, 'expected', `${name}.json`);
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : null;
}

/** The results as they are compared with expected/ (stderr differs between hosts and is not). */
export function comparable(results) {
  return results.map((r) => {
    if (r === null || typeof r !== 'object' || Array.isArray(r)) return r;
    const { stderr: _, ...rest } = r;
    return rest;
  });
}
