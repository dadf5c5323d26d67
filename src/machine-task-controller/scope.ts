// Typed view of one MachineUpdate reconcile: the MachineUpdate, its machine's state and, per updater in run
// order, the task the controller expects and what it found. Built by controller.ts, read by the pure modules.
import type { KubeObject, MachineUpdateSpec, MachineUpdateStatus } from '../api/index.js';
import { orderedUpdaters } from '../api/index.js';
import type { Task } from '../contract/index.js';

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
