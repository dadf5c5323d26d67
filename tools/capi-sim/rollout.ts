// Cluster API's rollout triggers, decided purely from objects (no client): when KubeadmControlPlane and
// MachineDeployment replace machines, what a MachineSet clones for a new machine, what the topology controller writes,
// and when an owner is paused. Each function names the upstream code whose behaviour it models.
import { Annotations, Labels } from '../../src/api/index.js';
import type { KubeObject } from '../../src/api/index.js';
import type {
  KubeadmControlPlane,
  Machine,
  MachineDeployment,
  MachineSet,
  MachineTemplateSpec,
  ObjectRef,
} from '../../src/api/capi/index.js';
import { scaleIntOrPercent } from '../../src/api/capi/index.js';

/** CAPI: on an object cloned from a template, the template's name (api/core/v1beta2 TemplateClonedFromNameAnnotation). */
export const CLONED_FROM_NAME_ANNOTATION = 'cluster.x-k8s.io/cloned-from-name';
/** CAPI: on an object cloned from a template, the template's group kind, `Kind.group` (TemplateClonedFromGroupKindAnnotation). */
export const CLONED_FROM_GROUPKIND_ANNOTATION = 'cluster.x-k8s.io/cloned-from-groupkind';
/** CAPI v1.12: an owner is updating this machine in place; owners hold their rollouts while any machine carries it. */
export const UPDATE_IN_PROGRESS_ANNOTATION = 'in-place-updates.internal.cluster.x-k8s.io/update-in-progress';

/** The slice of a Cluster the rollout decisions read (v1beta2: spec.paused is a bool, spec.topology the managed topology). */
export interface ClusterView extends KubeObject {
  spec?: {
    paused?: boolean;
    controlPlaneRef?: ObjectRef;
    topology?: { version?: string; workers?: { machineDeployments?: { name: string; class?: string }[] } };
  };
}

