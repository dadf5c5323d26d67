// Prometheus metrics of the plan controller, registered in the manager's registry (served on /metrics).
import { Counter, Gauge, Registry } from 'prom-client';
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { UpdateStatus, isTerminal } from '../api/index.js';
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
  /** Plans a gate holds now (no new machine starts, or a machine keeps its slot), by gate. */
  plansHeld: Gauge<'gate'>;
  /** Plan-seconds spent held, by gate (accumulated at scrape time). */
  gateWaitSeconds: Counter<'gate'>;
  /** Seconds one plan spent held, by gate. */
  planGateWaitSeconds: Counter<'namespace' | 'plan' | 'gate'>;
  /** Gate failures: machines failed by soak or verification, plans halted by the alert gate. */
  gateFailures: Counter<'gate'>;
  /** Records the machine gates (soak, verification) holding `plan` after a reconcile (decision gatesHolding). */
  recordMachineGates(plan: InPlaceUpdatePlan & KubeObject, gates: readonly string[]): void;
}

const byRegistry = new WeakMap<Registry, PlanMetrics>();
let fallback: Registry | undefined;

const planUid = (p: KubeObject): string => p.metadata.uid ?? `${p.metadata.namespace}/${p.metadata.name}`;

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function planMetricsFor(mgr: Manager, plans: Store<InPlaceUpdatePlan & KubeObject>): PlanMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  const startedAt = Date.now();
  // Machine gates per plan (by uid), with since when each holds: only the reconcile sees them (they are not a plan
  // condition), so they live here; a restart starts them again at its first reconcile.
  const machineGates = new Map<string, Map<string, number>>();
  // Per held (plan, gate): up to when its wait is already counted. Counting starts no earlier than this process, so a
  // restart (which resets the counters anyway) does not count a wait twice.
  const counted = new Map<string, number>();
  const series = new Map<string, { namespace: string; plan: string; gate: string }>();
  /** Every gate holding each plan now, with since when (window and alerts from status, machine gates from reconciles). */
  const holds = (): { p: InPlaceUpdatePlan & KubeObject; gate: string; since: number }[] => {
    const out: { p: InPlaceUpdatePlan & KubeObject; gate: string; since: number }[] = [];
    const live = new Set<string>();
    for (const p of plans.list()) {
      const uid = planUid(p);
      live.add(uid);
      const h = heldBy(p);
      if (h) out.push({ p, ...h });
      if (!isTerminal(p.status?.updateStatus)) for (const [gate, since] of machineGates.get(uid) ?? []) out.push({ p, gate, since });
    }
    for (const uid of machineGates.keys()) if (!live.has(uid)) machineGates.delete(uid);
    return out;
  };
  /** Adds the seconds waited since the last scrape to both wait counters (called by either collect). */
  const accumulate = (): void => {
    const now = Date.now();
    const seen = new Set<string>();
    for (const { p, gate, since } of holds()) {
      const key = `${planUid(p)}|${gate}`;
      seen.add(key);
      const from = Math.max(since, counted.get(key) ?? startedAt);
      const labels = { namespace: p.metadata.namespace ?? '', plan: p.metadata.name ?? '', gate };
      series.set(key, labels);
      if (now > from) {
        m!.gateWaitSeconds.inc({ gate }, (now - from) / 1000);
        m!.planGateWaitSeconds.inc(labels, (now - from) / 1000);
      } else m!.planGateWaitSeconds.inc(labels, 0);
      counted.set(key, now);
    }
    for (const key of counted.keys()) if (!seen.has(key)) counted.delete(key);
    // A plan that is gone keeps no series (its name may come back as another plan).
    const names = new Set(plans.list().map(planUid));
    for (const [key, labels] of series)
      if (!names.has(key.split('|')[0]!)) {
        m!.planGateWaitSeconds.remove(labels);
        series.delete(key);
      }
  };
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
      help: 'Plans a gate holds now, by gate (maintenanceWindow, alerts: no new machine starts; soak, verification: a machine keeps its slot).',
      labelNames: ['gate'],
      registers,
      collect() {
        const n = new Map<string, number>(Object.values(GateNames).map((g) => [g, 0]));
        for (const h of holds()) n.set(h.gate, (n.get(h.gate) ?? 0) + 1);
        for (const [gate, v] of n) this.set({ gate }, v);
      },
    }),
    gateWaitSeconds: new Counter({
      name: 'inplace_plan_controller_gate_wait_seconds_total',
      help: 'Seconds plans spent held by a gate, summed over plans, by gate (maintenanceWindow, alerts, soak, verification).',
      labelNames: ['gate'],
      registers,
      collect() {
        for (const gate of Object.values(GateNames)) this.inc({ gate }, 0);
        accumulate();
      },
    }),
    planGateWaitSeconds: new Counter({
      name: 'inplace_plan_controller_plan_gate_wait_seconds_total',
      help: 'Seconds one plan spent held by a gate, by namespace, plan and gate (series of deleted plans are dropped).',
      labelNames: ['namespace', 'plan', 'gate'],
      registers,
      collect() {
        accumulate();
      },
    }),
    gateFailures: new Counter({
      name: 'inplace_plan_controller_gate_failures_total',
      help: 'Gate failures by gate: machines failed by soak or verification, plans halted by the alert gate.',
      labelNames: ['gate'],
      registers,
      collect() {
        for (const gate of [GateNames.soak, GateNames.verification, GateNames.alerts]) this.inc({ gate }, 0);
      },
    }),
    recordMachineGates(plan, gates) {
      const uid = planUid(plan);
      const prev = machineGates.get(uid);
      const next = new Map<string, number>();
      for (const g of gates) next.set(g, prev?.get(g) ?? Date.now());
      if (next.size > 0) machineGates.set(uid, next);
      else machineGates.delete(uid);
    },
  };
  byRegistry.set(registry, m);
  return m;
}
