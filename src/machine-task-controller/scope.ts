// Typed view of one MachineUpdate reconcile: the MachineUpdate, its machine's state and, per updater in run
// order, the task the controller expects and what it found. Built here (buildScope) from what a ScopeReader reads
// (the controller's caches), read by the pure modules; resolving and watching task kinds stay with the controller.
import type { KubeObject, MachineUpdateSpec, MachineUpdateStatus, ResourceType } from '../api/index.js';
import { apiVersionOf, orderedUpdaters } from '../api/index.js';
import { taskName, type Task } from '../contract/index.js';

/** A MachineUpdate as the controller handles it (metadata always present). */
export interface MachineUpdateObject extends KubeObject {
  spec: MachineUpdateSpec;
  status?: MachineUpdateStatus;
}

/** One updater entry of a MachineUpdate. */
export type MachineUpdateUpdater = MachineUpdateSpec['updaters'][number];

/** One row of MachineUpdate.status.tasks. */
export type TaskRow = NonNullable<MachineUpdateStatus['tasks']>[number];

/** Whether the machine under update still exists (not the MHC extension's MachineState: in update or not). */
export type MachinePresence = 'present' | 'missing' | 'deleting';

/** The presence of the Machine a MachineUpdate is for, from the cached Machine (undefined: not found). */
export const machinePresence = (machine: KubeObject | undefined): MachinePresence =>
  !machine ? 'missing' : machine.metadata.deletionTimestamp ? 'deleting' : 'present';

/** An updater in run order with its expected task and what the controller found under that name. */
export interface UpdaterView {
  updater: MachineUpdateUpdater;
  /** Deterministic task name (C9). */
  taskName: string;
  /** apiVersion and kind of the task (the generic kind, or the template kind without "Template"). */
  apiVersion: string;
  kind: string;
  /** The task this MachineUpdate controls, if it exists. */
  task?: Task;
  /** A task under the same name controlled by another MachineUpdate (e.g. an earlier plan's), if any. */
  foreign?: Task;
}

/** Everything a decision needs (the objects are the informers' frozen cached ones: read only). */
export interface Scope {
  mu: MachineUpdateObject;
  machine: MachinePresence;
  views: UpdaterView[];
}

/** The updaters of a MachineUpdate in run order (the shared rule in src/api/updaters.ts). */
export const orderedSpecUpdaters = (spec: MachineUpdateSpec): MachineUpdateUpdater[] => orderedUpdaters(spec.updaters);

/** What a scope is read from: the controller's caches, and the task resource of an updater (resolved and watched). */
export interface ScopeReader {
  /** The cached Machine, or undefined. */
  machine(namespace: string, name: string): KubeObject | undefined;
  /** The task resource of an updater; throws when its kind is refused or cannot be resolved yet. */
  taskResource(u: MachineUpdateUpdater): Promise<ResourceType>;
  /** The cached task of that resource, or undefined. */
  task(res: ResourceType, namespace: string, name: string): Task | undefined;
}

/** The scope of one MachineUpdate: its machine's presence and, per updater in run order, the task found under its name. */
export async function buildScope(reader: ScopeReader, mu: MachineUpdateObject): Promise<Scope> {
  const ns = mu.metadata.namespace!;
  const machine = reader.machine(ns, mu.spec.machineRef.name);
  const views: UpdaterView[] = [];
  for (const u of orderedSpecUpdaters(mu.spec)) {
    const res = await reader.taskResource(u);
    const name = taskName(mu.spec.planName, mu.spec.machineRef.name, u.name);
    const found = reader.task(res, ns, name);
    const view: UpdaterView = { updater: u, taskName: name, apiVersion: apiVersionOf(res), kind: res.kind };
    if (found) {
      const ownerUid = found.metadata.ownerReferences?.find((r) => r.controller)?.uid;
      if (ownerUid === mu.metadata.uid) view.task = found;
      else view.foreign = found;
    }
    views.push(view);
  }
  return { mu, machine: machinePresence(machine), views };
}
