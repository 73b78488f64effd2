// TypeScript declarations of the toolprune Node host (src/index.js).
//
// The guest's enums come from jco's declarations of the component
// (gen/interfaces/*.d.ts, written by `npm run build`), converted to the
// SPEC's spelling (kebab-case → snake_case) by a type: no list of names here.

import type * as WitTypes from '../gen/interfaces/toolprune-pruner-types.js';
import type * as WitPruner from '../gen/interfaces/toolprune-pruner-pruner.js';
import type * as WitOmitted from '../gen/interfaces/toolprune-pruner-omitted.js';
import type * as WitSettings from '../gen/interfaces/toolprune-pruner-settings.js';
import type * as WitJudge from '../gen/interfaces/toolprune-pruner-judge.js';
import type * as WitScorer from '../gen/interfaces/toolprune-pruner-scorer.js';

/** `no-basis` → `no_basis`: a WIT enum case in the SPEC's spelling. */
export type Snake<S extends string> = S extends `${infer A}-${infer B}` ? `${A}_${Snake<B>}` : S;

/** Language of markers, `omitted` texts and the tool description. */
export type Lang = WitTypes.Lang;
/** SPEC §7 / §11 outcomes and `skipped` (a cheap gate stopped it). */
export type Outcome = Snake<WitPruner.Outcome>;
/** For `skipped`: `disabled`, `tool_failed`, `not_prunable`, `too_short`. */
export type Gate = Snake<WitPruner.Gate>;
export type Shape = Snake<WitPruner.Shape>;
export type Fate = Snake<WitPruner.Fate>;
export type UnitKind = Snake<WitPruner.UnitKind>;
export type FailureClass = Snake<WitTypes.FailureClass>;
/** `omitted`'s outcomes, and `failed` when the guest trapped. */
export type OmittedOutcome = Snake<WitOmitted.OmittedOutcome> | 'failed';
/** The SDK shapes of the `omitted` tool. */
export type Dialect = WitOmitted.Dialect;
/** Which limit stopped a guest call: `memory` or `wall_time` here (no fuel in Node). */
export type Limit = Snake<WitSettings.Limit>;
export type HostFailureReason = Snake<WitSettings.HostFailure>;

// ----- what a scorer receives and answers (the WIT `scorer` interface, jco's shapes) -----

export type Batch = WitScorer.Batch;
export type TransportPolicy = WitScorer.TransportPolicy;
export type ScoringRequest = WitScorer.ScoringRequest;

/** One batch's answer, in the WIT shape or the friendly one (`null` = not scored). */
export type BatchAnswer =
  | WitScorer.BatchAnswer
  | { scores: ArrayLike<number | null | undefined> }
  | { jevResponse: string }
  | { failed: { http: number } | 'network' };

/** What a host scorer gets with a request. */
export interface ScoringContext {
  /** Aborts when the host stops waiting (the deadline, a cancellation): stop all work. */
  readonly signal: AbortSignal;
  /** When the host stops waiting, a `performance.now()` time. */
  readonly deadline: number;
  remainingMs(): number;
  /**
   * The guest's retry rule (`settings.retry-delay`): after a failed
   * attempt, the wait in ms before the next one, or null (give up). A
   * Promise for `score`; a number or null at once for `scoreSync` (asked
   * of a second guest instance while the first is inside `prune`).
   */
  retryDelay(facts: WitSettings.RetryFacts): Promise<number | null> | number | null;
}

/**
 * A scorer provided by the host (Jev, a test double): one call per tool
 * result, every batch. The host enforces the deadline and cancellation
 * whatever it does; throwing, or answering the wrong number of batches, is
 * a scorer failure (every batch `failed(network)`).
 */
