// Prometheus metrics of the plan controller, registered in the manager's registry (served on /metrics).
import { Counter, Gauge, Registry } from 'prom-client';
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { UpdateStatus } from '../api/index.js';
import type { Manager, Store } from '../runtime/pure/types.js';

/** The plan controller's metrics. */
export interface PlanMetrics {
  /** Plans by updateStatus (computed from the informer cache at scrape time). */
  plans: Gauge<'status'>;
  /** Machine updates started (MachineUpdates created). */
  machinesStarted: Counter;
  /** Machines that reached updated, as counted in plan status. */
  machinesUpdated: Counter;
  /** Machines whose update failed, as counted in plan status. */
  machinesFailed: Counter;
}

const byRegistry = new WeakMap<Registry, PlanMetrics>();
let fallback: Registry | undefined;

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function planMetricsFor(mgr: Manager, plans: Store<InPlaceUpdatePlan & KubeObject>): PlanMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  m = {
    plans: new Gauge({
      name: 'inplace_plan_controller_plans',
      help: 'InPlaceUpdatePlans by updateStatus.',
      labelNames: ['status'],
      registers,
      collect() {
        const counts = new Map<string, number>(Object.values(UpdateStatus).map((s) => [s, 0]));
        for (const p of plans.list()) {
          const s = p.status?.updateStatus ?? UpdateStatus.pending;
          counts.set(s, (counts.get(s) ?? 0) + 1);
        }
        for (const [status, n] of counts) this.set({ status }, n);
      },
    }),
    machinesStarted: new Counter({
      name: 'inplace_plan_controller_machines_started_total',
      help: 'Machine updates started by the plan controller.',
      registers,
    }),
    machinesUpdated: new Counter({
      name: 'inplace_plan_controller_machines_updated_total',
      help: 'Machines updated in place, as counted in plan status.',
      registers,
    }),
    machinesFailed: new Counter({
      name: 'inplace_plan_controller_machines_failed_total',
      help: 'Machines whose in-place update failed, as counted in plan status.',
      registers,
    }),
  };
  byRegistry.set(registry, m);
  return m;
}
