// Compiled by `npm run typecheck` (tsc --noEmit): the README's embedding and
// a custom scorer type-check against src/index.d.ts.
import { Pruner, RulesError, jevScorer, type Decision, type Scorer, type PruneResult } from '../src/index.js';

const custom: Scorer = {
  name: 'mine',
  async score(request, { signal }) {
    signal.throwIfAborted();
    return { answers: request.batches.map((b) => ({ scores: Array.from(b.paragraphs, () => 0.5) })) };
  },
};

export async function embed(userMessage: string, pageText: string): Promise<string> {
  const pruner = await Pruner.load({ scorer: jevScorer.fromEnv() ?? 'offline' });
  const turn = pruner.beginTurn(userMessage, { enabled: true, threshold: 0.2, lang: 'en' });
  const result: PruneResult = await turn.onToolResult({ tool: 'fetch', ok: true, prunable: true, text: pageText });
  const back = turn.omitted({ id: 'P1', from: 8, to: 14 });
  const tool = pruner.omittedTool('ja');
  const other = pruner.beginTurn(userMessage, { enabled: true, scorer: custom });
  await other.onToolResult({ prunable: true, text: pageText }, { signal: AbortSignal.timeout(1000) });
  return `${result.body}${back.text}${tool.inputSchema}${result.report?.counts.keptChars ?? 0}`;
}

export async function judge(rules: string, message: string, answers?: string): Promise<string> {
  const pruner = await Pruner.load();
  try {
    const d: Decision = answers
      ? await pruner.route(rules, message, { answers })
      : await pruner.route(rules, message, { scorer: jevScorer.fromEnv() ?? 'stub', signal: AbortSignal.timeout(5000) });
    return d.verdict === 'routed' ? (d.to ?? []).join(',') : `${d.verdict} ${d.rule ?? 'otherwise'} ${d.answers[0]?.p ?? 0}`;
  } catch (error) {
    if (error instanceof RulesError) return error.errors.map((e) => `${e.line}:${e.column}`).join(' ');
    throw error;
  }
}