export interface Scorer {
  /** For the log line's `scorer=`. */
  readonly name: string;
  /** The Jev model to name in request bodies (native routes), if any. */
  readonly jevModel?: string;
  /** One answer per batch, in order (or `{ answers }`). Must not block. Used by the async API (jobs). */
  score?(request: ScoringRequest, context: ScoringContext): Promise<BatchAnswer[] | { answers: BatchAnswer[] }>;
  /**
   * The blocking form: answers the guest's `scorer` import on the sync API
   * (`turn.onToolResultSync`, `pruner.routeSync`). It cannot be
   * interrupted: an answer past `context.deadline` is a `timeout`.
   */
  scoreSync?(request: ScoringRequest, context: ScoringContext): BatchAnswer[] | { answers: BatchAnswer[] };
}

/** `'offline'`: the guest's lexical scorer (nothing leaves the machine); `'stub'`: the guest's word-overlap stub (not a relevance model). */
export type ScorerOption = 'offline' | 'stub' | Scorer;

// ----- results -----

export interface Counts {
  rawChars: number;
  /** Characters of the body (markers included). */
  keptChars: number;
  /** Paragraphs the text was split into; null when it was not split (skipped, `structured`). */
  paragraphs: number | null;
  dropped: number;
  /** Batches that answered; 0 for the offline scorer. */
  calls: number;
  jevTokens: number;
  /** Scoring wall time in ms; null when no host scorer answered. */
  ms: number | null;
  /** Work units the guest counted for this result (the same in every host and form; past the budget: `failed`, `reason=budget`). */
  work: number;
}

export interface ParagraphReport {
  index: number;
  chars: number;
  score: number | null;
  fate: Fate;
}

export interface BatchFailure {
  batch: number;
  status: number | null;
  class: FailureClass;
}

/** Why the host got no guest answer (then `body` is the input, outcome `failed`). */
export interface HostFailure {
  /**
   * `guest_trap` (a trap, the memory limit, the wall-time limit: the
   * guest's worker was terminated), `invalid_text` (the text holds lone
   * surrogates, which a WIT string cannot carry: not pruned) or
   * `invalid_input` (the same for the request, tool name, agent, scorer
   * name or Jev model).
   */
  reason: HostFailureReason;
  limit: Limit | null;
  /** For diagnosis; never document text. */
  message: string;
}

/** What to hand the model (and the repeat detector) for one tool result. */
export interface PruneResult {
  /** The pruned body (outcome `ok`), else the input string itself. */
  body: string;
  /** The input text: compare this one for repeated calls (SPEC §11). */
  raw: string;
  outcome: Outcome;
  gate: Gate | null;
  /** The stored id (`P3`) when the outcome is `ok`, else null. */
  id: string | null;
  shape: Shape | null;
  /** Null after a host failure. */
  counts: Counts | null;
  /** Net reduction; null when no body was assembled. */
  ratio: number | null;
  /** The threshold in effect; null after a host failure. */
  threshold: number | null;
  /** The line written to the log (the guest's, or the host failure line); null for `skipped`. */
  logLine: string | null;
  /** The model the Jev service said it ran. */
  servedModel: string | null;
  /** With `report: true`: one record per paragraph; else empty. */
  paragraphs: ParagraphReport[];
  failures: BatchFailure[];
  failure: HostFailure | null;
  /** How often the host's scorer was asked for this result: 0 (a gate, the offline scorer, the stub) or 1. */
  scorerCalls: number;
}

export interface ToolResult {
  /** Tool name, for the log line only; never sent. Default `tool`. */
  tool?: string;
  text: string;
  /** The call succeeded (default true): error texts are never pruned. */
  ok?: boolean;
  /** The tool was declared prunable (default **false**; see `pruner.isPrunable`). */
  prunable?: boolean;
  /** Fill `paragraphs` (default false). */
  report?: boolean;
  /** Scores this one result with another scorer than the conversation's. */
  scorer?: ScorerOption;
  /**
   * The tool call's arguments, as the JSON text the door received (or a
   * plain object or array of JSON values, encoded): the repeat gate
   * (SPEC §2) lets the same tool with the same arguments through unpruned
   * after its result was pruned (`skipped`, gate `repeated`). Never sent,
   * logged or stored: only a key. Absent, or anything else (a Map, a
   * class instance, NaN, a BigInt, a cycle, a lone surrogate, over 128
   * levels deep): no repeat is detected, the result is pruned as usual.
   */
  arguments?: string | Record<string, unknown> | readonly unknown[] | null;
}

