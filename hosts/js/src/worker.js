// The guest's thread (a `worker_threads` Worker started by src/engine.js).
//
// Node has no fuel: a guest that looped would hang the thread that called
// it. So every guest call runs here, and the main thread waits for the
// answer no longer than the call's wall time (`settings.call-limits-for`);
// past it, it terminates this worker (issue 12: no host hangs, none gives
// up early). Nothing else runs here: scorers, HTTP and the user's callbacks
// stay on the main thread.
//
// Protocol (the main side is src/engine.js): calls arrive as messages
// `{seq, op, args}`, one at a time. For each, this thread
//   1. makes the instance if there is none (after a trap: a fresh one),
//   2. asks the guest for the call's limits (sized calls) and sets the
//      memory bound (see scripts/build.mjs),
//   3. signals "started" through the shared Int32Array: [2] = wall ms
//      (0 = a small call: the main thread's bootstrap budget), [1] = seq,
//      then [0] += 1 and notify,
//   4. runs the call and posts `{seq, ok, value, guestMs}` / `{seq, ok:
//      false, trap: {message, limit}}` on the answer port, then [0] += 1,
//      notify (`guestMs`: the call's own time here, for scripts/hop.mjs).
// The main thread never listens on that port: it takes answers with
// `receiveMessageOnPort`, after `Atomics.wait` (sync API) or
// `Atomics.waitAsync` (async API) on [0].
//
// The `scorer` import (wit/scorer.wit, SPEC §14). Only the one-call ops
// (`pruneCall`: `pruner.prune`, `judgeDecide`: `judge.decide`), which the
// main thread posts from its blocking API only, may use it: inside the
// import this thread posts `{seq, score: request}` on the answer port and
// blocks (`Atomics.wait` on [3]) until the main thread, which is blocked
// waiting for this call, answers on the `down` port with `{seq, response}`
// (or `{seq, refused: message}`: the import throws, the guest traps, the
// call fails open). While it waits here, the main thread may post nested
// calls `{nested, op, args}` on `down` (its scorer asking
// `settings.retry-delay`, …): they run on a second instance, since this
// one is inside `prune`, and are answered `{nested, ok, value | trap}`.
// On every other op (the jobs of the async API) the import throws: it is
// never called there, and if it were, the call would trap and fail open.

import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';

const { bindingsUrl, modules, shared, port, down, overrides } = workerData;
const signal = new Int32Array(shared);
const PAGE = 65536;
const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');

const { instantiate } = await import(bindingsUrl);

/** The live instance: jco's root object and the memory bound's globals. */
let live = null;
/** Bumped when an instance is dropped: jobs of an older one are gone. */
let generation = 0;
/** Open `prune-job` / `judge-job` handles by number: {job, generation, bytes}. */
const jobs = new Map();
let nextJob = 1;

/**
 * The call running now that may use the `scorer` import (`pruneCall`,
 * `judgeDecide`): `{seq, asked}`; null on every other op (the import throws).
 */
let importing = null;

