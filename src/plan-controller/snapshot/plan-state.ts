// Everything the plan controller remembers about one plan between its reconciles, in one object per plan key:
// created in one place (PlanStates.of, on the plan's first reconcile or a new uid under the same name) and dropped in
// one place (PlanStates.drop, when the plan is gone). Its memory is then bounded by the plans it has: nothing kept per
// plan can outlive the plan, as parallel per-plan maps deleted one by one could. Fleet-wide caches (CRDs by kind,
// provider kinds that failed) are not here: they are keyed by kind, not plan (PlanDeps).
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { isTerminal } from '../../api/index.js';
import { PlanCache } from '../cache/plan-cache.js';
import { AtTargetMemo } from '../cache/at-target.js';
import type { AlertsRead, PrestartResult } from '../../rules/inputs.js';
import type { CountedRows } from '../decide/status-write.js';

/** What the plan controller keeps for one plan (one uid) between reconciles. */
export interface PlanState {
  /** The plan's uid: a plan recreated under the same name gets a new state. */
  readonly uid: string;
  /** MachineUpdates created but not yet seen by the informer (no double start on a stale cache), by name. */
  readonly expectations: Map<string, { mu: MachineUpdate; at: number }>;
  /** The pre-start check of a generation: once per generation, not every reconcile (reads and dry-runs). */
  prestart?: { generation: number; at: number; result: PrestartResult };
  /** Machines-at-target memo (at-target.ts) while the plan is active. */
  atTarget?: AtTargetMemo;
  /**
   * Decision cache (cache/plan-cache.ts) while the plan is active: a reconcile re-derives only the targets whose objects
   * changed. A pure cache (a restart, with none, decides the same); dropped once the plan ended.
   */
  decide?: PlanCache;
  /**
   * The last read of the alert gate, with its time and what it read (uid, url, Secret): reused until ALERTS_POLL_MS
   * later, so the endpoint is read once per interval whatever wakes the plan meanwhile.
   */
  alertRead?: { key: string; at: number; result: AlertsRead };
  /** When the status was last written: a progress-only change waits for PROGRESS_WRITE_MS after it. */
  statusWrittenAt?: number;
  /** The target rows last counted into the machines updated/failed metrics (decide/status-write.ts). */
  counted?: CountedRows;
}

/** The per-plan states of one plan controller, by plan key (namespace/name). */
export class PlanStates {
  private readonly byKey = new Map<string, PlanState>();

  /** `onDrop` forgets what lives outside the states for a plan key (the reconcile clock's last end). */
  constructor(private readonly onDrop?: (planKey: string) => void) {}

  /** The plan's state: created on first use, and anew when the uid under this key changed (a recreated plan). */
  of(plan: InPlaceUpdatePlan & KubeObject): PlanState {
    const key = planKey(plan.metadata.namespace ?? '', plan.metadata.name ?? '');
    const uid = plan.metadata.uid ?? '';
    let s = this.byKey.get(key);
    if (!s || s.uid !== uid) this.byKey.set(key, (s = { uid, expectations: new Map() }));
    return s;
  }

  /** Forgets everything kept for a plan key (the plan is gone). */
  drop(key: string): void {
    this.byKey.delete(key);
    this.onDrop?.(key);
  }

  /** The state under a key, if any (tests and diagnostics). */
  peek(key: string): PlanState | undefined {
    return this.byKey.get(key);
  }

  /** How many plans have a state. */
  get size(): number {
    return this.byKey.size;
  }
}

/** The key of a plan in the controller's queue and states. */
export const planKey = (ns: string, name: string): string => `${ns}/${name}`;

/** The plan's decision memo (a new state for a plan recreated under the same name); none once the plan ended. */
export function decideMemo(state: PlanState, plan: InPlaceUpdatePlan & KubeObject): PlanCache | undefined {
  // An ended plan reconciles rarely (cleanup, its finalizer): the memo's lists of the cluster's machines would be held
  // for nothing.
  if (isTerminal(plan.status?.updateStatus)) {
    state.decide = undefined;
    return undefined;
  }
  return (state.decide ??= new PlanCache());
}

/** The plan's machines-at-target memo. */
export function atTargetMemo(state: PlanState): AtTargetMemo {
  return (state.atTarget ??= new AtTargetMemo());
}
