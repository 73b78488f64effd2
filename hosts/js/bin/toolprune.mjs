#!/usr/bin/env node
// toolprune (Node): the Rust CLI's `prune`, on the same component.
//
//   toolprune prune --request TEXT [--threshold 0.1|0.2|0.3|0.5] [--lang ja|en]
//                   [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
//                   [--json] [FILE|-]
//
// The body goes to stdout byte for byte, the `tool prune:` line to stderr.
// Exit codes: 0 a body was produced (pruned or not), 1 the input or the
// component could not be read, 2 usage.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { JevConfigError, Pruner, jevScorer } from '../src/index.js';

const USAGE = `Usage: toolprune prune --request TEXT [--threshold 0.2] [--lang en|ja]
                       [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
                       [--json] [FILE|-]`;

function usage(message) {
  process.stderr.write(`toolprune: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function fatal(message) {
  process.stderr.write(`toolprune: ${message}\n`);
  process.exit(1);
}

function write(bytes) {
  return new Promise((resolve, reject) => {
    process.stdout.write(bytes, (error) => (error ? reject(error) : resolve()));
  });
}

/** The `prune --json` report, fields as the Rust CLI's. */
function jsonReport(result, scorer) {
  const r = result.report;
  if (!r) {
    return {
      outcome: result.outcome,
      reason: result.failure?.reason,
      shape: null,
      counts: null,
      ratio: null,
      threshold: null,
      scorer,
      id: null,
      paragraphs: [],
      failures: [],
    };
  }
  const c = r.counts;
  return {
    outcome: r.outcome,
    shape: r.shape,
    counts: {
      raw_chars: c.rawChars,
      kept_chars: c.keptChars,
      paragraphs: c.paragraphs,
      dropped: c.dropped,
      calls: c.calls,
      jev_tokens: c.jevTokens,
      ms: c.ms,
    },
    ratio: r.ratio,
    threshold: r.threshold,
    scorer,
    id: r.record?.id ?? null,
    paragraphs: r.paragraphs,
    failures: r.failures,
  };
}

async function prune(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        request: { type: 'string' },
        threshold: { type: 'string', default: '0.2' },
        lang: { type: 'string', default: 'en' },
        scorer: { type: 'string', default: 'offline' },
        tool: { type: 'string', default: 'cli' },
        agent: { type: 'string', default: 'cli' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    usage(error.message);
  }
  const { values, positionals } = parsed;
  if (values.request === undefined) usage('--request is required');
  if (positionals.length > 1) usage('one input at most');
  // As Rust's f64 parse: decimals, exponents, inf and NaN; anything not one
  // of the four thresholds then means 0.2 (the guest decides).
  const t = values.threshold;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$/i.test(t)) {
    usage(`invalid value '${t}' for '--threshold'`);
  }
  const threshold = /nan/i.test(t) ? NaN : /inf/i.test(t) ? (t.startsWith('-') ? -Infinity : Infinity) : Number(t);
  if (!['ja', 'en'].includes(values.lang)) usage(`invalid value '${values.lang}' for '--lang' (ja, en)`);
  let scorer;
  switch (values.scorer) {
    case 'offline':
    case 'stub':
      scorer = values.scorer;
      break;
    case 'jev':
      try {
        scorer = jevScorer.fromEnv();
      } catch (error) {
        if (error instanceof JevConfigError) usage(error.message);
        throw error;
      }
      if (!scorer) usage('--scorer jev needs TOOLPRUNE_JEV_TOKEN (and the route settings)');
      break;
    default:
      usage(`invalid value '${values.scorer}' for '--scorer' (offline, stub, jev)`);
  }

  const file = positionals[0];
  let bytes;
  try {
    bytes = file === undefined || file === '-' ? readFileSync(0) : readFileSync(file);
  } catch (error) {
    fatal(`cannot read ${file === undefined || file === '-' ? 'stdin' : file}: ${error.message}`);
  }
  let text;
  try {
    // fatal: not UTF-8 → passed through; ignoreBOM: a leading U+FEFF is text.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    await write(bytes);
    process.stderr.write('toolprune: warning: input is not UTF-8; passed through unchanged\n');
    return 0;
  }

  let pruner;
  try {
    pruner = await Pruner.load({ scorer });
  } catch (error) {
    fatal(`cannot load the component: ${error.message}`);
  }
  const cancel = new AbortController();
  const onSigint = () => cancel.abort();
  process.once('SIGINT', onSigint);
  const turn = pruner.beginTurn(values.request, {
    threshold,
    lang: values.lang,
    agent: values.agent,
    enabled: true,
    signal: cancel.signal,
  });
  const result = await turn.onToolResult({ tool: values.tool, ok: true, prunable: true, text });
  process.removeListener('SIGINT', onSigint);
  if (values.json) {
    await write(`${JSON.stringify(jsonReport(result, pruner.scorerName), null, 2)}\n`);
  } else {
    await write(result.body);
  }
  return 0;
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === 'prune') return prune(rest);
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  usage(command === undefined ? 'a command is required' : `unknown command '${command}'`);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => fatal(error?.stack ?? String(error)),
);
