// The session store on disk, in the Rust CLI's format (cli/src/store.rs,
// SPEC §10), and its log file (cli/src/logfile.rs, SPEC §12): what the
// OpenCode plugin (src/opencode.js) writes, so that `toolprune stats`,
// `toolprune doctor` and `toolprune mcp` read OpenCode sessions as they
// read the hooks' ones.
//
//   <root>/                      0700, owned by the user (else refused)
//     toolprune.log[.1…4]        `<unix s> session=TAG [id=Pn] LINE`, counts only, 0600, rotated at 1 MiB
//     <agent>-<hash>/            0700; hash = sha256(agent \0 session id)[..32 hex]
//       state.json               {"count": N, "records": [[n, chars], …], "calls": {"n": key, …}}
//                                (`calls`: the repeat gate's keys of the held records, digests; absent when none)
//       request.json             {"request": "<the turn's prompt>", "at": <unix s>}
//       P<n>.json                {"id": "Pn", "chars": N, "data": "<the guest's encoding>"[, "call": "<key>"]}
//
// Every file is written to a 0600 temporary file in its directory and
// renamed into place, so a reader (the Rust CLI) sees whole files. Node has
// no `flock`: this writer does not take the session's `lock`. It is the
// only writer of its sessions (one OpenCode process runs a session; its
// calls are serialised by the pruner's one guest call at a time); readers
// never see half a file. Nothing here logs; errors are thrown (`StoreError`)
// and the caller fails open.

import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';

/** Characters of a prompt the session keeps (cli/src/store.rs `REQUEST_KEPT_CHARS`). */
export const REQUEST_KEPT_CHARS = 65_536;

/** The first `n` characters (Unicode scalar values, as the guest counts) of `text`. */
function firstChars(text, n) {
  let count = 0;
  for (let i = 0; i < text.length; ) {
    if (count === n) return text.slice(0, i);
    const code = text.codePointAt(i);
    i += code > 0xffff ? 2 : 1;
    count += 1;
  }
  return text;
}

/** A store that cannot be used (unreadable, not private, corrupt); the message names paths, never content. */
export class StoreError extends Error {
  constructor(message) {
    super(message);
    this.name = 'StoreError';
  }
}

/** The log file's name in the root, its rotation size and how many rotated files are kept (logfile.rs). */
export const LOG_FILE = 'toolprune.log';
export const LOG_MAX_BYTES = 1 << 20;
export const LOG_ROTATED = 4;
/** The age sweep runs at most this often (store.rs `SWEEP_EVERY`). */
export const SWEEP_EVERY_S = 3600;

const uid = () => (typeof process.geteuid === 'function' ? process.geteuid() : null);
const nowS = () => Math.floor(Date.now() / 1000);

/**
 * The root the environment names, as the Rust CLI finds it:
 * `TOOLPRUNE_STORE_DIR`, else `XDG_RUNTIME_DIR/toolprune`, else
 * `XDG_CACHE_HOME/toolprune/sessions`, else `HOME/.cache/toolprune/sessions`;
 * null when none is set.
 */
export function defaultRoot(env = process.env) {
  const v = (name) => (typeof env[name] === 'string' && env[name] !== '' ? env[name] : null);
  if (v('TOOLPRUNE_STORE_DIR')) return v('TOOLPRUNE_STORE_DIR');
  if (v('XDG_RUNTIME_DIR')) return join(v('XDG_RUNTIME_DIR'), 'toolprune');
  if (v('XDG_CACHE_HOME')) return join(v('XDG_CACHE_HOME'), 'toolprune', 'sessions');
  if (v('HOME')) return join(v('HOME'), '.cache', 'toolprune', 'sessions');
  return null;
}

/** Refuses what is not a directory of this user, private (0700), reached without a symbolic link. */
function checkPrivate(dir) {
  let st;
  try {
    st = lstatSync(dir);
  } catch (error) {
    throw new StoreError(`cannot read ${dir}: ${error.code ?? error.message}`);
  }
  if (!st.isDirectory()) throw new StoreError(`${dir} is not a directory`);
  const me = uid();
  if (me !== null && st.uid !== me) throw new StoreError(`${dir} belongs to another user`);
  if ((st.mode & 0o077) !== 0) throw new StoreError(`${dir} is accessible to others (mode ${(st.mode & 0o777).toString(8)}); expected 0700`);
}

function privateDir(dir) {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if (error.code !== 'EEXIST') throw new StoreError(`cannot create ${dir}: ${error.code ?? error.message}`);
  }
  checkPrivate(dir);
}

