// The typed snapshot one reconcile decides on, read from the informers' caches: an MHC with the machines it selects
// and their MachineUpdates, or one machine with its MachineUpdates. The objects are the caches' frozen ones (no
// per-machine copies: they cost seconds at 10k machines); the controller snapshots only what it writes. A pass over an
// MHC reads MhcIndex: kept by the caches' change events, it holds what the pass decides on (how many machines the MHC
// selects, and the few a pass looks at), so a pass costs the machines in update, not the fleet.
import { Labels, mhcSelects, type KubeObject } from '../api/index.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './decide/objects.js';
import { toLabelValue } from '../contract/index.js';
import { passMachine, type PassMachine } from './decide/pass.js';
import { machineOfUpdate } from './decide/updates.js';
import { labelSelectorMatches, type ObjectKey, type Store } from '../runtime/index.js';

export type { Machine, MachineHealthCheck, MachineUpdate } from './decide/objects.js';

/** The caches a snapshot is read from. */
export interface MhcStores {
  mhcs: Store<MachineHealthCheck>;
  machines: Store<Machine>;
  updates: Store<MachineUpdate>;
  /** InPlaceUpdatePlans: whether the plan labelling a machine exists (its unlabel restores skip-remediation). */
  plans?: Store<KubeObject>;
}

/** What one pass over an MHC decides on: the MHC, how many machines it selects, those a pass looks at, and the time. */
export interface MhcScope {
  mhc: MachineHealthCheck;
  /** Selected machines not being deleted (the remediation budget's base). */
  expected: number;
  /** The selected machines not being deleted that are marked unhealthy or in update (decide.ts PassMachine), in no order. */
  machines: readonly PassMachine[];
  /** The time the decision is taken at (injected: tests control it). */
  nowMs: number;
}

/** The MHC's snapshot, or undefined when it is gone or being deleted (nothing to do). */
export function mhcScope(index: MhcIndex, key: ObjectKey, nowMs: number): MhcScope | undefined {
  return index.scope(key, nowMs);
}

/** The machines an MHC selects (not being deleted), kept for one selection: its namespace, cluster and selector. */
interface Selection {
  signature: string;
  mhc: MachineHealthCheck;
  names: Set<string>;
}

/** What decides which machines an MHC selects. */
const selectionSignature = (mhc: MachineHealthCheck): string => `${mhc.spec.clusterName}\n${JSON.stringify(mhc.spec.selector ?? {})}`;

/**
 * What passes over MHCs decide on, kept up to date by the caches' change events (`machineChanged`, `updateChanged`,
 * fed before any controller maps the same event) and rebuilt from the caches when created: a restart decides the same.
 * Per namespace, the machines a pass looks at (PassMachine: marked unhealthy or in update, not deleting), each
 * machine's MachineUpdates (by machineOfUpdate), and per MHC the names of the machines it selects.
 */
export class MhcIndex {
  private readonly updates = new Map<string, Map<string, MachineUpdate>>();
  private readonly looked = new Map<string, Map<string, PassMachine>>();
  private readonly selections = new Map<string, Map<string, Selection>>();

  constructor(readonly stores: MhcStores) {
    for (const u of stores.updates.list()) this.addUpdate(u);
    for (const m of stores.machines.list()) this.refresh(m.metadata.namespace, m.metadata.name ?? '');
  }

  /** A Machine changed in the cache (added, updated or deleted). */
  machineChanged(m: Machine): void {
    this.refresh(m.metadata.namespace, m.metadata.name ?? '');
  }

  /** A MachineUpdate changed in the cache: `old` is the version it replaced, if any. */
  updateChanged(u: MachineUpdate, old: MachineUpdate | undefined, type: 'add' | 'update' | 'delete'): void {
    if (old) this.removeUpdate(old);
    if (type === 'delete') this.removeUpdate(u);
    else this.addUpdate(u);
    if (old && machineOfUpdate(old) !== machineOfUpdate(u)) this.refresh(old.metadata.namespace, machineOfUpdate(old));
    this.refresh(u.metadata.namespace, machineOfUpdate(u));
  }

  /** A machine's MachineUpdates (deleting ones included), by spec.machineRef (or the label). */
  updatesOf(namespace: string | undefined, machine: string): MachineUpdate[] {
    const mine = this.updates.get(`${namespace ?? ''}/${machine}`);
    return mine ? [...mine.values()] : [];
  }

  /** The MHC's snapshot (see mhcScope). */
  scope(key: ObjectKey, nowMs: number): MhcScope | undefined {
    const ns = key.namespace ?? '';
    const mhc = this.stores.mhcs.peek(key.namespace, key.name);
    if (!mhc || mhc.metadata.deletionTimestamp) {
      this.selections.get(ns)?.delete(key.name);
      return undefined;
    }
    const selected = this.selectionOf(mhc).names;
    const machines: PassMachine[] = [];
    for (const [name, p] of this.looked.get(ns) ?? []) if (selected.has(name)) machines.push(p);
    return { mhc, expected: selected.size, machines, nowMs };
  }