/** The answer to one `omitted` tool call. */
export interface OmittedAnswer {
  outcome: OmittedOutcome;
  /** What goes back to the model as the tool result, whatever the outcome. */
  text: string;
  /** The `tool omitted:` line (written to the log). */
  logLine: string;
  /** Set when the guest trapped (outcome `failed`). */
  failure: HostFailure | null;
}

/** `pruner.inspect`: how pruning would split a text. */
export interface Inspection {
  /** Null: JSON that is neither a wrapper nor a prunable array (structured, not pruned). */
  shape: Shape | null;
  /** A wrapper's string literal in the raw text (quotes included), bytes [start, end). */
  wrapperSpan: [number, number] | null;
  units: Array<{ index: number; byteStart: number; byteEnd: number; charStart: number; charEnd: number; kind: UnitKind }>;
}

/** `settings.config`: the configuration the guest resolved. */
export interface Config {
  enabled: boolean;
  threshold: number;
  lang: Lang;
  /** Jev's endpoint, or null (then `jevError` says what is missing). */
  jev: { route: string; url: string; model: string | null; loopback: boolean } | null;
  jevError: string | null;
  /** The environment variable holding the API token (read by the host only). */
  tokenVariable: string;
  /** Tool-name globs declared prunable. */
  prunable: string[];
  store: { maxRecords: number; maxChars: number; maxAgeS: number };
  proxyBasis: string;
}

/** A stored result as the guest makes it (`stored-result`): `data` is the guest's own encoding, kept as it is. */
export interface StoredRecord {
  id: string;
  chars: bigint;
  /** The repeat gate's key of the call (a digest, never the arguments); undefined without arguments. */
  call?: string;
  data: string;
}

/** Where a conversation keeps its counter and pruned results (as the Rust host's `ResultStore`); every method synchronous. */
export interface ResultStore {
  /** Results stored so far: the next record is `P{count() + 1}`. */
  count(): number;
  /** Keeps `record` (numbered `count() + 1`, else it must throw) and applies the store's own bounds. */
  push(record: StoredRecord): void;
  /** The held record with this id (`P3`), or undefined (never stored, evicted). */
  find(id: string): StoredRecord | undefined;
  /** The `call` keys of the held records (the repeat gate); without it no repeat is detected. */
  calls?(): string[];
}

export interface ConversationOptions {
  /** Pruning on. Default **false** (SPEC §2). */
  enabled?: boolean;
  /** One of the guest's thresholds (SPEC §6), a number or as the user wrote it (`'0.30'`); anything else throws a RangeError with the guest's message. Default: the guest's. */
  threshold?: number | string;
  /** Default: the guest's (`en`). */
  lang?: Lang;
  /** Label for the log lines' `agent=`. Default `agent`. */
  agent?: string;
  /** Default: the pruner's. */
  scorer?: ScorerOption;
  /** The Jev model named in request bodies; default the scorer's. */
  jevModel?: string;
  /** Where log lines go (one line, no newline). Default: stderr. What it throws is dropped; the result is returned as computed. */
  log?: (line: string) => void;
  /** Store bounds; default the guest's. */
  store?: { maxRecords?: number; maxChars?: number };
  /** Keep the counter and the pruned results there instead of process memory (an on-disk session: `toolprune/store`). A store that throws fails the result open (`reason=store`). */
  resultStore?: ResultStore;
  /** **Tests only**: the deadline used is `min(policy.deadlineMs, deadlineCapMs)`. */
  deadlineCapMs?: number;
}

export interface LoadOptions {
  /** Default `'offline'`; `'jev'`: from `env` through the guest's configuration (a `ConfigError` if incomplete). */
  scorer?: ScorerOption | 'jev';
  /** Replace the guest's per-call safety nets and its work budget per result for every call (tests). */
  limits?: { wallMs?: number; memoryBytes?: number; work?: number | bigint };
  /** Where `npm run build` wrote the bindings (default: the package's `gen/`). */
  genDir?: string | URL;
  /** The environment for `scorer: 'jev'` (default `process.env`). */
  env?: Record<string, string | undefined>;
}

