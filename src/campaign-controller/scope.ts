// The campaign's snapshot: from the informer stores (Clusters, MachineDeployments, plans, campaigns) build what
// decide.ts reads. Reads Clusters and plans' status only: never a Machine (the plans hold per-machine state).
import type { InPlaceUpdateCampaign, InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { API_VERSION, CampaignLabels, PlanAnnotations, UpdatePhase, UpdateStatus, isTerminal } from '../api/index.js';
import { clusterControlPlaneRef, mdClusterName, mdStrategyType } from '../api/capi/index.js';
import type { LabelRequirement, LabelSelector } from '../runtime/pure/labels.js';
import { formatLabelSelector, matchesRequirements, parseSelector } from '../runtime/pure/labels.js';
import type { KindRead } from '../rules/inputs.js';
import type { CampaignSnapshot, ClusterObjects, ClusterView, PlanView } from './decide.js';
import { buildPlanSpec, campaignPlanName, clusterPlanProblems } from './decide.js';
import type { ClusterCheck, ClusterToCheck, TemplateLookups } from './prestart.js';

/** A campaign object as the informer holds it. */
export type CampaignObject = InPlaceUpdateCampaign & KubeObject;
/** A plan object as the informer holds it. */
export type PlanObject = InPlaceUpdatePlan & KubeObject;

/** What buildCampaignScope reads (the controller's stores, or anything else with the same answers). */
export interface CampaignReader {
  now(): string;
  clusters(ns: string): KubeObject[];
  machineDeployments(ns: string): KubeObject[];
  plans(ns: string): PlanObject[];
  campaigns(ns: string): CampaignObject[];
  /** Problems with the updater template kinds the template names (e.g. a kind no API serves). */
  templateProblems(c: CampaignObject): Promise<string[]>;
  /** The control plane a Cluster's controlPlaneRef names (the controller: its KubeadmControlPlane cache). */
  controlPlane(ns: string, apiGroup: string, kind: string, name: string): Promise<KindRead>;
  /**
   * The updater template objects and the plan's pre-start check (uncovered drift, commit dry-run) of each cluster not
   * started yet (campaign-controller/prestart.ts); absent: those checks are left to each plan.
   */
  clusterChecks?(c: CampaignObject, clusters: ClusterToCheck[]): Promise<{ templates: TemplateLookups; checks: Map<string, ClusterCheck> }>;
}

/** True when `c` selects the Cluster `cluster` (labels and explicit names both, when both are given). */
export function selects(c: InPlaceUpdateCampaign, cluster: KubeObject): boolean {
  return selectorOf(c)(cluster);
}

/** `selects` for one campaign over many Clusters: its selector is parsed and its names indexed once. */
function selectorOf(c: InPlaceUpdateCampaign): (cluster: KubeObject) => boolean {
  const names = c.spec.clusterNames;
  const named = names && names.length > 0 ? new Set(names) : undefined;
  const sel = c.spec.clusterSelector as LabelSelector | undefined;
  // Parsed at the first Cluster that needs it: a bad selector throws where it did when parsed per Cluster.
  let reqs: LabelRequirement[] | undefined;
  return (cluster) => {
    if (cluster.metadata.deletionTimestamp) return false;
    if (named && !named.has(cluster.metadata.name ?? '')) return false;
    if (sel) return matchesRequirements((reqs ??= parseSelector(formatLabelSelector(sel))), cluster.metadata.labels ?? {});
    return !!named;
  };
}

/** The campaign that controls a plan (controller ownerReference), if any. */
export function campaignOf(p: KubeObject): string | undefined {
  return p.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'InPlaceUpdateCampaign' && r.apiVersion === API_VERSION)?.name;
}

/** True when a campaign is finished for its generation and holds no cluster any more. */
export function campaignFinished(c: InPlaceUpdateCampaign & KubeObject): boolean {
  const s = c.status?.updateStatus;
  return !!c.metadata.deletionTimestamp || s === UpdateStatus.updated || s === UpdateStatus.aborted;
}

/** True when a plan will do nothing more: terminal, or Failed=True reason Invalid (final for its generation). */
export function planFinal(p: InPlaceUpdatePlan): boolean {
  return isTerminal(p.status?.updateStatus) || invalidFinal(p);
}

