// machinesByTarget (rules/machines.ts) through the plan's cache: the last grouping patched for the machines replaced in
// place, else grouped afresh with each group's sort by name reused while its machines are the same objects (or the
// same names) in the same input order (the store keeps a bucket's order, store.ts). The lists are frozen: they are
// shared with the next reconciles (and a target's cached evaluation sees the same list when nothing in it changed).
import type { KubeObject } from '../../api/index.js';
import { nameOf } from '../../api/capi/index.js';
import { byName, groupByTarget, groupOf } from '../../rules/machines.js';
import { sameRefs } from '../../rules/lists.js';
import type { PlanCache } from './plan-cache.js';
import { machinesChangedAt } from './plan-cache.js';

/** machinesByTarget(clusterName, machines) through the cache (see the file comment). */
export function groupsThrough(cache: PlanCache, clusterName: string, machines: readonly KubeObject[]): Map<string, KubeObject[]> {
  const patched = patchGroups(cache, clusterName, machines);
  if (patched) return patched;
  if (cache.groupsCluster !== clusterName) {
    cache.groups.clear();
    cache.groupsCluster = clusterName;
  }
  const out = new Map<string, KubeObject[]>();
  for (const [key, list] of groupByTarget(clusterName, machines)) out.set(key, sortedGroup(cache, key, list));
  for (const key of cache.groups.keys()) if (!out.has(key)) cache.groups.delete(key);
  const where = new Map<string, readonly [string, number]>();
  for (const [key, list] of out) list.forEach((m, i) => where.set(nameOf(m), [key, i]));
  cache.byTarget = { cluster: clusterName, machines, out, where };
  return out;
}

/**
 * The last grouping patched for the machines replaced in place (same names at the same positions, none added or
 * removed, each still in its group): only their groups are copied, the others are the same arrays as last time.
 * Undefined when that does not hold: the caller groups them all again.
 */
function patchGroups(cache: PlanCache, clusterName: string, machines: readonly KubeObject[]): Map<string, KubeObject[]> | undefined {
  const prev = cache.byTarget;
  if (!prev || prev.cluster !== clusterName || prev.machines.length !== machines.length) return undefined;
  // Same length: changedAt's positions are machines replaced in place (a removal or a move gives undefined).
  const changed = machinesChangedAt(cache, prev.machines, machines);
  if (!changed) return undefined;
  const copies = new Map<string, KubeObject[]>();
  for (const i of changed) {
    const m = machines[i]!;
    const old = prev.machines[i]!;
    const name = nameOf(m);
    const key = groupOf(clusterName, m);
    if (key !== groupOf(clusterName, old)) return undefined;
    if (key === undefined) continue;
    const at = prev.where.get(name);
    if (!at || at[0] !== key) return undefined;
    let copy = copies.get(key);
    if (!copy) copies.set(key, (copy = [...prev.out.get(key)!]));
    copy[at[1]] = m;
  }
  const out = new Map(prev.out);
  // Frozen like sortedGroup's lists: shared with the next reconciles.
  for (const [key, copy] of copies) out.set(key, Object.freeze(copy) as KubeObject[]);
  cache.byTarget = { cluster: clusterName, machines, out, where: prev.where };
  return out;
}

/** A group sorted by name, its sort reused (see the file comment). */
function sortedGroup(cache: PlanCache, key: string, input: KubeObject[]): KubeObject[] {
  const prev = cache.groups.get(key);
  if (prev && sameRefs(prev.input, input)) return prev.sorted;
  let perm: number[];
  if (prev && prev.input.length === input.length && input.every((m, i) => nameOf(m) === nameOf(prev.input[i]!))) perm = [...prev.perm];
  else perm = input.map((_, i) => i).sort((a, b) => byName(nameOf(input[a]!), nameOf(input[b]!)));
  // Frozen: the list is shared with the next reconciles, a caller that sorted or pushed into it would corrupt them.
  const sorted = Object.freeze(perm.map((i) => input[i]!)) as KubeObject[];
  cache.groups.set(key, { input, perm, sorted });
  return sorted;
}
