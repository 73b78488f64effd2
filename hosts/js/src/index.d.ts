// TypeScript declarations of the toolprune Node host (src/index.js).

/** Language of markers, `omitted` texts and the tool description. */
export type Lang = 'ja' | 'en';

/** SPEC §7 / §11 outcomes, as in the log line. */
export type Outcome =
  | 'ok'
  | 'structured'
  | 'no_basis'
  | 'all_dropped'
  | 'nothing_dropped'
  | 'below_floor'
  | 'timeout'
  | 'failed'
  | 'cancelled';

export type Shape = 'text' | 'json_wrapper' | 'json_array';
export type Fate = 'kept' | 'dropped' | 'unscored' | 'fixed';
export type OmittedOutcome = 'ok' | 'not_dropped' | 'not_found' | 'too_large' | 'invalid';

// ----- what the scorer receives and answers (the WIT `types` interface) -----

/** One batch: up to 16 paragraphs and 12,000 characters. */
export interface Batch {
  /** Paragraph numbers (0-based), in order. */
  paragraphs: Uint32Array;
  /** The paragraphs' texts, same order. */
  chunks: string[];
  /** The Jev request body, encoded by the guest: POST it unchanged. */
  jevBody: string;
}

/** How to run the batches: numbers owned by the guest. */
export interface TransportPolicy {
  maxInFlight: number;
  deadlineMs: number;
  maxRetries: number;
  /** Inclusive status ranges that may be retried. */
  retryOn: Array<[number, number]>;
  /** Wait before a retry without a usable `Retry-After`, in ms (the guest's number). */
  retryBackoffMs: number;
}

/** Everything a scorer needs for one tool result: one call per result. */
export interface ScoringRequest {
  /** The first 2,000 characters of the turn's request. */
  basis: string;
  batches: Batch[];
  policy: TransportPolicy;
}

export type Failure = { tag: 'http'; val: number } | { tag: 'network' };

/** One batch's answer, in the WIT shape… */
export type BatchAnswer =
  | { tag: 'scores'; val: Array<number | undefined> }
  | { tag: 'jev-response'; val: string }
  | { tag: 'failed'; val: Failure }
  /** …or the friendly one (`null` = not scored). */
  | { scores: ArrayLike<number | null | undefined> }
  | { jevResponse: string }
  | { failed: { http: number } | 'network' };

export type ScoringStop = 'timeout' | 'cancelled';

/**
 * A scorer's answer: one answer per batch (same order) or a stop. Either the
 * WIT shape (`answers: {tag:'ok', val}` / `{tag:'err', val}`) or the
 * friendly one (`answers: [...]` / `stop`). `elapsedMs` defaults to the wall
 * time measured by the host. Malformed answers fail their batch.
 */
export type ScoringResponseLike =
  | { answers: { tag: 'ok'; val: BatchAnswer[] } | { tag: 'err'; val: ScoringStop }; elapsedMs?: number }
  | { answers: BatchAnswer[]; elapsedMs?: number }
  | { stop: ScoringStop; elapsedMs?: number };

/** A scorer provided by the host (Jev, a stub, a test double). */
export interface Scorer {
  /** For the log line's `scorer=` and reports. */
  readonly name: string;
  /** Jev model to name in the request body (native routes), if any. */
  readonly jevModel?: string;
  /**
   * Scores every batch; awaited between `prune-job` calls, so it must not
   * block. Stop work when `signal` aborts (deadline or cancellation).
   */
  score?(request: ScoringRequest, options: { signal: AbortSignal }): Promise<ScoringResponseLike>;
  /** A blocking form, used only by `turn.onToolResultSync`. */
  scoreSync?(request: ScoringRequest): ScoringResponseLike;
}

export type ScorerOption = 'offline' | 'stub' | Scorer;

// ----- results -----

export interface Counts {
  rawChars: number;
  /** Characters of the body (markers included). */
  keptChars: number;
  paragraphs: number;
  dropped: number;
  /** Batches that answered; 0 for the offline scorer. */
  calls: number;
  jevTokens: number;
  ms: number;
}

export interface StoredResult {
  /** `P1`, `P2`, … */
  id: string;
  /** The text that was split (for a JSON wrapper: the decoded string). */
  text: string;
  dropped: number[];
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
  /** `http-4xx`, `http-5xx`, `rate-limited`, `out-of-credit`, `network`, `undecodable`, `no-answer`. */
  class: string;
}

/** The guest's full answer for one tool result. */
export interface Report {
  outcome: Outcome;
  shape: Shape | null;
  counts: Counts;
  /** Net reduction; null when no body was assembled. */
  ratio: number | null;
  /** The threshold in effect. */
  threshold: number;
  /** The `tool prune:` line; null when a cheap gate stopped the call. */
  logLine: string | null;
  /** Stored for `omitted` when the outcome is `ok`. */
  record: StoredResult | null;
  paragraphs: ParagraphReport[];
  failures: BatchFailure[];
}

