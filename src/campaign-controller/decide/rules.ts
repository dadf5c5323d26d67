// The campaign's rules shared by its phases and the preview: int-or-percent, rollout order, the plan a cluster gets and
// its validation, a plan's state, the gates' and the template's problems, the finished records (decide.ts re-exports
// what other modules import).
import type { InPlaceUpdateCampaign, InPlaceUpdatePlan, PlanTarget } from '../../api/index.js';
import { DEFAULT_WRITE_POLICY, PlanSpecSchema, UpdateStatus, formatIssues, writeRefusal } from '../../api/index.js';
import type { KubeObject } from '../../api/index.js';
import { Labels } from '../../api/index.js';
import { cpVersion, mdVersion } from '../../api/capi/index.js';
import type { LabelSelector } from '../../runtime/pure/labels.js';
import { formatLabelSelector, matchesSelector } from '../../runtime/pure/labels.js';
import type { TemplateLookup } from '../../rules/inputs.js';
import { templateRefsOf } from '../../rules/inputs.js';
import { validatePlan } from '../../rules/validate.js';
import { alertGate, windowGate } from '../../rules/gates.js';
import { alertGateRefusals, type AlertGatePolicy } from '../../api/alert-gate-policy.js';
import type { ClusterObjects, ClusterRow, ClusterState, ClusterView, PlanView } from './types.js';

/** Clusters named in a status list or a Valid=False message (beyond: "... and N more"). */
export const MAX_NAMED_CLUSTERS = 20;
/** Problems named per cluster in the Valid=False message. */
export const MAX_PROBLEMS_PER_CLUSTER = 3;
/** Length of one reported reason. */
export const REASON_BYTES = 512;

/** Resolves an int-or-percentage against `total`; `round` decides how a percentage rounds. */
export function resolveIntOrPercent(v: number | string | undefined, total: number, dflt: number, round: 'up' | 'down'): number {
  if (v === undefined) return dflt;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) return dflt;
  const x = (Number(m[1]) * total) / 100;
  return round === 'up' ? Math.ceil(x) : Math.floor(x);
}

/**
 * Problems with an int-or-percentage the API's bounds may not have caught (older objects, a CRD installed before the
 * bounds): a count or a percentage below `min`, a percentage over 100 %, a string that is neither. The same bounds as
 * the CRD's `minimum` and `pattern` beside the int-or-string's anyOf.
 */
export function percentProblem(field: string, v: number | string | undefined, min = 0): string[] {
  if (v === undefined) return [];
  if (typeof v === 'number') return Number.isInteger(v) && v >= min ? [] : [`${field} ${v} is below ${min}`];
  const m = /^(\d+)%$/.exec(v);
  if (!m) return [`${field} ${JSON.stringify(v)} is neither a count nor a percentage`];
  const n = Number(m[1]);
  return n > 100 ? [`${field} ${v} is over 100%`] : n < min ? [`${field} ${v} is below ${min}%`] : [];
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

/** A label selector as text, empty without one. */
export const selectorString = (s: LabelSelector | undefined): string => (s ? formatLabelSelector(s) : '');

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
 * declared versions, owner fields), and — when the reader ran them (`objects.templates`, `objects.prestart`) — the
 * updater template objects and the plan's pre-start check (uncovered drift, the commit dry-run) on one machine per
 * target (campaign-controller/prestart.ts).
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
  const memoKey = key !== undefined ? `${campaignVersion}|${planName}|${key}|${c.objects.checkKey ?? ''}` : undefined;
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

/** The resourceVersions of a cluster's objects (Cluster, control plane, MachineDeployments); undefined when one is unknown. */
export function objectsVersion(o: ClusterObjects): string | undefined {
  const rvs = [o.cluster, ...(o.controlPlane?.object ? [o.controlPlane.object] : []), ...o.machineDeployments].map(
    (x) => x.metadata.resourceVersion,
  );
  if (rvs.some((rv) => rv === undefined) || o.controlPlane?.error) return undefined;
  return `${rvs.join(',')}|${o.controlPlane && !o.controlPlane.object ? 'no-cp' : ''}`;
}

