// A CAPI inventory (what a provisioned cluster looks like in the management cluster), for the demo and the tests.
import {
  Annotations,
  Labels,
  MachineHealthChecks,
  Namespaces,
  Nodes,
  apiVersionOf,
  type KubeObject,
  type ResourceType,
} from '../../src/api/index.js';
import type { KubeClient } from '../../src/runtime/pure/types.js';
import { isAlreadyExists, isNotFound } from '../../src/runtime/pure/errors.js';
import {
  Clusters,
  DevMachineTemplates,
  DevMachines,
  KubeadmConfigTemplates,
  KubeadmConfigs,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineSets,
  Machines,
  buildDevMachine,
  buildKubeadmConfig,
  buildMachine,
  buildNode,
  condition,
  controlPlaneMachineLabels,
  controllerRef,
  defaultImage,
  deploymentMachineLabels,
  NODE_CLUSTER_NAMESPACE_ANNOTATION,
  devMachineReadyStatus,
  kubeTime,
  kubeadmConfigReadyStatus,
  machineRunningStatus,
  nodeInfoFor,
  memberSuffix,
  nodeNameFor,
  nodeReadyStatus,
  stableSuffix,
  type MachineBlueprint,
} from './builders.js';
import { clonedFromAnnotations } from './rollout.js';
import type { KubeadmControlPlane, MachineDeployment, MachineHealthCheck, MachineSet, ObjectRef } from '../../src/api/capi/index.js';

/** What to build: one cluster with an optional control plane, MachineDeployments and a MachineHealthCheck. */
export interface InventoryOptions {
  namespace: string;
  clusterName: string;
  /** Kubernetes version of every machine, e.g. v1.29.5. */
  version: string;
  /** OS image of every DevMachine (spec.backend.docker.customImage); default `ubuntu-22.04-k8s-<version>`. */
  image?: string;
  controlPlane?: { name: string; replicas: number };
  machineDeployments?: Array<{
    name: string;
    replicas: number;
    maxUnavailable?: number | string;
    maxSurge?: number | string;
    strategy?: 'RollingUpdate' | 'OnDelete';
  }>;
  mhc?: { name: string; inPlaceUpdateTimeout?: string; unhealthyLessThanOrEqualTo?: number | string; nodeStartupTimeoutSeconds?: number };
  /** Time written into conditions (default: now). */
  now?: Date;
}

/** Name of the i-th machine of a KubeadmControlPlane or MachineSet in a built inventory. */
export const inventoryMachineName = (ownerName: string, i: number): string => `${ownerName}-${memberSuffix(ownerName, i)}`;
/** Name of the MachineSet of a MachineDeployment in a built inventory. */
export const inventoryMachineSetName = (mdName: string): string => `${mdName}-${stableSuffix(mdName)}`;

/** Attaches the status applyInventory writes through the status subresource. */
const withStatus = <T extends KubeObject>(obj: T, status: Record<string, unknown>): T => Object.assign(obj, { status });

/**
 * Builds every object of a provisioned cluster, deterministically (same options, same objects and names):
 * Cluster, KubeadmControlPlane, MachineDeployments with their MachineSets, templates, Machines (Running, Ready,
 * NodeHealthy), DevMachines, KubeadmConfigs, the workload Nodes (cluster-scoped) and an optional MachineHealthCheck.
 * Owner references carry an empty uid, resolved by applyInventory. Objects carry their status under `status`.
 */
