// The benchmark's updater process: the reference updater (watch-driven: it answers as soon as its simulated duration
// is over) or, with --mode poll, a poll-based variant that behaves like an upstream CAPI in-place-update extension
// whose answers are only looked at every --retry-after seconds (retryAfterSeconds, 5 s in the upstream reference
// extension): an update is started at once, and its completion is noticed at the first check at or after the end.
// Every API call is counted and served on --metrics-port as inplace_api_requests_total (like the controllers).
//   node --import tsx bench/updater-main.ts --kubeconfig F [--namespace NS] [--metrics-port N] [--mode watch|poll] [--retry-after S] [--concurrency N]
import { createServer } from 'node:http';
import { UpdaterUpdateTasks } from '../src/api/index.js';
import { aborted, defineUpdater, done, failed, progress } from '../src/contract/sdk/index.js';
import { createClient, createLogger, createMetrics, instrumentClient, loadKubeConfig } from '../src/runtime/index.js';
import { readParameters, referenceUpdater } from '../src/sample-updaters/reference/index.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const mode = args.get('mode') ?? 'watch';
const retryAfterMs = Number(args.get('retry-after') ?? '5') * 1000;
// The updater is not what is measured: it plays one agent per machine. With the SDK's default of 4 workers it, not the
// platform, paced 10k-machine runs; at 16, 200 tasks ending about every 10 ms queued behind each other (its own overrun
// of d: median 22, p99 374 ms at 10,003 machines on a busy machine).
const concurrency = Number(args.get('concurrency') ?? '64');

/** The poll-based variant: started at once, completion only noticed on retry-after ticks (never on the first call). */
const pollUpdater = defineUpdater({
  name: 'poll-reference',
  kind: UpdaterUpdateTasks,
  async update(task, ctx) {
    const p = readParameters(task);
    if (typeof p === 'string') return failed(p);
    const elapsed = ctx.now().getTime() - ctx.startTime.getTime();
    // The first answer of an upstream extension is "in progress, retry after N s"; later answers reflect the state.
    if (elapsed < p.durationSeconds * 1000 || elapsed < retryAfterMs)
      return progress(retryAfterMs, `in progress; retry after ${retryAfterMs / 1000}s`);
    if (p.failWith) return failed(p.failWith);
    return done(`update of machine ${task.spec.machineRef.name} finished (noticed on a ${retryAfterMs / 1000}s poll)`);
  },
  async abort() {
    return aborted('aborted');
  },
});

const metrics = createMetrics({ processMetrics: true });
const client = instrumentClient(
  createClient(loadKubeConfig(args.get('kubeconfig')), { userAgent: `inplace-bench-updater-${mode}` }),
  metrics,
);
const port = Number(args.get('metrics-port') ?? '0');
const server = createServer((req, res) => {
  void metrics.registry.metrics().then((text) => {
    res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
    res.end(text);
  });
});
await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
const namespace = args.get('namespace');
const log = createLogger({ name: `bench-updater-${mode}`, level: process.env['LOG_LEVEL'] ?? 'warn' });
const running = await (mode === 'poll' ? pollUpdater : referenceUpdater()).start({
  client,
  // The bench's fleet has one generic updater per plan, whatever its name: a simulated catch-all is what it measures.
  catchAll: true,
  log,
  concurrency,
  ...(namespace ? { namespace } : {}),
});
process.stderr.write(`updater ${mode} running\n`);
const stop = (): void => {
  void running.stop().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.stdin.on('close', stop);
process.stdin.resume();
