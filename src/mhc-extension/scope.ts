// The typed snapshot one reconcile decides on, read from the informers' caches: an MHC with the machines it selects
// and their MachineUpdates, or one machine with its MachineUpdates. The objects are the caches' frozen ones (no
// per-machine copies: they cost seconds at 10k machines); the controller snapshots only what it writes.
import { Labels, type KubeObject, type MachineUpdate as MachineUpdateBody } from '../api/index.js';
import type { Machine, MachineHealthCheck } from '../api/capi/index.js';
import { toLabelValue } from '../contract/index.js';
import {
  LabelSelectorError,
  formatLabelSelector,
  matchesRequirements,
  parseSelector,
  type LabelRequirement,
  type LabelSelector,
  type ObjectKey,
  type Store,
} from '../runtime/index.js';

export type { Machine, MachineHealthCheck } from '../api/capi/index.js';

/** A MachineUpdate with its metadata. */
export type MachineUpdate = KubeObject & MachineUpdateBody;

/** The caches a snapshot is read from. */
export interface MhcStores {
  mhcs: Store<MachineHealthCheck>;
  machines: Store<Machine>;
  updates: Store<MachineUpdate>;
}

/** What one pass over an MHC decides on: the MHC, the machines it selects, their namespace's MachineUpdates, and the time. */
export interface MhcScope {
  mhc: MachineHealthCheck;
  /** Selected machines (deleting ones included: they leave the budget's count in decide). */
  machines: readonly Machine[];
  updates: readonly MachineUpdate[];
  /** The time the decision is taken at (injected: tests control it). */
  nowMs: number;
}

/** The MHC's snapshot, or undefined when it is gone or being deleted (nothing to do). */
export function mhcScope(stores: MhcStores, key: ObjectKey, nowMs: number): MhcScope | undefined {
  const mhc = stores.mhcs.peek(key.namespace, key.name);
  if (!mhc || mhc.metadata.deletionTimestamp) return undefined;
  return {
    mhc,
    machines: stores.machines.list(key.namespace).filter((m) => selects(mhc, m)),
    updates: stores.updates.list(key.namespace),
    nowMs,
  };
}

/** What the restore of one machine's skip-remediation decides on: the machine and its MachineUpdates. */
export interface MachineUpdatesScope {
  machine: Machine;
  updates: readonly MachineUpdate[];
}

/** A machine's MachineUpdates from the cache (the label holds the label-safe form of the name; decide checks machineRef). */
export const updatesOfMachine = (updates: Store<MachineUpdate>, namespace: string | undefined, name: string): MachineUpdate[] =>
  updates.byLabel(Labels.machineName, toLabelValue(name), namespace);

/** The machine's snapshot, or undefined when it is gone or being deleted. */
export function machineUpdatesScope(stores: Pick<MhcStores, 'machines' | 'updates'>, key: ObjectKey): MachineUpdatesScope | undefined {
  const machine = stores.machines.peek(key.namespace, key.name);
  if (!machine || machine.metadata.deletionTimestamp) return undefined;
  return { machine, updates: updatesOfMachine(stores.updates, key.namespace, key.name) };
}

/** Parsed selectors by their JSON form: every Machine event and every reconcile matches many machines against few MHCs. */
const parsedSelectors = new Map<string, LabelRequirement[] | null>();

/** The MHC's parsed selector, or null when it does not parse (it then selects nothing). */
function requirementsOf(mhc: MachineHealthCheck): LabelRequirement[] | null {
  const key = JSON.stringify(mhc.spec.selector ?? {});
  let reqs = parsedSelectors.get(key);
  if (reqs === undefined) {
    try {
      reqs = parseSelector(formatLabelSelector(mhc.spec.selector as LabelSelector));
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      reqs = null;
    }
    if (parsedSelectors.size > 1000) parsedSelectors.clear();
    parsedSelectors.set(key, reqs);
  }
  return reqs;
}

/** True when the MHC selects the machine: same cluster, and its selector matches the machine's labels (an unparsable selector selects nothing). */
export function selects(mhc: MachineHealthCheck, m: KubeObject & { spec?: { clusterName?: string } }): boolean {
  if (m.metadata.namespace !== mhc.metadata.namespace || m.spec?.clusterName !== mhc.spec.clusterName) return false;
  const reqs = requirementsOf(mhc);
  return reqs !== null && matchesRequirements(reqs, m.metadata.labels);
}
