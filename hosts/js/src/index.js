// toolprune from Node: the WebAssembly component (transpiled by jco into
// ../gen/ by `npm run build`) behind a thin host. Every rule, name, number
// and text is the guest's; this package is mechanism (SPEC §14): the
// guest's thread and its limits (engine.js, worker.js), conversations with
// their id counter and store (conversation.js), the scorers' deadline and
// cancellation (scoring.js), the Jev transport (jev.js), the judge router's
// call (judge.js), and the CLI (cli.js).

export { Pruner } from './pruner.js';
export { Conversation, Turn } from './conversation.js';
export { JevScorer, ConfigError } from './jev.js';
export { RulesError, renderLoadErrors } from './judge.js';
export { VersionError, CONTRACT } from './engine.js';