const isDeleting = (o: KubeObject): boolean => o.metadata.deletionTimestamp !== undefined;
const hasCondition = (m: Machine, type: string): boolean =>
  (m.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');

/** util/annotations IsPaused: the object carries cluster.x-k8s.io/paused, or its Cluster has spec.paused. */
export function isPaused(obj: KubeObject, cluster: ClusterView | undefined): boolean {
  return obj.metadata.annotations?.[Annotations.paused] !== undefined || cluster?.spec?.paused === true;
}

/** GroupKind().String() of a reference: `Kind.group`. */
export const groupKindOf = (ref: ObjectRef): string => `${ref.kind}.${ref.apiGroup}`;

/** The annotations upstream's external.CreateFromTemplate puts on a clone of `template`. */
export const clonedFromAnnotations = (template: ObjectRef): Record<string, string> => ({
  [CLONED_FROM_NAME_ANNOTATION]: template.name,
  [CLONED_FROM_GROUPKIND_ANNOTATION]: groupKindOf(template),
});

// --- KubeadmControlPlane ----------------------------------------------------------------------------------------

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Drops empty arrays, empty objects and undefined values, recursively (upstream dropOmittableFields: nil == empty). */
function dropOmittable(v: unknown): unknown {
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.map(dropOmittable);
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    const y = dropOmittable(x);
    if (y !== undefined) out[k] = y;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

const child = (o: Json, k: string): Json => (isObject(o[k]) ? o[k] : (o[k] = {}));

/**
 * A KubeadmConfigSpec cleaned for comparison like upstream PrepareKubeadmConfigsForDiff: an init configuration is
 * read as the equivalent join configuration, and what never triggers a rollout is dropped (controlPlaneEndpoint,
 * DNS, join discovery, controlPlaneComponentHealthCheckSeconds, the default format, empty values).
 */
export function kubeadmConfigSpecForDiff(spec: Json | undefined): unknown {
  const s = structuredClone(spec ?? {});
  const init = isObject(s['initConfiguration']) ? s['initConfiguration'] : undefined;
  if (init && Object.keys(init).length > 0) {
    const join = child(s, 'joinConfiguration');
    for (const k of ['timeouts', 'patches', 'skipPhases', 'nodeRegistration']) if (init[k] !== undefined) join[k] = init[k];
    if (init['localAPIEndpoint'] !== undefined) child(join, 'controlPlane')['localAPIEndpoint'] = init['localAPIEndpoint'];
  }
  delete s['initConfiguration'];
  if (isObject(s['clusterConfiguration'])) {
    delete s['clusterConfiguration']['controlPlaneEndpoint'];
    delete s['clusterConfiguration']['dns'];
  }
  if (isObject(s['joinConfiguration'])) {
    const join = s['joinConfiguration'];
    delete join['discovery'];
    delete join['caCertPath'];
    if (isObject(join['timeouts'])) delete join['timeouts']['controlPlaneComponentHealthCheckSeconds'];
  }
  // ApplyPreviousKubeadmConfigDefaults: an unset format is cloud-config.
  if (s['format'] === 'cloud-config') delete s['format'];
  return dropOmittable(s) ?? {};
}

const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (isObject(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));

/** Upstream matchesKubeadmConfig: the machine's KubeadmConfig spec is equivalent to the KCP's kubeadmConfigSpec. */
export function kubeadmConfigMatches(current: Json | undefined, desired: Json | undefined): boolean {
  return canonical(kubeadmConfigSpecForDiff(current)) === canonical(kubeadmConfigSpecForDiff(desired));
}

/** What KubeadmControlPlane knows about one of its machines: the machine and, when found, its clones. */
export interface KcpMachineView {
  machine: Machine;
  /** The machine's InfraMachine (undefined: not found, which upstream never counts as a mismatch). */
  infraMachine?: KubeObject;
  /** The machine's KubeadmConfig spec (undefined: not found, never a mismatch). */
  kubeadmConfigSpec?: Json;
}

/** Whether a machine is up to date with its KubeadmControlPlane, and why not. */
export interface UpToDate {
  upToDate: boolean;
  reasons: string[];
}

/**
 * controlplane/kubeadm/pkg/filters.go UpToDate (matchesMachineSpec): the machine's spec.version equals KCP spec.version,
 * its KubeadmConfig matches kubeadmConfigSpec (matchesKubeadmConfig), and its InfraMachine was cloned from
 * machineTemplate.spec.infrastructureRef (matchesInfraMachine; an InfraMachine without the cloned-from annotations
 * matches). rollout.before / rollout.after are not modelled.
 */
export function kcpMachineUpToDate(kcp: KubeadmControlPlane, view: KcpMachineView): UpToDate {
  const reasons: string[] = [];
  const { machine } = view;
  if (machine.spec.version !== kcp.spec.version) reasons.push(`Version ${machine.spec.version ?? ''}, ${kcp.spec.version} required`);
  if (
    machine.spec.bootstrap.configRef &&
    view.kubeadmConfigSpec &&
    !kubeadmConfigMatches(view.kubeadmConfigSpec, kcp.spec.kubeadmConfigSpec)
  )
    reasons.push('KubeadmConfig is not up-to-date');
  const a = view.infraMachine?.metadata.annotations ?? {};
  const name = a[CLONED_FROM_NAME_ANNOTATION];
  const gk = a[CLONED_FROM_GROUPKIND_ANNOTATION];
  const ref = kcp.spec.machineTemplate.spec.infrastructureRef;
  if (name !== undefined && gk !== undefined && (name !== ref.name || gk !== groupKindOf(ref)))
    reasons.push(`${machine.spec.infrastructureRef.kind} is not up-to-date`);
  return { upToDate: reasons.length === 0, reasons };
}

/** A control-plane machine as the KCP rollout decision sees it. */
export interface KcpMember {
  name: string;
  upToDate: boolean;
  ready: boolean;
  deleting: boolean;
  /** Marked cluster.x-k8s.io/delete-machine. */
  deleteMarked: boolean;
  /** Carries the in-place update-in-progress annotation. */
  updatingInPlace: boolean;
  createdAtMs: number;
}

/** What KubeadmControlPlane does next: nothing, wait (preflight), create one machine, or delete one. */
export type KcpStep =
  { kind: 'none' } | { kind: 'wait'; why: string } | { kind: 'create' } | { kind: 'delete'; machine: string; why: string };

/** Int-or-percent of `total`, rounded up or down; `dflt` when unset or not a valid int-or-percent. */
export function scaledValue(v: number | string | undefined, total: number, roundUp: boolean, dflt: number): number {
  if (v === undefined) return dflt;
  const s = scaleIntOrPercent(v, total, roundUp);
  return s.ok ? s.value : dflt;
}

const oldestFirst = (a: KcpMember, b: KcpMember): number => a.createdAtMs - b.createdAtMs || a.name.localeCompare(b.name);

/** The machine KCP deletes first among `from`: marked with delete-machine first, then the oldest (selectMachineForScaleDown). */
export const pickKcpVictim = (from: readonly KcpMember[]): KcpMember | undefined =>
  [...from].sort((a, b) => Number(b.deleteMarked) - Number(a.deleteMarked) || oldestFirst(a, b))[0];

/**
 * One step of KubeadmControlPlane's reconcile (reconcilers/kubeadmcontrolplane: scale.go preflight, update.go
 * rollingUpdate): while any machine is out of date, scale up to replicas + maxSurge (maxSurge 0 or 1, default 1), then
 * delete the oldest out-of-date machine (delete-machine marked first); otherwise scale to spec.replicas one machine at
 * a time. Preflight: nothing happens while a machine is being deleted, is not Ready, or is being updated in place.
 */
export function decideKcpStep(kcp: KubeadmControlPlane, cluster: ClusterView | undefined, members: readonly KcpMember[]): KcpStep {
  if (isPaused(kcp, cluster)) return { kind: 'none' };
  if (kcp.metadata.deletionTimestamp) return { kind: 'none' };
  const live = members.filter((m) => !m.deleting);
  if (members.some((m) => m.deleting)) return { kind: 'wait', why: 'waiting for a machine being deleted' };
  if (live.some((m) => m.updatingInPlace)) return { kind: 'wait', why: 'a machine is being updated in place' };
  const desired = kcp.spec.replicas ?? 1;
  const outdated = live.filter((m) => !m.upToDate);
  const notReady = live.filter((m) => !m.ready).map((m) => m.name);
  const preflight = (step: KcpStep): KcpStep =>
    notReady.length > 0 ? { kind: 'wait', why: `machines not ready: ${notReady.join(', ')}` } : step;
  const pick = pickKcpVictim;
  if (outdated.length > 0) {
    const maxSurge = scaledValue(kcp.spec.rollout?.strategy?.rollingUpdate?.maxSurge, desired, true, 1);
    if (live.length < desired + maxSurge) return preflight({ kind: 'create' });
    const victim = pick(outdated);
    return victim ? preflight({ kind: 'delete', machine: victim.name, why: 'rollout: out of date' }) : { kind: 'none' };
  }
  if (live.length < desired) return preflight({ kind: 'create' });
  if (live.length > desired) {
    const victim = pick(live);
    return victim ? preflight({ kind: 'delete', machine: victim.name, why: 'scale down' }) : { kind: 'none' };
  }
  return { kind: 'none' };
}

// --- MachineDeployment ------------------------------------------------------------------------------------------

/**
 * mdutil MachineTemplateUpToDate (with MachineTemplateDeepCopyRolloutFields): version, bootstrap, infrastructureRef and
 * failureDomain decide; labels, annotations, clusterName, providerID and the in-place mutable fields do not.
 */
export function machineTemplateUpToDate(current: MachineTemplateSpec, desired: MachineTemplateSpec): UpToDate {
  const reasons: string[] = [];
  const c = current.spec;
  const d = desired.spec;
  if ((c.version ?? '') !== (d.version ?? '')) reasons.push(`Version ${c.version ?? ''}, ${d.version ?? ''} required`);
  if (canonical(c.bootstrap) !== canonical(d.bootstrap)) reasons.push('bootstrap is not up-to-date');
  if (canonical(c.infrastructureRef) !== canonical(d.infrastructureRef)) reasons.push('infrastructureRef is not up-to-date');
  if ((c.failureDomain ?? '') !== (d.failureDomain ?? ''))
    reasons.push(`Failure domain ${c.failureDomain ?? ''}, ${d.failureDomain ?? ''} required`);
  return { upToDate: reasons.length === 0, reasons };
}

/** mdutil FindNewAndOldMachineSets: the MachineSet whose template matches the deployment's (most replicas first, then name). */
export function findNewMachineSet(md: MachineDeployment, sets: readonly MachineSet[]): MachineSet | undefined {
  const sorted = [...sets].sort(
    (a, b) => (b.spec.replicas ?? 0) - (a.spec.replicas ?? 0) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
  );
  return sorted.find((s) => !isDeleting(s) && machineTemplateUpToDate(s.spec.template, md.spec.template).upToDate);
}

/** A MachineSet of a deployment with its machines' availability. */
export interface MdSetView {
  set: MachineSet;
  /** Live machines of the set. */
  machines: number;
  /** Live machines of the set that are Available. */
  available: number;
  createdAtMs: number;
  /** Live machines of the set in an in-place update (or moving to the new set); counted by non-disruptive updates. */
  updating?: number;
}

/** How the in-place updates of a rollout affect availability (Cluster API v1.15, capi#14160). */
export interface MdRolloutOptions {
  /**
   * The extension answered CanUpdateMachineSet with affectsAvailability false for every old set, and the simulated
   * Cluster API reads it (v1.15+): no surge machine is created for the update, and machines updating in place do not
   * count against maxUnavailable; they are paced instead (at most max(1, maxSurge + maxUnavailable) in update at once,
   * as upstream keeps them in the rollout's speed).
   */
  nonDisruptive?: boolean;
}

/** What a MachineDeployment reconcile does: maybe create the new MachineSet, set replicas, delete drained old sets. */
export interface MdDecision {
  /** Create a MachineSet with the deployment's template and this many replicas (no set matches the template). */
  create?: { replicas: number };
  /** New spec.replicas per existing MachineSet name (only those that change). */
  scale: Record<string, number>;
  /** Old MachineSets with no replicas and no machines left (upstream deletes them). */
  delete: string[];
}

/**
 * One MachineDeployment reconcile (internal/controllers/machinedeployment rolloutRolling / rolloutOnDelete): find the
 * MachineSet whose template matches, else create one; RollingUpdate: scale the new set up within replicas + maxSurge
 * (rounded up), scale old sets down (oldest first) keeping replicas − maxUnavailable (rounded down) machines
 * available, unavailable old machines going first; both 0 means maxUnavailable 1. OnDelete: old sets only lose the
 * machines someone deleted; the new set fills up to replicas. Paused: nothing.
 */
export function decideMdRollout(
  md: MachineDeployment,
  cluster: ClusterView | undefined,
  views: readonly MdSetView[],
  opts: MdRolloutOptions = {},
): MdDecision {
  const out: MdDecision = { scale: {}, delete: [] };
  if (isPaused(md, cluster) || md.metadata.deletionTimestamp) return out;
  const replicas = md.spec.replicas ?? 1;
  const live = views.filter((v) => !isDeleting(v.set));
  const newSet = findNewMachineSet(
    md,
    live.map((v) => v.set),
  );
  const olds = live
    .filter((v) => v.set !== newSet)
    .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.set.metadata.name ?? '').localeCompare(b.set.metadata.name ?? ''));
  const newView = live.find((v) => v.set === newSet);
  const rep = (s: MachineSet): number => s.spec.replicas ?? 0;
  const oldReplicas = new Map(olds.map((v) => [v.set.metadata.name ?? '', rep(v.set)]));
  const strategy = md.spec.rollout?.strategy;
  let newReplicas: number;
  if (strategy?.type === 'OnDelete') {
    for (const v of olds) oldReplicas.set(v.set.metadata.name ?? '', Math.min(rep(v.set), v.machines));
    const oldTotal = [...oldReplicas.values()].reduce((a, b) => a + b, 0);
    newReplicas = Math.max(0, replicas - oldTotal);
  } else {
    const maxSurge = scaledValue(strategy?.rollingUpdate?.maxSurge, replicas, true, 1);
    let maxUnavailable = scaledValue(strategy?.rollingUpdate?.maxUnavailable, replicas, false, 0);
    if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
    const current = newSet ? rep(newSet) : 0;
    const oldTotal = olds.reduce((a, v) => a + rep(v.set), 0);
    // mdutil NewMSNewReplicas: the machines there are count as max(spec.replicas, status.replicas) per set (the view's
    // machines stand for status.replicas), so an old set scaled to 0 whose machines are still there (being deleted, or
    // moved to the new set and not yet acknowledged) keeps the new set from growing past replicas + maxSurge.
    const total = live.reduce((a, v) => a + Math.max(rep(v.set), v.machines), 0);
    // Non-disruptive in place (v1.15): no surge machine, only machines the deployment is short of.
    const surge = opts.nonDisruptive ? 0 : maxSurge;
    if (olds.length === 0 || current >= replicas) newReplicas = replicas;
    else newReplicas = current + Math.max(0, Math.min(replicas + surge - total, replicas - current));
    // Old sets: unavailable machines may go within the budget, then available ones down to minAvailable.
    const minAvailable = replicas - maxUnavailable;
    const newUnavailable = newView ? Math.max(0, rep(newView.set) - newView.available) : 0;
    let cleanup = Math.max(0, current + oldTotal - minAvailable - newUnavailable);
    for (const v of olds) {
      const name = v.set.metadata.name ?? '';
      const unhealthy = Math.max(0, Math.min(rep(v.set), v.machines) - v.available);
      const down = Math.min(unhealthy, cleanup, oldReplicas.get(name) ?? 0);
      oldReplicas.set(name, (oldReplicas.get(name) ?? 0) - down);
      cleanup -= down;
    }
    const available = live.reduce((a, v) => a + v.available, 0);
    // An old set's machines above its replicas are about to move (the set has not started their move yet): a second
    // pass before it did must not spend the pace again, or two machines would be in update at once.
    const aboutToMove = olds.reduce((a, v) => a + Math.max(0, v.machines - rep(v.set) - (v.updating ?? 0)), 0);
    const updating = live.reduce((a, v) => a + (v.updating ?? 0), 0) + aboutToMove;
    let budget = opts.nonDisruptive
      ? Math.max(0, Math.max(1, maxSurge + maxUnavailable) - updating)
      : Math.max(0, available - minAvailable);
    for (const v of olds) {
      const name = v.set.metadata.name ?? '';
      const down = Math.min(budget, oldReplicas.get(name) ?? 0);
      oldReplicas.set(name, (oldReplicas.get(name) ?? 0) - down);
      budget -= down;
    }
  }
  if (newSet) {
    if (rep(newSet) !== newReplicas) out.scale[newSet.metadata.name ?? ''] = newReplicas;
  } else {
    out.create = { replicas: newReplicas };
  }
  for (const v of olds) {
    const name = v.set.metadata.name ?? '';
    const next = oldReplicas.get(name) ?? 0;
    if (next !== rep(v.set)) out.scale[name] = next;
    if (next === 0 && rep(v.set) === 0 && v.machines === 0) out.delete.push(name);
  }
  return out;
}

