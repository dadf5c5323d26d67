// The campaign decision's shapes: the snapshot it reads and the decision it returns (decide.ts re-exports them).
import type { AlertGatePolicy, InPlaceUpdateCampaign, InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import type { ControlPlaneLookup, PrestartResult, TemplateLookup } from '../../rules/inputs.js';
import type { WindowGate } from '../../rules/gates.js';

export interface ClusterView {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Name of the control plane spec.controlPlaneRef names, if any. */
  controlPlaneName?: string;
  /** The cluster's MachineDeployments (name, labels, rollout strategy type). */
  machineDeployments: { name: string; labels: Record<string, string>; strategy?: string }[];
  /**
   * The objects the plan's validation reads (the informer's, not copies), when the snapshot builder read them: with
   * them a cluster not started yet gets the plan's own checks (validatePlan) before any plan exists.
   */
  objects?: ClusterObjects;
  /** Why the plan's pre-start check could not run for this cluster (a failed read: retried, not a verdict). */
  checkError?: string;
}

/** A cluster's objects as the plan validation reads them: the Cluster, its control plane and MachineDeployments. */
export interface ClusterObjects {
  cluster: KubeObject;
  /** The control plane spec.controlPlaneRef names (looked up when the template updates a control plane). */
  controlPlane?: ControlPlaneLookup;
  machineDeployments: KubeObject[];
  /** The updater template lookups (absent: not looked up by this reader; the plan looks them up itself). */
  templates?: TemplateLookup[];
  /** The plan's pre-start check on this cluster (uncovered drift, commit dry-run), when it ran (campaign-controller/prestart.ts). */
  prestart?: PrestartResult;
  /** What the templates and the pre-start check were read for (part of the validation memo key). */
  checkKey?: string;
}

/** One of the campaign's plans, as far as the campaign needs it (from its status). */
export interface PlanView {
  name: string;
  clusterName: string;
  wave: number;
  updateStatus?: string;
  /** A message when the plan is finished failed (Ready / Failed condition), or invalid-and-final (Failed=True Invalid). */
  failure?: string;
  /** True when Failed=True with reason Invalid: a plan that will never start counts as a failed cluster. */
  invalid?: boolean;
  paused: boolean;
  pausedByCampaign: boolean;
  aborting: boolean;
  supersededBy?: string;
  completionTime?: string;
  machines: number;
  updated: number;
  skipped: number;
  updating: number;
  failed: number;
}

/** Everything decideCampaign reads. */
export interface CampaignSnapshot {
  campaign: InPlaceUpdateCampaign & { metadata: { name: string; namespace?: string; generation?: number } };
  /** Current time (RFC 3339). */
  now: string;
  /** Clusters of the namespace the campaign selects (existing, not being deleted). */
  selected: ClusterView[];
  /** Names of every existing Cluster of the namespace (to tell a deleted cluster from an unselected one). */
  existing: ReadonlySet<string>;
  /** The campaign's own plans. */
  plans: PlanView[];
  /** Per cluster: a non-terminal plan the campaign does not own (the overlap rule). */
  foreignPlans: ReadonlyMap<string, string>;
  /** Older unfinished campaigns that select some of the same clusters. */
  overlappingCampaigns: { name: string; clusters: string[] }[];
  /** Problems with the template's updater templates (looked up by scope.ts), the same for every cluster. */
  templateProblems: string[];
  /** The operator's alert-gate policy (`--alert-gate-policy`); absent: none configured, every alert gate is refused. */
  alertGatePolicy?: AlertGatePolicy;
}

/** A cluster's state in the campaign. */
export type ClusterState = 'pending' | 'waiting' | 'updating' | 'updated' | 'skipped' | 'failed' | 'aborted';

/** A cluster and its state, for status and the CLI. */
export interface ClusterRow {
  name: string;
  state: ClusterState;
  wave?: number;
  plan?: string;
  reason?: string;
  /** The cluster was deleted or left the selection after its plan was created. */
  removed?: 'deleted' | 'unselected';
  /** Skipped because the plan it would get is invalid (found after the campaign started; reason says why). */
  invalid?: boolean;
  machines: number;
  updated: number;
}

/** A plan to create. */
export interface PlanToCreate {
  name: string;
  clusterName: string;
  wave: number;
  spec: InPlaceUpdatePlan['spec'];
}

/** Where the campaign is. */
export type CampaignPhase =
  | 'Invalid'
  | 'Pending'
  | 'Canary'
  | 'Wave'
  | 'Soaking'
  | 'Paused'
  | 'Halted'
  | 'Waiting'
  | 'WaitingForMaintenanceWindow'
  | 'Completed'
  | 'Aborting'
  | 'Aborted';

/** What the campaign does now and what its status says. */
export interface CampaignDecision {
  /** Valid=False problems (campaign level, then per cluster), bounded. Empty = valid. */
  problems: string[];
  /** Clusters whose pre-start check could not run yet (a failed read, retried), bounded lines: Valid=Unknown when no problem. */
  checking: string[];
  create: PlanToCreate[];
  pause: string[];
  resume: string[];
  abort: string[];
  phase: CampaignPhase;
  /** Why the campaign is where it is (human sentence). */
  message: string;
  updateStatus: 'pending' | 'updating' | 'updated' | 'failed' | 'aborting' | 'aborted';
  currentWave?: number;
  plannedWaves: number;
  soakUntil?: string;
  /** Halted: canary failure or budget spent. */
  halted?: 'CanaryFailed' | 'BudgetSpent';
  failureBudget: number;
  rows: ClusterRow[];
  /** Re-run after this long (soak end, the next window change). */
  requeueAfterMs?: number;
  /** spec.maintenanceWindows at `now` (state absent without windows or with invalid ones). */
  window: WindowGate;
}