// ----- the judge router (README "Judge router", wit/judge.wit) -----

export type QuestionKind = WitJudge.QuestionKind;

/** What Jev answered to one declared question (probabilities rounded to 0.01). */
export interface JudgeAnswer {
  question: string;
  kind: QuestionKind;
  /** choice: the most probable option; score: the most probable level, 1-based (`"3"`); noul: null. */
  value: string | null;
  /** choice, score: the probability of `value`; noul: the probability of true. */
  p: number;
  /** choice, score: the first probability minus the second; noul: null. */
  margin: number | null;
  /** score: the expected level, 1-based; else null. */
  mean: number | null;
}

export interface Decision {
  verdict: 'routed' | 'returned' | 'failed';
  /** routed: the targets; else null. */
  to: string[] | null;
  /** returned: the rule's note, if any; else null. */
  note: string | null;
  /** failed: why Jev could not judge; else null. */
  reason: FailureClass | null;
  /** 1-based number of the matching `[[rules]]` entry; null for `[otherwise]` and `failed`. */
  rule: number | null;
  /** One per declared question, in the file's order; empty when `failed`. */
  answers: JudgeAnswer[];
  jevTokens: number;
  /** `judge: kind=research/0.99/0.98 rule=5 routed to=agent_3` (no message text). */
  logLine: string;
}

export interface RouteOptions {
  /** Fixed answers: the text of a Jev response. No call is made. */
  answers?: string;
  /** The scorer that makes the one Jev call (default: the pruner's). */
  scorer?: ScorerOption;
  /** Cancels the Jev call (the decision is then `failed`, `cancelled`). */
  signal?: AbortSignal;
  /** The Jev model named in the body (default: the scorer's `jevModel`). */
  jevModel?: string;
  /** Where the `judge:` line goes (default: stderr). What it throws is dropped. */
  log?: (line: string) => void;
  /** The rules file's name in `RulesError` messages (default `rules`). */
  rulesFile?: string;
  /** **Tests only**: lowers the deadline (ms). */
  deadlineCapMs?: number;
}

export interface LoadError {
  line: number;
  column: number;
  message: string;
}

/** An invalid rules file: every problem, in line order. */
export declare class RulesError extends Error {
  readonly file: string;
  readonly errors: LoadError[];
}

/** `FILE:LINE:COLUMN: message\n` per problem. */
export declare function renderLoadErrors(file: string, errors: LoadError[]): string;

/** The contract this host speaks (`0.3`). */
export declare const CONTRACT: string;

/** The component speaks another contract version; the message names both. */
export declare class VersionError extends Error {
  readonly found: string;
}

/** A configuration that cannot send (the guest's message); never holds the token. */
export declare class ConfigError extends Error {}

