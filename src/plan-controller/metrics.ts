// Prometheus metrics of the plan controller, registered in the manager's registry (served on /metrics).
import { Counter, Gauge, Registry } from 'prom-client';
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { UpdateStatus } from '../api/index.js';
import type { Manager, Store } from '../runtime/pure/types.js';
import { GateNames, heldBy } from './gates.js';

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
  /** Plans a gate holds now (no new machine starts), by gate. */
  plansHeld: Gauge<'gate'>;
  /** Plan-seconds spent held, by gate (accumulated at scrape time from the plans' recorded status). */
  gateWaitSeconds: Counter<'gate'>;
}

const byRegistry = new WeakMap<Registry, PlanMetrics>();
let fallback: Registry | undefined;

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function planMetricsFor(mgr: Manager, plans: Store<InPlaceUpdatePlan & KubeObject>): PlanMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  // Per held plan (by uid): up to when its wait is already counted. Counting starts no earlier than this process, so a
  // restart (which resets the counter anyway) does not count a wait twice.
  const counted = new Map<string, number>();
  const startedAt = Date.now();
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
    plansHeld: new Gauge({
      name: 'inplace_plan_controller_plans_held',
      help: 'Plans a gate holds now (no new machine starts), by gate (maintenanceWindow).',
      labelNames: ['gate'],
      registers,
      collect() {
        const n = new Map<string, number>(Object.values(GateNames).map((g) => [g, 0]));
        for (const p of plans.list()) {
          const h = heldBy(p);
          if (h) n.set(h.gate, (n.get(h.gate) ?? 0) + 1);
        }
        for (const [gate, v] of n) this.set({ gate }, v);
      },
    }),
    gateWaitSeconds: new Counter({
      name: 'inplace_plan_controller_gate_wait_seconds_total',
      help: 'Seconds plans spent held by a gate, summed over plans, by gate (maintenanceWindow).',
      labelNames: ['gate'],
      registers,
      collect() {
        const now = Date.now();
        const seen = new Set<string>();
        for (const gate of Object.values(GateNames)) this.inc({ gate }, 0);
        for (const p of plans.list()) {
          const h = heldBy(p);
          const uid = p.metadata.uid ?? `${p.metadata.namespace}/${p.metadata.name}`;
          if (!h) continue;
          seen.add(uid);
          const from = Math.max(h.since, counted.get(uid) ?? startedAt);
          if (now > from) this.inc({ gate: h.gate }, (now - from) / 1000);
          counted.set(uid, now);
        }
        for (const uid of counted.keys()) if (!seen.has(uid)) counted.delete(uid);
      },
    }),
  };
  byRegistry.set(registry, m);
  return m;
}
