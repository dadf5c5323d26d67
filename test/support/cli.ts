// Runs the `inplace` CLI in-process for tests, capturing what it prints; runs other commands as processes.
import { spawn } from 'node:child_process';
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
  const io: Io = {
    out: (s) => void (out += s),
    err: (s) => void (err += s),
    isTTY: false,
    columns: 120,
    signal: new AbortController().signal,
  };
  const code = await runCli(argv, io);
  return { code, out, err };
}

/** What a finished process returned and printed. */
export interface ProcessRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command as a child process without blocking the event loop (the local API server of the tests answers from
 * this process, so spawnSync would deadlock against it); killed after `timeoutMs`.
 */
export function runProcess(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<ProcessRun> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 120_000 });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', (e) => resolve({ status: null, stdout, stderr: `${stderr}${e.message}` }));
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
