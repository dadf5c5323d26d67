// Builders of plans, CAPI objects and snapshots for the plan controller's table tests. Pure; used by tests only.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, PlanTarget, PlanUpdater } from '../api/index.js';
import { API_VERSION, Finalizers, Labels } from '../api/index.js';
import type { IntOrString } from '../api/capi/index.js';
import { labelValue, machineUpdateName } from './decide/names.js';
import type { PlanSnapshot } from './scope.js';
import type { TemplateLookup } from '../rules/inputs.js';

/** Namespace of every fixture. */
export const NS = 'fleet-a';
/** Cluster of every fixture. */
export const CLUSTER = 'cluster1';
/** A fixed clock. */
export const NOW = '2026-01-01T00:10:00Z';

/** A generic-kind updater owning Machine /spec/version. */
export const versionUpdater = (over: Partial<PlanUpdater> = {}): PlanUpdater => ({
  name: 'version',
  sequence: 1,
  responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
  ...over,
});

/** A target with one updater. */
export const target = (name: string, sequence: number, updaters: PlanUpdater[] = [versionUpdater()]): PlanTarget => ({
  name,
  sequence,
  updaters,
});

/** Options of a fixture plan. */
export interface PlanOpts {
  name?: string;
  created?: string;
  cp?: PlanTarget | null;
  mds?: PlanTarget[];
  phase?: 'updating' | 'aborting';
  paused?: boolean;
  failurePolicy?: 'Halt' | 'Continue';
  status?: InPlaceUpdatePlan['status'];
  deleting?: boolean;
  finalizers?: string[];
  annotations?: Record<string, string>;
}

/** A plan for cluster1 with CP cluster1-cp (seq 1) and MD cluster1-md-0 (seq 2) unless told otherwise. */
export function plan(o: PlanOpts = {}): InPlaceUpdatePlan {
  const p: InPlaceUpdatePlan = {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: {
      name: o.name ?? 'p1',
      namespace: NS,
      generation: 1,
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
      finalizers: o.finalizers ?? [],
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: { clusterName: CLUSTER, updatePhase: o.phase ?? 'updating', paused: o.paused ?? false, failurePolicy: o.failurePolicy ?? 'Halt' },
  };
  if (o.cp !== null) p.spec.controlPlane = o.cp ?? target('cluster1-cp', 1);
  const mds = o.mds ?? [target('cluster1-md-0', 2)];
  if (mds.length) p.spec.machineDeployments = mds;
  if (o.status) p.status = o.status;
  if (o.deleting) p.metadata!.deletionTimestamp = '2026-01-01T00:05:00Z';
  return p;
}

/** A Cluster, optionally with a controlPlaneRef. */
export const cluster = (
  cpRef: { apiGroup: string; kind: string; name: string } | null = {
    apiGroup: 'controlplane.cluster.x-k8s.io',
    kind: 'KubeadmControlPlane',
    name: 'cluster1-cp',
  },
): KubeObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Cluster',
  metadata: { name: CLUSTER, namespace: NS },
  spec: cpRef ? { controlPlaneRef: cpRef } : {},
});

/** A KubeadmControlPlane. */
export const kcp = (name = 'cluster1-cp', replicas = 3, version = 'v1.30.0'): KubeObject => ({
  apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
  kind: 'KubeadmControlPlane',
  metadata: { name, namespace: NS, labels: { [Labels.clusterName]: CLUSTER } },
  spec: { replicas, version },
});

/** Options of a fixture MachineDeployment. */
export interface MdOpts {
  replicas?: number;
  maxUnavailable?: IntOrString;
  maxSurge?: IntOrString;
  strategy?: 'RollingUpdate' | 'OnDelete';
  annotations?: Record<string, string>;
  clusterName?: string;
  version?: string;
}

/** A MachineDeployment (maxUnavailable 1 unless told otherwise). */
export function md(name = 'cluster1-md-0', o: MdOpts = {}): KubeObject {
  const rollingUpdate: Record<string, IntOrString> = { maxUnavailable: o.maxUnavailable ?? 1 };
  if (o.maxSurge !== undefined) rollingUpdate.maxSurge = o.maxSurge;
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'MachineDeployment',
    metadata: {
      name,
      namespace: NS,
      resourceVersion: '7',
      labels: { [Labels.clusterName]: o.clusterName ?? CLUSTER },
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      clusterName: o.clusterName ?? CLUSTER,
      replicas: o.replicas ?? 3,
      rollout: { strategy: o.strategy === 'OnDelete' ? { type: 'OnDelete' } : { type: 'RollingUpdate', rollingUpdate } },
      template: { spec: { clusterName: CLUSTER, version: o.version ?? 'v1.30.0' } },
    },
  };
}

/** Options of a fixture Machine. */
export interface MachineOpts {
  cp?: string;
  md?: string;
  ready?: boolean;
  deleting?: boolean;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  version?: string;
}

