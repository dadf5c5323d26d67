// The conformance kit's scratch world: a Machine with its DevMachine, KubeadmConfig and Node, an owning
// MachineUpdate (created aborting, so a running machine task controller never starts tasks for it), and
// snapshots of the CAPI objects to prove the updater never wrote them (C8).
import { isDeepStrictEqual } from 'node:util';
import {
  API_VERSION,
  Annotations,
  DevMachines,
  KubeadmConfigs,
  Labels,
  MachineUpdates,
  Machines,
  Nodes,
  apiVersionOf,
  type KubeObject,
  type ResourceType,
  type Responsibility,
} from '../../api/index.js';
import { isNotFound } from '../../runtime/pure/errors.js';
import type { KubeClient } from '../../runtime/pure/types.js';

/** Kubernetes version of the scratch machine and the target version the scratch tasks ask for. */
export const SCRATCH_VERSION = 'v1.30.0';
export const TARGET_VERSION = 'v1.30.1';
/** Target image of the scratch tasks' InfraMachine responsibility. */
export const TARGET_IMAGE = 'conformance-os-image-2';
/** Label on every object the kit creates (cleanup and selection). */
export const RUN_LABEL = 'inplace.cluster.x-k8s.io/conformance-run';

/** The scratch objects of one run. */
export interface Scratch {
  id: string;
  namespace: string;
  cluster: string;
  machine: string;
  node: string;
  /** The owning MachineUpdate (terminal: aborted). */
  machineUpdate: KubeObject;
  /** Whether the CAPI kinds are served (else C8 cannot be checked). */
  capi: boolean;
  /** Why the CAPI objects could not be created, when capi is false. */
  capiProblem?: string;
}

/** The default responsibilities of scratch tasks: one per kind of object a sample updater owns. */
export const defaultResponsibilities = (): Responsibility[] => [
  { selectResource: 'Machine', path: '/spec/version', value: TARGET_VERSION },
  { selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: TARGET_IMAGE },
];

async function ignoreNotFound(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** The scratch Machine's Node, Ready and reporting the scratch version (as a kubelet would). */
async function createScratchNode(client: KubeClient, node: string, id: string): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  await client.create(Nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { [RUN_LABEL]: id } }, spec: {} });
  await client.patch(
    Nodes,
    undefined,
    node,
    {
      status: {
        nodeInfo: { kubeletVersion: SCRATCH_VERSION },
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'conformance scratch node',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
      },
    },
    { type: 'merge', subresource: 'status' },
  );
}

/** Creates the scratch machine (when CAPI kinds are served) and the owning MachineUpdate. */
export async function createScratch(
  client: KubeClient,
  namespace: string,
  id: string,
  updaterName: string,
  resps: Responsibility[],
): Promise<Scratch> {
  const cluster = `conformance-${id}`;
  const machine = `cf-${id}-machine`;
  const node = `cf-${id}-node`;
  const labels = { [RUN_LABEL]: id, [Labels.clusterName]: cluster };
  // Paused: CAPI controllers leave the scratch objects alone, so any change is the updater's.
  const annotations = { [Annotations.paused]: 'true' };
  const s: Partial<Scratch> = { id, namespace, cluster, machine, node, capi: true };
  try {
    await client.create(DevMachines, {
      apiVersion: apiVersionOf(DevMachines),
      kind: DevMachines.kind,
      metadata: { name: machine, namespace, labels, annotations },
      spec: { backend: { docker: { customImage: 'conformance-os-image-1' } } },
    });
    await client.create(KubeadmConfigs, {
      apiVersion: apiVersionOf(KubeadmConfigs),
      kind: KubeadmConfigs.kind,
      metadata: { name: machine, namespace, labels, annotations },
      spec: { format: 'cloud-config' },
    });
    await client.create(Machines, {
      apiVersion: apiVersionOf(Machines),
      kind: Machines.kind,
      metadata: { name: machine, namespace, labels, annotations },
      spec: {
        clusterName: cluster,
        version: SCRATCH_VERSION,
        bootstrap: { configRef: { apiGroup: KubeadmConfigs.group, kind: KubeadmConfigs.kind, name: machine } },
        infrastructureRef: { apiGroup: DevMachines.group, kind: DevMachines.kind, name: machine },
      },
    });
    await createScratchNode(client, node, id);
    await client.patch(
      Machines,
      namespace,
      machine,
      { status: { phase: 'Running', nodeRef: { name: node } } },
      { type: 'merge', subresource: 'status' },
    );
  } catch (err) {
    s.capi = false;
    s.capiProblem = err instanceof Error ? err.message : String(err);
  }
  s.machineUpdate = await client.create(MachineUpdates, {
    apiVersion: API_VERSION,
    kind: MachineUpdates.kind,
    metadata: { name: `cf-${id}`, namespace, labels: { [RUN_LABEL]: id } },
    spec: {
      planName: 'conformance',
      clusterName: cluster,
      target: { kind: 'MachineDeployment', name: 'conformance' },
      machineRef: { name: machine },
      // Aborting from the start: a running machine task controller ends it aborted without creating tasks.
      updatePhase: 'aborting',
      updaters: [{ name: updaterName, sequence: 1, responsibilities: resps }],
    },
  });
  return s as Scratch;
}