export interface GuestFailure {
  /**
   * `instantiate`, `guest_trap` (a trap, the memory limit, a binding error),
   * `invalid_text` (the tool result text holds lone surrogates: it cannot
   * cross the WIT `string` unchanged, so the guest is not called) or
   * `invalid_input` (the same for the request, tool name, agent, scorer name
   * or Jev model). Only when pruning is on, the call succeeded and the tool
   * is prunable: otherwise such a result gets the guest's own skipped answer
   * (the original string as body and raw, no log line, `failure` null).
   */
  reason: 'instantiate' | 'guest_trap' | 'invalid_text' | 'invalid_input';
  message: string;
}

/** What to hand the model (and the repeat detector) for one tool result. */
export interface PruneResult {
  /** The pruned body, or the raw text byte for byte. */
  body: string;
  /** The raw text: compare this one for repeated calls (SPEC §11). */
  raw: string;
  outcome: Outcome;
  /** The guest's answer; null when the guest failed (then `body === raw`). */
  report: Report | null;
  /** The line written to the log (the guest's, or the host's failure line). */
  logLine: string | null;
  failure: GuestFailure | null;
}

export interface ToolResult {
  /** Tool name, for the log line only; never sent. Default `tool`. */
  tool?: string;
  /** The call succeeded (default true): error texts are never pruned. */
  ok?: boolean;
  /** The host declared the tool prunable (default **false**). */
  prunable?: boolean;
  text: string;
}

export interface OmittedResult {
  outcome: OmittedOutcome;
  /** The dropped paragraphs verbatim (`ok`), or the explanation for the model. */
  text: string;
  logLine: string;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments, as JSON text. */
  inputSchema: string;
}

export interface ParagraphInfo {
  index: number;
  byteStart: number;
  byteEnd: number;
  charStart: number;
  charEnd: number;
  kind: 'scored' | 'fixed';
}

export interface TurnOptions {
  /** 0.1 / 0.2 / 0.3 / 0.5; anything else means 0.2. Default 0.2. */
  threshold?: number;
  /** Default `en`. */
  lang?: Lang;
  /** Label for the log lines' `agent=`. Default `agent`. */
  agent?: string;
  /** Pruning on. Default **false** (SPEC §2: off unless turned on). */
  enabled?: boolean;
  /** Another scorer for this turn. */
  scorer?: ScorerOption;
  /** Where log lines go (one line, no newline). Default: stderr. */
  log?: (line: string) => void;
  /** Aborting it cancels the turn's scoring (outcome `cancelled`). */
  signal?: AbortSignal;
  /** Tests only: lowers the scoring deadline (ms). */
  deadlineCapMs?: number;
}

export interface LoadOptions {
  /** Default `'offline'`: the guest's BM25 scorer, nothing leaves the machine. */
  scorer?: ScorerOption;
  /** The guest's linear memory at most (default 256 MiB, at most 2 GiB − 64 KiB). */
  maxMemoryBytes?: number;
  /** Where `npm run build` wrote the bindings (default: the package's `gen/`). */
  genDir?: string | URL;
}

// ----- the judge router (README "Judge router", wit/judge.wit) -----

/** `choice`, `noul` (yes/no) or `score` (ordered levels). */
export type QuestionKind = 'choice' | 'noul' | 'score';

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

/** The guest's decision. */
export interface Decision {
  verdict: 'routed' | 'returned' | 'failed';
  /** routed: the targets (one: hand over; several: fan out and gather); else null. */
  to: string[] | null;
  /** returned: the rule's note, if any; else null. */
  note: string | null;
  /** failed: `http-4xx`, `http-5xx`, `rate-limited`, `out-of-credit`, `network`, `timeout`, `cancelled`, `undecodable`, `no-answer`; else null. */
  reason: string | null;
  /** 1-based number of the matching `[[rules]]` entry; null for `[otherwise]` and `failed`. */
  rule: number | null;
  /** One per declared question, in the file's order; empty when `failed`. */
  answers: JudgeAnswer[];
  /** `usage.input_tokens` of the Jev answer, 0 when absent. */
  jevTokens: number;
  /** `judge: kind=research/0.99/0.98 rule=5 routed to=agent_3` (no message text). */
  logLine: string;
}

export interface RouteOptions {
  /** Fixed answers: the text of a Jev response. No call is made. */
  answers?: string;
  /** The scorer that makes the one Jev call (default: the pruner's); `'offline'` cannot judge. */
  scorer?: ScorerOption;
  /** Cancels the Jev call (the decision is then `failed`, `cancelled`). */
  signal?: AbortSignal;
  /** The Jev model named in the body (default: the scorer's `jevModel`). */
  jevModel?: string;
  /** Where the `judge:` line goes (default: stderr). */
  log?: (line: string) => void;
  /** The rules file's name in `RulesError` messages (default `rules`). */
  rulesFile?: string;
}

