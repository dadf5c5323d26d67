// The "idle and history" case of `npm run bench -- --history-plans N` (issue 15): N plans back to back on one fleet,
// never deleted by the benchmark (the plan controller's history limit prunes them), printing each controller's RSS
// after every plan; then one control-plane machine held in update for an hour (reference updater
// `durationSeconds: 3600`, MHC in-place timeout 1000h) and each process's CPU over --idle-seconds of that wait.
// Targets: RSS growth < 5 % after the second plan; idle CPU < 1 % of a core per process.
//
//   npm run bench -- --history-plans 6 --sizes 200 --max-unavailable 10% --durations 0 --no-poll --no-apiserver
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InPlaceUpdatePlan, KubeObject } from '../src/api/index.js';
import { Annotations, InPlaceUpdatePlans, MachineHealthChecks, MachineUpdates, UpdaterUpdateTasks, isTerminal } from '../src/api/index.js';
import type { KubeClient } from '../src/runtime/index.js';
import { fleetPlan, setMaxUnavailable, type Fleet } from './lib/fleet.js';
import { parseProm, scrape, type Proc } from './lib/procs.js';

/** What the history case needs of the running platform. */
export interface HistoryPlatform {
  client: KubeClient;
  ns: string;
  fleet: Fleet;
  /** Every platform process (API server, controllers, updater), by name. */
  procs: Proc[];
  /** Metrics ports of the processes that serve /metrics, by process name (for the V8 heap in use). */
  metricsPorts: Record<string, number>;
}

/** Options of the history case. */
export interface HistoryOptions {
  plans: number;
  maxUnavailable: number | string;
  durationSeconds: number;
  idleSeconds: number;
  out: string;
}

/** One plan of the series: how it ended and every process's resident memory after it. */
export interface HistoryRow {
  plan: string;
  status: string;
  wallSeconds: number;
  plansLeft: number;
  machineUpdatesLeft: number;
  tasksLeft: number;
  rssMB: Record<string, number>;
  /** CPU seconds each process used during the plan (wall time depends on the machine's load; this does not). */
  cpuSeconds: Record<string, number>;
  /** V8 heap in use (nodejs_heap_size_used_bytes) of the processes that serve /metrics: less noisy than RSS. */
  heapMB: Record<string, number>;
  /**
   * V8 heap pages (nodejs_heap_size_total_bytes: used or not, MiB) of the processes that serve /metrics: RSS beyond
   * them is native memory and code, heap pages beyond the heap in use are V8's headroom.
   */
  heapTotalMB?: Record<string, number>;
  /** The API server's V8 heap in use after its last full collection (its live data; MiB), when it serves /metrics. */
  apiserverLiveHeapMB?: number;
  /** The API server's V8 heap pages (used or not; MiB) when sampled: its RSS beyond them is native memory and code. */
  apiserverHeapTotalMB?: number;
  /**
   * What the API server holds (its /metrics, when served): objects of the resources that hold any, "watch events"
   * retained for replay over all resources, "event TTL tracked" (Events kept until --event-ttl).
   */
  apiserverContent?: Record<string, number>;
}

/** The figures of the case (also written to bench/results/history-<machines>.json). */
export interface HistoryResult {
  machines: number;
  rows: HistoryRow[];
  /** RSS after the last plan vs after the second, per process, in percent. */
  rssGrowthAfterSecondPct: Record<string, number>;
  /** The same for the V8 heap in use. */
  heapGrowthAfterSecondPct: Record<string, number>;
  /** CPU of each process while one machine waits in update, in percent of one core. */
  idleCpuPct: Record<string, number>;
  idleSeconds: number;
  startedAt: string;
}