/** The parts of a CAPI object an updater could write: spec, labels, annotations, finalizers, owners. */
const writable = (o: KubeObject | undefined): unknown =>
  o && {
    spec: o['spec'],
    labels: o.metadata.labels ?? {},
    annotations: o.metadata.annotations ?? {},
    finalizers: o.metadata.finalizers ?? [],
    ownerReferences: o.metadata.ownerReferences ?? [],
  };

/** A snapshot of the scratch CAPI objects. */
export type CapiSnapshot = { what: string; res: ResourceType; name: string; state: unknown; status: unknown }[];

/** Reads the scratch Machine, DevMachine and KubeadmConfig. */
export async function snapshotCapi(client: KubeClient, s: Scratch): Promise<CapiSnapshot> {
  const out: CapiSnapshot = [];
  for (const res of [Machines, DevMachines, KubeadmConfigs]) {
    const o = await client.get(res, s.namespace, s.machine);
    out.push({ what: `${res.kind} ${s.machine}`, res, name: s.machine, state: writable(o), status: o?.['status'] });
  }
  return out;
}

/**
 * Differences between two snapshots: `violations` in what only an updater could have written (spec, labels,
 * annotations, finalizers, owners), `notes` for status changes (a CAPI controller may legitimately write those).
 */
export function diffCapi(before: CapiSnapshot, after: CapiSnapshot): { violations: string[]; notes: string[] } {
  const out: string[] = [];
  const notes: string[] = [];
  for (const b of before) {
    const a = after.find((x) => x.what === b.what);
    const bs = b.state as Record<string, unknown> | undefined;
    const as = a?.state as Record<string, unknown> | undefined;
    if (!as) {
      out.push(`${b.what} was deleted`);
      continue;
    }
    for (const k of ['spec', 'labels', 'annotations', 'finalizers', 'ownerReferences']) {
      if (!isDeepStrictEqual(bs?.[k], as[k])) out.push(`${b.what} ${k} changed: ${JSON.stringify(bs?.[k])} -> ${JSON.stringify(as[k])}`);
    }
    if (!isDeepStrictEqual(b.status, a?.status)) notes.push(`${b.what} status changed (not counted: CAPI controllers write status)`);
  }
  return { violations: out, notes };
}

/** Deletes everything a run created (tasks go with their owning MachineUpdate, and are deleted explicitly too). */
export async function deleteScratch(
  client: KubeClient,
  s: Scratch,
  tasks: { res: ResourceType; name: string }[],
  template?: { res: ResourceType; name: string },
): Promise<void> {
  for (const t of tasks) await ignoreNotFound(client.delete(t.res, s.namespace, t.name));
  if (template) await ignoreNotFound(client.delete(template.res, s.namespace, template.name));
  await ignoreNotFound(client.delete(MachineUpdates, s.namespace, s.machineUpdate.metadata.name!));
  if (s.capi) {
    await ignoreNotFound(client.delete(Machines, s.namespace, s.machine));
    await ignoreNotFound(client.delete(DevMachines, s.namespace, s.machine));
    await ignoreNotFound(client.delete(KubeadmConfigs, s.namespace, s.machine));
    await ignoreNotFound(client.delete(Nodes, undefined, s.node));
  }
}
