// The public entry point: the component loaded (compiled once per process,
// version-checked, running in its worker), conversations, and the guest's
// settings and inspection calls.

import { isUtf8 } from 'node:buffer';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

import { Conversation, GUEST, checkDialect, checkLang, checkResultStore, defaultLog, wellFormed } from './conversation.js';
import { Engine, loadComponent } from './engine.js';
import { ConfigError, JevScorer } from './jev.js';
import { route, routeSync } from './judge.js';
import { checkScorer } from './scoring.js';
import * as wit from './wit.js';

const KEY = Symbol('toolprune.pruner');
let shared = null;

function guestError(answer) {
  const error = new Error(`toolprune: the component failed (guest_trap): ${answer.trap.message}`);
  error.reason = 'guest_trap';
  error.limit = answer.trap.limit ?? null;
  return error;
}

const LIMIT_KEYS = ['wallMs', 'memoryBytes', 'work'];

/**
 * The most of a config file read: one byte more than the guest accepts
 * (guest/src/limits.rs `CONFIG_MAX_BYTES`, 1 MiB), so that its size check
 * fires on a larger file with its own line (`settings.resolve`).
 */
const CONFIG_READ_MAX = (1 << 20) + 1;

/**
 * The config file at `path` as text, read as the Rust host reads it:
 * undefined when there is none; a ConfigError (one line naming the path)
 * when it is not a regular file — opened without blocking, so a FIFO
 * cannot hang — cannot be read, or is not UTF-8. At most
 * `CONFIG_READ_MAX` bytes are read: past the guest's bound the text is
 * only there to be refused for its size (a character cut at the end
 * becomes U+FFFD, which keeps it over).
 */
function readConfigFile(path) {
  let fd;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    if (error?.code === 'ENOENT') return undefined;
    throw new ConfigError(`cannot read ${path}: ${error.message}`);
  }
  let bytes;
  try {
    if (!fstatSync(fd).isFile()) throw new ConfigError(`cannot read ${path}: not a regular file`);
    const buffer = Buffer.allocUnsafe(CONFIG_READ_MAX);
    let length = 0;
    while (length < buffer.length) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    bytes = buffer.subarray(0, length);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`cannot read ${path}: ${error.message}`);
  } finally {
    closeSync(fd);
  }
  if (bytes.length < CONFIG_READ_MAX && !isUtf8(bytes)) {
    // The Rust host's words (`read_to_string`'s error).
    throw new ConfigError(`cannot read ${path}: stream did not contain valid UTF-8`);
  }
  return bytes.toString('utf8');
}

function checkLimits(limits) {
  if (limits === undefined || limits === null) return {};
  if (typeof limits !== 'object') throw new TypeError('toolprune: limits must be an object { wallMs, memoryBytes, work }');
  const out = {};
  for (const key of LIMIT_KEYS) {
    const v = limits[key];
    if (v === undefined) continue;
    const whole = key === 'work' ? (typeof v === 'bigint' ? v >= 0n : Number.isSafeInteger(v) && v >= 0) : Number.isInteger(v) && v > 0;
    if (!whole) throw new TypeError(`toolprune: limits.${key} must be a ${key === 'work' ? 'whole number' : 'positive integer'}`);
    out[key] = v;
  }
  for (const key of Object.keys(limits)) {
    if (!(key in out) && limits[key] !== undefined) throw new TypeError(`toolprune: unknown limit ${key} (this host has ${LIMIT_KEYS.join(', ')}; no fuel)`);
  }
  return out;
}

/**
 * The toolprune component, compiled once per process, checked to speak
 * contract 0.3.x, running in a worker thread. Make one with
 * `await Pruner.load(options)`; then one `pruner.conversation()` per agent
 * conversation.
 */
export class Pruner {
  #engine;
  #scorer;
  #defaults;
  #workBudget;
  #toolName = null;

  /** @private use `Pruner.load` */
  constructor(key, engine) {
    if (key !== KEY) throw new TypeError('toolprune: use `await Pruner.load(options)`');
    this.#engine = engine;
  }

