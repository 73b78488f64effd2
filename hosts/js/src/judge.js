// The judge router (README "Judge router", wit/judge.wit, SPEC §13): the
// guest loads the rules, encodes the one Jev request, decodes the answer,
// evaluates the rules and writes the `judge:` line; the host carries the
// call with the same transport as pruning, under the same deadline.

import { INSTANTIATE_LINE, defaultLog, safeLog, wellFormed } from './conversation.js';
import { checkScorer, scoreAsync, scoreSync } from './scoring.js';
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

/** The options of `route` / `routeSync`, checked; throws a TypeError for a wrong type. */
function checked(rules, message, options) {
  if (typeof rules !== 'string') throw new TypeError('toolprune: rules must be a string (the TOML text)');
  if (typeof message !== 'string') throw new TypeError('toolprune: message must be a string');
  const { answers, scorer, signal, jevModel, log = defaultLog, rulesFile = 'rules', deadlineCapMs } = options ?? {};
  if (answers !== undefined && answers !== null && typeof answers !== 'string') {
    throw new TypeError('toolprune: answers must be a string (the text of a Jev response)');
  }
  if (typeof log !== 'function') throw new TypeError('toolprune: log must be a function');
  wellFormed('rules', rules);
  wellFormed('message', message);
  if (typeof answers === 'string') wellFormed('answers', answers);
  // What the sink throws is dropped: the decision is returned as made.
  return { answers, scorer, signal, jevModel, log: safeLog(log), rulesFile, deadlineCapMs };
}

/** The model named in the judge's body: the option, else the scorer's; checked well-formed. */
function modelOf(jevModel, scorer) {
  const model = typeof jevModel === 'string' ? jevModel : typeof scorer?.jevModel === 'string' ? scorer.jevModel : undefined;
  if (model !== undefined) wellFormed('jevModel', model);
  return model;
}

/** The scorer that makes the live call: a host scorer (the offline scorer and the stub cannot judge). */
function liveScorer(scorer, defaultScorer) {
  const s = scorer === undefined ? defaultScorer : checkScorer(scorer);
  if (s.kind !== 'host') {
    throw new TypeError(`toolprune: route needs \`answers\` or a Jev scorer; the ${s.name} scorer cannot judge`);
  }
  return s;
}

/** A trap's failure line written, and the Error to throw (the rules could not be judged). */
function trapError(trap, line, log) {
  log(line.ok ? line.value : INSTANTIATE_LINE);
  const error = new Error(`toolprune: the component failed (guest_trap): ${trap.message}`);
  error.reason = 'guest_trap';
  error.limit = trap.limit ?? null;
  return error;
}

const failureArgs = (trap) => ({ operation: 'judge', agent: '', tool: '', failure: 'guest-trap', limit: wit.kebab(trap.limit) });

/**
 * Decides where `message` goes with the rules file's text `rules` (see
 * `Pruner.routeSync`), blocking: fixed `answers` (`judge.route`), or one
 * `judge.decide` call whose `scorer` import is answered here by the
 * scorer's `scoreSync` (SPEC §14's import form).
 */
export function routeSync(engine, defaultScorer, rules, message, options = {}) {
  const o = checked(rules, message, options);
  const trapped = (trap) => {
    throw trapError(trap, engine.callSync('failureLine', failureArgs(trap)), o.log);
  };
  const decided = (d) => {
    const out = wit.decision(d);
    o.log(out.logLine);
    return out;
  };
  let answer;
  if (typeof o.answers === 'string') {
    answer = engine.callSync('judgeRoute', { rules, message, model: modelOf(o.jevModel), answers: o.answers });
  } else {
    const s = liveScorer(o.scorer, defaultScorer);
    if (typeof s.scorer.scoreSync !== 'function') {
      throw new TypeError(`toolprune: scorer ${s.name} has no scoreSync; use await pruner.route(…)`);
    }
    const onScore = (request) =>
      scoreSync(s.scorer, request, {
        signals: [o.signal],
        deadlineCapMs: o.deadlineCapMs,
        retryDelay: (facts) => {
          const delay = engine.callSync('retryDelay', { facts });
          return delay.ok ? (delay.value ?? null) : null;
        },
      });
    answer = engine.callSync('judgeDecide', { rules, message, model: modelOf(o.jevModel, s.scorer) }, undefined, onScore);
  }
  if (!answer.ok) return trapped(answer.trap);
  if (answer.value.tag === 'err') throw new RulesError(o.rulesFile, loadErrors(answer.value.val));
  return decided(answer.value.val);
}

/**
 * Decides where `message` goes with the rules file's text `rules` (see
 * `Pruner.route`), without blocking: fixed `answers`, or a `judge-job`
 * (load → its request scored by the scorer's `score` → finish). `engine`:
 * the pruner's; `defaultScorer`: its scorer.
 */
export async function route(engine, defaultScorer, rules, message, options = {}) {
  const o = checked(rules, message, options);
  const trapped = async (trap) => {
    throw trapError(trap, await engine.call('failureLine', failureArgs(trap)), o.log);
  };
  const decided = (d) => {
    const out = wit.decision(d);
    o.log(out.logLine);
    return out;
  };

  if (typeof o.answers === 'string') {
    const answer = await engine.call('judgeRoute', { rules, message, model: modelOf(o.jevModel), answers: o.answers });
    if (!answer.ok) return trapped(answer.trap);
    if (answer.value.tag === 'err') throw new RulesError(o.rulesFile, loadErrors(answer.value.val));
    return decided(answer.value.val);
  }

  const s = liveScorer(o.scorer, defaultScorer);
  const model = modelOf(o.jevModel, s.scorer);
  const start = () => engine.call('judgeStart', { rules, message, model });
  const started = await start();
  if (!started.ok) return trapped(started.trap);
  if (started.value.errors) throw new RulesError(o.rulesFile, loadErrors(started.value.errors));
  const response = await scoreAsync(s.scorer, started.value.request, {
    signals: [o.signal],
    deadlineCapMs: o.deadlineCapMs,
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
