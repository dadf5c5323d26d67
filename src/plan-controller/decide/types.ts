// What the plan controller's decisions produce (the intents its act/ and machines/ phases carry out) and the shapes
// the phases in this folder pass to each other. Pure: types only.
import type { InPlaceUpdatePlanStatus, KubeObject, MachineUpdate, PlanUpdater, TargetKind, TargetStatus } from '../../api/index.js';
import type { PlanSnapshot } from '../scope.js';
import type { MetricDeltas } from '../status.js';
import type { PlanEvent } from '../../rules/inputs.js';
import type { NamedTarget } from '../../rules/validate.js';
import type { MachineState } from '../../rules/machines.js';

export type { MachineState } from '../../rules/machines.js';

/** A MachineUpdate to create: the start of one machine's update. */
export interface MachineUpdateIntent {
  name: string;
  machine: string;
  target: { kind: TargetKind; name: string };
  /** The target's updaters, ordered by sequence (then name). */
  updaters: PlanUpdater[];
}

/** A Machine to label as in update by this plan (label plan-name + annotation update-started-at). */
export interface MachineLabelIntent {
  machine: string;
  startedAt: string;
}

/** A MachineDeployment replicas/annotations change (surge by one for maxUnavailable 0, or its restore). */
export interface ScaleIntent {
  name: string;
  replicas?: number;
  /** Annotations to set (string) or remove (null). */
  annotations: Record<string, string | null>;
  /** resourceVersion the decision was made on (optimistic concurrency: a stale decision conflicts). */
  resourceVersion?: string;
  kind: 'surge' | 'restore';
}

/** Everything one reconcile of a plan does. */
export interface PlanDecision {
  /** Validation problems (empty = valid). */
  problems: string[];
  /** The plan's new status (conditions merged with CAPI lastTransitionTime semantics). */
  status: InPlaceUpdatePlanStatus;
  /** MachineUpdates to create. */
  create: MachineUpdateIntent[];
  /** MachineUpdates whose spec.updatePhase is to become aborting. */
  abort: string[];
  /** Machines to label as in update. */
  label: MachineLabelIntent[];
  /** Machines whose plan-name label and update-started-at annotation are to be removed. */
  unlabel: string[];
  /** Older plans of the same cluster to move to aborting (superseded by this one). */
  supersede: string[];
  /** MachineDeployment surge / restore patches. */
  scale: ScaleIntent[];
  /** Events to record. */
  events: PlanEvent[];
  /** Finalizer change on the plan. */
  finalizer?: 'add' | 'remove';
  /** Metric increments. */
  metrics: MetricDeltas;
  /** When the decision changes by the clock alone (a maintenance window opens or closes): reconcile again then. */
  requeueAt?: string;
  /** The machine gates (soak, verification) holding a slot now, for the gate metrics. */
  gatesHolding?: string[];
  /**
   * The snapshot's machines per target key as the decision grouped them (deleting ones included), read-only: owner
   * alignment reads them instead of grouping every machine of the cluster a second time per reconcile.
   */
  machinesByTarget?: ReadonlyMap<string, readonly KubeObject[]>;
}

/** A target's (or the plan's) updateStatus. */
export type UpdateStatusValue = TargetStatus['updateStatus'];

/** What the plan does with its targets this reconcile: start machines, start none, or stop everything in flight. */
export type Mode = 'rollout' | 'hold' | 'stop';

/** The machine names of a target per state. */
export type MachineGroups = Record<MachineState, string[]>;

/** One target evaluated against the snapshot. */
export interface TargetEval {
  row: TargetStatus;
  reason: string;
  starts: string[];
  scale?: ScaleIntent;
  inFlight: number;
  started: boolean;
  /** Machines counted as updated because they were already at target (no MachineUpdate). */
  skipped: string[];
}

/** What every target's evaluation reads: the snapshot indexed by target, and the plan's own settings. */
export interface TargetScope {
  snap: PlanSnapshot;
  /** Machines per target key. */
  machines: Map<string, KubeObject[]>;
  /** This plan's MachineUpdates per target key. */
  targetMus: Map<string, MachineUpdate[]>;
  planName: string;
  planLabel: string;
  halt: boolean;
  mus: ReadonlyMap<string, MachineUpdate>;
  /** Machines already at target that count as updated (empty when the plan re-runs them or may not start). */
  atTarget: ReadonlySet<string>;
}

/** A target's machines counted by state (deleting machines left out, failures kept as history). */
export interface TargetCount {
  /** Every machine of the target, deleting ones included. */
  all: KubeObject[];
  /** The machines not being deleted. */
  current: KubeObject[];
  groups: MachineGroups;
  /** Machines at target counted as updated without a MachineUpdate. */
  skipped: string[];
  /** The target has a MachineUpdate of this plan or a machine skipped as already at target. */
  started: boolean;
  inFlight: number;
  /** Failed + aborted machines that still exist. */
  unsuccessful: number;
  /** Machines whose update failed, including those the MHC has since replaced. */
  failed: string[];
  /** failed + aborted: what Halt stops on. */
  everFailed: number;
}

/** One target as read this decision: which it is, its machines counted, its size, and whether it is halted. */
export interface TargetReading {
  t: NamedTarget;
  c: TargetCount;
  size: TargetSize;
  halted: boolean;
}

/** A target's object and the size it should settle at. */
export interface TargetSize {
  /** The MachineDeployment (undefined for the control plane or a missing deployment). */
  md?: KubeObject;
  desired?: number;
  /** The deployment is surged by this plan (or by an unnamed owner). */
  surged: boolean;
  /** The replica count before the surge, as annotated. */
  surgeOrig?: string;
  allCreated: boolean;
  /** The target settled at its desired size (a scale-down is not in progress). */
  settled: boolean;
  /** The target's object does not exist. */
  missing: boolean;
}
