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
// What people and scripts read is rendered once, by the guest's `report`
// exports (wit/report.wit): `prune --json` (`report.prune-json`), `split`
// (`report.split-table`), `split --json` (`report.split-json`), `route`
// and `route --json` (`report.route-summary`, `report.route-json`) and a
// rules file's errors (`report.rules-errors`): the same bytes as the Rust
// and Python CLIs.
//
// `main(argv)` is the entry (bin/toolprune.mjs calls it).

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { checkLang } from './conversation.js';
import { ConfigError, JevScorer } from './jev.js';
import { RulesError } from './judge.js';
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

// ----- prune -----

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
  const turn = conversation.turn(values.request, { signal: cancel.signal });
  const input = { tool: values.tool, text, prunable: true, report: values.json };
  // The guest's own scorers: one blocking call (the import form); a host
  // scorer (Jev, async only): a job, so that Ctrl-C can cancel it.
  const result = typeof setup.scorer === 'string' ? turn.onToolResultSync(input) : await turn.onToolResult(input);
  cancel.done();
  if (values.json) {
    let report;
    try {
      report = pruner.pruneJson(result, conversation.scorerName);
    } catch (error) {
      // The body was decided; only its report could not be rendered.
      return fatal(`the component failed: ${error.message}`);
    }
    await write(`${report}\n`);
  } else {
    await write(result.body);
  }
  return 0;
}

// ----- split -----

async function split(argv) {
  const { values, positionals } = parse(argv, { json: { type: 'boolean', default: false } }, true);
  if (positionals.length > 1) usage('one input at most');
  const text = decode(await readInput(positionals[0]));
  if (text === null) fatal('input is not UTF-8; nothing to split');
  const pruner = await load();
  let out;
  try {
    // `split --json` ends without a newline (report.wit); the table ends with one.
    out = values.json ? `${pruner.split(text, { json: true })}\n` : pruner.split(text);
  } catch (error) {
    fatal(`the component failed: ${error.message}`);
  }
  await write(out);
  return 0;
}

// ----- route -----

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
      process.stderr.write(pruner.rulesErrors(values.rules, error.errors));
      return 2;
    }
    return fatal(error.message);
  } finally {
    cancel.done();
  }
  await write(values.json ? `${pruner.routeReport(d, { json: true })}\n` : pruner.routeReport(d));
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
