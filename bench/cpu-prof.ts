// Summarises V8 .cpuprofile files (node --cpu-prof; `npm run bench -- ... --cpu-prof DIR`) by function: self time
// (samples in the function itself) and total time (samples with the function anywhere on the stack, counted once per
// sample), heaviest first. No dependency: the format is nodes (id, callFrame, children) + samples + timeDeltas.
//
//   npx tsx bench/cpu-prof.ts /tmp/prof-base/10000/plan-controller [--top 40] [--filter src/plan-controller]
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** One node of a V8 CPU profile's call tree. */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

/** A V8 CPU profile as `--cpu-prof` writes it. */
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self and total milliseconds of one function (name and location). */
export interface FunctionTime {
  fn: string;
  selfMs: number;
  totalMs: number;
}

/** Self and total time per function of one profile, heaviest self first; `idleMs` is (idle) + (program) + (garbage collector) apart. */
export function summarizeProfile(p: CpuProfile): { rows: FunctionTime[]; sampledMs: number } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n: ProfileNode): string => {
    const f = n.callFrame;
    const file = f.url.replace(/^file:\/\//, '').replace(/^.*\/(src|tools|bench|node_modules|dist)\//, '$1/');
    return `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`.trim();
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let sampledMs = 0;
  for (let i = 0; i < p.samples.length; i++) {
    // timeDeltas[i] is the gap before sample i; attributing it to the next sample is V8's own convention (DevTools).
    const ms = (p.timeDeltas[i + 1] ?? 0) / 1000;
    sampledMs += ms;
    let node = byId.get(p.samples[i]!);
    if (!node) continue;
    const first = label(node);
    self.set(first, (self.get(first) ?? 0) + ms);
    const seen = new Set<string>();
    for (; node; node = byId.get(parent.get(node.id) ?? -1)) {
      const l = label(node);
      if (seen.has(l)) continue;
      seen.add(l);
      total.set(l, (total.get(l) ?? 0) + ms);
    }
  }
  const rows = [...total].map(([fn, totalMs]) => ({ fn, selfMs: self.get(fn) ?? 0, totalMs }));
  return { rows, sampledMs };
}

function profilesIn(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(path, f));
}

function main(): void {
  const argv = process.argv.slice(2);
  const opt = (name: string): string | undefined => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : undefined);
  const top = Number(opt('top') ?? 30);
  const filter = opt('filter');
  const paths = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
  if (paths.length === 0) throw new Error('usage: bench/cpu-prof.ts <file.cpuprofile | dir>... [--top N] [--filter text]');
  for (const file of paths.flatMap(profilesIn)) {
    const { rows, sampledMs } = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
    const idle = rows.find((r) => r.fn.startsWith('(idle)'))?.selfMs ?? 0;
    const busy = sampledMs - idle;
    const pct = (ms: number): string => `${((100 * ms) / busy).toFixed(1).padStart(5)} %`;
    const show = (r: FunctionTime): string =>
      `  ${(r.selfMs / 1000).toFixed(2).padStart(8)} s ${pct(r.selfMs)}  ${(r.totalMs / 1000).toFixed(2).padStart(8)} s ${pct(r.totalMs)}  ${r.fn}`;
    const keep = rows.filter((r) => !r.fn.startsWith('(idle)') && (!filter || r.fn.includes(filter)));
    process.stdout.write(`${file}\n  sampled ${(sampledMs / 1000).toFixed(1)} s, busy ${(busy / 1000).toFixed(1)} s\n`);
    process.stdout.write(`  by self time:      self        total\n`);
    for (const r of [...keep].sort((a, b) => b.selfMs - a.selfMs).slice(0, top)) process.stdout.write(`${show(r)}\n`);
    process.stdout.write(`  by total time:     self        total\n`);
    for (const r of [...keep].sort((a, b) => b.totalMs - a.totalMs).slice(0, top)) process.stdout.write(`${show(r)}\n`);
  }
}

if (process.argv[1]?.endsWith('cpu-prof.ts')) main();
