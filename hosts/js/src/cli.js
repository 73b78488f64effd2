// toolprune (Node): the Rust CLI's `prune`, `split` and `route`, on the same
// component, with the same bytes out (body, reports, log lines).
//
//   toolprune prune --request TEXT [--threshold T] [--lang ja|en]
//                   [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
//                   [--json] [FILE|-]
//   toolprune split [--json] [FILE|-]
//   toolprune route --rules FILE --message TEXT [--answers FILE] [--json]
//
// prune: the body on stdout byte for byte, the `tool prune:` line on
// stderr. Exit 0 when a body was produced (pruned or not); 1 the input or
// the component could not be read; 2 usage (a refused `--threshold` or an
// incomplete Jev configuration pass the input through first).
// route: the decision on stdout, the `judge:` line on stderr; 0 routed or
// returned, 3 failed (Jev could not judge), 2 an invalid rules file or usage.
//
// The renderers below mirror the Rust CLI's (cli/src/report.rs) byte for
// byte: the guest has no rendering calls.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { checkLang } from './conversation.js';
import { ConfigError, JevScorer } from './jev.js';
import { RulesError, renderLoadErrors } from './judge.js';
import { Pruner } from './pruner.js';

const USAGE = `Usage: toolprune prune --request TEXT [--threshold T] [--lang en|ja]
                       [--scorer offline|stub|jev] [--tool NAME] [--agent NAME]
                       [--json] [FILE|-]
       toolprune split [--json] [FILE|-]
       toolprune route --rules FILE --message TEXT [--answers FILE] [--json]`;

class Exit extends Error {
  constructor(code) {
    super(`exit ${code}`);
    this.code = code;
  }
}

function usage(message) {
  process.stderr.write(`toolprune: ${message}\n${USAGE}\n`);
  throw new Exit(2);
}

function fatal(message) {
  process.stderr.write(`toolprune: ${message}\n`);
  throw new Exit(1);
}

function write(bytes) {
  return new Promise((resolve, reject) => {
    process.stdout.write(bytes, (error) => (error ? reject(error) : resolve()));
  });
}

/**
 * `parseArgs` with values that look like flags (`--threshold -1`): the
 * value after a string option is taken as it is, as clap's
 * `allow_hyphen_values` does.
 */
function parse(argv, options, allowPositionals) {
  const joined = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : null;
    if (name && options[name]?.type === 'string' && i + 1 < argv.length) {
      joined.push(`${arg}=${argv[i + 1]}`);
      i += 1;
    } else {
      joined.push(arg);
    }
  }
  try {
    return parseArgs({ args: joined, options, allowPositionals, strict: true });
  } catch (error) {
    return usage(error.message);
  }
}

async function readInput(file) {
  const stdin = file === undefined || file === '-';
  try {
    return stdin ? readFileSync(0) : readFileSync(file);
  } catch (error) {
    return fatal(`cannot read ${stdin ? 'stdin' : file}: ${error.message}`);
  }
}

/** UTF-8 text (a leading U+FEFF kept), or null when the bytes are not UTF-8. */
function decode(bytes) {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

async function load(options) {
  try {
    return await Pruner.load(options);
  } catch (error) {
    return fatal(`cannot load the component: ${error.message}`);
  }
}

/** Ctrl-C cancels scoring (the input is printed, outcome `cancelled`). */
function cancelOnSigint() {
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  return { signal: controller.signal, done: () => process.removeListener('SIGINT', onSigint) };
}

// ----- serde_json's pretty printing -----

/** A value serde_json writes as an f64 (`1.0`, never `1`). */
class F64 {
  constructor(value) {
    this.value = value;
  }
}

const f64 = (x) => (x === null || x === undefined ? null : new F64(x));

/** An f64 as serde_json (ryu) writes it: shortest digits, `1.0`, `0.0001`, `1e-7`, `1e16`. */
function ryu(x) {
  if (!Number.isFinite(x)) return 'null';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exp] = Math.abs(x).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const k = Number(exp) - (digits.length - 1);
  const kk = k + digits.length;
  const sign = x < 0 ? '-' : '';
  if (k >= 0 && kk <= 16) return `${sign}${digits}${'0'.repeat(k)}.0`;
  if (kk > 0 && kk <= 16) return `${sign}${digits.slice(0, kk)}.${digits.slice(kk)}`;
  if (kk > -5 && kk <= 0) return `${sign}0.${'0'.repeat(-kk)}${digits}`;
  const e = kk - 1;
  return digits.length === 1 ? `${sign}${digits}e${e}` : `${sign}${digits[0]}.${digits.slice(1)}e${e}`;
}

