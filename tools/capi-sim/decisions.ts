// What CAPI's controllers would do, decided purely from objects (no client): the simulator acts on these.
import { Annotations, Labels, type Condition, type KubeObject } from '../../src/api/index.js';
import { formatLabelSelector, matchesSelector, type LabelSelector } from '../../src/runtime/pure/labels.js';
import type { Machine, MachineHealthCheck, NodeSystemInfo } from '../../src/api/capi/index.js';

/** CAPI: a machine carrying it is deleted first when its MachineSet scales down. */
export const DELETE_MACHINE_ANNOTATION = 'cluster.x-k8s.io/delete-machine';

const isReady = (m: Machine): boolean => (m.status?.conditions ?? []).some((c: Condition) => c.type === 'Ready' && c.status === 'True');
const isDeleting = (o: KubeObject): boolean => o.metadata.deletionTimestamp !== undefined;
const created = (o: KubeObject): string => o.metadata.creationTimestamp ?? '';

/** Order in which surplus machines are deleted (MachineSet spec.deletion.order; the simulator's default is Newest). */
export type DeletionOrder = 'Random' | 'Newest' | 'Oldest';

/** How to bring an owner's machines to its desired replica count. */
export interface ScaleDecision {
  /** Number of machines to create. */
  create: number;
  /** Names of the machines to delete, in deletion order. */
  delete: string[];
}

/**
 * Scales like a MachineSet / KubeadmControlPlane: create the shortage, or delete the surplus — machines marked
 * with delete-machine first, then not-Ready ones, then by `order` (Newest, the default, and Random delete the newest
 * first so the result is deterministic; `createdAtMs` refines creationTimestamp's second precision).
 * Machines already being deleted count for neither side.
 */
