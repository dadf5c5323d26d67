// A large CAPI fleet for benchmarks and reliability suites: one cluster, a control plane and N MachineDeployments,
// built with the capi-sim inventory builder and created in parallel (owners first, one wave per ownership depth).
import {
  API_VERSION,
  Annotations,
  InPlaceUpdatePlans,
  MachineDeployments,
  type InPlaceUpdatePlan,
  type KubeObject,
  type PlanUpdater,
} from '../../src/api/index.js';
import { buildInventory, resourceOf, type InventoryOptions } from '../../tools/capi-sim/index.js';
import { forEachLimit, isAlreadyExists, type KubeClient } from '../../src/runtime/index.js';

/** Shape of a benchmark fleet. */
export interface FleetShape {
  namespace: string;
  clusterName: string;
  /** Kubernetes version the machines start at. */
  version: string;
  /** Control-plane machines (default 3). */
  cpReplicas?: number;
  /** Worker machines in total, spread over MachineDeployments of `mdSize` (the last one takes the rest). */
  workers: number;
  /** Machines per MachineDeployment (default 50). */
  mdSize?: number;
  /** maxUnavailable of every MachineDeployment (default 1). */
  maxUnavailable?: number | string;
  /** A MachineHealthCheck selecting the cluster with this in-place timeout (default none). */
  mhcTimeout?: string;
}

/** Names in a built fleet. */
export interface Fleet {
  shape: FleetShape;
  cpName: string;
  mdNames: string[];
  /** Machines per MachineDeployment, by name. */
  mdReplicas: Record<string, number>;
  cpReplicas: number;
  /** Every object of the fleet (with status), in creation order. */
  objects: KubeObject[];
}

/** Name of the i-th MachineDeployment of a fleet. */
export const mdName = (cluster: string, i: number): string => `${cluster}-md-${i}`;

/** Builds (does not create) the fleet's objects with the capi-sim inventory builder. */
export function buildFleet(shape: FleetShape): Fleet {
  const cpReplicas = shape.cpReplicas ?? 3;
  const size = Math.max(1, shape.mdSize ?? 50);
  const count = Math.max(1, Math.ceil(shape.workers / size));
  const mds: NonNullable<InventoryOptions['machineDeployments']> = [];
  let left = shape.workers;
  for (let i = 0; i < count; i++) {
    const replicas = Math.min(size, left);
    left -= replicas;
    mds.push({ name: mdName(shape.clusterName, i), replicas, maxUnavailable: shape.maxUnavailable ?? 1, maxSurge: 1 });
  }
  const cpName = `${shape.clusterName}-cp`;
  const objects = buildInventory({
    namespace: shape.namespace,
    clusterName: shape.clusterName,
    version: shape.version,
    controlPlane: { name: cpName, replicas: cpReplicas },
    machineDeployments: mds,
    ...(shape.mhcTimeout
      ? { mhc: { name: `${shape.clusterName}-mhc`, inPlaceUpdateTimeout: shape.mhcTimeout, unhealthyLessThanOrEqualTo: '100%' } }
      : {}),
  });
  return {
    shape,
    cpName,
    cpReplicas,
    mdNames: mds.map((m) => m.name),
    mdReplicas: Object.fromEntries(mds.map((m) => [m.name, m.replicas])),
    objects,
  };
}

const ownerKey = (kind: string, ns: string | undefined, name: string): string => `${kind}/${ns ?? ''}/${name}`;

/**
 * Creates the objects in parallel (`concurrency` requests in flight), owners before dependents: objects are grouped
 * in waves by ownership depth, each wave created concurrently once the previous one exists (owner uids resolved).
 * Each object's status is written through /status after its creation. Existing objects are left as they are.
 */
