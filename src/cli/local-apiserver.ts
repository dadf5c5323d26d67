// `inplace local-apiserver`: the embedded API server alone (tools/local-apiserver), e.g. to run the controllers,
// kubectl or the tests' INPLACE_TEST_KUBECONFIG against it from several terminals. The options are parsed here, once;
// tools/local-apiserver only exports startLocalApiServer.
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { LocalApiServerStats } from '../../tools/local-apiserver/index.js';
import { InvalidDurationError, parseGoDuration } from '../api/duration.js';
import { startHealthServer, type HealthServer } from '../runtime/index.js';
import { applyHeapGrowing, heapCompactionOption, heapGrowingOption, startIdleCompaction } from './heap.js';
import { portOption, str, untilAborted, UsageError, type Verb } from './verb.js';

export { heapCompactionOption, heapGrowingOption } from './heap.js';

/** Where the kubeconfig goes when --kubeconfig-out is not given. */
const DEFAULT_KUBECONFIG_OUT = '.inplace/local-apiserver.kubeconfig';

/** `--event-ttl`: a positive Go duration in ms, or undefined when absent (the server's default, 1 h). */
export function eventTtlOption(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  let ms: number;
  try {
    ms = parseGoDuration(v);
  } catch (e) {
    if (e instanceof InvalidDurationError) throw new UsageError(`--event-ttl must be a duration such as 1h or 10m, got "${v}"`);
    throw e;
  }
  if (!(ms > 0)) throw new UsageError(`--event-ttl must be positive, got "${v}"`);
  return ms;
}

/**
 * How far (percent) V8 lets the heap grow beyond the live data after a full collection. V8's own factor reaches 300 %
 * when the old-space limit is 2 GiB or more (Node's default on a machine with 16 GiB or more, the bench's 12 GiB): the
 * server's RSS then followed a saw-tooth up to 2-3x its live data and kept the pages, most of its growth over 20 plans
 * (bench/results/SCALING.md, "Embedded API server"). 20 % costs more full collections, a few percent of its CPU.
 */
export const DEFAULT_HEAP_GROWING_PERCENT = 20;

const isMajorGc = (e: PerformanceEntry): boolean =>
  (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;

/** "group/plural" as kube-apiserver labels it: "machines.cluster.x-k8s.io", "events". */
const kubeResource = (gr: string): string => {
  const i = gr.indexOf('/');
  const group = gr.slice(0, i);
  const plural = gr.slice(i + 1);
  return group ? `${plural}.${group}` : plural;
};

/**
 * A registry with the process metrics (V8 heap, RSS: `inplace_` prefix, as the controllers) and what the stores hold,
 * read at scrape time: a growing process can then be told apart from growing content.
 */
export function apiserverRegistry(stats: () => LocalApiServerStats): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'inplace_' });
  const registers = [registry];
  // One snapshot per scrape, shared by the gauges below (each gauge's collect runs in turn).
  let cached: { at: number; s: LocalApiServerStats } | undefined;
  const snap = (): LocalApiServerStats => {
    if (!cached || Date.now() - cached.at > 1000) cached = { at: Date.now(), s: stats() };
    return cached.s;
  };
  const perResource = (name: string, help: string, of: (r: LocalApiServerStats['resources'][number]) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const r of snap().resources) this.set({ resource: kubeResource(r.resource) }, of(r));
      },
    });
  };
  // kube-apiserver's name for the same figure.
  perResource('apiserver_storage_objects', 'Stored objects by group/resource.', (r) => r.objects);
  perResource('inplace_apiserver_watch_events', 'Watch events retained for replay by group/resource.', (r) => r.watchEvents);
  perResource('inplace_apiserver_watchers', 'Open watches by group/resource.', (r) => r.watchers);
  const single = (name: string, help: string, of: (s: LocalApiServerStats) => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(of(snap()));
      },
    });
  };
  // The heap in use right after the last full collection is the live data: the heap in use at a random instant also
  // counts garbage, which V8 lets grow to several times the live data before it collects (the RSS follows it).
  let afterMajorGc = 0;
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some(isMajorGc)) afterMajorGc = getHeapStatistics().used_heap_size;
  });
  observer.observe({ entryTypes: ['gc'] });
  single('inplace_nodejs_heap_used_after_major_gc_bytes', 'V8 heap in use after the last full collection (live data).', () => afterMajorGc);
  single('inplace_apiserver_event_ttl_tracked', 'Events whose TTL (--event-ttl) is tracked.', (s) => s.eventTtlTracked);
  single('inplace_apiserver_gc_owners', 'Owners with dependents in the garbage collector index.', (s) => s.gc.owners);
  single('inplace_apiserver_gc_uids', 'Objects in the garbage collector uid index.', (s) => s.gc.uids);
  single('inplace_apiserver_watch_streams', 'Open watch streams.', (s) => s.watchStreams);
  single('inplace_apiserver_connections', 'Open client connections.', (s) => s.connections);
  return registry;
}