  /** The MHC's selection, built from the cache when new or when its selection changed. */
  private selectionOf(mhc: MachineHealthCheck): Selection {
    const ns = mhc.metadata.namespace ?? '';
    const signature = selectionSignature(mhc);
    let byName = this.selections.get(ns);
    const seen = byName?.get(mhc.metadata.name ?? '');
    if (seen && seen.signature === signature) return seen;
    const names = new Set<string>();
    for (const m of this.stores.machines.list(mhc.metadata.namespace))
      if (!m.metadata.deletionTimestamp && selects(mhc, m)) names.add(m.metadata.name ?? '');
    const sel = { signature, mhc, names };
    if (!byName) this.selections.set(ns, (byName = new Map()));
    byName.set(mhc.metadata.name ?? '', sel);
    return sel;
  }

  /** Re-derives one machine's entries from the caches as they are now. */
  private refresh(namespace: string | undefined, name: string): void {
    const ns = namespace ?? '';
    const m = this.stores.machines.peek(namespace, name);
    const live = m && !m.metadata.deletionTimestamp ? m : undefined;
    for (const sel of this.selections.get(ns)?.values() ?? []) {
      if (live && selects(sel.mhc, live)) sel.names.add(name);
      else sel.names.delete(name);
    }
    const mine = live ? [...(this.updates.get(`${ns}/${name}`)?.values() ?? [])].filter((u) => !u.metadata.deletionTimestamp) : [];
    const p = live ? passMachine(live, mine) : undefined;
    let looked = this.looked.get(ns);
    if (p) {
      if (!looked) this.looked.set(ns, (looked = new Map()));
      looked.set(name, p);
    } else if (looked?.delete(name) && looked.size === 0) this.looked.delete(ns);
  }

  private addUpdate(u: MachineUpdate): void {
    const k = `${u.metadata.namespace ?? ''}/${machineOfUpdate(u)}`;
    let mine = this.updates.get(k);
    if (!mine) this.updates.set(k, (mine = new Map()));
    mine.set(u.metadata.name ?? '', u);
  }

  private removeUpdate(u: MachineUpdate): void {
    const k = `${u.metadata.namespace ?? ''}/${machineOfUpdate(u)}`;
    const mine = this.updates.get(k);
    if (mine?.delete(u.metadata.name ?? '') && mine.size === 0) this.updates.delete(k);
  }
}

/** What the restore of one machine's skip-remediation decides on: the machine, its MachineUpdates, whether its plan exists. */
export interface MachineUpdatesScope {
  machine: Machine;
  updates: readonly MachineUpdate[];
  /** The plan whose label the machine carries exists (undefined plans store: unknown, taken as gone). */
  planExists: boolean;
}

/** True when a plan whose label value is `label` exists in the namespace (short names are their own label value). */
export function planLabelExists(plans: Store<KubeObject> | undefined, namespace: string | undefined, label: string | undefined): boolean {
  if (!plans || label === undefined) return false;
  const byName = plans.peek(namespace, label);
  if (byName && toLabelValue(byName.metadata.name ?? '') === label) return true;
  // A longer name is shortened with a hash to the label value's maximum length: only then is a scan needed.
  return label.length >= 63 && plans.list(namespace).some((p) => toLabelValue(p.metadata.name ?? '') === label);
}

/** A machine's MachineUpdates from the cache (the label holds the label-safe form of the name; decide checks machineRef). */
export const updatesOfMachine = (updates: Store<MachineUpdate>, namespace: string | undefined, name: string): MachineUpdate[] =>
  updates.byLabel(Labels.machineName, toLabelValue(name), namespace);

/** The machine's snapshot, or undefined when it is gone or being deleted. */
export function machineUpdatesScope(
  stores: Pick<MhcStores, 'machines' | 'updates' | 'plans'>,
  key: ObjectKey,
): MachineUpdatesScope | undefined {
  const machine = stores.machines.peek(key.namespace, key.name);
  if (!machine || machine.metadata.deletionTimestamp) return undefined;
  const planExists = planLabelExists(stores.plans, key.namespace, machine.metadata.labels?.[Labels.planName]);
  return { machine, updates: updatesOfMachine(stores.updates, key.namespace, key.name), planExists };
}

/**
 * True when the MHC selects the machine: same cluster, and its selector matches the machine's labels (an unparsable
 * selector selects nothing). The rule is src/api's mhcSelects, shared with the plan controller.
 */
export const selects = (mhc: MachineHealthCheck, m: KubeObject & { spec?: { clusterName?: string } }): boolean =>
  mhcSelects(mhc, m, labelSelectorMatches);
