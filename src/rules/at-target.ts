// Machines already at target (issue 15): a machine whose Machine / InfraMachine / BootstrapConfig objects already
// carry every value its target's responsibilities would commit is counted as updated without a MachineUpdate, so a
// retry plan does not re-run updaters on hosts that are done. Same check as the commit's read-back (verifyValues).
// Pure: the objects come from the snapshot; the plan controller and the preview compute it alike.
import type { InPlaceUpdatePlan, KubeObject, PlanUpdater, PreviousValue, Responsibility } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import { isDeleting, machineBootstrapRef, machineInfraRef, nameOf } from '../api/capi/index.js';
import { verifyValues, type PointerValue } from '../runtime/pure/set-patch.js';
import { getPointer } from '../runtime/pure/jsonpointer.js';
import { targetKey, targetOfMachine } from './machines.js';
import { Labels } from '../api/index.js';
import { JSON_POINTER, targetsOf } from './validate.js';

/** Looks up the object a Machine's reference names: undefined when it is not known (not listed, not found). */
export type RefLookup = (namespace: string, ref: ContractRef) => KubeObject | undefined;

/** The responsibilities of a target per selectResource, or undefined when the target cannot be at target by values. */
export function targetValues(
  updaters: readonly PlanUpdater[] | undefined,
): Map<Responsibility['selectResource'], PointerValue[]> | undefined {
  if (!Array.isArray(updaters) || updaters.length === 0) return undefined;
  const out = new Map<Responsibility['selectResource'], PointerValue[]>();
  for (const u of updaters) {
    const resps = Array.isArray(u.responsibilities)
      ? u.responsibilities.filter((r: Responsibility) => typeof r.path === 'string' && JSON_POINTER.test(r.path) && r.value !== undefined)
      : [];
    // An updater that declares no value does something values cannot show (a reboot, a manual step): never skipped.
    if (resps.length === 0) return undefined;
    for (const r of resps) {
      let list = out.get(r.selectResource);
      if (!list) out.set(r.selectResource, (list = []));
      list.push({ path: r.path, value: r.value });
    }
  }
  return out;
}

/** True when every value of `values` is held by the machine's objects (an object that cannot be looked up holds none). */
export function machineAtTarget(
  m: KubeObject,
  values: ReadonlyMap<Responsibility['selectResource'], PointerValue[]>,
  lookup: RefLookup,
): boolean {
  const ns = m.metadata.namespace ?? '';
  for (const [sel, items] of values) {
    let obj: KubeObject | undefined;
    if (sel === 'Machine') obj = m;
    else {
      const ref = sel === 'InfraMachine' ? machineInfraRef(m) : machineBootstrapRef(m);
      obj = ref ? lookup(ns, ref) : undefined;
    }
    if (!obj || verifyValues(obj, items).length > 0) return false;
  }
  return true;
}

/** Most bytes of a MachineUpdate's recorded previous values (spec.previous, paths included); past it none is recorded. */
export const MAX_PREVIOUS_BYTES = 64 * 1024;

/**
 * spec.previous of a new MachineUpdate: the value each responsibility's path holds now in the machine's objects
 * (JSON-encoded; no value when the path does not exist), so that a commit to one object still at those values needs no
 * journal write (contract C8). An object that cannot be looked up (no `lookup`, not in cache) gets no entries; undefined
 * when nothing is known or the values would exceed MAX_PREVIOUS_BYTES (then every commit is journaled, as before).
 */