/** `inplace local-apiserver`. */
export const localApiserverVerb: Verb = {
  name: 'local-apiserver',
  summary: 'Start the embedded local API server and write a kubeconfig',
  help: `Usage: inplace local-apiserver [--port N] [--persist FILE] [--http] [--kubeconfig-out PATH] [--event-ttl D] [--metrics-port N]

Starts a local Kubernetes API server on 127.0.0.1 (HTTPS with a self-signed certificate), writes a
kubeconfig for it and prints its path; runs until SIGINT/SIGTERM. kubectl and the controllers work
against it unchanged:  inplace run --kubeconfig <printed path>

Options:
  --port N               listen port (default: a free port)
  --persist FILE         keep the state in FILE across restarts (snapshot + append log)
  --http                 plain HTTP instead of HTTPS
  --kubeconfig-out PATH  where to write the kubeconfig (default: ${DEFAULT_KUBECONFIG_OUT})
  --event-ttl D          Events are deleted this long after their last write (default 1h, as kube-apiserver's
                         --event-ttl); they are most of what grows while plans run back to back
  --metrics-port N       serve Prometheus /metrics (V8 heap, RSS, stored objects and watch events per resource)
                         on 127.0.0.1:N over plain HTTP (0 = any free port; default: off)
  --heap-growing-percent N
                         let V8's heap grow N % beyond the live data after a full collection (default
                         ${DEFAULT_HEAP_GROWING_PERCENT}; 0 = V8's own factor, up to 300 % on a large machine)
  --heap-compaction on|off
                         compact V8's heap once whenever the server goes quiet after work (at most 10
                         writes in 2 s, 1,000 since the last compaction; default on: without it partly used
                         pages kept the RSS growing faster than the stored data)`,
  options: {
    port: { type: 'string' },
    persist: { type: 'string' },
    http: { type: 'boolean' },
    'kubeconfig-out': { type: 'string' },
    'event-ttl': { type: 'string' },
    'metrics-port': { type: 'string' },
    'heap-growing-percent': { type: 'string' },
    'heap-compaction': { type: 'string' },
  },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
    const port = portOption(args, 'port');
    const metricsPort = portOption(args, 'metrics-port');
    const eventTtlMs = eventTtlOption(str(args, 'event-ttl'));
    const persist = str(args, 'persist');
    const heapGrowing = heapGrowingOption(str(args, 'heap-growing-percent')) ?? DEFAULT_HEAP_GROWING_PERCENT;
    applyHeapGrowing(heapGrowing);
    const compaction = heapCompactionOption(str(args, 'heap-compaction')) ?? true;
    const { startLocalApiServer } = await import('../../tools/local-apiserver/index.js');
    const server = await startLocalApiServer({
      ...(port !== undefined ? { port } : {}),
      ...(persist ? { persistFile: resolve(persist) } : {}),
      ...(args.values['http'] === true ? { https: false } : {}),
      ...(eventTtlMs !== undefined ? { eventTtlMs } : {}),
    });
    // Between bursts of writes (a plan's end, a quiet fleet) the heap is compacted once (src/cli/heap.ts).
    const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
    const stopCompaction = compaction
      ? startIdleCompaction(
          () => server.resourceVersion(),
          (c) =>
            io.err(
              `${new Date().toISOString()} compacted the heap as writes paused: ${mib(c.heapBeforeBytes)} → ${mib(c.heapAfterBytes)} MiB in ${Math.round(c.ms)} ms\n`,
            ),
        )
      : undefined;
    let metrics: HealthServer | undefined;
    if (metricsPort !== undefined)
      metrics = await startHealthServer({ port: metricsPort, host: '127.0.0.1', registry: apiserverRegistry(() => server.stats()) });
    const path = resolve(str(args, 'kubeconfig-out') ?? DEFAULT_KUBECONFIG_OUT);
    await mkdir(dirname(path), { recursive: true });
    await server.writeKubeconfig(path);
    io.out(`${path}\n`);
    io.err(
      `local API server listening on ${server.url}\n  export KUBECONFIG=${path}\n${metrics ? `  metrics on http://127.0.0.1:${metrics.port}/metrics\n` : ''}`,
    );
    // Runs until SIGINT/SIGTERM (src/cli/main.ts turns them into io.signal).
    await untilAborted(io.signal);
    stopCompaction?.();
    await metrics?.close();
    await server.close();
    return 0;
  },
};