// --- MachineSet -------------------------------------------------------------------------------------------------

/** What a MachineSet creates for one new machine (internal/controllers/machineset computeDesiredMachine + clones). */
export interface MachineFromSet {
  version: string | undefined;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The InfraMachine is a clone of this template, annotated with clonedFromAnnotations(infraTemplate). */
  infraTemplate: ObjectRef;
  /** The bootstrap config is a clone of this template (when the template names one), annotated likewise. */
  bootstrapTemplate: ObjectRef | undefined;
  failureDomain: string | undefined;
}

/**
 * A machine a MachineSet creates comes from the set's own template only (never from its MachineDeployment): its
 * version, labels (plus set-name / deployment-name), annotations, and clones of the template's infrastructure and
 * bootstrap templates. Existing machines are never reverted to the template.
 */
export function machineFromSet(ms: MachineSet, setName: string, deployment: string | undefined): MachineFromSet {
  const tpl = ms.spec.template;
  return {
    version: tpl.spec.version,
    labels: {
      ...(tpl.metadata?.labels ?? {}),
      [Labels.clusterName]: ms.spec.clusterName,
      [Labels.setName]: setName,
      ...(deployment ? { [Labels.deploymentName]: deployment } : {}),
    },
    annotations: { ...(tpl.metadata?.annotations ?? {}) },
    infraTemplate: tpl.spec.infrastructureRef,
    bootstrapTemplate: tpl.spec.bootstrap.configRef,
    failureDomain: tpl.spec.failureDomain,
  };
}

