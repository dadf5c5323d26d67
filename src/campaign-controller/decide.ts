// Campaign decisions, pure: from a snapshot of the campaign, its selected Clusters (with their MachineDeployments'
// names and labels), its own plans' status and the other plans / campaigns of the namespace, decide which plans to
// create (the next wave), which of its plans to pause, resume or abort, and every count the status reports. No I/O:
// controller.ts reads (scope.ts) and acts; status.ts turns the decision into the one status.
//
// Rollout rules (docs/operations.md "Fleet campaigns"):
// * Order: the integer priority under spec.rollout.orderBy (a label, else an annotation; lower first, absent last),
//   then the cluster name.
// * Wave 0 is the canaries (spec.rollout.canary: names, or a count / percentage rounded up of the first clusters in
//   order); waves 1.. take at most maxConcurrentClusters (count, or percentage of the selected clusters rounded down,
//   at least 1) of the pending clusters in order. A wave starts only when every plan of the previous wave is terminal
//   and soakSeconds have passed since its last plan completed. A wave is recorded on its plans (label), so waves
//   survive restarts and a cluster that joins the selection later is simply pending: it goes in a later wave.
// * Failure budget: failed clusters tolerated (count, or percentage of the clusters rounded down); one more halts the
//   campaign: no new plan, running plans finish. Any failed canary halts before wave 1. Raising the budget resumes.
// * Overlap: a cluster with a non-terminal plan the campaign does not own (written by hand, or another campaign's)
//   waits (reported as waiting) and never has a campaign plan created over it, since the plan controller would
//   supersede the older plan. Two unfinished campaigns selecting one cluster: the newer one is Valid=False naming the
//   clusters and the older campaign, and starts nothing until the older one is finished.
// * A plan whose Cluster is deleted is aborted (nothing left to update) and reported as removed; a cluster that only
//   left the selection keeps its running plan, reported as removed.
import type { InPlaceUpdateCampaign, InPlaceUpdatePlan, PlanTarget } from '../api/index.js';
import {
  DEFAULT_WRITE_POLICY,
  PlanSpecSchema,
  UpdatePhase,
  UpdateStatus,
  boundMessage,
  formatIssues,
  isTerminal,
  writeRefusal,
} from '../api/index.js';
import type { KubeObject } from '../api/index.js';
import { Labels } from '../api/index.js';
import { cpVersion, mdVersion } from '../api/capi/index.js';
import type { LabelSelector } from '../runtime/pure/labels.js';
import { formatLabelSelector, matchesSelector } from '../runtime/pure/labels.js';
import type { ControlPlaneLookup, TemplateLookup } from '../plan-controller/scope.js';
import { templateRefsOf } from '../plan-controller/scope.js';
import { validatePlan } from '../plan-controller/validate.js';
import type { WindowGate } from '../plan-controller/gates.js';
import { alertGate, windowGate } from '../plan-controller/gates.js';

/** Clusters named in a status list or a Valid=False message (beyond: "... and N more"). */
export const MAX_NAMED_CLUSTERS = 20;
/** Problems named per cluster in the Valid=False message. */
const MAX_PROBLEMS_PER_CLUSTER = 3;
/** Length of one reported reason. */
const REASON_BYTES = 512;

/** A selected Cluster as the campaign sees it (no machines: the campaign never holds per-machine state). */
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
}

/** A cluster's objects as the plan validation reads them: the Cluster, its control plane and MachineDeployments. */
export interface ClusterObjects {
  cluster: KubeObject;
  /** The control plane spec.controlPlaneRef names (looked up when the template updates a control plane). */
  controlPlane?: ControlPlaneLookup;
  machineDeployments: KubeObject[];
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

/** Resolves an int-or-percentage against `total`; `round` decides how a percentage rounds. */
export function resolveIntOrPercent(v: number | string | undefined, total: number, dflt: number, round: 'up' | 'down'): number {
  if (v === undefined) return dflt;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) return dflt;
  const x = (Number(m[1]) * total) / 100;
  return round === 'up' ? Math.ceil(x) : Math.floor(x);
}

/** Problems with an int-or-percentage the API's pattern may not have caught (older objects, a real server without the CRD's pattern). */
function percentProblem(field: string, v: number | string | undefined): string[] {
  if (typeof v !== 'string') return [];
  const m = /^(\d+)%$/.exec(v);
  if (!m) return [`${field} ${JSON.stringify(v)} is neither a count nor a percentage`];
  return Number(m[1]) > 100 ? [`${field} ${v} is over 100%`] : [];
}

