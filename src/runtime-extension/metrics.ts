// Prometheus metrics of the runtime extension, in the manager's registry (served on /metrics).
import { Counter, Histogram, Registry } from 'prom-client';
import type { Manager } from '../runtime/index.js';

/** The extension's metrics. */
export interface ExtensionMetrics {
  /** Hook calls answered, by hook and response status (Success, Failure, InProgress). */
  calls: Counter<'hook' | 'status'>;
  /** Seconds to answer a hook call. */
  duration: Histogram<'hook'>;
}

const byRegistry = new WeakMap<Registry, ExtensionMetrics>();
let fallback: Registry | undefined;

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function metricsFor(mgr: Manager): ExtensionMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (!m) {
    const registers = [registry];
    m = {
      calls: new Counter({
        name: 'inplace_runtime_extension_hook_calls_total',
        help: 'Runtime SDK hook calls answered, by hook and answer (Success, Failure, InProgress).',
        labelNames: ['hook', 'status'],
        registers,
      }),
      duration: new Histogram({
        name: 'inplace_runtime_extension_hook_duration_seconds',
        help: 'Seconds to answer a Runtime SDK hook call.',
        labelNames: ['hook'],
        buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers,
      }),
    };
    byRegistry.set(registry, m);
  }
  return m;
}