function validateClusterPlan(namespace: string, planName: string, spec: InPlaceUpdatePlan['spec'], objects: ClusterObjects): string[] {
  const plan: InPlaceUpdatePlan = { metadata: { name: planName, namespace }, spec } as InPlaceUpdatePlan;
  const templates: TemplateLookup[] = objects.templates ?? templateRefsOf(plan).map((ref) => ({ ref, found: false, unchecked: true }));
  return validatePlan({
    plan,
    cluster: objects.cluster,
    ...(objects.controlPlane ? { controlPlane: objects.controlPlane } : {}),
    machineDeployments: objects.machineDeployments,
    templates,
    machines: ownerVersionMachines(spec.clusterName, objects),
    ...(objects.prestart ? { prestart: objects.prestart } : {}),
  });
}

/** The state of a cluster that has a campaign plan. */
export function planState(p: PlanView): { state: ClusterState; reason?: string } {
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

// windowGate and alertGate read a plan's spec fields only: the campaign's fields, shaped as a plan's, get the same
// checks and the same window arithmetic (src/api/windows.ts underneath).
/** The campaign's windows and alert gate shaped as a plan's, for windowGate and alertGate. */
export const asPlanGates = (
  maintenanceWindows: InPlaceUpdateCampaign['spec']['maintenanceWindows'],
  alerts?: InPlaceUpdateCampaign['spec']['alertGate'],
): InPlaceUpdatePlan =>
  ({
    spec: { clusterName: '', ...(maintenanceWindows ? { maintenanceWindows } : {}), ...(alerts ? { alertGate: alerts } : {}) },
  }) as InPlaceUpdatePlan;

/**
 * Problems of the campaign's and the template's windows and alert gates, with the campaign's paths. A gate the
 * operator's alert-gate policy does not allow is refused here, before any plan carries it (the same rule the plan
 * controller applies, src/api/alert-gate-policy.ts).
 */
export function gateProblems(
  spec: InPlaceUpdateCampaign['spec'],
  now: Date,
  policy: AlertGatePolicy | undefined,
  namespace: string,
): string[] {
  const at = (path: string) => (p: string) => p.replace(/^spec\./, path);
  // The syntax (matchers, holdTimeout) as a plan's; the policy's refusals (the plan's check gives the same text) once.
  const syntax = (g: InPlaceUpdateCampaign['spec']['alertGate']): string[] =>
    alertGate(asPlanGates(undefined, g), undefined, now, policy).problems;
  const policyRefusals = (g: InPlaceUpdateCampaign['spec']['alertGate'], path: string): string[] =>
    g ? alertGateRefusals(policy, g, namespace, path) : [];
  return [
    ...windowGate(asPlanGates(spec.maintenanceWindows), now).problems,
    ...windowGate(asPlanGates(spec.template.maintenanceWindows), now).problems.map(at('spec.template.')),
    ...new Set([...syntax(spec.alertGate), ...policyRefusals(spec.alertGate, 'spec.alertGate')]),
    ...new Set([
      ...syntax(spec.template.alertGate).map(at('spec.template.')),
      ...policyRefusals(spec.template.alertGate, 'spec.template.alertGate'),
    ]),
  ];
}

/** "wave N" or "canary wave". */
export const waveLabel = (w: number): string => (w === 0 ? 'canary wave' : `wave ${w}`);

/** Names, at most MAX_NAMED_CLUSTERS, then "and N more". */
export function namesList(names: readonly string[]): string {
  const shown = names.slice(0, MAX_NAMED_CLUSTERS).join(', ');
  return names.length > MAX_NAMED_CLUSTERS ? `${shown} and ${names.length - MAX_NAMED_CLUSTERS} more` : shown;
}

/** The Completed message: how many clusters ended how. */
export function completedMessage(rows: readonly ClusterRow[]): string {
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
