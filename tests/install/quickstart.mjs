// The README's quick start through the installed npm package's ESM API
// (scripts/test-packages runs it in a scratch project after
// `npm install ./dist/toolprune-V.tgz`):
//
//   node quickstart.mjs prune THRESHOLD REQUEST FILE   the body on stdout (as `toolprune prune`)
//   node quickstart.mjs load GEN_DIR                    Pruner.load of those bindings: the
//                                                       error's message on stdout, exit 1
import { readFileSync } from 'node:fs';
import { Pruner } from 'toolprune';

const [command, ...args] = process.argv.slice(2);
if (command === 'prune') {
  const [threshold, request, file] = args;
  const pruner = await Pruner.load();
  const conversation = pruner.conversation({ enabled: true, threshold });
  const turn = conversation.turn(request);
  const result = await turn.onToolResult({ tool: 'fetch', prunable: true, text: readFileSync(file, 'utf8') });
  process.stdout.write(result.body);
  pruner.close();
} else if (command === 'load') {
  try {
    (await Pruner.load({ genDir: args[0] })).close();
    console.log('loaded');
  } catch (error) {
    console.log(error.message);
    process.exitCode = 1;
  }
} else {
  console.error('usage: quickstart.mjs prune THRESHOLD REQUEST FILE | load GEN_DIR');
  process.exitCode = 2;
}