/** The priority of a cluster under `key` (label, then annotation); Infinity when absent or not an integer. */
function priorityOf(c: { labels: Record<string, string>; annotations: Record<string, string> }, key: string | undefined): number {
  if (!key) return 0;
  const raw = c.labels[key] ?? c.annotations[key];
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(n) ? n : Infinity;
}

/** Sorts clusters in rollout order: priority, then name. */
export function rolloutOrder<T extends { name: string; labels: Record<string, string>; annotations: Record<string, string> }>(
  clusters: readonly T[],
  orderBy: string | undefined,
): T[] {
  return [...clusters].sort((a, b) => priorityOf(a, orderBy) - priorityOf(b, orderBy) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Deterministic plan name of a campaign's cluster (a DNS subdomain of at most 253 characters). */
export function campaignPlanName(campaign: string, cluster: string): string {
  const name = `${campaign}-${cluster}`;
  if (name.length <= 253) return name;
  let h = 0;
  for (const ch of name) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
  return `${name.slice(0, 244)}-${h.toString(16).padStart(8, '0')}`;
}

const selectorString = (s: LabelSelector | undefined): string => (s ? formatLabelSelector(s) : '');

/** The per-cluster plan spec from the template, with every problem found building it (empty = fine). */
export function buildPlanSpec(
  template: InPlaceUpdateCampaign['spec']['template'],
  cluster: ClusterView,
  campaign: Pick<InPlaceUpdateCampaign['spec'], 'maintenanceWindows' | 'alertGate'> = {},
): { spec: InPlaceUpdatePlan['spec']; problems: string[] } {
  const problems: string[] = [];
  // The campaign's windows and alert gate go down into every plan unless the template sets its own (even empty).
  const windows = template.maintenanceWindows ?? campaign.maintenanceWindows;
  const alerts = template.alertGate ?? campaign.alertGate;
  const spec: InPlaceUpdatePlan['spec'] = {
    clusterName: cluster.name,
    ...(template.failurePolicy ? { failurePolicy: template.failurePolicy } : {}),
    ...(windows && windows.length > 0 ? { maintenanceWindows: windows } : {}),
    ...(template.maintenanceWindowEnd ? { maintenanceWindowEnd: template.maintenanceWindowEnd } : {}),
    ...(alerts ? { alertGate: alerts } : {}),
    ...(template.acceptUncoveredChanges !== undefined ? { acceptUncoveredChanges: template.acceptUncoveredChanges } : {}),
    ...(template.rerunMachinesAtTarget !== undefined ? { rerunMachinesAtTarget: template.rerunMachinesAtTarget } : {}),
    ...(template.soak !== undefined ? { soak: template.soak } : {}),
    ...(template.verification ? { verification: template.verification } : {}),
  };
  if (template.controlPlane) {
    if (!cluster.controlPlaneName) problems.push('the template updates a control plane but the Cluster has no spec.controlPlaneRef');
    else
      spec.controlPlane = {
        name: cluster.controlPlaneName,
        sequence: template.controlPlane.sequence,
        updaters: template.controlPlane.updaters,
      };
  }
  const groups = template.machineDeployments ?? [];
  if (groups.length > 0) {
    const mds: PlanTarget[] = [];
    for (const md of [...cluster.machineDeployments].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const g = groups.find((x) => matchesSelector(selectorString(x.selector as LabelSelector | undefined), md.labels));
      if (!g) continue;
      if (md.strategy === 'OnDelete' && !cluster.objects)
        problems.push(`MachineDeployment ${md.name} uses the OnDelete strategy (its machines are never updated in place)`);
      mds.push({ name: md.name, sequence: g.sequence, updaters: g.updaters });
    }
    if (mds.length > 0) spec.machineDeployments = mds;
  }
  if (!spec.controlPlane && !spec.machineDeployments && problems.length === 0)
    problems.push('nothing to update: the template matches neither a control plane nor a MachineDeployment of the Cluster');
  if ((spec.controlPlane || spec.machineDeployments) && !cluster.objects) {
    const parsed = PlanSpecSchema.safeParse(spec);
    if (!parsed.success) problems.push(...formatIssues(parsed.error, 'plan spec'));
  }
  return { spec, problems };
}

/**
 * A Machine-shaped stand-in per owner for the upgrade rules: the version the control plane (spec.version) or the
 * MachineDeployment (spec.template.spec.version) declares, which its machines run once CAPI converged. The campaign
 * never holds Machines (30,000 of them at fleet scale); the plan checks the real machines again when it is created.
 */
export function ownerVersionMachines(clusterName: string, o: ClusterObjects): KubeObject[] {
  const out: KubeObject[] = [];
  const cp = o.controlPlane?.object;
  const cpv = cp ? cpVersion(cp) : undefined;
  if (cp && cpv)
    out.push({
      metadata: {
        name: `${cp.kind ?? 'control plane'} ${cp.metadata.name ?? ''} (spec.version)`,
        labels: { [Labels.clusterName]: clusterName, [Labels.controlPlaneName]: cp.metadata.name ?? '' },
      },
      spec: { version: cpv },
    });
  for (const md of o.machineDeployments) {
    const v = mdVersion(md);
    if (v)
      out.push({
        metadata: {
          name: `MachineDeployment ${md.metadata.name ?? ''} (spec.template.spec.version)`,
          labels: { [Labels.clusterName]: clusterName, [Labels.deploymentName]: md.metadata.name ?? '' },
        },
        spec: { version: v },
      });
  }
  return out;
}

/**
 * Every problem the plan controller's validation would find with the plan the campaign would create for `cluster`
 * (validatePlan: schema, control plane and MachineDeployments, sequences, updaters, upgrade rules against the owners'
 * declared versions, owner fields), except what needs per-machine reads or objects the plan looks up itself: the
 * updater template objects (the same for every cluster; their kinds are checked once, templateProblems) and the
 * pre-start check (uncovered drift, dry-runs). Those the plan finds when it is created: it goes Valid=False and its
 * cluster counts as failed.
 */
export function clusterPlanProblems(
  namespace: string,
  planName: string,
  spec: InPlaceUpdatePlan['spec'],
  c: ClusterView,
  campaignVersion?: string,
): string[] {
  if (!c.objects) return [];
  const key = campaignVersion !== undefined ? objectsVersion(c.objects) : undefined;
  const memoKey = key !== undefined ? `${campaignVersion}|${planName}|${key}` : undefined;
  const hit = memoKey !== undefined ? validationMemo.get(memoKey) : undefined;
  if (hit) return hit;
  const problems = validateClusterPlan(namespace, planName, spec, c.objects);
  if (memoKey !== undefined) {
    if (validationMemo.size >= VALIDATION_MEMO_MAX) validationMemo.delete(validationMemo.keys().next().value!);
    validationMemo.set(memoKey, problems);
  }
  return problems;
}

// A thousand pending clusters validated on every reconcile (each plan's progress is one) would cost tens of ms each
// time for answers that change only with the objects: memoised per campaign generation and the objects'
// resourceVersions (only when every one is known), bounded.
const VALIDATION_MEMO_MAX = 20_000;
const validationMemo = new Map<string, string[]>();

function objectsVersion(o: ClusterObjects): string | undefined {
  const rvs = [o.cluster, ...(o.controlPlane?.object ? [o.controlPlane.object] : []), ...o.machineDeployments].map(
    (x) => x.metadata.resourceVersion,
  );
  if (rvs.some((rv) => rv === undefined) || o.controlPlane?.error) return undefined;
  return `${rvs.join(',')}|${o.controlPlane && !o.controlPlane.object ? 'no-cp' : ''}`;
}

function validateClusterPlan(namespace: string, planName: string, spec: InPlaceUpdatePlan['spec'], objects: ClusterObjects): string[] {
  const plan: InPlaceUpdatePlan = { metadata: { name: planName, namespace }, spec } as InPlaceUpdatePlan;
  const templates: TemplateLookup[] = templateRefsOf(plan).map((ref) => ({ ref, found: false, unchecked: true }));
  return validatePlan({
    plan,
    cluster: objects.cluster,
    ...(objects.controlPlane ? { controlPlane: objects.controlPlane } : {}),
    machineDeployments: objects.machineDeployments,
    templates,
    machines: ownerVersionMachines(spec.clusterName, objects),
  });
}

/** The state of a cluster that has a campaign plan. */
function planState(p: PlanView): { state: ClusterState; reason?: string } {
  if (p.invalid) return { state: 'failed', reason: p.failure ?? 'the plan is invalid' };
  switch (p.updateStatus) {
    case UpdateStatus.failed:
      return { state: 'failed', reason: p.failure ?? 'the plan failed' };
    case UpdateStatus.updated:
      return p.machines > 0 && p.skipped === p.machines
        ? { state: 'skipped', reason: 'already at target: every machine skipped, no MachineUpdate' }
        : { state: 'updated' };
    case UpdateStatus.aborted:
      return { state: 'aborted', reason: p.supersededBy ? `superseded by plan ${p.supersededBy}` : 'aborted' };
    default:
      return { state: 'updating' };
  }
}

/** Decides the campaign's next step (level-based: everything from the snapshot). */
export function decideCampaign(snap: CampaignSnapshot): CampaignDecision {
  const { campaign } = snap;
  const spec = campaign.spec;
  const now = new Date(snap.now);
  const rollout = spec.rollout ?? {};
  const aborting = spec.updatePhase === UpdatePhase.aborting;
  const selectedByName = new Map(snap.selected.map((c) => [c.name, c]));
  const planByCluster = new Map<string, PlanView>();
  for (const p of snap.plans) {
    const prev = planByCluster.get(p.clusterName);
    if (!prev || prev.name < p.name) planByCluster.set(p.clusterName, p);
  }

  const recorded = finishedRecords(campaign.status?.finishedClusters);

  // Rows: every selected cluster, then clusters of plans that are no longer selected.
  const rows: ClusterRow[] = [];
  for (const c of snap.selected) {
    const p = planByCluster.get(c.name);
    const rec = recorded.get(c.name);
    if (p) {
      const s = planState(p);
      rows.push({ name: c.name, ...s, wave: p.wave, plan: p.name, machines: p.machines, updated: p.updated });
    } else if (rec) {
      // Its finished plan was deleted (history limit, by hand): the recorded outcome stands; never started twice.
      rows.push({
        name: c.name,
        state: rec.state,
        wave: rec.wave,
        reason: 'finished (its plan was deleted since)',
        machines: 0,
        updated: 0,
      });
    } else {
      const foreign = snap.foreignPlans.get(c.name);
      rows.push(
        foreign
          ? {
              name: c.name,
              state: 'waiting',
              reason: `plan ${foreign} is updating this cluster; the campaign waits for it`,
              machines: 0,
              updated: 0,
            }
          : { name: c.name, state: 'pending', machines: 0, updated: 0 },
      );
    }
  }
  for (const p of planByCluster.values()) {
    if (selectedByName.has(p.clusterName)) continue;
    const s = planState(p);
    const removed = snap.existing.has(p.clusterName) ? 'unselected' : 'deleted';
    const why = removed === 'deleted' ? 'the Cluster was deleted' : 'the Cluster left the selection';
    rows.push({
      name: p.clusterName,
      ...s,
      reason: s.reason ? `${why}; ${s.reason}` : why,
      removed,
      wave: p.wave,
      plan: p.name,
      machines: p.machines,
      updated: p.updated,
    });
  }

  const total = snap.selected.length + rows.filter((r) => r.removed).length;
  const failureBudget = resolveIntOrPercent(rollout.failureBudget, total, 0, 'down');
  const waveSize = Math.max(1, resolveIntOrPercent(rollout.maxConcurrentClusters, snap.selected.length, 1, 'down'));
  const soakMs = (rollout.soakSeconds ?? 0) * 1000;
  const ordered = rolloutOrder(snap.selected, rollout.orderBy);

  // Validation: campaign level, then per cluster not started yet (started clusters were valid when their plan was made).
  const problems: string[] = [
    ...percentProblem('spec.rollout.failureBudget', rollout.failureBudget),
    ...percentProblem('spec.rollout.maxConcurrentClusters', rollout.maxConcurrentClusters),
    ...percentProblem('spec.rollout.canary.count', rollout.canary?.count),
    ...updaterProblems(spec.template),
    ...snap.templateProblems,
    ...gateProblems(spec, now),
  ];
  const window = windowGate(asPlanGates(spec.maintenanceWindows), now);
  if (snap.selected.length === 0 && snap.plans.length === 0 && recorded.size === 0) {
    const sel = selectorString(spec.clusterSelector as LabelSelector | undefined);
    problems.push(
      `no Cluster in namespace ${campaign.metadata.namespace ?? ''} matches the campaign's selection` +
        (sel ? ` (clusterSelector ${sel})` : '') +
        (spec.clusterNames?.length
          ? ` (clusterNames: ${boundMessage(spec.clusterNames.slice(0, 5).join(', '), 200)}${spec.clusterNames.length > 5 ? ', ...' : ''})`
          : ''),
    );
  }
  const canaryNames = rollout.canary?.clusterNames ?? [];
  const notSelected = canaryNames.filter((n) => !selectedByName.has(n) && !planByCluster.has(n));
  if (notSelected.length > 0)
    problems.push(`canary ${notSelected.length === 1 ? 'cluster' : 'clusters'} not selected by the campaign: ${namesList(notSelected)}`);
  for (const o of snap.overlappingCampaigns)
    problems.push(
      `${o.clusters.length === 1 ? 'Cluster' : 'Clusters'} ${namesList(o.clusters)} ${o.clusters.length === 1 ? 'is' : 'are'} also selected by campaign ${o.name}, which is older and not finished (one campaign per cluster at a time)`,
    );
  // Per cluster not started yet: the template's shape on it, then the plan's own validation of the plan it would get.
  // Before the campaign started anything, any problem is Valid=False (nothing starts); once it started, a cluster
  // found invalid (joined later with a bad shape, its control plane moved on) is skipped with the reason and does not
  // hold the others; it is pending again as soon as it is fixed.
  const started = snap.plans.length > 0 || recorded.size > 0;
  const ns = campaign.metadata.namespace ?? '';
  const meta = campaign.metadata as { uid?: string; generation?: number };
  const campaignVersion = meta.uid !== undefined && meta.generation !== undefined ? `${meta.uid}/${meta.generation}` : undefined;
  const byCluster: string[] = [];
  const invalidClusters = new Map<string, string>();
  const specs = new Map<string, InPlaceUpdatePlan['spec']>();
  for (const c of ordered) {
    if (planByCluster.has(c.name) || recorded.has(c.name)) continue;
    const b = buildPlanSpec(spec.template, c, spec);
    specs.set(c.name, b.spec);
    const found = [
      ...b.problems,
      ...(b.spec.controlPlane || b.spec.machineDeployments
        ? clusterPlanProblems(ns, campaignPlanName(campaign.metadata.name, c.name), b.spec, c, campaignVersion)
        : []),
    ];
    if (found.length === 0) continue;
    const shown = found.slice(0, MAX_PROBLEMS_PER_CLUSTER).join('; ');
    const more = found.length > MAX_PROBLEMS_PER_CLUSTER ? ` (and ${found.length - MAX_PROBLEMS_PER_CLUSTER} more)` : '';
    invalidClusters.set(c.name, boundMessage(`${shown}${more}`, REASON_BYTES));
    if (byCluster.length < MAX_NAMED_CLUSTERS) byCluster.push(boundMessage(`Cluster ${c.name}: ${shown}${more}`, REASON_BYTES));
  }
  if (!started) {
    problems.push(...byCluster);
    if (invalidClusters.size > byCluster.length)
      problems.push(`... and ${invalidClusters.size - byCluster.length} more clusters with problems`);
  } else
    for (const r of rows) {
      const why = invalidClusters.get(r.name);
      if (why === undefined || (r.state !== 'pending' && r.state !== 'waiting')) continue;
      r.state = 'skipped';
      r.invalid = true;
      r.reason = `invalid for this cluster, not started: ${why}`;
    }

  // Wave bookkeeping from the plans.
  const waves = new Map<number, PlanView[]>();
  for (const p of planByCluster.values()) waves.set(p.wave, [...(waves.get(p.wave) ?? []), p]);
  const startedWaves = rows.map((r) => r.wave).filter((w): w is number => w !== undefined);
  const currentWave = startedWaves.length > 0 ? Math.max(...startedWaves) : undefined;
  const failed = rows.filter((r) => r.state === 'failed');
  const canaryFailed = rows.some((r) => r.wave === 0 && r.state === 'failed');
  const halted: CampaignDecision['halted'] = canaryFailed ? 'CanaryFailed' : failed.length > failureBudget ? 'BudgetSpent' : undefined;
  const active = snap.plans.filter((p) => !isTerminal(p.updateStatus) && !p.invalid);

  // Propagation to the campaign's running plans: abort, pause / resume, abort a deleted cluster's plan.
  const abort = active
    .filter((p) => !p.aborting && (aborting || rows.find((r) => r.plan === p.name)?.removed === 'deleted'))
    .map((p) => p.name);
  // One patch per plan: a plan being aborted is neither paused nor resumed in the same reconcile.
  const toAbort = new Set(abort);
  const pause = !aborting && spec.paused ? active.filter((p) => !p.paused && !toAbort.has(p.name)).map((p) => p.name) : [];
  const resume = !spec.paused ? active.filter((p) => p.paused && p.pausedByCampaign && !toAbort.has(p.name)).map((p) => p.name) : [];

  const pendingRows = rows.filter((r) => r.state === 'pending');
  const eligible = new Set(pendingRows.map((r) => r.name));
  const waitingRows = rows.filter((r) => r.state === 'waiting');
  const canarySet =
    canaryNames.length > 0
      ? canaryNames
      : ordered.slice(0, resolveIntOrPercent(rollout.canary?.count, snap.selected.length, 0, 'up')).map((c) => c.name);
  const remainingAfter = (n: number): number => Math.ceil(Math.max(0, n) / waveSize);
  const plannedWaves =
    currentWave === undefined
      ? (canarySet.length > 0 ? 1 : 0) + remainingAfter(pendingRows.length + waitingRows.length - canarySet.length)
      : currentWave + 1 + remainingAfter(pendingRows.length + waitingRows.length);

  const base = {
    problems,
    pause,
    resume,
    abort,
    plannedWaves,
    failureBudget,
    rows,
    window,
    ...(currentWave !== undefined ? { currentWave } : {}),
  };
  // Until the window state changes: the Event and status say so on time, and a closed window's opening starts the next wave.
  const untilWindowChange = window.state ? Math.max(1, window.state.nextChange.getTime() - now.getTime()) : undefined;
  const finished =
    campaign.status?.updateStatus === UpdateStatus.updated && campaign.status.observedGeneration === campaign.metadata.generation;

  if (aborting) {
    const stillRunning = active.length > 0;
    return {
      ...base,
      create: [],
      phase: stillRunning ? 'Aborting' : 'Aborted',
      updateStatus: stillRunning ? 'aborting' : 'aborted',
      message: stillRunning ? `aborting: ${active.length} running plans move to aborting` : 'aborted: no new cluster starts',
    };
  }
  const inProgress = active.length > 0;
  const statusWhileRunning = started ? 'updating' : 'pending';
  if (halted) {
    const why =
      halted === 'CanaryFailed'
        ? `a canary failed (${namesList(failed.filter((r) => r.wave === 0).map((r) => r.name))}): no wave starts`
        : `the failure budget (${failureBudget}) is spent: ${failed.length} failed clusters (${namesList(failed.map((r) => r.name))})`;
    return {
      ...base,
      create: [],
      halted,
      phase: 'Halted',
      updateStatus: inProgress ? 'updating' : 'failed',
      message: inProgress ? `${why}; ${active.length} running plans finish, no new cluster starts` : `${why}; halted`,
    };
  }
  if (finished) return { ...base, create: [], phase: 'Completed', updateStatus: 'updated', message: completedMessage(rows) };
  if (problems.length > 0)
    return {
      ...base,
      create: [],
      phase: 'Invalid',
      updateStatus: statusWhileRunning,
      message: 'the campaign is invalid: nothing new starts until the problems are fixed',
    };
  if (spec.paused)
    return {
      ...base,
      create: [],
      phase: 'Paused',
      updateStatus: statusWhileRunning,
      message: 'paused: no new cluster starts; running plans are paused',
    };
  if (inProgress) {
    const wave = currentWave ?? 0;
    return {
      ...base,
      create: [],
      phase: wave === 0 ? 'Canary' : 'Wave',
      updateStatus: 'updating',
      message: `${waveLabel(wave)}: ${active.length} clusters updating${window.state && !window.state.open ? ` (maintenance ${window.state.message}: no new cluster starts)` : ''}`,
      ...(untilWindowChange !== undefined ? { requeueAfterMs: untilWindowChange } : {}),
    };
  }

  // Soak after the last wave.
  if (currentWave !== undefined && soakMs > 0 && (eligible.size > 0 || waitingRows.length > 0)) {
    const last = (waves.get(currentWave) ?? [])
      .map((p) => p.completionTime)
      .filter((t): t is string => !!t)
      .sort()
      .pop();
    if (last) {
      const until = Date.parse(last) + soakMs;
      const now = Date.parse(snap.now);
      if (now < until) {
        const soakUntil = new Date(until).toISOString().replace(/\.\d{3}Z$/, 'Z');
        return {
          ...base,
          create: [],
          phase: 'Soaking',
          updateStatus: 'updating',
          soakUntil,
          requeueAfterMs: until - now,
          message: `soaking after ${waveLabel(currentWave)} until ${soakUntil}`,
        };
      }
    }
  }

  // The next wave.
  let next: { wave: number; members: string[] } | undefined;
  if (currentWave === undefined && canarySet.length > 0) {
    // The canaries go together or not at all: a canary another plan is updating holds the campaign (Waiting).
    if (canarySet.every((n) => eligible.has(n))) next = { wave: 0, members: canarySet };
    else
      return {
        ...base,
        create: [],
        phase: 'Waiting',
        updateStatus: 'pending',
        message: `waiting for the canaries to be free: ${namesList(canarySet.filter((n) => !eligible.has(n)))}`,
      };
  } else if (eligible.size > 0) {
    const members = ordered
      .filter((c) => eligible.has(c.name))
      .slice(0, waveSize)
      .map((c) => c.name);
    next = { wave: (currentWave ?? 0) + 1, members };
  }
  if (next && window.state && !window.state.open)
    return {
      ...base,
      create: [],
      phase: 'WaitingForMaintenanceWindow',
      updateStatus: statusWhileRunning,
      requeueAfterMs: untilWindowChange!,
      message: `maintenance ${window.state.message}: ${waveLabel(next.wave)} (${next.members.length} clusters) starts when it opens`,
    };
  if (next) {
    const create = next.members.map((n) => ({
      name: campaignPlanName(campaign.metadata.name, n),
      clusterName: n,
      wave: next.wave,
      spec: specs.get(n)!,
    }));
    return {
      ...base,
      create,
      currentWave: next.wave,
      plannedWaves: Math.max(plannedWaves, next.wave + 1),
      phase: next.wave === 0 ? 'Canary' : 'Wave',
      updateStatus: 'updating',
      message: `${waveLabel(next.wave)}: starting ${create.length} clusters`,
    };
  }
  if (waitingRows.length > 0)
    return {
      ...base,
      create: [],
      phase: 'Waiting',
      updateStatus: statusWhileRunning,
      message: `waiting for other plans on ${namesList(waitingRows.map((r) => r.name))}`,
    };
  return { ...base, create: [], phase: 'Completed', updateStatus: 'updated', message: completedMessage(rows) };
}

// windowGate and alertGate read a plan's spec fields only: the campaign's fields, shaped as a plan's, get the same
// checks and the same window arithmetic (src/api/windows.ts underneath).
const asPlanGates = (
  maintenanceWindows: InPlaceUpdateCampaign['spec']['maintenanceWindows'],
  alerts?: InPlaceUpdateCampaign['spec']['alertGate'],
): InPlaceUpdatePlan =>
  ({
    spec: { clusterName: '', ...(maintenanceWindows ? { maintenanceWindows } : {}), ...(alerts ? { alertGate: alerts } : {}) },
  }) as InPlaceUpdatePlan;

/** Problems of the campaign's and the template's windows and alert gates, with the campaign's paths. */
function gateProblems(spec: InPlaceUpdateCampaign['spec'], now: Date): string[] {
  const at = (path: string) => (p: string) => p.replace(/^spec\./, path);
  return [
    ...windowGate(asPlanGates(spec.maintenanceWindows), now).problems,
    ...windowGate(asPlanGates(spec.template.maintenanceWindows), now).problems.map(at('spec.template.')),
    ...alertGate(asPlanGates(undefined, spec.alertGate), undefined, now).problems,
    ...alertGate(asPlanGates(undefined, spec.template.alertGate), undefined, now).problems.map(at('spec.template.')),
  ];
}

/** "wave N" or "canary wave". */
export const waveLabel = (w: number): string => (w === 0 ? 'canary wave' : `wave ${w}`);

/** Names, at most MAX_NAMED_CLUSTERS, then "and N more". */
export function namesList(names: readonly string[]): string {
  const shown = names.slice(0, MAX_NAMED_CLUSTERS).join(', ');
  return names.length > MAX_NAMED_CLUSTERS ? `${shown} and ${names.length - MAX_NAMED_CLUSTERS} more` : shown;
}

function completedMessage(rows: readonly ClusterRow[]): string {
  const n = (s: ClusterState): number => rows.filter((r) => r.state === s).length;
  const invalid = rows.filter((r) => r.invalid).length;
  const parts = [`${n('updated')} updated`, `${n('skipped') - invalid} already at target`];
  if (invalid) parts.push(`${invalid} skipped as invalid`);
  if (n('failed')) parts.push(`${n('failed')} failed within the budget`);
  if (n('aborted')) parts.push(`${n('aborted')} aborted`);
  return `completed: ${parts.join(', ')}`;
}

type TemplateTarget = { sequence: number; updaters: PlanTarget['updaters'] };

/**
 * The template's updater problems, the same for every cluster (so named once, not per cluster): duplicate updater
 * names in a target, fields the write policy refuses, two updaters of a target owning one field (or one inside the
 * other). The plan controller checks the same again on each plan.
 */
export function updaterProblems(template: InPlaceUpdateCampaign['spec']['template']): string[] {
  const problems: string[] = [];
  const targets: [string, TemplateTarget][] = [
    ...(template.controlPlane ? ([['template.controlPlane', template.controlPlane]] as [string, TemplateTarget][]) : []),
    ...(template.machineDeployments ?? []).map((g, i): [string, TemplateTarget] => [`template.machineDeployments[${i}]`, g]),
  ];
  for (const [where, t] of targets) {
    const names = new Set<string>();
    const claims: { updater: string; res: string; path: string }[] = [];
    for (const u of t.updaters ?? []) {
      if (names.has(u.name)) problems.push(`${where}: updater name ${u.name} is used more than once (updater names are unique per target)`);
      names.add(u.name);
      for (const r of u.responsibilities ?? []) {
        const why = writeRefusal(DEFAULT_WRITE_POLICY, r.selectResource, r.path);
        if (why) problems.push(`${where} updater ${u.name}: ${r.selectResource} ${r.path} is not writable: ${why}`);
        claims.push({ updater: u.name, res: r.selectResource, path: r.path });
      }
    }
    const within = (outer: string, inner: string): boolean => inner === outer || inner.startsWith(`${outer}/`);
    claims.forEach((a, i) => {
      for (const b of claims.slice(i + 1))
        if (a.res === b.res && (within(a.path, b.path) || within(b.path, a.path)))
          problems.push(
            `${where}: ${a.res} ${a.path} (updater ${a.updater}) overlaps ${b.path} (updater ${b.updater}); a field has one owner`,
          );
    });
  }
  return problems;
}

/** A wave as the preview shows it: started (from the plans) or projected (if every cluster before it succeeds). */
export interface ProjectedWave {
  index: number;
  clusters: string[];
  started: boolean;
}

/**
 * The campaign's waves: those started (recorded on the plans), then the pending clusters in rollout order as the
 * controller would start them if every cluster succeeds and nothing else changes (canaries first when nothing started;
 * clusters waiting for another plan are left out: when they join is unknown).
 */
export function projectWaves(snap: CampaignSnapshot): ProjectedWave[] {
  const rollout = snap.campaign.spec.rollout ?? {};
  const d = decideCampaign(snap);
  const waves = new Map<number, string[]>();
  for (const r of d.rows) if (r.wave !== undefined) waves.set(r.wave, [...(waves.get(r.wave) ?? []), r.name]);
  const out: ProjectedWave[] = [...waves.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([index, clusters]) => ({ index, clusters, started: true }));
  const pending = new Set(d.rows.filter((r) => r.state === 'pending').map((r) => r.name));
  let ordered = rolloutOrder(snap.selected, rollout.orderBy)
    .map((c) => c.name)
    .filter((n) => pending.has(n));
  let next = out.length > 0 ? out[out.length - 1]!.index + 1 : 0;
  if (out.length === 0) {
    const names = rollout.canary?.clusterNames ?? [];
    const canaries =
      names.length > 0
        ? names.filter((n) => pending.has(n))
        : ordered.slice(0, resolveIntOrPercent(rollout.canary?.count, snap.selected.length, 0, 'up'));
    if (canaries.length > 0) {
      out.push({ index: 0, clusters: canaries, started: false });
      ordered = ordered.filter((n) => !canaries.includes(n));
    }
    next = 1;
  }
  const size = Math.max(1, resolveIntOrPercent(rollout.maxConcurrentClusters, snap.selected.length, 1, 'down'));
  for (let i = 0; i < ordered.length; i += size) out.push({ index: next++, clusters: ordered.slice(i, i + size), started: false });
  return out;
}

const RECORD = /^(\d+):(updated|skipped|failed|aborted):(.+)$/;

/** The clusters recorded in status.finishedClusters (`<wave>:<state>:<cluster>`), by name. */
export function finishedRecords(list: readonly string[] | undefined): Map<string, { wave: number; state: ClusterState }> {
  const out = new Map<string, { wave: number; state: ClusterState }>();
  for (const s of list ?? []) {
    const m = RECORD.exec(s);
    if (m) out.set(m[3]!, { wave: Number(m[1]), state: m[2] as ClusterState });
  }
  return out;
}

/** status.finishedClusters for the rows: every finished cluster (plan terminal, or recorded before), sorted. */
export function finishedRecordsOf(rows: readonly ClusterRow[], previous: readonly string[] | undefined): string[] {
  const out = new Map<string, string>();
  // Records of clusters no longer in the rows (unselected after their plan was deleted) are kept: they still happened.
  for (const [name, r] of finishedRecords(previous)) out.set(name, `${r.wave}:${r.state}:${name}`);
  for (const r of rows)
    if (r.wave !== undefined && (r.state === 'updated' || r.state === 'skipped' || r.state === 'failed' || r.state === 'aborted'))
      out.set(r.name, `${r.wave}:${r.state}:${r.name}`);
  return [...out.values()].sort();
}