/** `serde_json::to_string_pretty`: 2-space indent; keys in order, or sorted (a `Value` map). */
function pretty(value, sortKeys = false, indent = '') {
  if (value instanceof F64) return ryu(value.value);
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const inner = `${indent}  `;
    return `[\n${value.map((v) => inner + pretty(v, sortKeys, inner)).join(',\n')}\n${indent}]`;
  }
  if (typeof value === 'object') {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined);
    if (sortKeys) keys.sort();
    if (keys.length === 0) return '{}';
    const inner = `${indent}  `;
    return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${pretty(value[k], sortKeys, inner)}`).join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

// ----- prune -----

/** The `prune --json` report (the Rust CLI's `PruneReport`, fields in its order). */
function pruneReport(result, scorer) {
  const c = result.counts;
  return {
    outcome: result.outcome,
    gate: result.gate,
    reason: result.failure?.reason,
    limit: result.failure?.limit ?? undefined,
    shape: result.shape,
    counts: c && {
      raw_chars: c.rawChars,
      kept_chars: c.keptChars,
      paragraphs: c.paragraphs,
      dropped: c.dropped,
      calls: c.calls,
      jev_tokens: c.jevTokens,
      ms: c.ms,
    },
    ratio: f64(result.ratio),
    threshold: f64(result.threshold),
    scorer,
    id: result.id,
    served_model: result.servedModel,
    paragraphs: result.paragraphs.map((p) => ({ index: p.index, chars: p.chars, score: f64(p.score), fate: p.fate })),
    failures: result.failures.map((f) => ({ batch: f.batch, status: f.status, class: f.class })),
  };
}

/**
 * The scorer, threshold and switches for `prune` (flags > environment >
 * config file > defaults, resolved by the guest). Throws a usage message
 * (string) for a refused `--threshold` or `--scorer jev` without a
 * complete configuration.
 */
function pruneSetup(pruner, named, threshold) {
  let checked;
  if (threshold !== undefined) {
    try {
      checked = pruner.threshold(threshold);
    } catch (error) {
      if (error instanceof RangeError) throw `--threshold ${threshold}: ${error.guestMessage}`;
      throw error;
    }
  }
  let config;
  try {
    config = pruner.config(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // The guest's rule: a broken configuration turns pruning off.
    process.stderr.write(`toolprune: ${error.message}; pruning is off\n`);
    return { scorer: 'offline', enabled: false, threshold: checked ?? pruner.defaults.threshold, jevModel: undefined, config: null };
  }
  let jev = null;
  try {
    jev = JevScorer.fromConfig(config, process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (named === 'jev') throw `--scorer jev: ${error.message}`;
  }
  const choice = named ?? (jev ? 'jev' : 'offline');
  if (choice === 'jev' && !jev) throw `--scorer jev: no token: set ${config.tokenVariable}`;
  return {
    scorer: choice === 'jev' ? jev : choice,
    enabled: config.enabled,
    threshold: checked ?? config.threshold,
    jevModel: choice === 'jev' ? jev.jevModel : undefined,
    config,
  };
}

async function prune(argv) {
  const { values, positionals } = parse(
    argv,
    {
      request: { type: 'string' },
      threshold: { type: 'string' },
      lang: { type: 'string' },
      scorer: { type: 'string' },
      tool: { type: 'string', default: 'cli' },
      agent: { type: 'string', default: 'cli' },
      json: { type: 'boolean', default: false },
    },
    true,
  );
  if (values.request === undefined) usage('--request is required');
  if (positionals.length > 1) usage('one input at most');
  if (values.lang !== undefined) {
    try {
      checkLang(values.lang);
    } catch (error) {
      usage(`invalid value '${values.lang}' for '--lang': ${error.message}`);
    }
  }
  if (values.scorer !== undefined && !['offline', 'stub', 'jev'].includes(values.scorer)) {
    usage(`invalid value '${values.scorer}' for '--scorer' (offline, stub, jev)`);
  }

  const bytes = await readInput(positionals[0]);
  const text = decode(bytes);
  if (text === null) {
    // Fail-open: what cannot be pruned goes through untouched.
    await write(bytes);
    process.stderr.write('toolprune: warning: input is not UTF-8; passed through unchanged\n');
    return 0;
  }
  const pruner = await load();
  let setup;
  try {
    setup = pruneSetup(pruner, values.scorer, values.threshold);
  } catch (problem) {
    if (typeof problem !== 'string') throw problem;
    // A usage error, but no text is lost: the input goes through unchanged.
    await write(bytes);
    process.stderr.write(`toolprune: ${problem}; the text was passed through unchanged\n`);
    return 2;
  }
  const conversation = pruner.conversation({
    enabled: setup.enabled,
    threshold: setup.threshold,
    lang: values.lang ?? setup.config?.lang ?? pruner.defaults.lang,
    agent: values.agent,
    scorer: setup.scorer,
    jevModel: setup.jevModel,
  });
  const cancel = cancelOnSigint();
  const result = await conversation
    .turn(values.request, { signal: cancel.signal })
    .onToolResult({ tool: values.tool, text, prunable: true, report: values.json });
  cancel.done();
  if (values.json) {
    await write(`${pretty(pruneReport(result, conversation.scorerName))}\n`);
  } else {
    await write(result.body);
  }
  return 0;
}

// ----- split -----

/**
 * Up to `max` characters of `text` on one line: `\n`, `\r`, `\t`, `\\`
 * escaped, other control characters as `\u{…}`, `…` appended when cut.
 */
function preview(text, max) {
  let out = '';
  let i = 0;
  for (const c of text) {
    if (i === max) {
      out += '…';
      break;
    }
    i += 1;
    if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (c === '\\') out += '\\\\';
    else if (/\p{Cc}/u.test(c)) out += `\\u{${c.codePointAt(0).toString(16)}}`;
    else out += c;
  }
  return out;
}

/** The `split --json` report (the Rust CLI's `SplitReport`). */
function splitReport(inspection) {
  return {
    shape: inspection.shape,
    wrapper_span: inspection.wrapperSpan,
    units: inspection.units.map((u) => ({
      index: u.index,
      byte_start: u.byteStart,
      byte_end: u.byteEnd,
      char_start: u.charStart,
      char_end: u.charEnd,
      chars: Math.max(0, u.charEnd - u.charStart),
      kind: u.kind,
    })),
  };
}

/** Bytes [start, end) of `source` as text, or null when the span is not on character boundaries. */
function byteSlice(source, start, end) {
  if (start > end || end > source.length) return null;
  const slice = source.subarray(start, end);
  const text = decode(slice);
  return text === null ? null : text;
}

/** The `split` table: a `shape:` line, then one line per unit (the Rust CLI's `split_table`). */
function splitTable(text, inspection) {
  const [start, end] = inspection.wrapperSpan ?? [];
  let out;
  if (inspection.shape === null) return 'shape: none (not pruned: structured)\n';
  if (inspection.wrapperSpan) out = `shape: ${inspection.shape} (string literal at bytes ${start}..${end})\n`;
  else out = `shape: ${inspection.shape}\n`;
  const row = (index, bytes, chars, kind, shown) =>
    `${String(index).padStart(5)}  ${String(bytes).padEnd(17)}  ${String(chars).padStart(6)}  ${String(kind).padEnd(6)}  ${shown}\n`;
  out += row('index', 'bytes', 'chars', 'kind', 'text');
  let source = Buffer.from(text, 'utf8');
  if (inspection.wrapperSpan) {
    const literal = byteSlice(source, start, end);
    try {
      if (literal !== null) source = Buffer.from(JSON.parse(literal), 'utf8');
    } catch {
      // Not JSON here: spans are shown in the raw text.
    }
  }
  for (const u of inspection.units) {
    const slice = byteSlice(source, u.byteStart, u.byteEnd);
    out += row(u.index, `${u.byteStart}..${u.byteEnd}`, Math.max(0, u.charEnd - u.charStart), u.kind, slice === null ? '-' : preview(slice, 60));
  }
  return out;
}

async function split(argv) {
  const { values, positionals } = parse(argv, { json: { type: 'boolean', default: false } }, true);
  if (positionals.length > 1) usage('one input at most');
  const text = decode(await readInput(positionals[0]));
  if (text === null) fatal('input is not UTF-8; nothing to split');
  const pruner = await load();
  let inspection;
  try {
    inspection = pruner.inspect(text);
  } catch (error) {
    fatal(`the component failed: ${error.message}`);
  }
  await write(values.json ? `${pretty(splitReport(inspection))}\n` : splitTable(text, inspection));
  return 0;
}

// ----- route -----

/** The `route --json` decision (a serde_json `Value`: keys sorted). */
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
      p: f64(a.p),
      margin: f64(a.margin),
      mean: f64(a.mean),
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
  const { values } = parse(
    argv,
    {
      rules: { type: 'string' },
      message: { type: 'string' },
      answers: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    false,
  );
  if (values.rules === undefined) usage('--rules is required');
  if (values.message === undefined) usage('--message is required');
  const read = (path, what) => {
    let bytes;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      return fatal(`cannot read the ${what} ${path}: ${error.message}`);
    }
    const text = decode(bytes);
    return text === null ? fatal(`cannot read the ${what} ${path}: not UTF-8`) : text;
  };
  const rules = read(values.rules, 'rules file');
  const options = { rulesFile: values.rules };
  if (values.answers !== undefined) options.answers = read(values.answers, 'answers file');
  const pruner = await load();
  if (values.answers === undefined) {
    let scorer = null;
    let config = null;
    try {
      config = pruner.config(process.env);
      scorer = JevScorer.fromConfig(config, process.env);
    } catch (error) {
      if (error instanceof ConfigError) usage(error.message);
      throw error;
    }
    if (!scorer) {
      process.stderr.write(
        `toolprune: route without --answers calls Jev, and ${config.tokenVariable} is not set; or pass --answers FILE (fixed answers)\n`,
      );
      return 2;
    }
    options.scorer = scorer;
  }
  const cancel = cancelOnSigint();
  let d;
  try {
    d = await pruner.route(rules, values.message, { ...options, signal: cancel.signal });
  } catch (error) {
    if (error instanceof RulesError) {
      process.stderr.write(renderLoadErrors(values.rules, error.errors));
      return 2;
    }
    return fatal(error.message);
  } finally {
    cancel.done();
  }
  await write(values.json ? `${pretty(jsonDecision(d), true)}\n` : summary(d));
  return d.verdict === 'failed' ? 3 : 0;
}

/** Runs the CLI with `argv` (without `node` and the script); resolves to the exit code. */
export async function main(argv) {
  const [command, ...rest] = argv;
  try {
    if (command === 'prune') return await prune(rest);
    if (command === 'split') return await split(rest);
    if (command === 'route') return await route(rest);
    if (command === '--help' || command === '-h' || command === 'help') {
      await write(`${USAGE}\n`);
      return 0;
    }
    return usage(command === undefined ? 'a command is required' : `unknown command '${command}'`);
  } catch (error) {
    if (error instanceof Exit) return error.code;
    throw error;
  }
}
