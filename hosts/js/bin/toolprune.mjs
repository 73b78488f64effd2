#!/usr/bin/env node
// toolprune (Node): `prune`, `split` and `route` with the Rust CLI's flags
// and output (src/cli.js).

import { main } from '../src/cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`toolprune: ${error?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
