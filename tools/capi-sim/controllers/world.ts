// The simulated CAPI controllers' shared state: caches, client, options and the expectations that bridge cache lag.
import { randomInt } from 'node:crypto';
import { Nodes, type KubeObject, type ResourceType } from '../../../src/api/index.js';
import { isNotFound, isAlreadyExists } from '../../../src/runtime/pure/errors.js';
import { type KubeClient, type Manager } from '../../../src/runtime/pure/types.js';
import {
  Clusters,
  DevMachineTemplates,
  DevMachines,
  KubeadmConfigs,
  Machines,
  NODE_MACHINE_ANNOTATION,
  buildDevMachine,
  buildKubeadmConfig,
  buildMachine,
  kubeTime,
  machineProvisioningStatus,
  nodeNameFor,
  type MachineBlueprint,
} from '../builders.js';
import { decideScale, newMachineName } from '../decisions.js';
import { type ClusterView } from '../rollout.js';
import { ExtensionConfigs, type ExtensionConfig } from '../extension-client.js';
import type { Machine } from '../../../src/api/capi/index.js';

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
/** A random 5-character name suffix from the alphabet Kubernetes uses for generated names. */
export const randomSuffix = (): string => Array.from({ length: 5 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
/** Merge patch options of the object. */
export const merge = { type: 'merge' } as const;
/** Merge patch options of the status subresource. */
export const mergeStatus = { type: 'merge', subresource: 'status' } as const;

/** Machines the simulator created and deleted since it started (remediation, scaling and rollouts alike). */
export interface SimulatorStats {
  machinesCreated: number;
  machinesDeleted: number;
  /** Machines whose in-place update completed (UpdateMachine answered done). */
  machinesUpdatedInPlace: number;
  /** UpdateMachine calls that failed (Failure answer or call error); each is retried. */
  updateMachineFailures: number;
}

/** What the simulated Cluster API does: its timing, rollout triggers and in-place flow (CapiSimulatorOptions). */
export interface SimModel {
  readyDelayMs: number;
  /** Upstream's rollout triggers (faithfulRollouts). */
  faithful: boolean;
  /** Upstream's InPlaceUpdates feature gate. */
  inPlace: boolean;
  readsAffectsAvailability?: boolean;
}

/**
 * What the simulated controllers share: the manager's caches, the client, the simulator's options and the in-flight
 * expectations (created, deleted and moved machines the caches may not show yet), with the machine lifecycle helpers
 * every owner uses (create, scale, delete with its clones and Node).
 */
export class SimWorld {
  /** Machines created but maybe not yet in the cache, per owner key. */
  readonly expectedCreates = new Map<string, Set<string>>();
  /** Machines deleted but maybe still in the cache. */
  readonly expectedDeletes = new Set<string>();
  /** When this process created a machine (ms precision; creationTimestamp only has seconds). */
  readonly createdAt = new Map<string, number>();
  /** What stats() reports. */
  readonly counters: SimulatorStats = {
    machinesCreated: 0,
    machinesDeleted: 0,
    machinesUpdatedInPlace: 0,
    updateMachineFailures: 0,
  };
  /** Machines moved to another MachineSet that the cache may still show in the old one (key → target set). */
  readonly expectedMoves = new Map<string, string>();

  readonly readyDelayMs: number;
  readonly faithful: boolean;
  readonly inPlace: boolean;
  /** The simulated Cluster API reads CanUpdate `affectsAvailability` (v1.15+): no surge for non-disruptive updates. */
  readonly readsAffectsAvailability: boolean;

  constructor(
    readonly mgr: Manager,
    readonly client: KubeClient,
    model: SimModel,
  ) {
    this.readyDelayMs = model.readyDelayMs;
    this.faithful = model.faithful;
    this.inPlace = model.inPlace;
    this.readsAffectsAvailability = model.readsAffectsAvailability ?? false;
  }

  /** The cached Cluster an owner belongs to (its paused flag and topology). */
  cluster(namespace: string | undefined, name: string | undefined): ClusterView | undefined {
    return name ? this.mgr.informer<ClusterView>(Clusters).store.peek(namespace, name) : undefined;
  }

  /** Every machine in the cache (of the manager's namespace). */
  get machines(): Machine[] {
    return this.mgr.informer<Machine>(Machines).store.list(this.mgr.namespace);
  }

  /** The cached ExtensionConfigs: the runtime extension registry the in-place flow reads. */
  get extensionConfigs(): ExtensionConfig[] {
    return this.mgr.informer<ExtensionConfig>(ExtensionConfigs).store.list(undefined);
  }

  /** A machine this process created that the cache does not show yet (see ownedMachines). */
  isPlaceholder(m: Machine): boolean {
    return m.spec.clusterName === '' && m.metadata.namespace === undefined;
  }

  /** When a machine was created, in ms when this process created it (deletion order needs sub-second precision). */
  createdAtOf(m: Machine): number {
    return this.createdAt.get(`${m.metadata.namespace}/${m.metadata.name}`) ?? (Date.parse(m.metadata.creationTimestamp ?? '') || 0);
  }

  /** Creates one machine for an owner, remembering it until the cache shows it. */
  async createOwned(ownerKey: string, blueprint: (name: string) => Promise<MachineBlueprint>): Promise<void> {
    const owner = ownerKey.split('/')[2] ?? '';
    const taken = new Set(this.machines.map((m) => m.metadata.name ?? ''));
    for (const s of this.expectedCreates.values()) for (const n of s) taken.add(n);
    const bp = await blueprint(newMachineName(owner, taken, randomSuffix));
    const pending = this.expectedCreates.get(ownerKey) ?? new Set<string>();
    pending.add(bp.name);
    this.expectedCreates.set(ownerKey, pending);
    await this.createMachine(bp);
  }

  /** The owner's machines as the cache shows them, plus created ones the cache has not seen, minus deleted ones. */
  ownedMachines(ownerKey: string, mine: (m: Machine) => boolean): Machine[] {
    const cached = this.machines.filter(mine);
    const names = new Set(cached.map((m) => m.metadata.name));
    const pending = this.expectedCreates.get(ownerKey) ?? new Set<string>();
    for (const n of [...pending]) if (names.has(n)) pending.delete(n);
    for (const n of [...this.expectedDeletes]) if (!this.machines.some((m) => m.metadata.name === n)) this.expectedDeletes.delete(n);
    const placeholders: Machine[] = [...pending].map((n) => ({
      metadata: { name: n },
      spec: { clusterName: '', bootstrap: {}, infrastructureRef: { apiGroup: '', kind: '', name: n } },
    }));
    return [...cached.filter((m) => !this.expectedDeletes.has(`${m.metadata.namespace}/${m.metadata.name}`)), ...placeholders];
  }

  /** Creates or deletes an owner's machines to reach `desired`, choosing victims by the owner's deletion order. */
  async scale(
    ownerKey: string,
    desired: number,
    machines: Machine[],
    order: 'Random' | 'Newest' | 'Oldest' | undefined,
    blueprint: (name: string) => Promise<MachineBlueprint>,
  ): Promise<void> {
    const decision = decideScale(desired, machines, order, (m) => this.createdAtOf(m));
    if (decision.create > 0 || decision.delete.length > 0)
      this.mgr.log.info(
        {
          owner: ownerKey,
          replicas: desired,
          machines: machines.length,
          create: decision.create,
          delete: decision.delete,
        },
        'capi-sim: scaling machines',
      );
    for (let i = 0; i < decision.create; i++) await this.createOwned(ownerKey, blueprint);
    for (const name of decision.delete) {
      const m = machines.find((x) => x.metadata.name === name);
      if (m) await this.deleteMachine(m);
    }
  }

  /** A template's spec.template.spec, copied (a DevMachineTemplate that does not exist yet gives the default backend). */
  async templateSpec(res: ResourceType, namespace: string | undefined, name: string): Promise<Record<string, unknown>> {
    const tpl = await this.client.get<KubeObject & { spec?: { template?: { spec?: Record<string, unknown> } } }>(res, namespace, name);
    return structuredClone(tpl?.spec?.template?.spec ?? (res === DevMachineTemplates ? { backend: { docker: {} } } : {}));
  }

  /** Creates a Machine with its DevMachine and KubeadmConfig; it becomes Running after the ready delay. */
  async createMachine(bp: MachineBlueprint): Promise<void> {
    this.createdAt.set(`${bp.namespace}/${bp.name}`, Date.now());
    const machine = await this.client.create(Machines, buildMachine(bp));
    this.counters.machinesCreated++;
    const uid = machine.metadata.uid ?? '';
    await this.createIgnoringExisting(DevMachines, buildDevMachine(bp, uid));
    await this.createIgnoringExisting(KubeadmConfigs, buildKubeadmConfig(bp, uid));
    await this.client.patch(Machines, bp.namespace, bp.name, { status: machineProvisioningStatus(kubeTime(new Date())) }, mergeStatus);
  }

  /** Creates an object unless it exists already (a retried reconcile). */
  async createIgnoringExisting(res: ResourceType, obj: KubeObject): Promise<void> {
    try {
      await this.client.create(res, obj);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** Deletes a machine and what CAPI would delete with it (its Node, DevMachine and KubeadmConfig). */
  async deleteMachine(m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    this.expectedDeletes.add(`${ns}/${name}`);
    this.counters.machinesDeleted++;
    await this.deleteIgnoringMissing(Machines, ns, name);
    await this.deleteChildren(ns, name);
  }

  /** Deletes what hangs off a machine: its Node, DevMachine and KubeadmConfig (only those it owns). */
  async deleteChildren(ns: string, name: string): Promise<void> {
    await this.deleteIgnoringMissing(
      Nodes,
      undefined,
      nodeNameFor(ns, name),
      (o) => o.metadata.annotations?.[NODE_MACHINE_ANNOTATION] === name,
    );
    await this.deleteIgnoringMissing(DevMachines, ns, name, (o) => ownedByMachine(o, name));
    await this.deleteIgnoringMissing(KubeadmConfigs, ns, name, (o) => ownedByMachine(o, name));
    this.createdAt.delete(`${ns}/${name}`);
  }

  /** Deletes an object when present and, with a guard, only when the guard accepts the live object. */
  async deleteIgnoringMissing(res: ResourceType, ns: string | undefined, name: string, guard?: (o: KubeObject) => boolean): Promise<void> {
    try {
      if (guard) {
        const o = await this.client.get(res, ns, name);
        if (!o || !guard(o)) return;
      }
      await this.client.delete(res, ns, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Patches an object (its status by default) unless it is gone already. */
  async patchIgnoringMissing(
    res: ResourceType,
    ns: string,
    name: string,
    body: unknown,
    how: typeof merge | typeof mergeStatus = mergeStatus,
  ): Promise<void> {
    try {
      await this.client.patch(res, ns, name, body, how);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Patches the status fields that differ from the object's current status; nothing when none does. */
  async patchStatusIfChanged(res: ResourceType, obj: KubeObject & { status?: unknown }, status: Record<string, unknown>): Promise<void> {
    const current = (obj.status ?? {}) as Record<string, unknown>;
    if (Object.entries(status).every(([k, v]) => JSON.stringify(current[k]) === JSON.stringify(v))) return;
    try {
      await this.client.patch(res, obj.metadata.namespace, obj.metadata.name ?? '', { status }, mergeStatus);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

const ownedByMachine = (o: KubeObject, machine: string): boolean =>
  o.metadata.ownerReferences?.some((r) => r.kind === Machines.kind && r.name === machine) ?? false;