export function buildInventory(opts: InventoryOptions): KubeObject[] {
  const { namespace, clusterName, version } = opts;
  const image = opts.image ?? defaultImage(version);
  const now = kubeTime(opts.now ?? new Date());
  const out: KubeObject[] = [];
  const clusterLabels = { [Labels.clusterName]: clusterName };

  const cluster: KubeObject = {
    apiVersion: apiVersionOf(Clusters),
    kind: Clusters.kind,
    metadata: { name: clusterName, namespace, labels: { ...clusterLabels } },
    spec: opts.controlPlane
      ? { controlPlaneRef: { apiGroup: KubeadmControlPlanes.group, kind: KubeadmControlPlanes.kind, name: opts.controlPlane.name } }
      : { paused: false },
  };
  out.push(
    withStatus(cluster, {
      observedGeneration: 1,
      phase: 'Provisioned',
      initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true },
      conditions: [condition('Available', 'True', 'Available', now), condition('ControlPlaneInitialized', 'True', 'Initialized', now)],
    }),
  );

  const machines: Array<{ bp: MachineBlueprint; controlPlane: boolean }> = [];
  const infraSpec = { backend: { docker: { customImage: image } } };

  if (opts.controlPlane) {
    const cp = opts.controlPlane;
    out.push(template(DevMachineTemplates, cp.name, namespace, clusterLabels, { template: { spec: infraSpec } }));
    const kcp: KubeadmControlPlane = {
      apiVersion: apiVersionOf(KubeadmControlPlanes),
      kind: KubeadmControlPlanes.kind,
      metadata: { name: cp.name, namespace, labels: { ...clusterLabels }, ownerReferences: [controllerRef(Clusters, clusterName)] },
      spec: {
        replicas: cp.replicas,
        version,
        rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
        kubeadmConfigSpec: { format: 'cloud-config' },
        machineTemplate: {
          spec: { infrastructureRef: { apiGroup: DevMachineTemplates.group, kind: DevMachineTemplates.kind, name: cp.name } },
        },
      },
    };
    out.push(
      withStatus(kcp, {
        ...replicaStatus(cp.replicas, `${Labels.clusterName}=${clusterName},${Labels.controlPlane},${Labels.controlPlaneName}=${cp.name}`),
        version,
        initialization: { controlPlaneInitialized: true },
        conditions: [condition('Available', 'True', 'Available', now)],
      }),
    );
    for (let i = 0; i < cp.replicas; i++) {
      machines.push({
        controlPlane: true,
        bp: {
          namespace,
          clusterName,
          version,
          name: inventoryMachineName(cp.name, i),
          owner: { res: KubeadmControlPlanes, name: cp.name },
          labels: controlPlaneMachineLabels(clusterName, cp.name),
          infraSpec,
          bootstrapSpec: { format: 'cloud-config' },
          // KCP clones the InfraMachine from machineTemplate.spec.infrastructureRef; the KubeadmConfig is generated.
          infraAnnotations: clonedFromAnnotations(kcp.spec.machineTemplate.spec.infrastructureRef),
        },
      });
    }
  }

  for (const mdOpts of opts.machineDeployments ?? []) {
    const strategy = mdOpts.strategy ?? 'RollingUpdate';
    const msName = inventoryMachineSetName(mdOpts.name);
    const selector = { matchLabels: { [Labels.clusterName]: clusterName, [Labels.deploymentName]: mdOpts.name } };
    const machineSpec: { clusterName: string; version: string; bootstrap: { configRef: ObjectRef }; infrastructureRef: ObjectRef } = {
      clusterName,
      version,
      bootstrap: { configRef: { apiGroup: KubeadmConfigTemplates.group, kind: KubeadmConfigTemplates.kind, name: mdOpts.name } },
      infrastructureRef: { apiGroup: DevMachineTemplates.group, kind: DevMachineTemplates.kind, name: mdOpts.name },
    };
    out.push(template(DevMachineTemplates, mdOpts.name, namespace, clusterLabels, { template: { spec: infraSpec } }));
    out.push(template(KubeadmConfigTemplates, mdOpts.name, namespace, clusterLabels, { template: { spec: { format: 'cloud-config' } } }));
    const md: MachineDeployment = {
      apiVersion: apiVersionOf(MachineDeployments),
      kind: MachineDeployments.kind,
      metadata: {
        name: mdOpts.name,
        namespace,
        labels: { ...clusterLabels },
        ownerReferences: [{ ...controllerRef(Clusters, clusterName), controller: false }],
      },
      spec: {
        clusterName,
        replicas: mdOpts.replicas,
        selector,
        rollout: {
          strategy:
            strategy === 'OnDelete'
              ? { type: 'OnDelete' }
              : { type: 'RollingUpdate', rollingUpdate: { maxSurge: mdOpts.maxSurge ?? 1, maxUnavailable: mdOpts.maxUnavailable ?? 0 } },
        },
        template: { metadata: { labels: { ...selector.matchLabels } }, spec: machineSpec },
      },
    };
    const mdSelector = `${Labels.clusterName}=${clusterName},${Labels.deploymentName}=${mdOpts.name}`;
    out.push(
      withStatus(md, {
        ...replicaStatus(mdOpts.replicas, mdSelector),
        phase: 'Running',
        conditions: [condition('Available', 'True', 'Available', now)],
      }),
    );
    const ms: MachineSet = {
      apiVersion: apiVersionOf(MachineSets),
      kind: MachineSets.kind,
      metadata: {
        name: msName,
        namespace,
        labels: { ...selector.matchLabels },
        ownerReferences: [controllerRef(MachineDeployments, mdOpts.name)],
      },
      spec: {
        clusterName,
        replicas: mdOpts.replicas,
        selector: { matchLabels: { ...selector.matchLabels } },
        template: { metadata: { labels: { ...selector.matchLabels } }, spec: structuredClone(machineSpec) },
      },
    };
    out.push(withStatus(ms, replicaStatus(mdOpts.replicas, mdSelector)));
    for (let i = 0; i < mdOpts.replicas; i++) {
      machines.push({
        controlPlane: false,
        bp: {
          namespace,
          clusterName,
          version,
          name: inventoryMachineName(msName, i),
          owner: { res: MachineSets, name: msName },
          labels: deploymentMachineLabels(clusterName, mdOpts.name, msName),
          infraSpec,
          bootstrapSpec: { format: 'cloud-config' },
          // The MachineSet clones both from its template's references.
          infraAnnotations: clonedFromAnnotations(machineSpec.infrastructureRef),
          bootstrapAnnotations: clonedFromAnnotations(machineSpec.bootstrap.configRef),
        },
      });
    }
  }

  for (const { bp, controlPlane } of machines) {
    const nodeName = nodeNameFor(namespace, bp.name);
    const info = nodeInfoFor(nodeName, version, image);
    out.push(withStatus(buildMachine(bp), machineRunningStatus(nodeName, info, 1, now)));
    out.push(withStatus(buildDevMachine(bp), devMachineReadyStatus(now)));
    out.push(withStatus(buildKubeadmConfig(bp), kubeadmConfigReadyStatus(now)));
    out.push(withStatus(buildNode(namespace, clusterName, bp.name, controlPlane), nodeReadyStatus(info, now)));
  }

  if (opts.mhc) {
    const m = opts.mhc;
    const mhc: MachineHealthCheck = {
      apiVersion: apiVersionOf(MachineHealthChecks),
      kind: MachineHealthChecks.kind,
      metadata: {
        name: m.name,
        namespace,
        labels: { ...clusterLabels },
        ...(m.inPlaceUpdateTimeout !== undefined ? { annotations: { [Annotations.inPlaceUpdateTimeout]: m.inPlaceUpdateTimeout } } : {}),
      },
      spec: {
        clusterName,
        selector: { matchLabels: { ...clusterLabels } },
        checks: {
          nodeStartupTimeoutSeconds: m.nodeStartupTimeoutSeconds ?? 600,
          unhealthyNodeConditions: [
            { type: 'Ready', status: 'Unknown', timeoutSeconds: 300 },
            { type: 'Ready', status: 'False', timeoutSeconds: 300 },
          ],
        },
        ...(m.unhealthyLessThanOrEqualTo !== undefined
          ? { remediation: { triggerIf: { unhealthyLessThanOrEqualTo: m.unhealthyLessThanOrEqualTo } } }
          : {}),
      },
    };
    out.push(mhc);
  }
  return out;
}