export function previousValues(
  m: KubeObject | undefined,
  updaters: readonly PlanUpdater[],
  lookup?: RefLookup,
): PreviousValue[] | undefined {
  if (!m) return undefined;
  const ns = m.metadata.namespace ?? '';
  const out = new Map<string, PreviousValue>();
  let bytes = 0;
  for (const u of updaters) {
    for (const r of u.responsibilities ?? []) {
      const key = JSON.stringify([r.selectResource, r.path]);
      if (out.has(key)) continue;
      let obj: KubeObject | undefined = m;
      if (r.selectResource !== 'Machine') {
        const ref = r.selectResource === 'InfraMachine' ? machineInfraRef(m) : machineBootstrapRef(m);
        obj = ref && lookup ? lookup(ns, ref) : undefined;
      }
      if (!obj) continue;
      let now: unknown;
      try {
        now = getPointer(obj, r.path);
      } catch {
        // Steps through a non-object: the path does not exist.
        now = undefined;
      }
      const value = now === undefined ? undefined : JSON.stringify(now);
      bytes += Buffer.byteLength(value ?? '', 'utf8') + Buffer.byteLength(r.path, 'utf8');
      if (bytes > MAX_PREVIOUS_BYTES) return undefined;
      out.set(key, { selectResource: r.selectResource, path: r.path, ...(value === undefined ? {} : { value }) });
    }
  }
  return out.size > 0 ? [...out.values()] : undefined;
}

/** The selectResources other than Machine that the plan's values live on (the objects the snapshot must provide). */
export function referencedKinds(plan: InPlaceUpdatePlan, machines: readonly KubeObject[]): ContractRef[] {
  const sels = new Set<string>();
  for (const t of targetsOf(plan)) for (const sel of targetValues(t.target?.updaters)?.keys() ?? []) sels.add(sel);
  // Values on the Machine only (a version rollout): no reference to read, no pass over every machine per reconcile.
  if (!sels.has('InfraMachine') && !sels.has('BootstrapConfig')) return [];
  const kinds = new Map<string, ContractRef>();
  for (const m of machines) {
    for (const ref of [
      sels.has('InfraMachine') ? machineInfraRef(m) : undefined,
      sels.has('BootstrapConfig') ? machineBootstrapRef(m) : undefined,
    ]) {
      if (ref) kinds.set(`${ref.apiGroup}/${ref.kind}`, ref);
    }
  }
  return [...kinds.values()];
}

/** The values a machine of a target is checked against (targetValues of the target's updaters). */
export type TargetValues = ReadonlyMap<Responsibility['selectResource'], PointerValue[]>;

/** The values of each of the plan's targets that can be at target by values, by targetKey. */
export function valuesByTargetOf(plan: InPlaceUpdatePlan): Map<string, TargetValues> {
  const out = new Map<string, TargetValues>();
  for (const t of targetsOf(plan)) {
    if (typeof t.target?.name !== 'string') continue;
    const values = targetValues(t.target.updaters);
    if (values) out.set(targetKey(t.kind, t.target.name), values);
  }
  return out;
}

/** The values a machine is checked against, or undefined when it is not a candidate (another cluster, no target by values). */
export function candidateValues(
  m: KubeObject,
  clusterName: string,
  valuesByTarget: ReadonlyMap<string, TargetValues>,
): TargetValues | undefined {
  if (m.metadata.labels?.[Labels.clusterName] !== clusterName) return undefined;
  const k = targetOfMachine(m);
  return k === undefined ? undefined : valuesByTarget.get(k);
}

/**
 * Names of the current machines of the plan's targets that are already at target (sorted). `exclude` are machines the
 * plan already has a MachineUpdate for (their record decides, not their objects). The plan controller answers the
 * unchanged machines from its cache (src/plan-controller/cache/at-target.ts: same answers).
 */
export function machinesAtTarget(
  plan: InPlaceUpdatePlan,
  machines: readonly KubeObject[],
  lookup: RefLookup,
  exclude: ReadonlySet<string> = new Set(),
): string[] {
  const valuesByTarget = valuesByTargetOf(plan);
  const out: string[] = [];
  if (valuesByTarget.size === 0) return out;
  for (const m of machines) {
    const name = nameOf(m);
    if (exclude.has(name)) continue;
    const values = candidateValues(m, plan.spec.clusterName, valuesByTarget);
    if (values && !isDeleting(m) && machineAtTarget(m, values, lookup)) out.push(name);
  }
  return out.sort();
}