  /**
   * Loads the component (compiled once per process and `genDir`) and starts
   * its worker. Before anything is instantiated, every `toolprune:pruner/*`
   * export must be contract 0.3.x (else a `VersionError` naming both).
   *
   * - `scorer`: `'offline'` (default: the guest's lexical scorer, nothing
   *   leaves the machine), `'stub'`, `'jev'` (from `env` through the guest's
   *   configuration; a `ConfigError` if it is incomplete), or a scorer object;
   * - `limits`: `{ wallMs, memoryBytes }` replacing the guest's per-call
   *   safety nets (`settings.call-limits-for`) for every call, and `work`
   *   replacing the guest's work budget of every result
   *   (`prune-input.work-budget`, SPEC §7: past it, `failed`,
   *   `reason=budget`): tests only;
   * - `genDir`: where `npm run build` wrote the bindings (default `gen/`);
   * - `env`: the environment for `scorer: 'jev'` (default `process.env`).
   */
  static async load({ scorer = 'offline', limits, genDir, env = process.env } = {}) {
    const overrides = checkLimits(limits);
    const chosen = scorer === 'jev' ? null : checkScorer(scorer);
    const component = await loadComponent(genDir);
    const engine = await Engine.start(component, { wallMs: overrides.wallMs, memoryBytes: overrides.memoryBytes });
    const pruner = new Pruner(KEY, engine);
    pruner.#workBudget = overrides.work;
    try {
      const defaults = engine.callSync('resolve', { env: [], file: undefined });
      if (!defaults.ok) throw guestError(defaults);
      pruner.#defaults = wit.config(defaults.value.val);
      if (chosen) {
        pruner.#scorer = chosen;
      } else {
        const config = pruner.config(env);
        const jev = JevScorer.fromConfig(config, env);
        if (!jev) throw new ConfigError(`no Jev token: set ${config.tokenVariable}`);
        pruner.#scorer = checkScorer(jev);
      }
    } catch (error) {
      engine.close();
      throw error;
    }
    return pruner;
  }

  /** A process-wide offline pruner, loaded on first use (for `JevScorer.fromEnv`, the CLI). */
  static shared() {
    shared ??= Pruner.load().catch((error) => {
      shared = null;
      throw error;
    });
    return shared;
  }

  /** The component's contract version (`settings.version()`, e.g. `0.3.0`). */
  get version() {
    return this.#engine.version;
  }

  /** The default scorer's name (`offline`, `stub`, `jev`, …). */
  get scorerName() {
    return this.#scorer.name;
  }

  /** The guest's defaults (`settings.resolve([], none)`): threshold, lang, store limits, … */
  get defaults() {
    return this.#defaults;
  }

  /**
   * One agent conversation (ids unique across its turns, a bounded store
   * for `omitted`). Options (every one optional):
   * - `enabled` (false: SPEC §2, off unless turned on);
   * - `threshold`: a number or the user's text (`'0.30'`), checked by the
   *   guest (`settings.threshold`, SPEC §6); a value it refuses is
   *   refused here with a RangeError holding the guest's message. Default:
   *   the guest's;
   * - `lang` (`'en'` / `'ja'`; default the guest's), `agent` (log label,
   *   default `agent`), `scorer` (default the pruner's), `jevModel` (the
   *   model named in Jev bodies; default the scorer's);
   * - `log`: `(line) => void` for the log lines (default stderr; what it
   *   throws is dropped, the result is returned as computed);
   * - `store`: `{ maxRecords, maxChars }` (default the guest's);
   * - `resultStore`: where the counter and the pruned results are kept
   *   instead of process memory, as the Rust host's `ResultStore` (an
   *   on-disk session shared by processes: `toolprune/store`): an object
   *   `{ count() → number, push(record), find(id) → record | undefined,
   *   calls?() → string[] }`, each synchronous. `push` gets the guest's
   *   stored result (`{id, chars: bigint, call, data}`) numbered
   *   `count() + 1`, keeps it and applies its own bounds; it must throw for
   *   a record of any other number. `calls()` gives the `call` keys of the
   *   records it holds (the repeat gate, SPEC §2; without it no repeat is
   *   detected). A store that
   *   throws fails the result open (the text unchanged, no id, `reason=store`)
   *   or makes `omitted` answer "unavailable";
   * - `deadlineCapMs`: **tests only**, the deadline used is
   *   `min(policy.deadline-ms, deadlineCapMs)`.
   */
  conversation(options = {}) {
    const d = this.#defaults;
    const {
      enabled = false,
      threshold,
      lang = d.lang,
      agent = 'agent',
      scorer,
      jevModel,
      log = defaultLog,
      store = {},
      resultStore,
      deadlineCapMs,
    } = options ?? {};
    const results = checkResultStore(resultStore);
    checkLang(lang);
    if (typeof agent !== 'string') throw new TypeError('toolprune: agent must be a string');
    if (typeof log !== 'function') throw new TypeError('toolprune: log must be a function');
    if (jevModel !== undefined && typeof jevModel !== 'string') throw new TypeError('toolprune: jevModel must be a string');
    if (deadlineCapMs !== undefined && !(Number.isFinite(deadlineCapMs) && deadlineCapMs >= 0)) {
      throw new TypeError('toolprune: deadlineCapMs must be a number ≥ 0');
    }
    const limits = {
      maxRecords: store?.maxRecords ?? d.store.maxRecords,
      maxChars: store?.maxChars ?? d.store.maxChars,
    };
    for (const [key, v] of Object.entries(limits)) {
      if (!Number.isInteger(v) || v < 0) throw new TypeError(`toolprune: store.${key} must be a whole number`);
    }
    const checked = threshold === undefined ? d.threshold : this.threshold(threshold);
    const chosen = scorer === undefined ? this.#scorer : checkScorer(scorer);
    return new Conversation(
      this.#engine,
      Object.freeze({
        enabled: enabled === true,
        threshold: checked,
        lang,
        agent,
        jevModel,
        log,
        store: Object.freeze(limits),
        deadlineCapMs,
        workBudget: this.#workBudget,
      }),
      chosen,
      results,
    );
  }

