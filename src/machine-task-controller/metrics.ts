// Prometheus metrics of the machine task controller (one set per process, shared by every manager in it).
import { Counter, Histogram, register } from 'prom-client';

/** The controller's metrics. */
export interface TaskControllerMetrics {
  /** Tasks created, by task kind. */
  tasksCreated: Counter<'kind'>;
  /** Seconds from a task reaching updated to the next updater's task being created. */
  stepLatency: Histogram;
}

let cached: TaskControllerMetrics | undefined;

/** The metrics, registered on first use in the default registry. */
export function metrics(): TaskControllerMetrics {
  if (cached) return cached;
  const tasksCreated =
    (register.getSingleMetric('inplace_machine_task_controller_tasks_created_total') as Counter<'kind'> | undefined) ??
    new Counter({ name: 'inplace_machine_task_controller_tasks_created_total', help: 'Update tasks created by the machine task controller, by task kind.', labelNames: ['kind'] });
  const stepLatency =
    (register.getSingleMetric('inplace_machine_task_controller_step_latency_seconds') as Histogram | undefined) ??
    new Histogram({
      name: 'inplace_machine_task_controller_step_latency_seconds',
      help: "Seconds from an updater's task reaching updated to the next updater's task being created.",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
  cached = { tasksCreated, stepLatency };
  return cached;
}