/** Signals the main thread: [0] counts events; it waits on that slot. */
function bump() {
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

/** The second instance, for nested calls while `live` is inside the import (made on first use). */
let side = null;

/** Ops a nested call may run (stateless: no job, no import). */
const NESTED = new Set([
  'version', 'threshold', 'variables', 'configPath', 'resolve', 'isPrunable', 'isToolPrunable', 'retryDelay',
  'failureLine', 'unavailable', 'tool', 'requestedId', 'answer', 'inspect', 'judgeRoute', 'pruneJson', 'splitJson', 'splitTable',
  'routeJson', 'routeSummary', 'rulesErrors',
]);

/** One nested call on the second instance; never throws (a trap drops only that instance). */
function nested({ nested: id, op, args }) {
  try {
    if (!NESTED.has(op)) throw new Error(`toolprune: ${op} cannot run while a result is being scored (a re-entrant call)`);
    side ??= makeInstance();
    side.limit.value = side.cap;
    side.refused.value = 0;
    port.postMessage({ nested: id, ok: true, value: OPS[op].run(side.root, args, 0) });
  } catch (error) {
    side = null;
    port.postMessage({ nested: id, ok: false, trap: { message: String(error?.message ?? error), limit: null } });
  }
  bump();
}

/**
 * `scorer.score` (wit/scorer.wit): asks the main thread, which is blocked
 * waiting for this call, and blocks until it answers. Throws (the guest
 * traps, the call fails open) on the jobs path, on a second call for the
 * same result, or when the main thread refuses.
 */
function score(request) {
  const call = importing;
  if (!call) throw new Error('toolprune: the scorer import is not available on this path (the host scores through jobs)');
  if (call.asked) throw new Error('toolprune: the guest called scorer.score twice for one call');
  call.asked = true;
  port.postMessage({ seq: call.seq, score: request });
  bump();
  for (;;) {
    const seen = Atomics.load(signal, 3);
    const received = receiveMessageOnPort(down);
    if (!received) {
      Atomics.wait(signal, 3, seen);
      continue;
    }
    const message = received.message;
    if (message.nested !== undefined) {
      nested(message);
    } else if (message.seq === call.seq) {
      if (message.refused !== undefined) throw new Error(message.refused);
      return message.response;
    }
  }
}

function makeInstance() {
  let bound = null;
  const root = instantiate(
    (name) => {
      const module = modules[name];
      if (!module) throw new Error(`toolprune: core module ${name} is missing from the build`);
      return module;
    },
    { 'toolprune:pruner/scorer': { score } },
    (module, imports) => {
      const core = new WebAssembly.Instance(module, imports);
      const limit = core.exports['toolprune-host:memory-limit-pages'];
      if (limit instanceof WebAssembly.Global) {
        bound = { limit, refused: core.exports['toolprune-host:memory-refused'], memory: core.exports.memory, cap: limit.value };
      }
      return core;
    },
  );
  if (!bound) throw new Error('toolprune: the core module has no memory bound; rebuild with `npm run build`');
  return { root, ...bound };
}

function dropInstance() {
  live = null;
  generation += 1;
  for (const [id, entry] of jobs) if (entry.generation !== generation) jobs.delete(id);
}

/** Disposes a resource handle of a live instance; never throws. */
function dispose(job) {
  try {
    job?.[DISPOSE]?.();
  } catch {
    // Its instance trapped: dropped anyway.
  }
}

/** A `result<T, string>` export's answer as data: jco throws `ComponentError` for `err`. */
function result(fn) {
  try {
    return { tag: 'ok', val: fn() };
  } catch (error) {
    if (error?.constructor?.name === 'ComponentError' && 'payload' in error) return { tag: 'err', val: error.payload };
    throw error;
  }
}

function utf8Bytes(s) {
  return typeof s === 'string' ? Buffer.byteLength(s, 'utf8') : 0;
}

function keep(job, bytes) {
  const id = nextJob++;
  jobs.set(id, { job, generation, bytes });
  return id;
}

/** The open job `id` of the live instance, or undefined (its instance is gone). */
function take(id) {
  const entry = jobs.get(id);
  jobs.delete(id);
  return entry && entry.generation === generation ? entry.job : undefined;
}

/**
 * Each operation: `bytes(args)` sizes its limits (`settings.call-limits-for`;
 * absent: a small call under the bootstrap budget), `run(root, args)` calls
 * the guest. `args` are already in jco's shapes.
 */
const OPS = {
  version: { run: (g) => g.settings.version() },
  threshold: { run: (g, a) => result(() => g.settings.threshold(a.value)) },
  variables: { run: (g) => g.settings.variables() },
  configPath: { run: (g, a) => g.settings.configPath(a.env) },
  resolve: { run: (g, a) => result(() => g.settings.resolve(a.env, a.file)) },
  isPrunable: { run: (g, a) => g.settings.isPrunable(a.tool, a.globs) },
  isToolPrunable: { run: (g, a) => g.settings.isToolPrunable(a.names, a.globs) },
  retryDelay: { run: (g, a) => g.settings.retryDelay(a.facts) },
  failureLine: { run: (g, a) => g.settings.failureLine(a.operation, a.agent, a.tool, a.failure, a.limit) },
  unavailable: { run: (g, a) => g.omitted.unavailable(a.lang) },
  tool: { run: (g, a) => g.omitted.tool(a.lang, a.dialect) },
  requestedId: { run: (g, a) => g.omitted.requestedId(a.args) },
  answer: {
    bytes: (a) => utf8Bytes(a.args) + 4 * Number(a.found?.chars ?? 0n),
    run: (g, a) => g.omitted.answer(a.args, a.lang, a.agent, a.found),
  },
  inspect: { bytes: (a) => utf8Bytes(a.text), run: (g, a) => g.pruner.inspect(a.text) },
  /**
   * `pruner.prune(input, idNumber)`: one call, the guest calling the
   * `scorer` import at most once (the sync API). `{pruned}`.
   */
  pruneCall: {
    bytes: (a) => utf8Bytes(a.input.text),
    import: true,
    run: (g, a) => ({ pruned: g.pruner.prune(a.input, a.idNumber) }),
  },
  /**
   * `new(input)` and its scoring request (the async API's jobs). None due:
   * finished at once (id `idNumber`). `probe`: only what the guest decides
   * without a scorer (a gate). Else the job stays open for `finish`.
   */
  prune: {
    bytes: (a) => utf8Bytes(a.input.text),
    run: (g, a, bytes) => {
      const job = new g.pruner.PruneJob(a.input);
      let open = false;
      try {
        const request = job.scoringRequest();
        if (request === undefined || a.probe) return { pruned: job.finish(undefined, a.idNumber) };
        open = true;
        return { job: keep(job, bytes), request };
      } finally {
        if (!open) dispose(job);
      }
    },
  },
  /** `finish` on an open job; `{missing: true}` when its instance is gone (the host remakes it). */
  finish: {
    bytes: (a) => jobs.get(a.job)?.bytes ?? 0,
    run: (g, a) => {
      const job = take(a.job);
      if (!job) return { missing: true };
      try {
        return { pruned: job.finish(a.response, a.idNumber) };
      } finally {
        dispose(job);
      }
    },
  },
  /**
   * The same job made again from its input, finished with the response
   * already scored for it (an instance lost meanwhile, or an id that moved
   * while the result was scored): the scorer is not asked again.
   */
  finishFresh: {
    bytes: (a) => utf8Bytes(a.input.text),
    run: (g, a) => {
      const job = new g.pruner.PruneJob(a.input);
      try {
        return { pruned: job.finish(a.response, a.idNumber) };
      } finally {
        dispose(job);
      }
    },
  },
  drop: { run: (g, a) => dispose(take(a.job)) },
  judgeRoute: {
    bytes: (a) => utf8Bytes(a.rules) + utf8Bytes(a.message) + utf8Bytes(a.answers),
    run: (g, a) => result(() => g.judge.route(a.rules, a.message, a.model, a.answers)),
  },
  /** `judge.decide`: one call, the judge's one Jev call through the `scorer` import (the sync API). */
  judgeDecide: {
    bytes: (a) => utf8Bytes(a.rules) + utf8Bytes(a.message),
    import: true,
    run: (g, a) => result(() => g.judge.decide(a.rules, a.message, a.model)),
  },
  /** `report.prune-json` (the CLI's `prune --json`). */
  pruneJson: {
    bytes: (a) => 64 * (a.pruned?.paragraphs?.length ?? 0),
    run: (g, a) => g.report.pruneJson(a.pruned, a.failure, a.scorer),
  },
  /** `report.split-json` (`split --json`). */
  splitJson: { bytes: (a) => utf8Bytes(a.text), run: (g, a) => g.report.splitJson(a.text) },
  /** `report.split-table` (`split`). */
  splitTable: { bytes: (a) => utf8Bytes(a.text), run: (g, a) => g.report.splitTable(a.text) },
  /** `report.route-json` (`route --json`). */
  routeJson: { bytes: (a) => utf8Bytes(a.decision.logLine), run: (g, a) => g.report.routeJson(a.decision) },
  /** `report.route-summary` (`route`). */
  routeSummary: { bytes: (a) => utf8Bytes(a.decision.logLine), run: (g, a) => g.report.routeSummary(a.decision) },
  /** `report.rules-errors` (a rules file's problems). */
  rulesErrors: {
    bytes: (a) => a.errors.reduce((n, e) => n + utf8Bytes(e.message), utf8Bytes(a.file)),
    run: (g, a) => g.report.rulesErrors(a.file, a.errors),
  },
  judgeStart: {
    bytes: (a) => utf8Bytes(a.rules) + utf8Bytes(a.message),
    run: (g, a, bytes) => {
      const loaded = result(() => g.judge.JudgeJob.load(a.rules, a.message, a.model));
      if (loaded.tag === 'err') return { errors: loaded.val };
      const job = loaded.val;
      try {
        return { request: job.scoringRequest(), job: keep(job, bytes) };
      } catch (error) {
        dispose(job);
        throw error;
      }
    },
  },
  judgeFinish: {
    bytes: (a) => jobs.get(a.job)?.bytes ?? 0,
    run: (g, a) => {
      const job = take(a.job);
      if (!job) return { missing: true };
      try {
        return { decision: job.finish(a.response) };
      } finally {
        dispose(job);
      }
    },
  },
};

function started(seq, wallMs) {
  Atomics.store(signal, 2, wallMs);
  Atomics.store(signal, 1, seq);
  bump();
}

function answer(message) {
  port.postMessage(message);
  bump();
}

function pages(bytes, cap) {
  return Math.max(1, Math.min(cap, Math.floor(Number(bytes) / PAGE)));
}

function handle({ seq, op, args, bootstrap }) {
  const spec = OPS[op];
  let bound = null;
  try {
    if (!spec) throw new Error(`toolprune: unknown operation ${op}`);
    live ??= makeInstance();
    bound = live;
    let wallMs = 0;
    let memoryBytes = overrides.memoryBytes;
    live.limit.value = memoryBytes === undefined ? live.cap : pages(memoryBytes, live.cap);
    const bytes = spec.bytes && !bootstrap ? spec.bytes(args) : undefined;
    if (bytes !== undefined) {
      const limits = live.root.settings.callLimitsFor(BigInt(bytes));
      wallMs = overrides.wallMs ?? limits.wallMs;
      memoryBytes ??= limits.memoryBytes;
    }
    const limit = memoryBytes === undefined ? live.cap : pages(memoryBytes, live.cap);
    if (live.memory.buffer.byteLength > limit * PAGE) {
      // An earlier, larger call left the memory over this call's bound
      // (linear memory never shrinks): a fresh instance, as after a trap.
      dropInstance();
      live = makeInstance();
      bound = live;
    }
    live.limit.value = limit;
    live.refused.value = 0;
    started(seq, wallMs);
    const start = performance.now();
    importing = spec.import ? { seq, asked: false } : null;
    const value = spec.run(live.root, args, bytes ?? 0);
    importing = null;
    answer({ seq, ok: true, value, guestMs: performance.now() - start });
  } catch (error) {
    importing = null;
    const limit = bound?.refused.value === 1 ? 'memory' : null;
    dropInstance();
    answer({ seq, ok: false, trap: { message: String(error?.message ?? error), limit } });
  }
}

parentPort.on('message', handle);

// Ready: the instance is made once here, so that a component that cannot
// be instantiated fails `Pruner.load`, not a later call.
try {
  live = makeInstance();
  answer({ seq: 0, ok: true, value: { version: live.root.settings.version() } });
} catch (error) {
  live = null;
  answer({ seq: 0, ok: false, trap: { message: String(error?.message ?? error), limit: null } });
}