  /**
   * A threshold as a user wrote it (a number or text), checked by the
   * guest (`settings.threshold(String(value))`): the number, or a
   * RangeError with the guest's message (SPEC §6: refused, never replaced).
   */
  threshold(value) {
    const answer = this.#engine.callSync('threshold', { value: String(value).toWellFormed() });
    if (!answer.ok) throw guestError(answer);
    if (answer.value.tag === 'err') {
      const error = new RangeError(`toolprune: ${answer.value.val}`);
      error.guestMessage = answer.value.val;
      throw error;
    }
    return answer.value.val;
  }

  /**
   * The configuration the guest resolves (defaults < config file <
   * environment, `settings.resolve`) from `env`: only the variables the
   * guest names (`settings.variables`) are passed in, and the file at
   * `settings.config-path` (a regular file, UTF-8, read no further than
   * one byte past the guest's 1 MiB bound). A `ConfigError` says what is
   * wrong (never the file's content). The token is not read here: see
   * `JevScorer.fromConfig`.
   */
  config(env = process.env) {
    const engine = this.#engine;
    const names = engine.callSync('variables', {});
    if (!names.ok) throw guestError(names);
    const pairs = names.value.filter((n) => typeof env[n] === 'string').map((n) => [n, env[n].toWellFormed()]);
    const path = engine.callSync('configPath', { env: pairs });
    if (!path.ok) throw guestError(path);
    const file = path.value === undefined ? undefined : readConfigFile(path.value);
    const resolved = engine.callSync('resolve', { env: pairs, file });
    if (!resolved.ok) throw guestError(resolved);
    if (resolved.value.tag === 'err') throw new ConfigError(resolved.value.val);
    return wit.config(resolved.value.val);
  }