/** Creates `path` (which must not exist) 0600 and writes `bytes`. */
function writePrivate(path, bytes) {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
}

/** Writes `name` in `dir` atomically: a 0600 temporary file, then a rename. */
function writeAtomic(dir, name, text) {
  const tmp = join(dir, `.${name}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const target = join(dir, name);
  try {
    writePrivate(tmp, Buffer.from(text, 'utf8'));
    renameSync(tmp, target);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw new StoreError(`cannot write ${target}: ${error.code ?? error.message}`);
  }
}

/** A file's text, or null when it does not exist; never through a symbolic link. */
function readOptional(path) {
  let fd;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw new StoreError(`cannot read ${path}: ${error.code ?? error.message}`);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new StoreError(`${path} is not a regular file`);
    return readFileSync(fd, 'utf8');
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new StoreError(`cannot read ${path}: ${error.code ?? error.message}`);
  } finally {
    closeSync(fd);
  }
}

function parseJson(path, text) {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StoreError(`${path} is corrupt: ${error.message}`);
  }
}

/** `P3` → 3; null for anything else. */
function numberOf(id) {
  return typeof id === 'string' && /^P[0-9]+$/.test(id) ? Number(id.slice(1)) : null;
}

/**
 * The directory name of a session: `<label>-<sha256(agent \0 id)[..32]>`
 * (the raw id never appears in a path; the label is `agent` lowercased,
 * other characters than `[a-z0-9-]` as `-`). As `Root::session_name`.
 */
export function sessionName(agent, sessionId) {
  const label = [...agent.toLowerCase()].map((c) => (/^[a-z0-9-]$/.test(c) ? c : '-')).join('');
  const hash = createHash('sha256').update(agent, 'utf8').update(Buffer.from([0])).update(sessionId, 'utf8').digest('hex');
  return `${label}-${hash.slice(0, 32)}`;
}

/** The store's root: private to the user. */
export class Root {
  #dir;

  /** The root at `dir`, created 0700 (parents as needed). Throws a `StoreError` when it is not a private directory of this user. */
  constructor(dir) {
    if (typeof dir !== 'string' || dir === '') throw new StoreError('no store directory (HOME, XDG_RUNTIME_DIR or TOOLPRUNE_STORE_DIR)');
    try {
      mkdirSync(dirname(dir), { recursive: true });
    } catch (error) {
      throw new StoreError(`cannot create ${dirname(dir)}: ${error.code ?? error.message}`);
    }
    privateDir(dir);
    this.#dir = dir;
  }

  /** The root the environment names (`defaultRoot`). */
  static fromEnv(env = process.env) {
    return new Root(defaultRoot(env));
  }

  get path() {
    return this.#dir;
  }

  /** The session of `agent`'s conversation `sessionId`, its directory created 0700. */
  session(agent, sessionId, bounds) {
    if (typeof sessionId !== 'string' || sessionId.trim() === '') throw new StoreError('empty session id');
    const name = sessionName(agent, sessionId);
    const dir = join(this.#dir, name);
    privateDir(dir);
    return new Session(this, dir, name, bounds);
  }

  /** The session if its directory exists (nothing is created), else null. */
  existingSession(agent, sessionId, bounds) {
    if (typeof sessionId !== 'string' || sessionId.trim() === '') return null;
    const name = sessionName(agent, sessionId);
    const dir = join(this.#dir, name);
    try {
      lstatSync(dir);
    } catch {
      return null;
    }
    checkPrivate(dir);
    return new Session(this, dir, name, bounds);
  }

  /**
   * Appends `<unix s> [session=TAG] [id=Pn] LINE` to `<root>/toolprune.log`
   * (0600, never through a link; rotated before it would pass 1 MiB, as
   * logfile.rs). Control characters in `line` become `_`. Never throws.
   */
  log(line, { tag, id } = {}) {
    try {
      let text = String(nowS());
      if (tag) text += ` session=${field(tag)}`;
      if (id) text += ` id=${field(id)}`;
      text += ` ${[...line].map((c) => (/\p{Cc}/u.test(c) ? '_' : c)).join('')}\n`;
      const bytes = Buffer.from(text, 'utf8');
      const path = join(this.#dir, LOG_FILE);
      let size = 0;
      try {
        const st = lstatSync(path);
        size = st.size;
      } catch {
        // not there yet
      }
      if (size > 0 && size + bytes.length > LOG_MAX_BYTES) this.#rotate();
      const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
      try {
        const st = fstatSync(fd);
        const me = uid();
        if (!st.isFile() || (me !== null && st.uid !== me)) return;
        writeSync(fd, bytes);
      } finally {
        closeSync(fd);
      }
    } catch {
      // Writing the log never fails a door.
    }
  }

  /**
   * Deletes session directories untouched for `maxAgeS` seconds (their
   * newest file), at most once per `SWEEP_EVERY_S` (a `.swept` stamp in the
   * root, shared with the Rust CLI's `Root::sweep`). Returns how many were
   * deleted. Never throws.
   */
  sweep(maxAgeS) {
    let deleted = 0;
    try {
      const stamp = join(this.#dir, '.swept');
      try {
        if (Date.now() - lstatSync(stamp).mtimeMs < SWEEP_EVERY_S * 1000) return 0;
      } catch {
        // never swept
      }
      rmSync(stamp, { force: true });
      writePrivate(stamp, Buffer.from(String(nowS())));
      for (const entry of readdirSync(this.#dir, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        const dir = join(this.#dir, entry.name);
        let newest = lstatSync(dir).mtimeMs;
        for (const name of readdirSync(dir)) {
          try {
            newest = Math.max(newest, lstatSync(join(dir, name)).mtimeMs);
          } catch {
            // gone meanwhile
          }
        }
        if (Date.now() - newest > maxAgeS * 1000) {
          rmSync(dir, { recursive: true, force: true });
          deleted += 1;
        }
      }
    } catch {
      // a sweep that cannot run is retried next time
    }
    return deleted;
  }

  #rotate() {
    const at = (n) => join(this.#dir, n === 0 ? LOG_FILE : `${LOG_FILE}.${n}`);
    rmSync(at(LOG_ROTATED), { force: true });
    for (let n = LOG_ROTATED - 1; n >= 0; n--) {
      try {
        renameSync(at(n), at(n + 1));
      } catch {
        // a missing file is fine
      }
    }
  }
}

/** `[A-Za-z0-9_-]`, at most 64 characters; `-` when empty (logfile.rs `field`). */
function field(value) {
  const v = [...String(value)].slice(0, 64).map((c) => (/^[A-Za-z0-9_-]$/.test(c) ? c : '_')).join('');
  return v === '' ? '-' : v;
}

/**
 * One conversation's directory. A `resultStore` for `pruner.conversation`
 * (`count`, `push`, `find`), plus the turn's request. `bounds`
 * (`{maxRecords, maxChars}`, the configuration's `[store]`): after each
 * push the oldest records are evicted until they hold.
 */
export class Session {
  #root;
  #dir;
  #name;
  #bounds;

  /** @private use `root.session(agent, sessionId, bounds)` */
  constructor(root, dir, name, bounds) {
    this.#root = root;
    this.#dir = dir;
    this.#name = name;
    this.#bounds = bounds ?? null;
  }

  get path() {
    return this.#dir;
  }

  /** The session's tag in log lines: the first 16 hex digits of its directory's hash, never the id. */
  get tag() {
    return this.#name.slice(this.#name.lastIndexOf('-') + 1, this.#name.lastIndexOf('-') + 17);
  }

  /** Appends `line` to the root's log with this session's tag (and `id`). Never throws. */
  log(line, id) {
    this.#root.log(line, { tag: this.tag, id });
  }

  #state() {
    const path = join(this.#dir, 'state.json');
    const text = readOptional(path);
    if (text === null) return { count: 0, records: [], calls: {} };
    const state = parseJson(path, text);
    const ok =
      state &&
      Number.isInteger(state.count) &&
      state.count >= 0 &&
      Array.isArray(state.records) &&
      state.records.every((r) => Array.isArray(r) && r.length === 2 && Number.isInteger(r[0]) && Number.isInteger(r[1])) &&
      (state.calls === undefined || (state.calls !== null && typeof state.calls === 'object' && !Array.isArray(state.calls) && Object.values(state.calls).every((k) => typeof k === 'string')));
    if (!ok) throw new StoreError(`${path} is corrupt: not {"count", "records"[, "calls"]}`);
    return { count: state.count, records: state.records, calls: state.calls ?? {} };
  }

  /** Writes the index as the Rust CLI does (`calls` only when it holds a key). */
  #writeState(count, records, calls) {
    const state = { count, records };
    if (Object.keys(calls).length > 0) state.calls = calls;
    writeAtomic(this.#dir, 'state.json', JSON.stringify(state));
  }

  /** Results ever stored in the conversation (never lowered by eviction). */
  count() {
    return this.#state().count;
  }

  /**
   * Keeps `record` (the guest's `{id, chars, call, data}`), which must be
   * `P{count + 1}`; evicts the oldest past the bounds. Throws a
   * `StoreError` (nothing changed) otherwise. `call` (the repeat gate's
   * key, never the arguments) is written when the guest gave one; readers
   * that do not know it ignore it.
   */
  push(record) {
    const state = this.#state();
    const number = state.count + 1;
    if (numberOf(record?.id) !== number) throw new StoreError("the record's id is not the number it was given");
    const chars = Number(record.chars);
    const call = typeof record.call === 'string' ? record.call : undefined;
    writeAtomic(this.#dir, `P${number}.json`, JSON.stringify({ id: record.id, chars, call, data: record.data }));
    const records = [...state.records, [number, chars]];
    let total = records.reduce((sum, [, c]) => sum + c, 0);
    const evicted = [];
    if (this.#bounds) {
      const { maxRecords, maxChars } = this.#bounds;
      while (records.length > 0 && (records.length > maxRecords || total > maxChars)) {
        const [n, c] = records.shift();
        total -= c;
        evicted.push(n);
      }
    }
    const calls = { ...state.calls };
    if (call !== undefined) calls[String(number)] = call;
    for (const n of evicted) delete calls[String(n)];
    try {
      this.#writeState(number, records, calls);
    } catch (error) {
      rmSync(join(this.#dir, `P${number}.json`), { force: true });
      throw error;
    }
    for (const n of evicted) {
      rmSync(join(this.#dir, `P${n}.json`), { force: true });
      rmSync(join(this.#dir, `P${n}.body`), { force: true });
    }
  }

  /** The held record with this id (`{id, chars: bigint, data}`), or undefined when it was never stored or was evicted. */
  find(id) {
    const number = numberOf(id);
    if (number === null) return undefined;
    if (!this.#state().records.some(([n]) => n === number)) return undefined;
    const path = join(this.#dir, `P${number}.json`);
    const text = readOptional(path);
    if (text === null) return undefined;
    const file = parseJson(path, text);
    if (!file || file.id !== `P${number}` || !Number.isInteger(file.chars) || typeof file.data !== 'string') return undefined;
    return { id: file.id, chars: BigInt(file.chars), call: typeof file.call === 'string' ? file.call : undefined, data: file.data };
  }

  /**
   * The `call` keys of the held records, oldest first (the repeat gate,
   * SPEC §2): the same tool with the same arguments as a pruned result
   * passes unpruned. Read from the index (`state.json` `calls`, as the Rust
   * CLI writes it); records written without a key give none.
   */
  calls() {
    const state = this.#state();
    return state.records.map(([n]) => state.calls[String(n)]).filter((k) => typeof k === 'string');
  }

  /**
   * Records the turn's request (replaces the previous one): its first
   * 65,536 characters, as the Rust CLI keeps them (`REQUEST_KEPT_CHARS` in
   * cli/src/store.rs; the guest's basis takes far fewer).
   */
  recordRequest(request, cwd) {
    const record = { request: firstChars(request, REQUEST_KEPT_CHARS), at: nowS() };
    if (typeof cwd === 'string') record.cwd = cwd;
    writeAtomic(this.#dir, 'request.json', JSON.stringify(record));
  }

  /** The latest recorded request (`{request, at, cwd?}`), or null. */
  request() {
    const path = join(this.#dir, 'request.json');
    const text = readOptional(path);
    if (text === null) return null;
    const record = parseJson(path, text);
    return record && typeof record.request === 'string' ? record : null;
  }

  /**
   * The session's end (store.rs `Session::end`): deletes the request and
   * the records, keeps `state.json` with the counter (a tombstone), so that
   * an old id answers `not_found`, never another text.
   */
  end() {
    const state = this.#state();
    this.#writeState(state.count, [], {});
    for (const name of readdirSync(this.#dir)) {
      const ours = name === 'request.json' || (name.startsWith('P') && (name.endsWith('.json') || name.endsWith('.body'))) || (name.startsWith('.') && name.endsWith('.tmp'));
      if (ours) rmSync(join(this.#dir, name), { force: true });
    }
  }

  /** The session directory's file names (tests). */
  files() {
    return readdirSync(this.#dir).sort();
  }
}