const template = (
  res: ResourceType,
  name: string,
  namespace: string,
  labels: Record<string, string>,
  spec: Record<string, unknown>,
): KubeObject => ({
  apiVersion: apiVersionOf(res),
  kind: res.kind,
  metadata: { name, namespace, labels: { ...labels } },
  spec,
});

const replicaStatus = (n: number, selector: string): Record<string, unknown> => ({
  observedGeneration: 1,
  selector,
  replicas: n,
  readyReplicas: n,
  availableReplicas: n,
  upToDateReplicas: n,
});

/** Resource descriptor of an inventory object, by its apiVersion and kind. */
export function resourceOf(obj: KubeObject): ResourceType {
  const all = [
    Clusters,
    KubeadmControlPlanes,
    MachineDeployments,
    MachineSets,
    Machines,
    DevMachines,
    KubeadmConfigs,
    DevMachineTemplates,
    KubeadmConfigTemplates,
    MachineHealthChecks,
    Nodes,
    Namespaces,
  ];
  const r = all.find((x) => x.kind === obj.kind && apiVersionOf(x) === obj.apiVersion);
  if (!r) throw new Error(`capi-sim: no resource for ${obj.apiVersion} ${obj.kind}`);
  return r;
}

/**
 * Creates the objects (in order; owners first), resolving owner uids, then writes each object's status through
 * /status. Idempotent: existing objects are left as they are (their status too), so it is safe to call again.
 */
export async function applyInventory(client: KubeClient, objs: readonly KubeObject[]): Promise<KubeObject[]> {
  const uids = new Map<string, string>();
  const key = (kind: string, ns: string | undefined, name: string): string => `${kind}/${ns ?? ''}/${name}`;
  const created: KubeObject[] = [];
  for (const original of objs) {
    const res = resourceOf(original);
    const { status, ...rest } = structuredClone(original) as KubeObject & { status?: unknown };
    const obj = rest as KubeObject;
    const ns = res.namespaced ? obj.metadata.namespace : undefined;
    for (const ref of obj.metadata.ownerReferences ?? []) {
      if (!ref.uid) {
        const uid = uids.get(key(ref.kind, ns, ref.name));
        if (!uid) throw new Error(`capi-sim: owner ${ref.kind} ${ref.name} of ${obj.kind} ${obj.metadata.name} must come first`);
        ref.uid = uid;
      }
    }
    let live: KubeObject;
    let fresh = false;
    try {
      live = await client.create(res, obj);
      fresh = true;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const got = await client.get(res, ns, obj.metadata.name ?? '');
      if (!got) throw err;
      live = got;
    }
    if (fresh && status !== undefined) {
      live = await client.update(res, { ...live, status: status as Record<string, unknown> }, { subresource: 'status' });
    }
    uids.set(key(res.kind, ns, live.metadata.name ?? ''), live.metadata.uid ?? '');
    created.push(live);
  }
  return created;
}

/** Deletes the workload Nodes the inventory or the simulator created for machines of `namespace` (Nodes are cluster-scoped). */
export async function deleteWorkloadNodes(client: KubeClient, namespace: string): Promise<void> {
  const nodes = await client.list(Nodes, undefined);
  for (const n of nodes.items) {
    if (n.metadata.annotations?.[NODE_CLUSTER_NAMESPACE_ANNOTATION] !== namespace) continue;
    try {
      await client.delete(Nodes, undefined, n.metadata.name ?? '');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