  /**
   * Whether a tool's results may be pruned (`settings.is-tool-prunable`, SPEC §2):
   * `tool` is its name, or every name the caller knows for it (`['read_file',
   * 'mcp__fetch__read_file', 'mcp_fetch_read_file']`). Never when any name is a
   * file reader, shell, editor or `omitted`; else when any name matches a glob.
   */
  isPrunable(tool, globs) {
    const names = typeof tool === 'string' ? [tool] : tool;
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string') || !Array.isArray(globs) || !globs.every((g) => typeof g === 'string')) {
      throw new TypeError('toolprune: isPrunable(tool: string | string[], globs: string[])');
    }
    const answer = this.#engine.callSync('isToolPrunable', { names: names.map((n) => n.toWellFormed()), globs: globs.map((g) => g.toWellFormed()) });
    if (!answer.ok) throw guestError(answer);
    return answer.value;
  }

  /**
   * How pruning would split `text` (`pruner.inspect`, SPEC §14): the shape
   * (null: structured JSON, not pruned), a wrapper's string literal span
   * (bytes), and each unit's byte and character span and kind (`scored`,
   * `fixed`, `blank`). A TypeError for a text with lone surrogates.
   */
  inspect(text) {
    if (typeof text !== 'string') throw new TypeError('toolprune: text must be a string');
    wellFormed('text', text);
    const answer = this.#engine.callSync('inspect', { text });
    if (!answer.ok) throw guestError(answer);
    return wit.inspection(answer.value);
  }

  /** The `omitted` tool in an SDK's shape (`omitted.tool`, parsed); see `conversation.omittedTool`. */
  omittedTool(dialect = 'plain', lang = this.#defaults.lang) {
    checkDialect(dialect);
    checkLang(lang);
    const answer = this.#engine.callSync('tool', { lang, dialect });
    if (!answer.ok) throw guestError(answer);
    return JSON.parse(answer.value);
  }

  /** The `omitted` tool's name, read from the guest's tool object. */
  get omittedToolName() {
    this.#toolName ??= this.omittedTool('plain', 'en').name;
    return this.#toolName;
  }

  /**
   * The judge router (README "Judge router"): where `message` goes by the
   * rules file's text. With `answers` (the text of a Jev response) no call
   * is made; otherwise one Jev call through `scorer` (default the
   * pruner's), under the deadline, cancelled by `signal`. Writes the
   * `judge:` line to `log`. Rejects with a `RulesError` for an invalid
   * rules file.
   */
  route(rules, message, options = {}) {
    return route(this.#engine, this.#scorer, rules, message, options);
  }

  /**
   * The same, blocking (SPEC §14's import form): one `judge.decide` call
   * whose `scorer` import is answered on this thread by the scorer's
   * `scoreSync` (a TypeError for a scorer without it). Throws a
   * `RulesError` for an invalid rules file.
   */
  routeSync(rules, message, options = {}) {
    return routeSync(this.#engine, this.#scorer, rules, message, options);
  }

  /**
   * `prune --json` as every CLI prints it (`report.prune-json`, rendered
   * by the guest): the report of `result` (a result of `onToolResult*`,
   * with `report: true` for the paragraphs), `scorer` its scorer's label.
   * Pretty-printed JSON without a final newline.
   */
  pruneJson(result, scorer) {
    const pruned = result?.[GUEST] ?? undefined;
    // Only a host failure has no guest answer; anything else was copied or made by hand.
    if (!pruned && result?.outcome !== 'failed') throw new TypeError('toolprune: pass a result that onToolResult or onToolResultSync gave');
    const failure = pruned ? undefined : [wit.kebab(result?.failure?.reason ?? 'guest_trap'), wit.kebab(result?.failure?.limit)];
    const answer = this.#engine.callSync('pruneJson', { pruned, failure, scorer: String(scorer).toWellFormed() });
    if (!answer.ok) throw guestError(answer);
    return answer.value;
  }

  /**
   * `route --json` (`json: true`, pretty-printed JSON without a final
   * newline) or the `route` summary line, as every CLI prints them
   * (`report.route-json`, `report.route-summary`, rendered by the guest):
   * `decision` is one `route`/`routeSync` gave.
   */
  routeReport(decision, { json = false } = {}) {
    const guest = decision?.[wit.GUEST_DECISION];
    if (!guest) throw new TypeError('toolprune: pass a decision that route or routeSync gave');
    const answer = this.#engine.callSync(json ? 'routeJson' : 'routeSummary', { decision: guest });
    if (!answer.ok) throw guestError(answer);
    return answer.value;
  }

  /** A rules file's problems (a `RulesError`'s `errors`) as every CLI prints them (`report.rules-errors`): `FILE:LINE:COLUMN: MESSAGE` lines. */
  rulesErrors(file, errors) {
    const list = errors.map((e) => ({ line: e.line, column: e.column, message: String(e.message).toWellFormed() }));
    const answer = this.#engine.callSync('rulesErrors', { file: String(file).toWellFormed(), errors: list });
    if (!answer.ok) throw guestError(answer);
    return answer.value;
  }

  /**
   * `split --json` (`json: true`) or the `split` table, as every CLI
   * prints them (`report.split-json`, `report.split-table`, rendered by
   * the guest). A TypeError for a text with lone surrogates.
   */
  split(text, { json = false } = {}) {
    if (typeof text !== 'string') throw new TypeError('toolprune: text must be a string');
    wellFormed('text', text);
    const answer = this.#engine.callSync(json ? 'splitJson' : 'splitTable', { text });
    if (!answer.ok) throw guestError(answer);
    return answer.value;
  }

  /** Stops the worker thread (it does not keep the process alive anyway). */
  close() {
    this.#engine.close();
  }
}