/** A Machine of cluster1 (Ready unless told otherwise). */
export function machine(name: string, o: MachineOpts = {}): KubeObject {
  const labels: Record<string, string> = { [Labels.clusterName]: CLUSTER, ...o.labels };
  if (o.cp) Object.assign(labels, { [Labels.controlPlane]: '', [Labels.controlPlaneName]: o.cp });
  if (o.md) Object.assign(labels, { [Labels.deploymentName]: o.md, [Labels.setName]: `${o.md}-abc` });
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name,
      namespace: NS,
      labels,
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.deleting ? { deletionTimestamp: NOW } : {}),
    },
    spec: { clusterName: CLUSTER, version: o.version ?? 'v1.30.0' },
    status: { conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True', reason: 'Ready', lastTransitionTime: NOW }] },
  };
}

/** Machines `<prefix>-0..n-1` of a control plane or MachineDeployment. */
export const machines = (prefix: string, n: number, o: MachineOpts): KubeObject[] =>
  Array.from({ length: n }, (_, i) => machine(`${prefix}-${i}`, o));

/** A MachineUpdate of `planName` for `machineName` with a status ('' = not yet seen by the task controller). */
export function mu(
  machineName: string,
  status: '' | 'updating' | 'updated' | 'failed' | 'aborted' | 'aborting',
  o: {
    plan?: string;
    phase?: 'updating' | 'aborting';
    target?: string;
    kind?: 'ControlPlane' | 'MachineDeployment';
    message?: string;
  } = {},
): MachineUpdate {
  const planName = o.plan ?? 'p1';
  return {
    apiVersion: API_VERSION,
    kind: 'MachineUpdate',
    metadata: {
      name: machineUpdateName(planName, machineName),
      namespace: NS,
      creationTimestamp: '2026-01-01T00:01:00Z',
      labels: { [Labels.planName]: labelValue(planName) },
    },
    spec: {
      planName,
      clusterName: CLUSTER,
      target: { kind: o.kind ?? 'MachineDeployment', name: o.target ?? 'cluster1-md-0' },
      machineRef: { name: machineName },
      updatePhase: o.phase ?? 'updating',
      updaters: [versionUpdater()],
    },
    status: { updateStatus: status, ...(o.message ? { message: o.message } : {}) },
  };
}

/** Options of a fixture snapshot. */
export interface SnapOpts {
  plan?: InPlaceUpdatePlan;
  cluster?: KubeObject | null;
  kcp?: KubeObject | null;
  mds?: KubeObject[];
  machines?: KubeObject[];
  mus?: MachineUpdate[];
  plans?: InPlaceUpdatePlan[];
  templates?: TemplateLookup[];
}

/** A snapshot: by default a valid plan, a 3-machine control plane and a 3-machine MachineDeployment, all Ready. */
export function snapshot(o: SnapOpts = {}): PlanSnapshot {
  const p = o.plan ?? plan();
  const k = o.kcp === null ? undefined : (o.kcp ?? kcp());
  return {
    plan: p,
    now: NOW,
    cluster: o.cluster === null ? undefined : (o.cluster ?? cluster()),
    controlPlane: { kind: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane' }, ...(k ? { object: k } : {}) },
    machineDeployments: o.mds ?? [md()],
    machines: o.machines ?? [
      ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
      ...machines('cluster1-md-0', 3, { md: 'cluster1-md-0' }),
    ],
    machineUpdates: o.mus ?? [],
    plans: o.plans ?? [p],
    templates: o.templates ?? [],
  };
}

/** A plan's status with the control plane already updated (so MachineDeployments may start). */
export const cpDone = (): KubeObject[] => machines('cluster1-cp', 3, { cp: 'cluster1-cp' });

/** `n` worker machines of a MachineDeployment. */
export const mdMachines = (n = 3, name = 'cluster1-md-0'): KubeObject[] => machines(name, n, { md: name });
/** The control plane's three MachineUpdates, updated. */
export const cpUpdated = (): MachineUpdate[] =>
  [0, 1, 2].map((i) => mu(`cluster1-cp-${i}`, 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' }));
/** A plan that has started (finalizer on, status updating). */
export const started = { finalizers: [Finalizers.plan], status: { updateStatus: 'updating' as const, startTime: '2026-01-01T00:00:30Z' } };
/** A started plan whose control plane is done, with one MachineDeployment left to update. */
export const mdOnly = (
  o: { mdOpts?: MdOpts; machines?: KubeObject[]; mus?: MachineUpdate[]; failurePolicy?: 'Halt' | 'Continue'; paused?: boolean } = {},
): SnapOpts => ({
  plan: plan({ ...started, ...(o.failurePolicy ? { failurePolicy: o.failurePolicy } : {}), ...(o.paused ? { paused: true } : {}) }),
  mds: [md('cluster1-md-0', o.mdOpts)],
  machines: [...cpDone(), ...(o.machines ?? mdMachines())],
  mus: [...cpUpdated(), ...(o.mus ?? [])],
});
