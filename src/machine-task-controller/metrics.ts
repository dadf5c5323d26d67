// Prometheus metrics of the machine task controller, registered in the manager's registry (served on /metrics).
import { Counter, Histogram, Registry } from 'prom-client';
import type { Manager } from '../runtime/index.js';

/** The controller's metrics. */
export interface TaskControllerMetrics {
  /** Tasks created, by task kind. */
  tasksCreated: Counter<'kind'>;
  /** Seconds from a task reaching updated to the next updater's task being created. */
  stepLatency: Histogram;
}

const byRegistry = new WeakMap<Registry, TaskControllerMetrics>();
let fallback: Registry | undefined;

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function metricsFor(mgr: Manager): TaskControllerMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (!m) {
    const registers = [registry];
    m = {
      tasksCreated: new Counter({
        name: 'inplace_machine_task_controller_tasks_created_total',
        help: 'Update tasks created by the machine task controller, by task kind.',
        labelNames: ['kind'],
        registers,
      }),
      stepLatency: new Histogram({
        name: 'inplace_machine_task_controller_step_latency_seconds',
        help: "Seconds from an updater's task reaching updated to the next updater's task being created.",
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
    };
    byRegistry.set(registry, m);
  }
  return m;
}