const say = (s: string): void => {
  process.stdout.write(`${s}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (x: number, digits = 1): number => Math.round(x * 10 ** digits) / 10 ** digits;
const rssOf = (procs: Proc[]): Record<string, number> =>
  Object.fromEntries(procs.map((p) => [p.name, round(p.stats().rssBytes / 2 ** 20)]));

async function waitPlanTerminal(client: KubeClient, ns: string, name: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = (await client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, name))?.status?.updateStatus;
    if (isTerminal(s)) return s!;
    await sleep(500);
  }
  return `timeout after ${Math.round(timeoutMs / 1000)} s`;
}

/** Heap in use and heap pages (MiB) of the processes that serve /metrics, from one scrape each. */
async function heapOf(ports: Record<string, number>): Promise<{ used: Record<string, number>; total: Record<string, number> }> {
  const used: Record<string, number> = {};
  const total: Record<string, number> = {};
  for (const [name, port] of Object.entries(ports)) {
    const samples = parseProm((await scrape(port)) ?? '');
    const u = samples.find((s) => s.name === 'inplace_nodejs_heap_size_used_bytes');
    const t = samples.find((s) => s.name === 'inplace_nodejs_heap_size_total_bytes');
    if (u) used[name] = round(u.value / 2 ** 20);
    if (t) total[name] = round(t.value / 2 ** 20);
  }
  return { used, total };
}

/** Objects per resource (non-zero), retained watch events and TTL-tracked Events of the API server, if it serves /metrics. */
async function contentOf(
  port: number | undefined,
): Promise<{ liveHeapMB?: number; heapTotalMB?: number; content: Record<string, number> } | undefined> {
  if (port === undefined) return undefined;
  const samples = parseProm((await scrape(port)) ?? '');
  if (samples.length === 0) return undefined;
  const live = samples.find((x) => x.name === 'inplace_nodejs_heap_used_after_major_gc_bytes')?.value;
  const total = samples.find((x) => x.name === 'inplace_nodejs_heap_size_total_bytes')?.value;
  const out: Record<string, number> = {};
  let watchEvents = 0;
  for (const x of samples) {
    if (x.name === 'apiserver_storage_objects' && x.value > 0) out[x.labels['resource'] ?? '?'] = x.value;
    if (x.name === 'inplace_apiserver_watch_events') watchEvents += x.value;
    if (x.name === 'inplace_apiserver_event_ttl_tracked') out['event TTL tracked'] = x.value;
  }
  out['watch events'] = watchEvents;
  return {
    ...(live ? { liveHeapMB: round(live / 2 ** 20) } : {}),
    ...(total ? { heapTotalMB: round(total / 2 ** 20) } : {}),
    content: out,
  };
}

/** Per key, the least value over the samples. */
const leastOf = (samples: Record<string, number>[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const s of samples) for (const [k, v] of Object.entries(s)) out[k] = Math.min(out[k] ?? Infinity, v);
  return out;
};

const growth = (rows: HistoryRow[], names: string[], of: (r: HistoryRow) => Record<string, number>): Record<string, number> => {
  const a = rows[1] ?? rows[0];
  const b = rows[rows.length - 1];
  return Object.fromEntries(names.map((n) => [n, a && b ? round((100 * ((of(b)[n] ?? 0) - (of(a)[n] ?? 0))) / (of(a)[n] || 1)) : 0]));
};

async function count(client: KubeClient, res: typeof MachineUpdates, ns: string): Promise<number> {
  return (await client.list(res, ns)).items.length;
}

/** Runs the case and prints its figures. */
export async function runHistoryCase(p: HistoryPlatform, o: HistoryOptions): Promise<HistoryResult> {
  const machines = p.fleet.objects.filter((x) => x.kind === 'Machine').length;
  const startedAt = new Date().toISOString();
  await setMaxUnavailable(p.client, p.fleet, o.maxUnavailable);
  const controllers = p.procs.filter((x) => !/apiserver|updater/.test(x.name));
  say(
    `  history: ${o.plans} plans back to back on ${machines} machines (maxUnavailable ${o.maxUnavailable}, d=${o.durationSeconds}s); RSS and V8 heap in use (MiB, least of 8 samples over 8 s) after each plan:`,
  );
  say(
    `    plan | status | wall s | plans / MachineUpdates / tasks left | RSS ${p.procs.map((x) => x.name).join(' / ')} | heap used/pages ${Object.keys(p.metricsPorts).join(' / ')} | CPU s during the plan (same order as RSS)`,
  );
  const rows: HistoryRow[] = [];
  for (let i = 1; i <= o.plans; i++) {
    const name = `history-${i}`;
    const t0 = Date.now();
    const cpu0 = new Map(p.procs.map((x) => [x.name, x.stats().cpuSeconds]));
    await p.client.create(
      InPlaceUpdatePlans,
      fleetPlan(p.fleet, { name, toVersion: `v1.${30 + i}.0`, durationSeconds: o.durationSeconds }),
    );
    const status = await waitPlanTerminal(p.client, p.ns, name, Math.max(600_000, machines * 600));
    const wallSeconds = round((Date.now() - t0) / 1000);
    const cpuSeconds = Object.fromEntries(p.procs.map((x) => [x.name, round(x.stats().cpuSeconds - (cpu0.get(x.name) ?? 0))]));
    // Let pruning, garbage collection and the controllers' caches settle, then take the least of several samples: a
    // sample lands anywhere in a process's garbage-collection cycle (young generation alone moves it by ~16 MiB).
    await sleep(3000);
    const rss: Record<string, number>[] = [];
    const heap: Record<string, number>[] = [];
    const heapTotal: Record<string, number>[] = [];
    for (let s = 0; s < 8; s++) {
      rss.push(rssOf(p.procs));
      const h = await heapOf(p.metricsPorts);
      heap.push(h.used);
      heapTotal.push(h.total);
      await sleep(1000);
    }
    const content = await contentOf(p.metricsPorts['local-apiserver']);
    const row: HistoryRow = {
      plan: name,
      status,
      wallSeconds,
      plansLeft: await count(p.client, InPlaceUpdatePlans, p.ns),
      machineUpdatesLeft: await count(p.client, MachineUpdates, p.ns),
      tasksLeft: await count(p.client, UpdaterUpdateTasks, p.ns),
      rssMB: leastOf(rss),
      cpuSeconds,
      heapMB: leastOf(heap),
      heapTotalMB: leastOf(heapTotal),
      ...(content?.liveHeapMB !== undefined ? { apiserverLiveHeapMB: content.liveHeapMB } : {}),
      ...(content?.heapTotalMB !== undefined ? { apiserverHeapTotalMB: content.heapTotalMB } : {}),
      ...(content ? { apiserverContent: content.content } : {}),
    };
    rows.push(row);
    say(
      `    ${name} | ${status} | ${wallSeconds} | ${row.plansLeft} / ${row.machineUpdatesLeft} / ${row.tasksLeft} | ${p.procs.map((x) => row.rssMB[x.name]).join(' / ')} | ${Object.keys(
        p.metricsPorts,
      )
        .map((n) => `${row.heapMB[n] ?? '-'}/${row.heapTotalMB?.[n] ?? '-'}`)
        .join(' / ')} | ${p.procs.map((x) => cpuSeconds[x.name]).join(' / ')}`,
    );
    if (content) {
      const c = content.content;
      const short = (k: string): string => k.replace(/\..*$/, '');
      say(
        `      API server heap after its last full GC ${content.liveHeapMB ?? '-'} MiB (V8 heap pages ${content.heapTotalMB ?? '-'} MiB); it holds: ${Object.keys(
          c,
        )
          .sort((a, b) => (c[b] ?? 0) - (c[a] ?? 0))
          .map((k) => `${short(k)} ${c[k]}`)
          .join(', ')}`,
      );
    }
  }
  const rssGrowthAfterSecondPct = growth(
    rows,
    controllers.map((x) => x.name),
    (r) => r.rssMB,
  );
  const heapGrowthAfterSecondPct = growth(
    rows,
    controllers.map((x) => x.name),
    (r) => r.heapMB,
  );
  // The API server's heap in use at an instant is mostly garbage awaiting a full collection (a saw-tooth of several
  // times its live data); its heap after the last full collection is what would show a leak.
  const live = rows.filter((r) => r.apiserverLiveHeapMB !== undefined);
  const liveNote =
    live.length > 1
      ? `; API server heap after its last full GC ${live[Math.min(1, live.length - 1)]!.apiserverLiveHeapMB} → ${live[live.length - 1]!.apiserverLiveHeapMB} MiB`
      : '';
  say(
    `  growth from plan 2 to plan ${rows.length} (target < 5 %): RSS ${Object.entries(rssGrowthAfterSecondPct)
      .map(([k, v]) => `${k} ${v} %`)
      .join(', ')}; heap used ${Object.entries(heapGrowthAfterSecondPct)
      .map(([k, v]) => `${k} ${v} %`)
      .join(', ')}${liveNote}`,
  );

  // Idle: one control-plane machine in update for an hour, the MHC's in-place timeout far away.
  const mhcName = `${p.fleet.shape.clusterName}-mhc`;
  await p.client
    .patch(
      MachineHealthChecks,
      p.ns,
      mhcName,
      { metadata: { annotations: { [Annotations.inPlaceUpdateTimeout]: '1000h' } } },
      { type: 'merge' },
    )
    .catch(() => undefined);
  const idle = fleetPlan(p.fleet, { name: 'history-idle', toVersion: `v1.${31 + o.plans}.0`, durationSeconds: 3600 });
  delete idle.spec.machineDeployments;
  await p.client.create(InPlaceUpdatePlans, idle);
  const deadline = Date.now() + 120_000;
  while (
    Date.now() < deadline &&
    (await p.client.list(UpdaterUpdateTasks, p.ns)).items.every(
      (t) => (t['status'] as { updateStatus?: string } | undefined)?.updateStatus !== 'updating',
    )
  )
    await sleep(500);
  await sleep(10_000);
  const before = new Map(p.procs.map((x) => [x.name, x.stats().cpuSeconds]));
  const t0 = performance.now();
  await sleep(o.idleSeconds * 1000);
  const secs = (performance.now() - t0) / 1000;
  const idleCpuPct = Object.fromEntries(
    p.procs.map((x) => [x.name, round((100 * (x.stats().cpuSeconds - (before.get(x.name) ?? 0))) / secs, 2)]),
  );
  say(
    `  idle CPU over ${Math.round(secs)} s with one machine in update for 1 h (target < 1 % of a core): ${Object.entries(idleCpuPct)
      .map(([k, v]) => `${k} ${v} %`)
      .join(', ')}`,
  );
  await p.client
    .patch(InPlaceUpdatePlans, p.ns, 'history-idle', { spec: { updatePhase: 'aborting' } }, { type: 'merge' })
    .catch(() => undefined);

  const result: HistoryResult = {
    machines,
    rows,
    rssGrowthAfterSecondPct,
    heapGrowthAfterSecondPct,
    idleCpuPct,
    idleSeconds: round(secs),
    startedAt,
  };
  writeFileSync(join(o.out, `history-${machines}.json`), JSON.stringify(result, null, 2));
  return result;
}
