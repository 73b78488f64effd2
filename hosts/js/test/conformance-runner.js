// The Node runner of the conformance suite (tests/conformance/README.md):
// every scenario, unchanged, through this host's public API and its own
// loopback Jev server; each step's result as the JSON the README defines,
// compared with the hand-written expectations and, byte for byte (after the
// README's one normalisation), with the results the Rust host generated
// (expected/NAME.json). The Rust runner is tests/src/conformance.rs; this
// one mirrors it step for step.

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
  };
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

/**
 * `{"scripted": …}`: a custom scorer named `scripted`. It has a blocking
 * form when it does not wait (so a `prune` step takes the blocking path,
 * as the README asks); a waiting one is async, its wait ended only by the
 * host giving up.
 */
function scripted(spec) {
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
  const scorer = {
    name: 'scripted',
    async score(request, { signal }) {
      if (wait > 0) await delay(wait, undefined, { signal }).catch(() => {});
      return answers(request);
    },
  };
  if (wait === 0) scorer.scoreSync = answers;
  return scorer;
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
 * guest, the token in the variable the guest names).
 */
async function scoring(pruner, spec, servers) {
  if (spec === 'offline' || spec === 'stub') return { scorer: spec, server: null };
  if (spec.scripted !== undefined) return { scorer: scripted(spec.scripted), server: null };
  if (spec.throws !== undefined) {
    const fail = () => {
      throw new Error(spec.throws);
    };
    return { scorer: { name: 'scripted', score: async () => fail(), scoreSync: fail }, server: null };
  }
  if (spec.hangs !== undefined) {
    const hang = (_request, { signal }) =>
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
    return { scorer: { name: 'scripted', score: hang }, server: null };
  }
  if (spec.jev !== undefined) {
    const server = await jevServer(spec.jev);
    servers.push(server);
    const vars = { TOOLPRUNE_JEV_ROUTE: 'typesafe', TOOLPRUNE_JEV_BASE_URL: server.url };
    const config = pruner.config(vars);
    const scorer = JevScorer.fromConfig(config, { ...vars, [config.tokenVariable]: 'conformance-token' });
    return { scorer, server };
  }
  throw new Error(`unknown SCORER ${JSON.stringify(spec)}`);
}

// ----- steps -----

async function load(spec) {
  const limits = spec?.limits ?? {};
  return Pruner.load({
    limits: { wallMs: limits.wall_ms, memoryBytes: limits.memory_bytes },
  });
}

async function conversation(pruner, spec, servers) {
  const log = [];
  const options = { log: (line) => log.push(line) };
  if (spec.enabled !== undefined) options.enabled = spec.enabled;
  if (spec.threshold !== undefined) options.threshold = spec.threshold; // numbers as numbers, strings as strings
  if (spec.lang !== undefined) options.lang = spec.lang;
  if (spec.agent !== undefined) options.agent = spec.agent;
  let server = null;
  if (spec.scorer !== undefined) ({ scorer: options.scorer, server } = await scoring(pruner, spec.scorer, servers));
  if (spec.store !== undefined) options.store = { maxRecords: spec.store.max_records, maxChars: spec.store.max_chars };
  if (spec.deadline_cap_ms !== undefined) options.deadlineCapMs = spec.deadline_cap_ms;
  if (spec.jev_model !== undefined) options.jevModel = spec.jev_model;
  return { conversation: pruner.conversation(options), scorer: options.scorer, log, seen: 0, server };
}

function newLines(live) {
  const fresh = live.log.slice(live.seen);
  live.seen = live.log.length;
  return fresh;
}

async function toolResult(pruner, spec, servers) {
  const own = spec.scorer === undefined ? { scorer: undefined, server: null } : await scoring(pruner, spec.scorer, servers);
  return {
    result: {
      tool: spec.tool ?? 'fetch',
      text: text(spec.text),
      ok: spec.ok ?? true,
      prunable: spec.prunable ?? true,
      report: spec.report ?? false,
      scorer: own.scorer,
    },
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

/** Whether this host has a blocking path for the result's scorer (offline, stub, a scorer with `scoreSync`). */
function blocking(live, result) {
  const scorer = result.scorer ?? live.scorer;
  return scorer === undefined || typeof scorer === 'string' || typeof scorer.scoreSync === 'function';
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

/** Runs one scenario: one result per step. Throws on a malformed scenario. */
export async function run(scenario) {
  const servers = [];
  const pruner = await load(scenario.pruner);
  try {
    let live = await conversation(pruner, scenario.conversation ?? {}, servers);
    let turn = null;
    const results = [];
    for (const step of scenario.steps) {
      let result;
      if (step.conversation !== undefined) {
        try {
          live = await conversation(pruner, step.conversation, servers);
          turn = null;
          result = { ok: true };
        } catch (error) {
          if (!(error instanceof RangeError)) throw error;
          result = { error: { kind: 'threshold', message: error.guestMessage } };
        }
      } else if (step.turn !== undefined) {
        const ms = step.turn.cancel_after_ms;
        let signal;
        if (ms !== undefined) {
          const controller = new AbortController();
          setTimeout(() => controller.abort(), ms);
          signal = controller.signal;
        }
        turn = live.conversation.turn(text(step.turn.request), { signal });
        result = { ok: true };
      } else if (step.prune !== undefined || step.prune_async !== undefined) {
        const { result: input, server: own } = await toolResult(pruner, step.prune ?? step.prune_async, servers);
        const server = own ?? live.server;
        const before = server?.requests ?? 0;
        const sync = step.prune !== undefined && blocking(live, input);
        const r = sync ? turn.onToolResultSync(input) : await turn.onToolResult(input);
        result = pruned(r, newLines(live));
        if (server) result.requests = server.requests - before;
      } else if (step.concurrent !== undefined) {
        const inputs = await Promise.all(step.concurrent.map((s) => toolResult(pruner, s, servers)));
        const outputs = await Promise.all(inputs.map(({ result: input }) => turn.onToolResult(input)));
        newLines(live);
        result = outputs.map((r) => pruned(r, r.logLine === null ? [] : [r.logLine]));
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
        result = await routed(() => pruner.route(text(spec.rules), spec.message, { answers: text(spec.answers), jevModel: spec.jev_model, log: routeLog }));
      } else if (step.route_live !== undefined) {
        const spec = step.route_live;
        const { scorer, server } = await scoring(pruner, spec.scorer, servers);
        const before = server?.requests ?? 0;
        result = await routed(() => pruner.route(text(spec.rules), spec.message, { scorer, jevModel: spec.jev_model, log: routeLog }));
        if (server) result.requests = server.requests - before;
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
