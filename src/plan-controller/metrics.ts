// Prometheus metrics of the plan controller, registered in the manager's registry (served on /metrics).
import { Counter, Gauge, Registry } from 'prom-client';
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { UpdateStatus } from '../api/index.js';
import type { Manager, Store } from '../runtime/pure/types.js';
import { GateNames, heldBy } from '../rules/gates.js';

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
  /**
   * Records what holds `plan` after a reconcile: the gate its written status names (window, alerts) and the machine
   * gates of its decision (soak, verification); a hold that ended is counted up to now.
   */
  recordHolds(plan: InPlaceUpdatePlan & KubeObject, machineGates: readonly string[]): void;
}

const byRegistry = new WeakMap<Registry, PlanMetrics>();
let fallback: Registry | undefined;

const planUid = (p: KubeObject): string => p.metadata.uid ?? `${p.metadata.namespace}/${p.metadata.name}`;

type PlanStore = Store<InPlaceUpdatePlan & KubeObject>;
type WaitCounters = Pick<PlanMetrics, 'gateWaitSeconds' | 'planGateWaitSeconds'>;

/**
 * What holds each plan (by uid) with since when, as its last reconcile saw it: window and alerts from the status it
 * wrote, soak and verification from its decision. Counting starts no earlier than this process, so a restart (which
 * resets the counters anyway) does not count a wait twice.
 */
class GateWaits {
  readonly held = new Map<string, { namespace: string; plan: string; gates: Map<string, number> }>();
  /** Per held (plan, gate): up to when its wait is already counted. */
  private readonly counted = new Map<string, number>();
  /** Plans with a per-plan series (by uid), to drop them once the plan is gone. */
  private readonly series = new Map<string, { namespace: string; plan: string }>();
  private readonly startedAt = Date.now();
  /** Set once the counters exist (they read this at scrape time). */
  counters: WaitCounters | undefined;

  constructor(private readonly plans: PlanStore) {}

  /** Counts the wait of (uid, gate) up to `now`. */
  private count(uid: string, labels: { namespace: string; plan: string }, gate: string, since: number, now: number): void {
    const key = `${uid}|${gate}`;
    this.series.set(uid, labels);
    const from = Math.max(since, this.counted.get(key) ?? this.startedAt);
    if (now > from) {
      this.counters!.gateWaitSeconds.inc({ gate }, (now - from) / 1000);
      this.counters!.planGateWaitSeconds.inc({ ...labels, gate }, (now - from) / 1000);
    } else this.counters!.planGateWaitSeconds.inc({ ...labels, gate }, 0);
    this.counted.set(key, now);
  }

  /** Ends holds of a plan after counting their wait up to `now`. */
  private release(uid: string, gates: readonly string[], now: number): void {
    const h = this.held.get(uid);
    if (!h) return;
    for (const gate of gates) {
      const since = h.gates.get(gate);
      if (since === undefined) continue;
      this.count(uid, { namespace: h.namespace, plan: h.plan }, gate, since, now);
      h.gates.delete(gate);
      this.counted.delete(`${uid}|${gate}`);
    }
    if (h.gates.size === 0) this.held.delete(uid);
  }

  /** Adds the seconds waited since the last count to both wait counters (called at scrape time); plans gone are dropped. */
  accumulate(): void {
    const now = Date.now();
    const live = new Set(this.plans.list().map(planUid));
    for (const [uid, h] of this.held) {
      // A plan gone: when it went is unknown, so its wait is counted up to the last count only.
      if (!live.has(uid)) {
        this.held.delete(uid);
        for (const gate of h.gates.keys()) this.counted.delete(`${uid}|${gate}`);
      } else for (const [gate, since] of h.gates) this.count(uid, { namespace: h.namespace, plan: h.plan }, gate, since, now);
    }
    // A plan that is gone keeps no series (its name may come back as another plan).
    for (const [uid, labels] of this.series)
      if (!live.has(uid)) {
        for (const gate of Object.values(GateNames)) this.counters!.planGateWaitSeconds.remove({ ...labels, gate });
        this.series.delete(uid);
      }
  }

  /** PlanMetrics.recordHolds. */
  record(plan: InPlaceUpdatePlan & KubeObject, machineGates: readonly string[]): void {
    const uid = planUid(plan);
    const now = Date.now();
    const next = new Map<string, number>();
    const h = heldBy(plan);
    if (h) next.set(h.gate, h.since);
    const prev = this.held.get(uid);
    for (const g of machineGates) next.set(g, prev?.gates.get(g) ?? now);
    // A hold that ended since the last reconcile: its wait up to now counts (a wait between two scrapes too).
    if (prev)
      this.release(
        uid,
        [...prev.gates.keys()].filter((g) => !next.has(g)),
        now,
      );
    if (next.size === 0) return;
    const cur = this.held.get(uid) ?? { namespace: plan.metadata.namespace ?? '', plan: plan.metadata.name ?? '', gates: new Map() };
    for (const [g, since] of next) if (!cur.gates.has(g)) cur.gates.set(g, since);
    this.held.set(uid, cur);
  }
}

/** The metrics in the manager's registry (a private registry when the manager has none). */
export function planMetricsFor(mgr: Manager, plans: PlanStore): PlanMetrics {
  const registry = (mgr as Manager & { metrics?: { registry?: Registry } }).metrics?.registry ?? (fallback ??= new Registry());
  let m = byRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  const waits = new GateWaits(plans);
  m = {
    ...machineMetrics(registers, plans),
    ...gateMetrics(registers, plans, waits),
    recordHolds: (plan, machineGates) => waits.record(plan, machineGates),
  };
  waits.counters = m;
  byRegistry.set(registry, m);
  return m;
}

/** The plans by status and the machine counters. */
function machineMetrics(
  registers: Registry[],
  plans: PlanStore,
): Pick<PlanMetrics, 'plans' | 'machinesStarted' | 'machinesUpdated' | 'machinesFailed'> {
  return {
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
}

/** The gate metrics: plans held now, the waits (counted at scrape time) and the gate failures. */
function gateMetrics(
  registers: Registry[],
  plans: PlanStore,
  waits: GateWaits,
): Pick<PlanMetrics, 'plansHeld' | 'gateWaitSeconds' | 'planGateWaitSeconds' | 'gateFailures'> {
  return {
    plansHeld: new Gauge({
      name: 'inplace_plan_controller_plans_held',
      help: 'Plans a gate holds now, by gate (maintenanceWindow, alerts: no new machine starts; soak, verification: a machine keeps its slot).',
      labelNames: ['gate'],
      registers,
      collect() {
        const live = new Set(plans.list().map(planUid));
        const n = new Map<string, number>(Object.values(GateNames).map((g) => [g, 0]));
        for (const [uid, h] of waits.held) if (live.has(uid)) for (const gate of h.gates.keys()) n.set(gate, (n.get(gate) ?? 0) + 1);
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
        waits.accumulate();
      },
    }),
    planGateWaitSeconds: new Counter({
      name: 'inplace_plan_controller_plan_gate_wait_seconds_total',
      help: 'Seconds one plan spent held by a gate, by namespace, plan and gate (series of deleted plans are dropped).',
      labelNames: ['namespace', 'plan', 'gate'],
      registers,
      collect() {
        waits.accumulate();
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
  };
}