const invalidFinal = (p: InPlaceUpdatePlan): boolean =>
  p.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True' && c.reason === 'Invalid') ?? false;

// A cache's objects are deep-frozen and replaced on every change: a plan's view is derived once per version of it,
// not once per plan on every reconcile (each plan's progress is one, over a thousand plans).
const planViews = new WeakMap<PlanObject, PlanView>();

/** The campaign's view of one of its plans (status only). */
export function planView(p: PlanObject): PlanView {
  if (!Object.isFrozen(p)) return derivePlanView(p);
  let v = planViews.get(p);
  if (!v) planViews.set(p, (v = Object.freeze(derivePlanView(p))));
  return v;
}

function derivePlanView(p: PlanObject): PlanView {
  const st = p.status ?? {};
  const cond = (t: string) => st.conditions?.find((c) => c.type === t);
  const failedCond = cond('Failed');
  const invalid = invalidFinal(p);
  const failure = invalid
    ? `the plan is invalid: ${failedCond?.message ?? cond('Valid')?.message ?? ''}`
    : st.updateStatus === UpdateStatus.failed
      ? (failedCond?.status === 'True' ? failedCond.message : undefined) ||
        st.targets?.find((t) => t.updateStatus === UpdateStatus.failed)?.message ||
        cond('Ready')?.message ||
        'the plan failed'
      : undefined;
  const sum = (k: 'updating' | 'failed'): number => (st.targets ?? []).reduce((a, t) => a + (t[k] ?? 0), 0);
  const wave = Number(p.metadata.labels?.[CampaignLabels.wave]);
  const supersededBy = p.metadata.annotations?.[PlanAnnotations.supersededBy];
  return {
    name: p.metadata.name ?? '',
    clusterName: p.spec.clusterName,
    wave: Number.isInteger(wave) && wave >= 0 ? wave : 0,
    ...(st.updateStatus ? { updateStatus: st.updateStatus } : {}),
    ...(failure ? { failure: failure.slice(0, 900) } : {}),
    ...(invalid ? { invalid } : {}),
    paused: !!p.spec.paused,
    pausedByCampaign: p.metadata.annotations?.[CampaignLabels.pausedByCampaign] !== undefined,
    aborting: p.spec.updatePhase === UpdatePhase.aborting,
    ...(supersededBy ? { supersededBy } : {}),
    ...(st.completionTime ? { completionTime: st.completionTime } : {}),
    machines: st.machines ?? 0,
    updated: st.updatedMachines ?? 0,
    skipped: st.skippedMachines ?? 0,
    updating: sum('updating'),
    failed: sum('failed'),
  };
}

const olderThan = (a: KubeObject, b: KubeObject): boolean => {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  return ta !== tb ? ta < tb : (a.metadata.name ?? '') < (b.metadata.name ?? '');
};

