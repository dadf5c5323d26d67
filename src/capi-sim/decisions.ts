// What CAPI's controllers would do, decided purely from objects (no client): the simulator acts on these.
import { Labels, type Condition, type KubeObject } from '../api/index.js';
import type { Machine, NodeSystemInfo } from './types.js';

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
export function decideScale(desired: number, machines: readonly Machine[], order: DeletionOrder = 'Newest', createdAtMs: (m: Machine) => number = (m) => Date.parse(created(m)) || 0): ScaleDecision {
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
export type MachineOwner = { kind: 'MachineSet'; name: string; deployment?: string } | { kind: 'KubeadmControlPlane'; name: string } | undefined;

/** The owner of a machine: control-plane-name, else set-name (CAPI's labels; the owner reference agrees). */
export function ownerOf(m: KubeObject): MachineOwner {
  const l = m.metadata.labels ?? {};
  const cp = l[Labels.controlPlaneName];
  if (cp) return { kind: 'KubeadmControlPlane', name: cp };
  const ms = l[Labels.setName];
  if (ms) return l[Labels.deploymentName] ? { kind: 'MachineSet', name: ms, deployment: l[Labels.deploymentName] } : { kind: 'MachineSet', name: ms };
  return undefined;
}

/**
 * The node info a machine's kubelet reports once its spec was changed in place (version committed by the
 * platform, OS image of its DevMachine): undefined when nothing changed.
 */
export function nodeInfoDrift(current: NodeSystemInfo | undefined, version: string | undefined, image: string | undefined): NodeSystemInfo | undefined {
  if (!current) return undefined;
  const next = { ...current };
  if (version && current.kubeletVersion !== version) {
    next.kubeletVersion = version;
    next.kubeProxyVersion = version;
  }
  if (image && current.osImage !== image) next.osImage = image;
  return next.kubeletVersion === current.kubeletVersion && next.osImage === current.osImage ? undefined : next;
}

/** A name for a new machine of `owner` that is not in `taken` (suffixes drawn from `suffix`, retried on collision). */
export function newMachineName(owner: string, taken: ReadonlySet<string>, suffix: () => string): string {
  for (let i = 0; i < 100; i++) {
    const name = `${owner}-${suffix()}`;
    if (!taken.has(name)) return name;
  }
  throw new Error(`capi-sim: no free machine name for ${owner}`);
}
