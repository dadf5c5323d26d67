// What the runtime extension reads to answer a hook: the registered InPlaceUpdaters of a namespace and the
// MachineUpdates it created for a machine (from the caches), the Machine (from the API server: the request carries
// no uid, and the MachineUpdate's owner reference needs the live one).
import {
  Clusters,
  InPlaceUpdaters,
  Labels,
  Machines,
  MachineUpdates,
  REQUESTED_BY_RUNTIME_EXTENSION,
  type InPlaceUpdater,
  type KubeObject,
  type MachineUpdate,
} from '../api/index.js';
import { toLabelValue } from '../contract/index.js';
import type { KubeClient, Manager, Store } from '../runtime/index.js';
import type { LiveObjects } from './decide.js';

/** The caches the extension reads. */
export interface Stores {
  updaters: Store<InPlaceUpdater & KubeObject>;
  updates: Store<MachineUpdate & KubeObject>;
}

/** The informer stores of the extension, registered with the manager. */
export const storesOf = (mgr: Manager): Stores => ({
  updaters: mgr.informer<InPlaceUpdater & KubeObject>(InPlaceUpdaters).store,
  updates: mgr.informer<MachineUpdate & KubeObject>(MachineUpdates).store,
});

/** The registered updaters of a namespace, by name (their order is decided by orderedUpdaters). */
export const updatersIn = (stores: Stores, namespace: string | undefined): InPlaceUpdater[] =>
  stores.updaters.list(namespace).filter((u) => !u.metadata.deletionTimestamp);

/** The MachineUpdates the extension created for a machine. */
export const updatesOfMachine = (stores: Stores, namespace: string | undefined, machine: string): MachineUpdate[] =>
  stores.updates
    .byLabel(Labels.machineName, toLabelValue(machine), namespace)
    .filter((u) => u.metadata.labels?.[Labels.requestedBy] === REQUESTED_BY_RUNTIME_EXTENSION && u.spec.machineRef.name === machine);

/** The Machine as the API server has it now, undefined when it does not exist. */
export const liveMachine = async (client: KubeClient, namespace: string, name: string): Promise<KubeObject | undefined> =>
  (await client.get<KubeObject>(Machines, namespace, name)) ?? undefined;

/** Reading one of the machine's objects failed (retryable: Cluster API calls again). */
export class ReadMachineObjectError extends Error {
  constructor(what: string, cause: unknown) {
    super(`read ${what}: ${(cause as Error).message}`, { cause });
    this.name = 'ReadMachineObjectError';
  }
}

type Ref = { apiGroup?: string; kind?: string; name?: string } | undefined;

/** The object a v1beta2 reference of the Machine names (same namespace), undefined when it does not exist. */
async function getRef(client: KubeClient, namespace: string, ref: Ref, what: string): Promise<KubeObject | undefined> {
  if (!ref?.apiGroup || !ref.kind || !ref.name) return undefined;
  try {
    const res = await client.resolve(ref.apiGroup, ref.kind);
    return (await client.get<KubeObject>(res, namespace, ref.name)) ?? undefined;
  } catch (err) {
    throw new ReadMachineObjectError(`${what} ${ref.kind} ${ref.name}`, err);
  }
}

/** The Machine with its InfraMachine and BootstrapConfig as the API server has them now. */
export async function liveObjects(client: KubeClient, machine: KubeObject): Promise<LiveObjects> {
  const ns = machine.metadata.namespace ?? '';
  const spec = (machine as KubeObject & { spec?: { infrastructureRef?: Ref; bootstrap?: { configRef?: Ref } } }).spec;
  const infra = await getRef(client, ns, spec?.infrastructureRef, 'InfraMachine');
  const boot = await getRef(client, ns, spec?.bootstrap?.configRef, 'BootstrapConfig');
  return { Machine: machine, ...(infra ? { InfraMachine: infra } : {}), ...(boot ? { BootstrapConfig: boot } : {}) };
}

/** Reading the Cluster an updater scope selects on failed (retryable: Cluster API calls again). */
export class ReadClusterError extends Error {
  constructor(namespace: string, name: string, cause: unknown) {
    super(`read Cluster ${namespace}/${name} (an InPlaceUpdater has a clusterSelector): ${(cause as Error).message}`, { cause });
    this.name = 'ReadClusterError';
  }
}

/**
 * The labels of the Cluster a request is about, undefined when it does not exist (no updater with a clusterSelector
 * serves it). A failed read throws: answering "nothing covered" on a passing error would send Cluster API to a rollout.
 */
export async function clusterLabels(
  client: KubeClient,
  namespace: string,
  name: string | undefined,
): Promise<Record<string, string> | undefined> {
  if (!name) return undefined;
  try {
    const c = await client.get<KubeObject>(Clusters, namespace, name);
    return c ? (c.metadata.labels ?? {}) : undefined;
  } catch (err) {
    throw new ReadClusterError(namespace, name, err);
  }
}