/** Builds the snapshot decideCampaign reads. */
export async function buildCampaignScope(c: CampaignObject, r: CampaignReader): Promise<CampaignSnapshot> {
  const ns = c.metadata.namespace ?? '';
  const name = c.metadata.name ?? '';
  const clusters = r.clusters(ns);
  const selectedObjs = clusters.filter(selectorOf(c));
  const mdsByCluster = new Map<string, KubeObject[]>();
  for (const md of r.machineDeployments(ns)) {
    const cn = mdClusterName(md);
    if (!cn) continue;
    const list = mdsByCluster.get(cn);
    if (list) list.push(md);
    else mdsByCluster.set(cn, [md]);
  }
  const plans = r.plans(ns);
  const own = plans.filter((p) => campaignOf(p) === name && p.metadata.ownerReferences?.some((o) => o.uid === c.metadata.uid));
  const ownSet = new Set(own);
  const started = new Set(own.map((p) => p.spec.clusterName));
  const selected: ClusterView[] = [];
  for (const cl of selectedObjs) {
    const ref = clusterControlPlaneRef(cl);
    const mds = (mdsByCluster.get(cl.metadata.name ?? '') ?? []).filter((md) => !md.metadata.deletionTimestamp);
    const view: ClusterView = {
      name: cl.metadata.name ?? '',
      labels: { ...(cl.metadata.labels ?? {}) },
      annotations: { ...(cl.metadata.annotations ?? {}) },
      ...(ref?.name ? { controlPlaneName: ref.name } : {}),
      machineDeployments: mds.map((md) => {
        const strategy = mdStrategyType(md);
        return { name: md.metadata.name ?? '', labels: { ...(md.metadata.labels ?? {}) }, ...(strategy ? { strategy } : {}) };
      }),
    };
    // A started cluster was validated when its plan was made (the plan validates itself since): no lookups for it.
    if (!started.has(view.name)) {
      const objects: ClusterObjects = { cluster: cl, machineDeployments: mds };
      if (c.spec.template.controlPlane && ref?.name) {
        const lookup: NonNullable<ClusterObjects['controlPlane']> = { kind: { apiGroup: ref.apiGroup, kind: ref.kind } };
        const got = await r.controlPlane(ns, ref.apiGroup, ref.kind, ref.name);
        if ('notServed' in got) lookup.error = `kind ${ref.kind} is not served (${got.notServed})`;
        else if ('unreadable' in got) lookup.error = got.unreadable;
        else if (got.object) lookup.object = got.object;
        objects.controlPlane = lookup;
      }
      view.objects = objects;
    }
    selected.push(view);
  }
  if (r.clusterChecks) await attachChecks(c, r, selected);
  const selectedNames = new Set(selected.map((s) => s.name));
  const foreignPlans = new Map<string, string>();
  for (const p of plans) {
    if (ownSet.has(p) || planFinal(p) || !selectedNames.has(p.spec?.clusterName)) continue;
    foreignPlans.set(p.spec.clusterName, p.metadata.name ?? '');
  }
  const overlappingCampaigns: CampaignSnapshot['overlappingCampaigns'] = [];
  for (const other of r.campaigns(ns)) {
    if (other.metadata.name === name || !olderThan(other, c) || campaignFinished(other)) continue;
    const shared = selectedObjs.filter(selectorOf(other)).map((cl) => cl.metadata.name ?? '');
    if (shared.length > 0) overlappingCampaigns.push({ name: other.metadata.name ?? '', clusters: shared });
  }
  return {
    campaign: c as CampaignSnapshot['campaign'],
    now: r.now(),
    selected,
    existing: new Set(clusters.filter((cl) => !cl.metadata.deletionTimestamp).map((cl) => cl.metadata.name ?? '')),
    plans: own.map(planView),
    foreignPlans,
    overlappingCampaigns,
    templateProblems: await r.templateProblems(c),
  };
}

/**
 * The checks that need reads, for the clusters not started yet whose plan passes the checks that do not (a cluster
 * invalid already costs no request): the template lookups go to every such cluster, the pre-start result or the
 * reason it could not run to each checked one.
 */
async function attachChecks(c: CampaignObject, r: CampaignReader, selected: ClusterView[]): Promise<void> {
  const ns = c.metadata.namespace ?? '';
  const name = c.metadata.name ?? '';
  const meta = c.metadata as { uid?: string; generation?: number };
  const campaignVersion = meta.uid !== undefined && meta.generation !== undefined ? `${meta.uid}/${meta.generation}` : undefined;
  const pending = selected.filter((v) => v.objects);
  if (pending.length === 0) return;
  const toCheck: ClusterToCheck[] = [];
  for (const v of pending) {
    const b = buildPlanSpec(c.spec.template, v, c.spec);
    if (b.problems.length > 0 || (!b.spec.controlPlane && !b.spec.machineDeployments)) continue;
    const planName = campaignPlanName(name, v.name);
    if (clusterPlanProblems(ns, planName, b.spec, v, campaignVersion).length > 0) continue;
    toCheck.push({
      name: v.name,
      plan: { metadata: { name: planName, namespace: ns }, spec: b.spec } as InPlaceUpdatePlan,
      objects: v.objects!,
    });
  }
  const { templates, checks } = await r.clusterChecks!(c, toCheck);
  const byName = new Map(selected.map((s) => [s.name, s]));
  for (const v of toCheck.map((x) => byName.get(x.name)!)) {
    const objects = v.objects!;
    objects.templates = templates.lookups;
    const got = checks.get(v.name);
    if (got && 'error' in got) v.checkError = got.error;
    else if (got) objects.prestart = got.result;
    objects.checkKey = `${templates.version}|${got && 'key' in got ? got.key : ''}`;
  }
}
