// The component, compiled once and version-checked, and the guest's thread.
//
// Every guest call runs in a worker thread (src/worker.js): Node has no
// fuel, so a guest that looped would hang the thread that called it. The
// main thread posts one call at a time and waits for its answer no longer
// than the call's wall time (`settings.call-limits-for`, sized from the
// input: no host gives up early on a large text); past it the worker is
// terminated, the call fails open (`guest_trap`, limit `wall_time`) and a
// fresh worker serves the next call. The async API waits with
// `Atomics.waitAsync` (the event loop runs meanwhile); the sync API blocks
// in `Atomics.wait` with the same limit. Scorers, HTTP and the user's
// callbacks stay on the main thread.
//
// The `scorer` import (SPEC §14): a blocking call that may use it
// (`callSync(op, args, onAnswer, onScore)`) is woken while it waits by the
// worker's scoring request; `onScore(request)` answers it on this thread
// (the wall-time clock stops meanwhile: scoring has its own deadline), and
// guest calls made from inside `onScore` (the scorer asking
// `settings.retry-delay`) run as nested calls on the worker's second
// instance, each within `BOOTSTRAP_MS`.

import { readFile, readdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

/** The contract this host speaks: WIT package `toolprune:pruner@0.3.x`. */
export const CONTRACT = '0.3';

/**
 * How long a call may take before it has started in the worker: starting a
 * worker, instantiating the component (after a trap), and the small calls
 * made before the per-call limits are known (`settings.call-limits-for`
 * itself, `version`, `failure-line`, `retry-delay`, …). Host mechanism:
 * generous, still bounded, so that nothing can hang.
 */
export const BOOTSTRAP_MS = 30_000;

const GEN_DIR = new URL('../gen/', import.meta.url);
const WORKER = new URL('./worker.js', import.meta.url);
const NOOP = () => {};
const CLOSED = Object.freeze({ ok: false, trap: Object.freeze({ message: 'toolprune: the pruner was closed', limit: null }) });

/** Refused before instantiation: the component speaks another contract version. */
export class VersionError extends Error {
  constructor(found) {
    super(`toolprune: this component implements contract ${found}, this host needs ${CONTRACT}.x (rebuild or reinstall toolprune)`);
    this.name = 'VersionError';
    this.found = found;
  }
}

/**
 * The contract versions of the compiled core modules' `toolprune:pruner/*`
 * exports (and the resource imports jco gives them), read before anything
 * is instantiated. Throws a `VersionError` unless every one is 0.3.x.
 * Both manglings of core names are read: wit-bindgen's legacy one
 * (`toolprune:pruner/settings@0.3.0#version`) and the standard one
 * (`cm32p2|toolprune:pruner/settings@0.3|version`, which keeps only the
 * major.minor of a 0.x version).
 */
export function checkVersion(modules) {
  const found = new Set();
  const pattern = /toolprune:pruner\/[a-z0-9-]+@([^#|\s]+)/;
  for (const module of modules.values()) {
    const names = [
      ...WebAssembly.Module.exports(module).map((e) => e.name),
      ...WebAssembly.Module.imports(module).map((i) => i.module),
    ];
    for (const name of names) {
      const match = pattern.exec(name);
      if (match) found.add(match[1]);
    }
  }
  const versions = [...found].sort();
  const speaks = (v) => v === CONTRACT || v.startsWith(`${CONTRACT}.`);
  if (versions.length === 0 || !versions.every(speaks)) {
    throw new VersionError(versions.length === 0 ? 'none (no toolprune:pruner exports)' : versions.join(', '));
  }
  return versions;
}

const compiled = new Map();

/**
 * The core modules of jco's output in `genDir`, compiled once per process
 * and version-checked, and the URL of the bindings.
 */
export function loadComponent(genDir = GEN_DIR) {
  const dir = genDir instanceof URL ? genDir : new URL(`${String(genDir).replace(/\/?$/, '/')}`, `file://${process.cwd()}/`);
  const key = dir.href;
  let pending = compiled.get(key);
  if (!pending) {
    pending = (async () => {
      const bindingsUrl = new URL('toolprune.js', dir).href;
      let files;
      try {
        // jco names the core modules NAME.core.wasm, NAME.core2.wasm, …
        files = (await readdir(dir)).filter((f) => /\.core\d*\.wasm$/.test(f));
      } catch (cause) {
        throw new Error(`toolprune: no component bindings in ${dir.pathname}; run \`npm run build\` in hosts/js`, { cause });
      }
      if (files.length === 0) throw new Error(`toolprune: no core modules in ${dir.pathname}; run \`npm run build\` in hosts/js`);
      const compile = async (f) => {
        try {
          return [f, await WebAssembly.compile(await readFile(new URL(f, dir)))];
        } catch (cause) {
          throw new Error(`toolprune: ${f} in ${dir.pathname} is not a core module jco wrote; run \`npm run build\` in hosts/js`, { cause });
        }
      };
      const modules = new Map(await Promise.all(files.map(compile)));
      const versions = checkVersion(modules);
      return { bindingsUrl, modules, versions };
    })();
    compiled.set(key, pending);
    pending.catch(() => compiled.delete(key));
  }
  return pending;
}

/**
 * The guest's thread and the calls waiting for it. Answers are
 * `{ok: true, value}` or `{ok: false, trap: {message, limit}}` (the
 * instance was dropped; `limit` is `memory`, `wall_time` or null); a call
 * never throws for a guest failure.
 */
export class Engine {
  #component;
  #overrides;
  #worker = null;
  #port = null;
  /** Main → worker while the worker is inside the `scorer` import: scoring answers and nested calls. */
  #down = null;
  #signal = null;
  #nestedSeq = 0;
  #seq = 0;
  /** The call the worker has (or the worker's start): one at a time. */
  #inflight = null;
  /** Async calls not yet posted. */
  #queue = [];
  /** An `Atomics.waitAsync` is armed. */
  #waiting = false;
  #closed = false;
  #version = null;

  /** @private use `Engine.start` */
  constructor(component, overrides) {
    this.#component = component;
    this.#overrides = overrides;
  }

  /**
   * A started engine: the worker is up and has instantiated the component
   * (errors here are load errors). `overrides`: `{wallMs, memoryBytes}`
   * replacing the guest's per-call limits (tests).
   */
  static async start(component, overrides = {}) {
    const engine = new Engine(component, overrides);
    const boot = engine.#spawn();
    const answer = await boot;
    if (!answer.ok) {
      engine.close();
      throw new Error(`toolprune: cannot instantiate the component: ${answer.trap.message}`);
    }
    return engine;
  }

  /** `settings.version()` of the running component (`0.3.0`). */
  get version() {
    return this.#version;
  }

  /** Stops the worker; later calls fail open. */
  close() {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    worker?.terminate().catch(NOOP);
    const pending = [...(this.#inflight ? [this.#inflight] : []), ...this.#queue.splice(0)];
    this.#inflight = null;
    for (const entry of pending) entry.settle(CLOSED);
  }

  /**
   * One guest call, awaited without blocking the event loop. `args` may be
   * a function, evaluated when the call is posted (after every earlier
   * call has been answered and settled).
   */
  call(op, args, onAnswer) {
    return new Promise((resolve) => {
      const entry = { op, args, settle: (answer) => resolve(onAnswer ? onAnswer(answer) : answer) };
      if (this.#closed) return entry.settle(CLOSED);
      this.#queue.push(entry);
      this.#service();
    });
  }

  /**
   * One guest call, blocking (`Atomics.wait`) until its answer or its
   * limit. `onScore(request) → response`: answers the `scorer` import of
   * an import op (`pruneCall`, `judgeDecide`) on this thread; a throw
   * refuses it (the guest traps, the call fails open). Called from inside
   * `onScore`, a call runs nested on the worker's second instance.
   */
  callSync(op, args, onAnswer, onScore) {
    let answer;
    if (this.#inflight?.scoring) {
      answer = this.#nested(op, args);
      return onAnswer ? onAnswer(answer) : answer;
    }
    const entry = { op, args, onScore, settle: (a) => (answer = onAnswer ? onAnswer(a) : a), done: false };
    const settle = entry.settle;
    entry.settle = (a) => {
      entry.done = true;
      settle(a);
    };
    if (this.#closed) {
      entry.settle(CLOSED);
      return answer;
    }
    // Wait for the call in flight (or the worker's start); start a worker if there is none.
    for (;;) {
      this.#block(() => this.#inflight === null);
      if (this.#worker) break;
      this.#spawn();
    }
    this.#post(entry);
    this.#block(() => entry.done);
    // Calls queued by the async API meanwhile go on.
    this.#service();
    return answer;
  }

  // ----- the worker -----

  #spawn() {
    const { bindingsUrl, modules } = this.#component;
    const shared = new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT);
    const { port1, port2 } = new MessageChannel();
    const downChannel = new MessageChannel();
    const worker = new Worker(WORKER, {
      workerData: {
        bindingsUrl,
        modules: Object.fromEntries(modules),
        shared,
        port: port2,
        down: downChannel.port2,
        overrides: { wallMs: this.#overrides.wallMs, memoryBytes: this.#overrides.memoryBytes },
      },
      transferList: [port2, downChannel.port2],
      stdout: false,
      stderr: false,
    });
    worker.unref();
    worker.on('error', NOOP);
    worker.on('exit', () => this.#exited(worker));
    this.#worker = worker;
    this.#port = port1;
    this.#down = downChannel.port1;
    this.#signal = new Int32Array(shared);
    return new Promise((resolve) => {
      this.#inflight = {
        seq: 0,
        boot: true,
        postedAt: performance.now(),
        settle: (answer) => {
          if (answer.ok) this.#version = answer.value.version;
          resolve(answer);
        },
      };
      this.#service();
    });
  }

  /**
   * The worker stopped without being asked (a crash): its call fails open;
   * the next call starts another worker (not at once: a worker that cannot
   * start must not be restarted in a loop).
   */
  #exited(worker) {
    if (worker !== this.#worker || this.#closed) return;
    const entry = this.#inflight;
    this.#inflight = null;
    this.#worker = null;
    entry?.settle({ ok: false, trap: { message: 'toolprune: the guest worker exited', limit: null } });
    this.#service();
  }

  /** After a kill: a fresh worker at once (its start overlaps the caller's work). */
  #respawn() {
    if (this.#closed) return;
    this.#spawn().then((answer) => {
      if (answer.ok) return;
      // The component cannot be instantiated any more: fail what waits.
      for (const entry of this.#queue.splice(0)) entry.settle({ ok: false, trap: answer.trap });
    });
  }

  /** Terminates the worker that holds `entry` past its limit, and starts another. */
  #kill(entry, trap) {
    const worker = this.#worker;
    const signal = this.#signal;
    this.#worker = null;
    this.#inflight = null;
    worker?.terminate().catch(NOOP);
    // Wake an `Atomics.waitAsync` armed on the old worker's signal.
    Atomics.notify(signal, 0);
    this.#respawn();
    entry.settle({ ok: false, trap });
  }

  // ----- calls -----

  #post(entry) {
    entry.seq = ++this.#seq;
    const args = typeof entry.args === 'function' ? entry.args() : entry.args;
    entry.postedAt = performance.now();
    this.#inflight = entry;
    this.#worker.postMessage({ seq: entry.seq, op: entry.op, args });
  }

  /** Takes every answer the worker posted; notes when the in-flight call started. */
  #drain() {
    let progressed = false;
    const signal = this.#signal;
    const entry = this.#inflight;
    if (entry && !entry.boot && entry.startedAt === undefined && Atomics.load(signal, 1) === entry.seq) {
      entry.startedAt = performance.now();
      entry.wallMs = Atomics.load(signal, 2);
      progressed = true;
    }
    for (;;) {
      const received = this.#port && receiveMessageOnPort(this.#port);
      if (!received) return progressed;
      progressed = true;
      const answer = received.message;
      const current = this.#inflight;
      if (!current || current.seq !== answer.seq) continue;
      if (answer.score !== undefined) {
        this.#score(current, answer.score);
        continue;
      }
      this.#inflight = null;
      current.settle(answer.ok ? { ok: true, value: answer.value, guestMs: answer.guestMs } : { ok: false, trap: answer.trap });
    }
  }

  /**
   * The worker's `scorer` import asks for `request` on behalf of `entry`:
   * `entry.onScore` answers it here (the wall-time clock stops meanwhile),
   * then the answer goes down to the worker. Without `onScore` (never on
   * the jobs path), or when it throws, the import is refused (a trap).
   */
  #score(entry, request) {
    const signal = this.#signal;
    const down = this.#down;
    const from = performance.now();
    let message;
    entry.scoring = true;
    try {
      if (typeof entry.onScore !== 'function') throw new Error('toolprune: this call has no scorer');
      message = { seq: entry.seq, response: entry.onScore(request) };
    } catch (error) {
      message = { seq: entry.seq, refused: String(error?.message ?? error) };
    } finally {
      entry.scoring = false;
      entry.pausedMs = (entry.pausedMs ?? 0) + (performance.now() - from);
    }
    // A nested call that ran past its limit killed the worker meanwhile: the entry is settled.
    if (this.#inflight !== entry) return;
    down.postMessage(message);
    Atomics.add(signal, 3, 1);
    Atomics.notify(signal, 3);
  }

  /**
   * A guest call from inside `onScore`, while the worker is inside the
   * import: run on the worker's second instance, within `BOOTSTRAP_MS`
   * (past it the worker is terminated and the scored call fails open).
   */
  #nested(op, args) {
    const entry = this.#inflight;
    const signal = this.#signal;
    const port = this.#port;
    const id = ++this.#nestedSeq;
    this.#down.postMessage({ nested: id, op, args: typeof args === 'function' ? args() : args });
    Atomics.add(signal, 3, 1);
    Atomics.notify(signal, 3);
    const until = performance.now() + BOOTSTRAP_MS;
    for (;;) {
      const seen = Atomics.load(signal, 0);
      const received = receiveMessageOnPort(port);
      if (received) {
        const m = received.message;
        if (m.nested !== id) continue;
        return m.ok ? { ok: true, value: m.value } : { ok: false, trap: m.trap };
      }
      const left = until - performance.now();
      if (left <= 0) {
        const trap = { message: `toolprune: a guest call made while scoring did not answer within ${BOOTSTRAP_MS} ms`, limit: 'wall_time' };
        if (this.#inflight === entry) this.#kill(entry, trap);
        return { ok: false, trap };
      }
      Atomics.wait(signal, 0, seen, left);
    }
  }

  /** When the in-flight call must have answered (performance.now() ms); the time spent scoring does not count. */
  #limitOf(entry) {
    if (entry.startedAt === undefined) return entry.postedAt + BOOTSTRAP_MS;
    return entry.startedAt + (entry.wallMs > 0 ? entry.wallMs : BOOTSTRAP_MS) + (entry.pausedMs ?? 0);
  }

  /** Past the in-flight call's limit: terminate the worker, fail the call. */
  #overdue() {
    const entry = this.#inflight;
    // While this thread scores for the call (an async call made from inside `onScore`), its clock is stopped.
    if (!entry || entry.scoring || performance.now() < this.#limitOf(entry)) return false;
    if (entry.startedAt === undefined) {
      this.#kill(entry, { message: `toolprune: the guest did not start the call within ${BOOTSTRAP_MS} ms`, limit: null });
    } else {
      const ms = entry.wallMs > 0 ? entry.wallMs : BOOTSTRAP_MS;
      this.#kill(entry, { message: `toolprune: the guest ran past its wall-time limit (${ms} ms); its worker was terminated`, limit: 'wall_time' });
    }
    return true;
  }

  #postNext() {
    if (this.#inflight || this.#queue.length === 0 || this.#closed) return false;
    if (!this.#worker) {
      this.#spawn().then((answer) => {
        if (!answer.ok) for (const entry of this.#queue.splice(0)) entry.settle({ ok: false, trap: answer.trap });
      });
      return true;
    }
    this.#post(this.#queue.shift());
    return true;
  }

  /** Blocks the thread until `done()` (answers arrive, limits are enforced meanwhile). */
  #block(done) {
    for (;;) {
      const signal = this.#signal;
      const seen = Atomics.load(signal, 0);
      this.#drain();
      if (this.#overdue()) continue;
      if (done()) return;
      const entry = this.#inflight;
      if (!entry) {
        // Only the async queue can be left: post its head and wait for it.
        if (!this.#postNext()) return;
        continue;
      }
      Atomics.wait(signal, 0, seen, Math.max(0, this.#limitOf(entry) - performance.now()));
    }
  }

  /** Drives the async calls: drain, enforce the limit, post the next, arm a wait. */
  #service() {
    for (;;) {
      if (!this.#signal) return;
      const signal = this.#signal;
      const seen = Atomics.load(signal, 0);
      let progressed = this.#drain();
      progressed = this.#overdue() || progressed;
      progressed = this.#postNext() || progressed;
      const entry = this.#inflight;
      if (!entry) return;
      if (progressed) continue;
      if (this.#waiting) return;
      this.#waiting = true;
      const left = Math.max(1, Math.ceil(this.#limitOf(entry) - performance.now()));
      // The worker is unref'd and a pending `Atomics.waitAsync` does not
      // keep Node's event loop alive: this timer does, while a caller
      // awaits the answer. It also wakes the service itself: under load
      // the wait's own timeout can be delivered after the timer, and the
      // loop would otherwise end with the caller's promise pending.
      let woken = false;
      const wake = () => {
        if (woken) return;
        woken = true;
        clearTimeout(keepAlive);
        this.#waiting = false;
        this.#service();
      };
      const keepAlive = setTimeout(wake, left + 1);
      const wait = Atomics.waitAsync(signal, 0, seen, left);
      if (wait.async) wait.value.then(wake);
      else queueMicrotask(wake);
      return;
    }
  }
}
