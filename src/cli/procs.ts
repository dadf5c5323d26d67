// Child processes of the demo: each component runs as its own `inplace` process (as it would in its own pod),
// with its output in a log file, and is stopped with SIGTERM (then SIGKILL) on shutdown.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root: the nearest ancestor of this module with a package.json (works for src/ and dist/src/). */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = resolve(dir, '..');
    if (up === dir) throw new Error('cannot find the project root (no package.json above src/cli)');
    dir = up;
  }
  return dir;
}

/** Environment variable that makes a child exit when its parent's stdin pipe closes (no orphans if the parent dies). */
export const EXIT_WITH_PARENT_ENV = 'INPLACE_EXIT_WITH_PARENT';

/** A running child process. */
export interface Child {
  name: string;
  proc: ChildProcess;
  logPath: string;
  /** Settles when the process exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True once stop() was called (an exit after that is expected). */
  stopping: boolean;
}

/** Starts `inplace <args>` as a child process logging to `<logDir>/<name>.log`. */
export function spawnInplace(name: string, args: string[], logDir: string): Child {
  const logPath = join(logDir, `${name}.log`);
  const fd = openSync(logPath, 'a');
  const proc = spawn(process.execPath, [join(projectRoot(), 'bin', 'inplace.mjs'), ...args], {
    stdio: ['pipe', fd, fd],
    // Human-readable logs for whoever reads the demo's log files (JSON stays the default of deployments).
    env: { ...process.env, [EXIT_WITH_PARENT_ENV]: '1', FORCE_COLOR: '0', LOG_FORMAT: process.env['LOG_FORMAT'] ?? 'pretty' },
  });
  closeSync(fd);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    proc.once('exit', (code, signal) => res({ code, signal }));
    proc.once('error', () => res({ code: -1, signal: null }));
  });
  return { name, proc, logPath, exited, stopping: false };
}

/** The last `n` lines of a child's log (for error messages). */
export function tailLog(child: Child, n = 15): string {
  try {
    return readFileSync(child.logPath, 'utf8').trimEnd().split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Stops children: SIGTERM, then SIGKILL after `graceMs`; resolves when all exited. */
export async function stopChildren(children: readonly Child[], graceMs = 5000): Promise<void> {
  await Promise.all(
    children.map(async (c) => {
      c.stopping = true;
      if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
      c.proc.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const killed = new Promise<void>((res) => {
        timer = setTimeout(() => {
          c.proc.kill('SIGKILL');
          res();
        }, graceMs);
      });
      await Promise.race([c.exited, killed]);
      clearTimeout(timer);
      await c.exited;
    }),
  );
}

/**
 * Resolves when a long-running verb must stop: on SIGINT/SIGTERM (the io signal), or — for demo children — when
 * the parent's stdin pipe closes, so a killed demo never leaves controllers running.
 */
export function stopRequested(signal: AbortSignal): Promise<string> {
  return new Promise((res) => {
    if (signal.aborted) return res('signal');
    signal.addEventListener('abort', () => res('signal'), { once: true });
    if (process.env[EXIT_WITH_PARENT_ENV] === '1') {
      process.stdin.on('end', () => res('parent exited'));
      process.stdin.on('close', () => res('parent exited'));
      process.stdin.resume();
    }
  });
}
