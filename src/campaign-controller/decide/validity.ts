// Phase 2 of decideCampaign: validation, campaign level, then per cluster not started yet (started clusters were valid
// when their plan was made).
import type { InPlaceUpdatePlan } from '../../api/index.js';
import { boundMessage } from '../../api/index.js';
import type { LabelSelector } from '../../runtime/pure/labels.js';
import type { CampaignRows } from './rows.js';
import type { CampaignSnapshot, ClusterRow, ClusterView } from './types.js';
import {
  MAX_NAMED_CLUSTERS,
  MAX_PROBLEMS_PER_CLUSTER,
  REASON_BYTES,
  buildPlanSpec,
  campaignPlanName,
  clusterPlanProblems,
  gateProblems,
  namesList,
  percentProblem,
  selectorString,
  updaterProblems,
} from './rules.js';

/** The campaign-level problems: the rollout's numbers, the template, the gates, an empty selection, canaries, overlaps. */
export function campaignProblems(snap: CampaignSnapshot, r: CampaignRows, now: Date): string[] {
  const { campaign } = snap;
  const spec = campaign.spec;
  const rollout = spec.rollout ?? {};
  const problems: string[] = [
    ...percentProblem('spec.rollout.failureBudget', rollout.failureBudget),
    ...percentProblem('spec.rollout.maxConcurrentClusters', rollout.maxConcurrentClusters, 1),
    ...percentProblem('spec.rollout.canary.count', rollout.canary?.count),
    ...updaterProblems(spec.template),
    ...snap.templateProblems,
    ...gateProblems(spec, now, snap.alertGatePolicy, campaign.metadata.namespace ?? ''),
  ];
  if (snap.selected.length === 0 && snap.plans.length === 0 && r.recorded.size === 0) {
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
  const notSelected = canaryNames.filter((n) => !r.selectedByName.has(n) && !r.planByCluster.has(n));
  if (notSelected.length > 0)
    problems.push(`canary ${notSelected.length === 1 ? 'cluster' : 'clusters'} not selected by the campaign: ${namesList(notSelected)}`);
  for (const o of snap.overlappingCampaigns)
    problems.push(
      `${o.clusters.length === 1 ? 'Cluster' : 'Clusters'} ${namesList(o.clusters)} ${o.clusters.length === 1 ? 'is' : 'are'} also selected by campaign ${o.name}, which is older and not finished (one campaign per cluster at a time)`,
    );
  return problems;
}

/** Per cluster not started yet: the plan spec it would get, and why it is invalid (if it is). */
export interface ClusterValidity {
  specs: Map<string, InPlaceUpdatePlan['spec']>;
  /** The bounded reason, by cluster. */
  invalidClusters: Map<string, string>;
  /** The first MAX_NAMED_CLUSTERS as Valid=False lines. */
  byCluster: string[];
  /** Clusters whose pre-start check could not run (a failed read, retried), by cluster: the reason. */
  unchecked: Map<string, string>;
}

/** The template's shape on each cluster not started yet, then the plan's own validation of the plan it would get. */
export function clusterValidity(snap: CampaignSnapshot, r: CampaignRows, ordered: readonly ClusterView[]): ClusterValidity {
  const { campaign } = snap;
  const ns = campaign.metadata.namespace ?? '';
  const meta = campaign.metadata as { uid?: string; generation?: number };
  const campaignVersion = meta.uid !== undefined && meta.generation !== undefined ? `${meta.uid}/${meta.generation}` : undefined;
  const out: ClusterValidity = { specs: new Map(), invalidClusters: new Map(), byCluster: [], unchecked: new Map() };
  for (const c of ordered) {
    if (r.planByCluster.has(c.name) || r.recorded.has(c.name)) continue;
    const b = buildPlanSpec(campaign.spec.template, c, campaign.spec);
    out.specs.set(c.name, b.spec);
    const found = [
      ...b.problems,
      ...(b.spec.controlPlane || b.spec.machineDeployments
        ? clusterPlanProblems(ns, campaignPlanName(campaign.metadata.name, c.name), b.spec, c, campaignVersion)
        : []),
    ];
    if (found.length === 0) {
      if (c.checkError !== undefined) out.unchecked.set(c.name, boundMessage(c.checkError, REASON_BYTES));
      continue;
    }
    const shown = found.slice(0, MAX_PROBLEMS_PER_CLUSTER).join('; ');
    const more = found.length > MAX_PROBLEMS_PER_CLUSTER ? ` (and ${found.length - MAX_PROBLEMS_PER_CLUSTER} more)` : '';
    out.invalidClusters.set(c.name, boundMessage(`${shown}${more}`, REASON_BYTES));
    if (out.byCluster.length < MAX_NAMED_CLUSTERS) out.byCluster.push(boundMessage(`Cluster ${c.name}: ${shown}${more}`, REASON_BYTES));
  }
  return out;
}

/** The Valid=Unknown lines: clusters whose pre-start check could not run (bounded like the problems). */
export function uncheckedLines(v: ClusterValidity): string[] {
  const lines = [...v.unchecked].slice(0, MAX_NAMED_CLUSTERS).map(([n, why]) => boundMessage(`Cluster ${n}: ${why}`, REASON_BYTES));
  if (v.unchecked.size > lines.length) lines.push(`... and ${v.unchecked.size - lines.length} more clusters not checked yet`);
  return lines;
}

/**
 * Before the campaign started anything, any cluster problem is Valid=False (nothing starts): added to `problems`. Once
 * it started, a cluster found invalid (joined later with a bad shape, its control plane moved on) is skipped with the
 * reason and does not hold the others; it is pending again as soon as it is fixed: its row changes.
 */
export function applyClusterValidity(started: boolean, v: ClusterValidity, problems: string[], rows: ClusterRow[]): void {
  // A check that could not run is no verdict: the cluster waits for it (before the start, so does the campaign: stance.ts).
  for (const r of rows) {
    const why = v.unchecked.get(r.name);
    if (why === undefined || r.state !== 'pending') continue;
    r.state = 'waiting';
    r.reason = `not validated yet: ${why}`;
  }
  if (!started) {
    problems.push(...v.byCluster);
    if (v.invalidClusters.size > v.byCluster.length)
      problems.push(`... and ${v.invalidClusters.size - v.byCluster.length} more clusters with problems`);
    return;
  }
  for (const r of rows) {
    const why = v.invalidClusters.get(r.name);
    if (why === undefined || (r.state !== 'pending' && r.state !== 'waiting')) continue;
    r.state = 'skipped';
    r.invalid = true;
    r.reason = `invalid for this cluster, not started: ${why}`;
  }
}
