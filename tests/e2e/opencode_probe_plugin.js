// A log-only OpenCode plugin for the e2e test: listed before toolprune's, its
// `tool.execute.after` records each MCP result's text as the server returned
// it (one JSON line per call in $TOOLPRUNE_E2E_PROBE_LOG). Changes nothing.
import { appendFileSync } from 'node:fs';

export const Probe = async () => ({
  'tool.execute.after': async (input, output) => {
    const log = process.env.TOOLPRUNE_E2E_PROBE_LOG;
    if (!log || !Array.isArray(output?.content)) return;
    const texts = output.content.filter((b) => b?.type === 'text').map((b) => b.text);
    appendFileSync(log, `${JSON.stringify({ tool: input.tool, sessionID: input.sessionID, callID: input.callID, texts })}\n`);
  },
});