/** One problem of a rules file (1-based line and column, in characters). */
export interface LoadError {
  line: number;
  column: number;
  message: string;
}

/** An invalid rules file: every problem, in line order; the message has one `FILE:LINE:COL: message` line each. */
export declare class RulesError extends Error {
  readonly file: string;
  readonly errors: LoadError[];
}

/** `FILE:LINE:COLUMN: message\n` per problem. */
export declare function renderLoadErrors(file: string, errors: LoadError[]): string;

export declare class Pruner {
  private constructor();
  /** Loads and compiles the component (once per process and limit). */
  static load(options?: LoadOptions): Promise<Pruner>;
  readonly scorerName: string;
  readonly maxMemoryBytes: number;
  /** Starts a user turn with its request (the raw user message). */
  beginTurn(request: string, options?: TurnOptions): Turn;
  /** The `omitted` tool, to present to the model statically whenever pruning is on. */
  omittedTool(lang?: Lang): ToolSpec;
  /** The paragraphs of `text` exactly as pruning splits it. */
  paragraphs(text: string): ParagraphInfo[];
  /**
   * The judge router: where `message` goes by the rules file's text. With
   * `answers` no call is made; else one non-blocking Jev call via the scorer.
   * Rejects with a `RulesError` for an invalid rules file.
   */
  route(rules: string, message: string, options?: RouteOptions): Promise<Decision>;
}

export declare class Turn {
  private constructor();
  readonly options: Readonly<Required<Pick<TurnOptions, 'threshold' | 'lang' | 'agent' | 'enabled'>>> & {
    readonly request: string;
  };
  readonly scorerName: string;
  /** Every `ok` result pruned in this turn (copies). */
  readonly stored: StoredResult[];
  /** Prunes one tool result; the event loop runs while the scorer answers. Never rejects for a guest failure. */
  onToolResult(result: ToolResult, options?: { signal?: AbortSignal }): Promise<PruneResult>;
  /** The blocking form (the `prune` export): offline scorer, or a scorer with `scoreSync`. */
  onToolResultSync(result: ToolResult): PruneResult;
  /**
   * The `omitted` tool: the model's JSON arguments `{id, from, to}` (text or object). Throws if the guest trapped.
   * A text with lone surrogates is not JSON: the answer is the guest's `invalid` one (argument `arguments`).
   */
  omitted(args: string | { id: string; from: number; to: number }): OmittedResult;
  /** The `omitted` tool's spec in the turn's language. */
  omittedTool(): ToolSpec;
}

/** Thrown by `jevScorer` when the settings cannot send; never contains the token. */
export declare class JevConfigError extends Error {}

export interface JevScorerOptions {
  /** Default `cloudflare`. */
  route?: 'cloudflare' | 'typesafe' | 'vercel';
  /** Cloudflare account id (cloudflare route). */
  accountId?: string;
  /** The API token: sent only as `Authorization: Bearer …`. */
  token: string;
  /** Overrides the route's base URL: https, or http to a loopback host. */
  baseUrl?: string;
  /** Model named in the body on the typesafe / vercel routes (default `jev-1.13.0`). */
  model?: string;
  /** Another fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
  /** Tests only: lowers the deadline (ms). */
  deadlineCapMs?: number;
}

export interface JevScorer extends Scorer {
  readonly name: 'jev';
  readonly route: 'cloudflare' | 'typesafe' | 'vercel';
  /** Where batches are POSTed (no secret in it). */
  readonly url: string;
  score(request: ScoringRequest, options?: { signal?: AbortSignal }): Promise<ScoringResponseLike>;
}

/** The Jev transport on `fetch`: ≤ maxInFlight in flight, the deadline, cancellation, one retry on 429/5xx. */
export declare function jevScorer(options: JevScorerOptions): JevScorer;
export declare namespace jevScorer {
  /** From TOOLPRUNE_JEV_* variables; null when no token is set. */
  function fromEnv(env?: Record<string, string | undefined>, extra?: Partial<JevScorerOptions>): JevScorer | null;
}

/** A word-overlap stand-in for tests: **not a relevance model**. */
export declare function stubScorer(): Scorer & { readonly name: 'stub' };

/** A scorer's answer in the exact shape the guest takes. */
export declare function normalizeResponse(
  response: unknown,
  request: ScoringRequest,
  measuredMs?: number,
): { answers: { tag: 'ok'; val: BatchAnswer[] } | { tag: 'err'; val: ScoringStop }; elapsedMs: number };

export declare const JEV_ENV_VARS: readonly string[];
export declare const DEFAULT_JEV_MODEL: string;
export declare const DEFAULT_MEMORY_BYTES: number;
export declare const MAX_MEMORY_BYTES: number;
