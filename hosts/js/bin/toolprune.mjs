#!/usr/bin/env node
// toolprune (Node): the Rust CLI's `prune` and `route`, on the same component.
//
//   toolprune prune --request TEXT [--threshold 0.1|0.2|0.3|0.5] [--lang ja|en]
//                   [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
//                   [--json] [FILE|-]
//   toolprune route --rules FILE --message TEXT [--answers FILE] [--json]
//
// route: the decision to stdout, the `judge:` line to stderr, as the Rust
// CLI. Exit codes: 0 routed or returned, 3 failed (Jev could not judge),
// 2 an invalid rules file or usage, 1 a file or the component failed.
//
// The body goes to stdout byte for byte, the `tool prune:` line to stderr.
// Exit codes: 0 a body was produced (pruned or not), 1 the input or the
// component could not be read, 2 usage.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { JevConfigError, Pruner, RulesError, jevScorer, renderLoadErrors } from '../src/index.js';

const USAGE = `Usage: toolprune prune --request TEXT [--threshold 0.2] [--lang en|ja]
                       [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
                       [--json] [FILE|-]
       toolprune route --rules FILE --message TEXT [--answers FILE] [--json]`;

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

/** serde_json's f64: always a fraction or an exponent (`1.0`, not `1`). */
class F64 {
  constructor(value) {
    this.value = value;
  }
}

/** `serde_json::to_string_pretty` of a value: keys sorted, 2-space indent. */
function pretty(value, indent = '') {
  if (value instanceof F64) {
    const v = value.value;
    if (!Number.isFinite(v)) return 'null';
    const text = String(v);
    return /[.e]/.test(text) ? text.replace(/e\+?/, 'e') : `${text}.0`;
  }
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const inner = `${indent}  `;
    return `[\n${value.map((v) => inner + pretty(v, inner)).join(',\n')}\n${indent}]`;
  }
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort();
    if (keys.length === 0) return '{}';
    const inner = `${indent}  `;
    return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${pretty(value[k], inner)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/** The `route --json` decision, fields as the Rust CLI's. */
function jsonDecision(d) {
  return {
    verdict: d.verdict,
    to: d.to,
    note: d.note,
    reason: d.reason,
    rule: d.rule,
    answers: d.answers.map((a) => ({
      question: a.question,
      type: a.kind,
      value: a.value,
      p: new F64(a.p),
      margin: a.margin === null ? null : new F64(a.margin),
      mean: a.mean === null ? null : new F64(a.mean),
    })),
    jev_tokens: d.jevTokens,
    log: d.logLine,
  };
}

/** `routed to agent_3 (rule 3)`, `returned (otherwise)`, `returned (rule 1): NOTE`, `failed: REASON`. */
function summary(d) {
  const rule = d.rule === null ? 'otherwise' : `rule ${d.rule}`;
  if (d.verdict === 'routed') return `routed to ${d.to.join(', ')} (${rule})\n`;
  if (d.verdict === 'returned') return d.note === null ? `returned (${rule})\n` : `returned (${rule}): ${d.note}\n`;
  return `failed: ${d.reason}\n`;
}

async function route(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        rules: { type: 'string' },
        message: { type: 'string' },
        answers: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    usage(error.message);
  }
  const { values } = parsed;
  if (values.rules === undefined) usage('--rules is required');
  if (values.message === undefined) usage('--message is required');
  const read = (path, what) => {
    try {
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(readFileSync(path));
    } catch (error) {
      fatal(`cannot read the ${what} ${path}: ${error.message}`);
    }
  };
  const rules = read(values.rules, 'rules file');
  const options = { rulesFile: values.rules };
  if (values.answers !== undefined) {
    // No call is made: the scorer is never asked.
    options.answers = read(values.answers, 'answers file');
  } else {
    let scorer;
    try {
      scorer = jevScorer.fromEnv();
    } catch (error) {
      if (error instanceof JevConfigError) usage(error.message);
      throw error;
    }
    if (!scorer) {
      process.stderr.write('toolprune: route without --answers calls Jev, and TOOLPRUNE_JEV_TOKEN is not set; or pass --answers FILE (fixed answers)\n');
      return 2;
    }
    options.scorer = scorer;
  }
  let pruner;
  try {
    pruner = await Pruner.load();
  } catch (error) {
    fatal(`cannot load the component: ${error.message}`);
  }
  const cancel = new AbortController();
  const onSigint = () => cancel.abort();
  process.once('SIGINT', onSigint);
  let d;
  try {
    d = await pruner.route(rules, values.message, { ...options, signal: cancel.signal });
  } catch (error) {
    if (error instanceof RulesError) {
      process.stderr.write(renderLoadErrors(values.rules, error.errors));
      return 2;
    }
    fatal(error.message);
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  await write(values.json ? `${pretty(jsonDecision(d))}\n` : summary(d));
  return d.verdict === 'failed' ? 3 : 0;
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === 'prune') return prune(rest);
  if (command === 'route') return route(rest);
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