// --- ClusterClass topology --------------------------------------------------------------------------------------

/** The spec changes the topology controller makes on a managed cluster's owners. */
export interface TopologyPatches {
  /** New KCP spec.version, when it differs. */
  controlPlaneVersion?: string;
  /** MachineDeployment name → new spec.template.spec.version. */
  machineDeploymentVersions: Record<string, string>;
}

/** Label the topology controller puts on the MachineDeployments it owns, naming the topology entry. */
export const TOPOLOGY_DEPLOYMENT_NAME_LABEL = 'topology.cluster.x-k8s.io/deployment-name';

/**
 * internal/controllers/topology/cluster (desired state): Cluster.spec.topology.version is written to the KCP's
 * spec.version, and to managed MachineDeployments' spec.template.spec.version only once the control plane runs it
 * (KCP status.version), so workers are never ahead of the control plane. A paused cluster (or topology-less) is left alone.
 */
export function decideTopology(
  cluster: ClusterView,
  kcp: KubeadmControlPlane | undefined,
  mds: readonly MachineDeployment[],
): TopologyPatches {
  const out: TopologyPatches = { machineDeploymentVersions: {} };
  const version = cluster.spec?.topology?.version;
  if (!version || isPaused(cluster, cluster)) return out;
  if (kcp && kcp.spec.version !== version) out.controlPlaneVersion = version;
  const cpDone = !kcp || (kcp.spec.version === version && kcp.status?.version === version);
  if (!cpDone) return out;
  for (const md of mds) {
    if (md.metadata.labels?.[TOPOLOGY_DEPLOYMENT_NAME_LABEL] === undefined) continue;
    if (md.spec.template.spec.version !== version) out.machineDeploymentVersions[md.metadata.name ?? ''] = version;
  }
  return out;
}

/** Whether a machine is Ready (v1beta2 condition). */
export const machineReady = (m: Machine): boolean => hasCondition(m, 'Ready');
/** Whether a machine is Available (v1beta2 condition). */
export const machineAvailable = (m: Machine): boolean => hasCondition(m, 'Available');