export function decideScale(
  desired: number,
  machines: readonly Machine[],
  order: DeletionOrder = 'Newest',
  createdAtMs: (m: Machine) => number = (m) => Date.parse(created(m)) || 0,
): ScaleDecision {
  const active = machines.filter((m) => !isDeleting(m));
  if (active.length < desired) return { create: desired - active.length, delete: [] };
  if (active.length === desired) return { create: 0, delete: [] };
  const rank = (m: Machine): number => (m.metadata.annotations?.[DELETE_MACHINE_ANNOTATION] !== undefined ? 0 : !isReady(m) ? 1 : 2);
  const byAge = (a: Machine, b: Machine): number => {
    const c = createdAtMs(a) - createdAtMs(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
    return order === 'Oldest' ? c : -c;
  };
  const sorted = [...active].sort((a, b) => rank(a) - rank(b) || byAge(a, b));
  return { create: 0, delete: sorted.slice(0, active.length - desired).map((m) => m.metadata.name ?? '') };
}

/** Replica counters of an owner's machines (v1beta2: replicas, readyReplicas, availableReplicas, upToDateReplicas). */
export interface ReplicaCounts {
  replicas: number;
  readyReplicas: number;
  availableReplicas: number;
  upToDateReplicas: number;
}

/** Counts an owner's machines; up-to-date means the machine runs the owner's desired version. */
export function countReplicas(machines: readonly Machine[], desiredVersion: string | undefined): ReplicaCounts {
  const live = machines.filter((m) => !isDeleting(m));
  const cond = (m: Machine, t: string): boolean => (m.status?.conditions ?? []).some((c) => c.type === t && c.status === 'True');
  return {
    replicas: live.length,
    readyReplicas: live.filter((m) => cond(m, 'Ready')).length,
    availableReplicas: live.filter((m) => cond(m, 'Available')).length,
    upToDateReplicas: live.filter((m) => desiredVersion === undefined || m.spec.version === desiredVersion).length,
  };
}

/** What happens next to a machine that is not running yet. */
export type ProvisionDecision = { kind: 'none' } | { kind: 'wait'; afterMs: number } | { kind: 'makeReady' };

/** A machine becomes Running `readyDelayMs` after it was created; a Running machine with a node needs nothing. */
export function decideProvisioning(m: Machine, createdAtMs: number, nowMs: number, readyDelayMs: number): ProvisionDecision {
  if (isDeleting(m)) return { kind: 'none' };
  if (m.status?.phase === 'Running' && m.status.nodeRef?.name) return { kind: 'none' };
  const due = createdAtMs + readyDelayMs;
  return nowMs >= due ? { kind: 'makeReady' } : { kind: 'wait', afterMs: due - nowMs };
}

/** Which owner a machine belongs to, from its CAPI labels. */
export type MachineOwner =
  { kind: 'MachineSet'; name: string; deployment?: string } | { kind: 'KubeadmControlPlane'; name: string } | undefined;

/** The owner of a machine: control-plane-name, else set-name (CAPI's labels; the owner reference agrees). */
export function ownerOf(m: KubeObject): MachineOwner {
  const l = m.metadata.labels ?? {};
  const cp = l[Labels.controlPlaneName];
  if (cp) return { kind: 'KubeadmControlPlane', name: cp };
  const ms = l[Labels.setName];
  if (ms)
    return l[Labels.deploymentName]
      ? { kind: 'MachineSet', name: ms, deployment: l[Labels.deploymentName] }
      : { kind: 'MachineSet', name: ms };
  return undefined;
}

/** The fields CAPI requires in Machine.status.nodeInfo (metav1 NodeSystemInfo). */
const NODE_INFO_FIELDS = [
  'architecture',
  'bootID',
  'containerRuntimeVersion',
  'kernelVersion',
  'kubeProxyVersion',
  'kubeletVersion',
  'machineID',
  'operatingSystem',
  'osImage',
  'systemUUID',
] as const;

/**
 * What CAPI's machine controller mirrors into Machine.status.nodeInfo: the Node's reported system info (the kubelet
 * is the source of truth: an updater that upgrades it changes the Node, never the Machine). Undefined when the
 * Machine already shows it, or when the Node reports an incomplete info the Machine schema would reject.
 */
export function mirroredNodeInfo(
  fromNode: Partial<NodeSystemInfo> | undefined,
  onMachine: NodeSystemInfo | undefined,
): NodeSystemInfo | undefined {
  if (!fromNode) return undefined;
  const next = { ...(onMachine ?? {}), ...fromNode } as Partial<NodeSystemInfo>;
  if (NODE_INFO_FIELDS.some((k) => typeof next[k] !== 'string')) return undefined;
  const picked = Object.fromEntries(NODE_INFO_FIELDS.map((k) => [k, next[k]])) as unknown as NodeSystemInfo;
  return onMachine && NODE_INFO_FIELDS.every((k) => onMachine[k] === picked[k]) ? undefined : picked;
}

/** A name for a new machine of `owner` that is not in `taken` (suffixes drawn from `suffix`, retried on collision). */
export function newMachineName(owner: string, taken: ReadonlySet<string>, suffix: () => string): string {
  for (let i = 0; i < 100; i++) {
    const name = `${owner}-${suffix()}`;
    if (!taken.has(name)) return name;
  }
  throw new Error(`capi-sim: no free machine name for ${owner}`);
}

/** The machines an MHC targets: same namespace and cluster, labels matching its selector, not being deleted. */
export function mhcTargets(mhc: MachineHealthCheck, machines: readonly Machine[]): Machine[] {
  const selector = formatLabelSelector(mhc.spec.selector as LabelSelector);
  return machines.filter(
    (m) =>
      m.metadata.namespace === mhc.metadata.namespace &&
      !isDeleting(m) &&
      m.spec.clusterName === mhc.spec.clusterName &&
      matchesSelector(selector, m.metadata.labels),
  );
}

/** A target counts as healthy unless marked for remediation or judged unhealthy (HealthCheckSucceeded False). */
export const isHealthyTarget = (m: Machine): boolean =>
  m.metadata.annotations?.[Annotations.remediateMachine] === undefined &&
  !(m.status?.conditions ?? []).some((c) => c.type === 'HealthCheckSucceeded' && c.status === 'False');

/** CAPI's maxUnhealthy: int, or percent of the expected machines rounded down; absent = 100%. */
export function maxUnhealthy(v: number | string | undefined, expected: number): number {
  if (v === undefined) return expected;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  return m ? Math.floor((Number(m[1]) * expected) / 100) : 0;
}

/** What CAPI's MHC status says about an MHC's targets. */
export interface MhcCounts {
  expectedMachines: number;
  currentHealthy: number;
  remediationsAllowed: number;
  /** CAPI remediates only while the unhealthy count is within triggerIf. */
  remediationAllowed: boolean;
}

/** CAPI's isAllowedRemediation: unhealthyInRange [a-b] takes precedence, else unhealthy ≤ unhealthyLessThanOrEqualTo. */
export function mhcCounts(mhc: MachineHealthCheck, targets: readonly Machine[]): MhcCounts {
  const expected = targets.length;
  const healthy = targets.filter(isHealthyTarget).length;
  const unhealthy = expected - healthy;
  const range = /^\[(\d+)-(\d+)\]$/.exec(mhc.spec.remediation?.triggerIf?.unhealthyInRange ?? '');
  if (range) {
    const [min, max] = [Number(range[1]), Number(range[2])];
    return {
      expectedMachines: expected,
      currentHealthy: healthy,
      remediationsAllowed: Math.max(0, max - unhealthy),
      remediationAllowed: unhealthy >= min && unhealthy <= max,
    };
  }
  const max = maxUnhealthy(mhc.spec.remediation?.triggerIf?.unhealthyLessThanOrEqualTo, expected);
  return {
    expectedMachines: expected,
    currentHealthy: healthy,
    remediationsAllowed: Math.max(0, max - unhealthy),
    remediationAllowed: unhealthy <= max,
  };
}

/**
 * Whether CAPI would remediate a machine marked remediate-machine: an MHC must target it (CAPI's MHC controller is
 * what honours the annotation) and that MHC's unhealthy count must be within its triggerIf.
 */
export function remediationVerdict(
  machine: Machine,
  mhcs: readonly MachineHealthCheck[],
  machines: readonly Machine[],
): { remediate: boolean; why: string } {
  const owners = mhcs.filter((h) => mhcTargets(h, [machine]).length > 0);
  if (owners.length === 0) return { remediate: false, why: 'no MachineHealthCheck targets the machine' };
  for (const h of owners) {
    if (mhcCounts(h, mhcTargets(h, machines)).remediationAllowed)
      return { remediate: true, why: `MachineHealthCheck ${h.metadata.name} allows remediation` };
  }
  return { remediate: false, why: `too many unhealthy machines for MachineHealthCheck ${owners.map((h) => h.metadata.name).join(', ')}` };
}