export async function applyFleet(client: KubeClient, objs: readonly KubeObject[], concurrency = 48): Promise<void> {
  const byKey = new Map(objs.map((o) => [ownerKey(o.kind ?? '', o.metadata.namespace, o.metadata.name ?? ''), o]));
  const depth = new Map<KubeObject, number>();
  const depthOf = (o: KubeObject, seen = 0): number => {
    const known = depth.get(o);
    if (known !== undefined) return known;
    if (seen > 16) throw new Error(`ownership cycle at ${o.kind} ${o.metadata.name}`);
    let d = 0;
    for (const ref of o.metadata.ownerReferences ?? []) {
      const owner = byKey.get(ownerKey(ref.kind, o.metadata.namespace, ref.name));
      if (owner) d = Math.max(d, depthOf(owner, seen + 1) + 1);
    }
    depth.set(o, d);
    return d;
  };
  const waves: KubeObject[][] = [];
  for (const o of objs) (waves[depthOf(o)] ??= []).push(o);
  const uids = new Map<string, string>();
  for (const wave of waves) {
    if (!wave) continue;
    await forEachLimit(wave, concurrency, async (original) => {
      const res = resourceOf(original);
      const { status, ...rest } = structuredClone(original) as KubeObject & { status?: Record<string, unknown> };
      const obj = rest as KubeObject;
      for (const ref of obj.metadata.ownerReferences ?? []) {
        if (!ref.uid) ref.uid = uids.get(ownerKey(ref.kind, obj.metadata.namespace, ref.name)) ?? '';
        if (!ref.uid) throw new Error(`owner ${ref.kind} ${ref.name} of ${obj.kind} ${obj.metadata.name} was not created`);
      }
      let live: KubeObject;
      try {
        live = await client.create(res, obj);
        if (status !== undefined) live = await client.update(res, { ...live, status }, { subresource: 'status' });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const got = await client.get(res, res.namespaced ? obj.metadata.namespace : undefined, obj.metadata.name ?? '');
        if (!got) throw err;
        live = got;
      }
      uids.set(ownerKey(live.kind ?? '', live.metadata.namespace, live.metadata.name ?? ''), live.metadata.uid ?? '');
    });
  }
}

/** Sets maxUnavailable on every MachineDeployment of the fleet (between benchmark runs). */
export async function setMaxUnavailable(
  client: KubeClient,
  fleet: Fleet,
  maxUnavailable: number | string,
  concurrency = 16,
): Promise<void> {
  await forEachLimit(fleet.mdNames, concurrency, async (name) => {
    await client.patch(
      MachineDeployments,
      fleet.shape.namespace,
      name,
      { spec: { rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable, maxSurge: 1 } } } } },
      { type: 'merge' },
    );
  });
}

/** Options of a fleet plan. */
export interface FleetPlanOptions {
  name: string;
  /** Version the plan commits to Machine /spec/version. */
  toVersion: string;
  /** Simulated duration of the reference updater (seconds). */
  durationSeconds: number;
  /** Updater name (default `ref`); the reference updater serves every name. */
  updaterName?: string;
  failurePolicy?: 'Halt' | 'Continue';
  /** Leave out the control plane (default false). */
  noControlPlane?: boolean;
  /**
   * Two more updaters per target, run after the version one: `os` writes the InfraMachine's image, `ntp` the
   * BootstrapConfig's NTP servers (both to this value), so owner alignment clones both templates and moves every
   * InfraMachine's cloned-from (issue 25's three updaters per machine).
   */
  infraValue?: string;
}

/** A plan updating every machine of the fleet with the reference updater: control plane at sequence 1, all MDs at 2. */
export function fleetPlan(fleet: Fleet, o: FleetPlanOptions): InPlaceUpdatePlan & KubeObject {
  const updater = (): PlanUpdater => ({
    name: o.updaterName ?? 'ref',
    sequence: 1,
    responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: o.toVersion }],
    parameters: { durationSeconds: o.durationSeconds },
  });
  const extra = (name: string, sequence: number, r: PlanUpdater['responsibilities']): PlanUpdater => ({
    name,
    sequence,
    responsibilities: r,
    parameters: { durationSeconds: o.durationSeconds },
  });
  const updaters = (): PlanUpdater[] =>
    o.infraValue === undefined
      ? [updater()]
      : [
          updater(),
          extra('os', 2, [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: o.infraValue }]),
          extra('ntp', 3, [
            { selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true, servers: [`${o.infraValue}.ntp`] } },
          ]),
        ];
  return {
    apiVersion: API_VERSION,
    kind: InPlaceUpdatePlans.kind,
    metadata: { name: o.name, namespace: fleet.shape.namespace },
    spec: {
      clusterName: fleet.shape.clusterName,
      // These worlds run no Cluster API machine controller: nothing mirrors a Node into Machine.status.nodeInfo, so
      // the plan cannot verify the node (docs/operations.md, "Verification") and takes the updater's word.
      verification: { mode: 'Disabled' },
      ...(o.failurePolicy ? { failurePolicy: o.failurePolicy } : {}),
      ...(o.noControlPlane ? {} : { controlPlane: { name: fleet.cpName, sequence: 1, updaters: updaters() } }),
      machineDeployments: fleet.mdNames.map((name) => ({ name, sequence: 2, updaters: updaters() })),
    },
  };
}

/** The annotation a Machine carries while in update (for invariant checks). */
export const UPDATE_STARTED_AT = Annotations.updateStartedAt;
