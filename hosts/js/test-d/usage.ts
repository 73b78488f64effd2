// Compiled by `npm run typecheck` (tsc --noEmit): the README's embedding, a
// custom scorer and the judge type-check against src/index.d.ts.
import {
  ConfigError,
  JevScorer,
  Pruner,
  RulesError,
  type Decision,
  type FailureClass,
  type Gate,
  type OmittedOutcome,
  type ResultStore,
  type StoredRecord,
  type Outcome,
  type PruneResult,
  type Scorer,
} from '../src/index.js';

const custom: Scorer = {
  name: 'mine',
  async score(request, { signal }) {
    signal.throwIfAborted();
    return request.batches.map((b) => ({ scores: Array.from(b.paragraphs, () => 0.5) }));
  },
};

export async function embed(userMessage: string, pageText: string): Promise<string> {
  const pruner = await Pruner.load();
  const jev = await JevScorer.fromEnv(process.env, { pruner });
  const conversation = pruner.conversation({ enabled: true, threshold: '0.2', lang: 'en', scorer: jev ?? 'offline' });
  const turn = conversation.turn(userMessage, { signal: AbortSignal.timeout(30_000) });
  const result: PruneResult = await turn.onToolResult({ tool: 'fetch', ok: true, prunable: true, text: pageText });
  const outcome: Outcome = result.outcome;
  const back = conversation.omitted({ id: 'P1', from: 8, to: 14 });
  const tool = conversation.omittedTool('anthropic', 'ja');
  const other = pruner.conversation({ enabled: true, scorer: custom, store: { maxRecords: 16 } });
  const held: StoredRecord[] = [];
  const records: ResultStore = { count: () => held.length, push: (r) => void held.push(r), find: (id) => held.find((r) => r.id === id) };
  pruner.conversation({ enabled: true, resultStore: records });
  await other.turn(userMessage).onToolResult({ prunable: true, text: pageText, report: true });
  const sync = other.turn(userMessage).onToolResultSync({ prunable: true, text: pageText, scorer: 'stub', arguments: { url: 'https://example.com' } });
  // The import path: a blocking scorer answers the guest's `scorer` import.
  const blocking: Scorer = {
    name: 'blocking',
    scoreSync(request, context) {
      const wait = context.retryDelay({ attempt: 1, status: 429, nowUnixMs: BigInt(Date.now()), remainingMs: context.remainingMs() });
      return request.batches.map((b) => ({ scores: Array.from(b.paragraphs, () => (typeof wait === 'number' ? 0.5 : 1)) }));
    },
  };
  const imported = other.turn(userMessage).onToolResultSync({ prunable: true, text: pageText, scorer: blocking, arguments: '{"url": "x"}' });
  const calls: number = imported.scorerCalls + (imported.counts?.work ?? 0);
  const report: string = pruner.pruneJson(imported, 'blocking') + pruner.split(pageText, { json: true });
  await Pruner.load({ limits: { work: 1_000_000, wallMs: 60_000 } });
  const units = pruner.inspect(pageText).units.length;
  return `${result.body}${back.text}${String(tool.name)}${outcome}${result.counts?.keptChars ?? 0}${sync.id ?? ''}${units}${pruner.omittedToolName}${calls}${report}`;
}

export async function judge(rules: string, message: string, answers?: string): Promise<string> {
  const pruner = await Pruner.load();
  try {
    const config = pruner.config();
    const jev = JevScorer.fromConfig(config);
    const d: Decision = answers
      ? pruner.routeSync(rules, message, { answers })
      : await pruner.route(rules, message, { scorer: jev ?? custom, signal: AbortSignal.timeout(5000) });
    return d.verdict === 'routed' ? (d.to ?? []).join(',') : `${d.verdict} ${d.rule ?? 'otherwise'} ${d.answers[0]?.p ?? 0}`;
  } catch (error) {
    if (error instanceof RulesError) return error.errors.map((e) => `${e.line}:${e.column}`).join(' ');
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}

// The enum types are the guest's, in the SPEC's spelling (derived from jco's declarations).
export const outcomes: Outcome[] = ['ok', 'skipped', 'no_basis', 'all_dropped', 'nothing_dropped', 'below_floor', 'timeout', 'failed', 'cancelled', 'structured'];
// @ts-expect-error: the WIT spelling is not the public one
export const kebab: Outcome = 'no-basis';
// @ts-expect-error: not an outcome at all
export const unknown: Outcome = 'pruned';
export const gate: Gate = 'too_short';
export const failure: FailureClass = 'http_5xx';
export const omitted: OmittedOutcome = 'not_found';
