// The judge router (README "Judge router", wit/judge.wit, SPEC §13): the
// guest loads the rules, encodes the one Jev request, decodes the answer,
// evaluates the rules and writes the `judge:` line; the host carries the
// call with the same transport as pruning, under the same deadline.

import { INSTANTIATE_LINE, wellFormed } from './conversation.js';
import { checkScorer, scoreAsync } from './scoring.js';
import * as wit from './wit.js';

/**
 * A rules file the guest refused: `errors` holds every problem in line
 * order; the message has one `FILE:LINE:COL: message` line per problem.
 */
export class RulesError extends Error {
  constructor(file, errors) {
    super(renderLoadErrors(file, errors).trimEnd());
    this.name = 'RulesError';
    this.file = file;
    this.errors = errors;
  }
}

/** `FILE:LINE:COLUMN: message`, one line (with its newline) per problem. */
export function renderLoadErrors(file, errors) {
  return errors.map((e) => `${file}:${e.line}:${e.column}: ${e.message}\n`).join('');
}

function loadErrors(list) {
  return list.map((e) => ({ line: e.line, column: e.column, message: e.message }));
}

/**
 * Decides where `message` goes with the rules file's text `rules` (see
 * `Pruner.route`). `engine`: the pruner's; `defaultScorer`: its scorer.
 */
export async function route(engine, defaultScorer, rules, message, options = {}) {
  if (typeof rules !== 'string') throw new TypeError('toolprune: rules must be a string (the TOML text)');
  if (typeof message !== 'string') throw new TypeError('toolprune: message must be a string');
  const { answers, scorer, signal, jevModel, log = (line) => process.stderr.write(`${line}\n`), rulesFile = 'rules', deadlineCapMs } = options ?? {};
  if (answers !== undefined && answers !== null && typeof answers !== 'string') {
    throw new TypeError('toolprune: answers must be a string (the text of a Jev response)');
  }
  if (typeof log !== 'function') throw new TypeError('toolprune: log must be a function');
  wellFormed('rules', rules);
  wellFormed('message', message);
  if (typeof answers === 'string') wellFormed('answers', answers);

  /** A trap: the guest's failure line, then an Error (the rules could not be judged). */
  const trapped = async (trap) => {
    const line = await engine.call('failureLine', { operation: 'judge', agent: '', tool: '', failure: 'guest-trap', limit: wit.kebab(trap.limit) });
    log(line.ok ? line.value : INSTANTIATE_LINE);
    const error = new Error(`toolprune: the component failed (guest_trap): ${trap.message}`);
    error.reason = 'guest_trap';
    error.limit = trap.limit ?? null;
    throw error;
  };
  const decided = (d) => {
    const out = wit.decision(d);
    log(out.logLine);
    return out;
  };

  if (typeof answers === 'string') {
    const model = typeof jevModel === 'string' ? jevModel : undefined;
    if (model !== undefined) wellFormed('jevModel', model);
    const answer = await engine.call('judgeRoute', { rules, message, model, answers });
    if (!answer.ok) return trapped(answer.trap);
    if (answer.value.tag === 'err') throw new RulesError(rulesFile, loadErrors(answer.value.val));
    return decided(answer.value.val);
  }

  const s = scorer === undefined ? defaultScorer : checkScorer(scorer);
  if (s.kind !== 'host') {
    throw new TypeError(`toolprune: route needs \`answers\` or a Jev scorer; the ${s.name} scorer cannot judge`);
  }
  const model = typeof jevModel === 'string' ? jevModel : typeof s.scorer.jevModel === 'string' ? s.scorer.jevModel : undefined;
  if (model !== undefined) wellFormed('jevModel', model);
  const start = () => engine.call('judgeStart', { rules, message, model });
  const started = await start();
  if (!started.ok) return trapped(started.trap);
  if (started.value.errors) throw new RulesError(rulesFile, loadErrors(started.value.errors));
  const response = await scoreAsync(s.scorer, started.value.request, {
    signals: [signal],
    deadlineCapMs,
    retryDelay: async (facts) => {
      const answer = await engine.call('retryDelay', { facts });
      return answer.ok ? (answer.value ?? null) : null;
    },
  });
  let finished = await engine.call('judgeFinish', { job: started.value.job, response });
  if (finished.ok && finished.value.missing) {
    // The instance was replaced meanwhile (a trap elsewhere): the same
    // rules and message load the same job on the new one.
    const again = await start();
    if (!again.ok) return trapped(again.trap);
    finished = await engine.call('judgeFinish', { job: again.value.job, response });
  }
  if (!finished.ok) return trapped(finished.trap);
  return decided(finished.value.decision);
}
