// Controller processes for benchmarks and reliability suites: each component runs as its own `inplace` process
// (as in its own pod), can be killed with SIGKILL and restarted, and is measured through /proc (peak RSS, CPU).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** What to run: `inplace <args>` (bin/inplace.mjs) or a TypeScript entry point through tsx. */
export type ProcSpec = (
  | { name: string; inplace: string[]; env?: Record<string, string> }
  | { name: string; tsx: string; args: string[]; env?: Record<string, string> }
) & {
  /** Options for node itself, before the script (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
};

/** A managed child process that can be killed and restarted under the same name. */
export class Proc {
  proc: ChildProcess | undefined;
  /** Incarnations started so far (1 after the first start). */
  starts = 0;
  /** SIGKILLs sent by the harness. */
  kills = 0;
  private exitedP: Promise<void> = Promise.resolve();
  private stopping = false;
  /** CPU seconds and peak RSS of incarnations that exited (added to the live one in stats()). */
  private past = { cpuSeconds: 0, peakRssBytes: 0 };
  private last: ProcStats | undefined;
  /** Log size when the current incarnation started (its readiness line comes after). */
  private logOffset = 0;

  constructor(
    readonly spec: ProcSpec,
    readonly logDir: string,
  ) {}

  get name(): string {
    return this.spec.name;
  }
  get pid(): number | undefined {
    return this.proc?.pid;
  }
  get logPath(): string {
    return join(this.logDir, `${this.spec.name}.log`);
  }
  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Starts (or restarts) the process; output is appended to `<logDir>/<name>.log`. */
  start(): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    mkdirSync(this.logDir, { recursive: true });
    const fd = openSync(this.logPath, 'a');
    try {
      this.logOffset = statSync(this.logPath).size;
    } catch {
      this.logOffset = 0;
    }
    const nodeArgs = this.spec.nodeArgs ?? [];
    const [cmd, args] =
      'inplace' in this.spec
        ? [process.execPath, [...nodeArgs, join(ROOT, 'bin', 'inplace.mjs'), ...this.spec.inplace]]
        : [process.execPath, [...nodeArgs, '--import', 'tsx', join(ROOT, this.spec.tsx), ...this.spec.args]];
    const child = spawn(cmd, args, {
      cwd: ROOT,
      // stdin is a pipe: INPLACE_EXIT_WITH_PARENT makes a child exit when it closes, so a crashed harness leaves no orphans.
      stdio: ['pipe', fd, fd],
      env: {
        ...process.env,
        INPLACE_EXIT_WITH_PARENT: '1',
        FORCE_COLOR: '0',
        LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info',
        ...(this.spec.env ?? {}),
      },
    });
    closeSync(fd);
    this.proc = child;
    this.starts++;
    this.last = undefined;
    this.exitedP = new Promise<void>((res) => {
      child.once('exit', () => {
        if (this.last) {
          this.past.cpuSeconds += this.last.cpuSeconds;
          this.past.peakRssBytes = Math.max(this.past.peakRssBytes, this.last.peakRssBytes);
        }
        res();
      });
      child.once('error', () => res());
    });
  }

  /**
   * Resolves once the current incarnation logged that it is up (`inplace run`: the "started" line, after its caches
   * synced; `inplace updater`: "updater <name> running"); rejects when it exits first or after `timeoutMs`.
   */
  async waitReady(timeoutMs = 60_000, marker: RegExp = READY_MARKER): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const buf = readFileSync(this.logPath);
        if (marker.test(buf.subarray(this.logOffset).toString('utf8'))) return;
      } catch {
        // not written yet
      }
      if (!this.running) throw new Error(`${this.name} exited before it was ready:\n${this.tail()}`);
      if (Date.now() > deadline) throw new Error(`${this.name} not ready after ${timeoutMs} ms:\n${this.tail()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** kill -9, then waits for the exit. */
  async kill9(): Promise<void> {
    if (!this.running) return;
    this.sample();
    this.kills++;
    this.proc!.kill('SIGKILL');
    await this.exitedP;
  }

  /** SIGTERM, SIGKILL after `graceMs`; waits for the exit. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (!this.running) return;
    this.sample();
    this.proc!.kill('SIGTERM');
    const t = setTimeout(() => this.proc?.kill('SIGKILL'), graceMs);
    await this.exitedP;
    clearTimeout(t);
  }

  /** Samples /proc of the live incarnation (keeps the last sample for when it exits). */
  sample(): ProcStats | undefined {
    const pid = this.pid;
    if (!pid || !this.running) return undefined;
    const s = procStats(pid);
    if (s) this.last = s;
    return s;
  }

  /** CPU seconds (all incarnations) and peak RSS (max over incarnations), from /proc. */
  stats(): ProcStats {
    const live = this.running ? this.sample() : undefined;
    return {
      cpuSeconds: this.past.cpuSeconds + (live?.cpuSeconds ?? 0),
      peakRssBytes: Math.max(this.past.peakRssBytes, live?.peakRssBytes ?? 0),
      rssBytes: live?.rssBytes ?? 0,
    };
  }

  /** The last lines of the log (for failure messages). */
  tail(n = 20): string {
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-n).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** True when the process died without the harness killing or stopping it. */
  get crashedOnItsOwn(): boolean {
    return !this.stopping && !!this.proc && !this.running && this.proc.signalCode !== 'SIGKILL';
  }
}

/**
 * A process the harness did not start (a real kube-apiserver, its etcd), measured through /proc like a Proc: CPU
 * seconds and peak RSS, the last sample kept for when it is gone.
 */
export class ExternalProc {
  private last: ProcStats = { cpuSeconds: 0, peakRssBytes: 0, rssBytes: 0 };

  constructor(
    readonly name: string,
    readonly pid: number,
  ) {
    if (!procStats(pid)) throw new Error(`${name}: no process ${pid}`);
  }

  /** CPU seconds and peak RSS of the process (the last sample once it is gone). */
  stats(): ProcStats {
    this.last = procStats(this.pid) ?? this.last;
    return this.last;
  }
}

/** Parses `name=pid,name=pid` (`--server-pids`) into measured external processes. */
export function externalProcs(spec: string | undefined): ExternalProc[] {
  if (!spec) return [];
  return spec.split(',').map((pair) => {
    const [name, pid] = pair.split('=');
    if (!name || !pid || !/^\d+$/.test(pid)) throw new Error(`--server-pids: "${pair}" is not name=pid`);
    return new ExternalProc(name, Number(pid));
  });
}

/** What `inplace run` (info level) and `inplace updater` print once they are up. */
export const READY_MARKER = /"msg":"started"|updater \S+ running/;

/** CPU and memory of a process. */
export interface ProcStats {
  cpuSeconds: number;
  /** VmHWM: the peak resident set size. */
  peakRssBytes: number;
  rssBytes: number;
}

const CLK_TCK = 100;

/** Reads /proc/<pid>/stat (utime+stime) and /proc/<pid>/status (VmHWM, VmRSS); undefined when gone. */
export function procStats(pid: number): ProcStats | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may contain spaces) start after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(f[11]);
    const stime = Number(f[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { cpuSeconds: (utime + stime) / CLK_TCK, peakRssBytes: kb('VmHWM'), rssBytes: kb('VmRSS') };
  } catch {
    return undefined;
  }
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => res(port));
    });
  });
}

/** Stops every process (in parallel); `graceMs` before SIGKILL (a profiled process needs time to write its profile). */
export async function stopAll(procs: readonly Proc[], graceMs?: number): Promise<void> {
  await Promise.all(procs.map((p) => p.stop(graceMs)));
}

/** Parses Prometheus text exposition into samples (name, labels, value). */
export function parseProm(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  return out;
}

/** Scrapes `http://127.0.0.1:<port>/metrics` (a busy process may take long to answer); undefined when unreachable. */
export async function scrape(port: number, timeoutMs = 60_000): Promise<string | undefined> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    return r.ok ? await r.text() : undefined;
  } catch {
    return undefined;
  }
}

/** A controller's V8 old-space flag: the plan controller's own limit when given, else the controllers' (none: V8's). */
export function maxOldSpaceArgs(component: string, controllersMB: number | undefined, planControllerMB: number | undefined): string[] {
  const mb = component === 'plan-controller' && planControllerMB !== undefined ? planControllerMB : controllersMB;
  return mb !== undefined ? [`--max-old-space-size=${mb}`] : [];
}
