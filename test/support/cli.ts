// Runs the `inplace` CLI in-process for tests, capturing what it prints.
import { runCli } from '../../src/cli/cli.js';
import type { Io } from '../../src/cli/verb.js';

/** What one CLI invocation returned and printed. */
export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Runs the CLI in-process (non-TTY, 120 columns) and captures stdout and stderr. */
export async function cli(...argv: string[]): Promise<CliRun> {
  let out = '';
  let err = '';
  const io: Io = { out: (s) => void (out += s), err: (s) => void (err += s), isTTY: false, columns: 120, signal: new AbortController().signal };
  const code = await runCli(argv, io);
  return { code, out, err };
}
