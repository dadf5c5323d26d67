// Process entry of `inplace` / `kubectl-inplace` (bin/inplace.mjs imports this; containers run dist/src/cli/main.js).
import { runCli } from './cli.js';
import type { Io } from './verb.js';

const controller = new AbortController();
let signals = 0;
const onSignal = (sig: NodeJS.Signals): void => {
  signals++;
  if (signals > 1) {
    // A second Ctrl-C means "now": skip the clean shutdown.
    process.stderr.write(`\nreceived ${sig} again, exiting immediately\n`);
    process.exit(130);
  }
  controller.abort(new Error(`received ${sig}`));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const io: Io = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  isTTY: process.stdout.isTTY === true,
  columns: process.stdout.columns || 80,
  rows: process.stdout.rows || 24,
  signal: controller.signal,
};

const code = await runCli(process.argv.slice(2), io);
// Pooled sockets and timers of libraries must not keep a finished command alive.
process.exit(code);