export declare class Pruner {
  private constructor();
  /** Loads the component (compiled once per process), checks its version, starts its worker. */
  static load(options?: LoadOptions): Promise<Pruner>;
  /** A process-wide offline pruner, loaded on first use. */
  static shared(): Promise<Pruner>;
  /** `settings.version()`, e.g. `0.3.0`. */
  readonly version: string;
  readonly scorerName: string;
  /** The guest's defaults (`settings.resolve([], none)`). */
  readonly defaults: Config;
  /** The `omitted` tool's name, read from the guest's tool object. */
  readonly omittedToolName: string;
  /** One agent conversation. Throws a RangeError (the guest's message) for a refused threshold. */
  conversation(options?: ConversationOptions): Conversation;
  /** A threshold checked by the guest: the number, or a RangeError with the guest's message. */
  threshold(value: number | string): number;
  /** The configuration the guest resolves from `env` and the config file. */
  config(env?: Record<string, string | undefined>): Config;
  /**
   * Whether a tool's results may be pruned: `tool` is its name or every name the
   * caller knows for it (`mcp__fetch__read_file`, `mcp_fetch_read_file`, …); never
   * prunable under any name wins (SPEC §2). TypeError for other types.
   */
  isPrunable(tool: string | string[], globs: string[]): boolean;
  inspect(text: string): Inspection;
  omittedTool(dialect?: Dialect, lang?: Lang): Record<string, unknown>;
  /** The judge router, through a `judge-job`; rejects with a `RulesError` for an invalid rules file. */
  route(rules: string, message: string, options?: RouteOptions): Promise<Decision>;
  /** The same, blocking: one `judge.decide` call whose `scorer` import the scorer's `scoreSync` answers; throws a `RulesError`. */
  routeSync(rules: string, message: string, options?: RouteOptions): Decision;
  /** `prune --json` as every CLI prints it (the guest's `report.prune-json`), for a result and its scorer's label. */
  pruneJson(result: PruneResult, scorer: string): string;
  /** `split --json` (`json: true`) or the `split` table, rendered by the guest. */
  split(text: string, options?: { json?: boolean }): string;
  /** `route --json` (`json: true`) or the `route` summary line of a decision `route`/`routeSync` gave, rendered by the guest. */
  routeReport(decision: Decision, options?: { json?: boolean }): string;
  /** A rules file's problems as every CLI prints them: `FILE:LINE:COLUMN: MESSAGE` lines (the guest's `report.rules-errors`). */
  rulesErrors(file: string, errors: LoadError[]): string;
  /** Stops the worker thread. */
  close(): void;
}

export declare class Conversation {
  private constructor();
  readonly options: Readonly<{
    enabled: boolean;
    threshold: number;
    lang: Lang;
    agent: string;
    jevModel: string | undefined;
    log: (line: string) => void;
    store: Readonly<{ maxRecords: number; maxChars: number }>;
    deadlineCapMs: number | undefined;
  }>;
  readonly scorerName: string;
  /** Results stored so far (ids `P1` … `P{count}`). */
  readonly count: number;
  /** The ids the store holds, oldest first. */
  readonly storedIds: string[];
  /** A user turn: its request, and a signal that cancels its scoring. */
  turn(request: string, options?: { signal?: AbortSignal }): Turn;
  /** The answer to a model's `omitted` call (JSON text or object); never throws for a guest failure. */
  omitted(args: string | { id: string; from?: number; to?: number }): OmittedAnswer;
  /** The `omitted` tool in an SDK's shape, parsed from the guest's JSON. */
  omittedTool(dialect?: Dialect, lang?: Lang): Record<string, unknown>;
}

export declare class Turn {
  private constructor();
  readonly request: string;
  readonly conversation: Conversation;
  /**
   * Prunes one tool result through a job (the scorer's async `score`); the
   * event loop runs meanwhile. For event loops and async-only scorers
   * (`JevScorer`). Never rejects for a guest or scorer failure.
   */
  onToolResult(result: ToolResult, options?: { signal?: AbortSignal }): Promise<PruneResult>;
  /**
   * The blocking form, in one guest call whose `scorer` import is answered
   * by the scorer's `scoreSync`: the offline scorer, the stub, or a scorer
   * with `scoreSync` (a TypeError otherwise).
   */
  onToolResultSync(result: ToolResult, options?: { signal?: AbortSignal }): PruneResult;
}

/** The Jev transport on `fetch`, configured by the guest's `settings.resolve`. */
export declare class JevScorer implements Scorer {
  private constructor();
  /** From a configuration: null when its token variable is unset in `env`; a `ConfigError` when incomplete. */
  static fromConfig(config: Config, env?: Record<string, string | undefined>, options?: { fetch?: typeof globalThis.fetch }): JevScorer | null;
  /** `fromConfig(pruner.config(env), env)`, with the shared pruner unless given. */
  static fromEnv(env?: Record<string, string | undefined>, options?: { pruner?: Pruner; fetch?: typeof globalThis.fetch }): Promise<JevScorer | null>;
  readonly name: 'jev';
  readonly route: string;
  /** Where batches are POSTed (no secret in it). */
  readonly url: string;
  readonly jevModel: string | undefined;
  readonly loopback: boolean;
  score(request: ScoringRequest, context: ScoringContext): Promise<BatchAnswer[]>;
}
