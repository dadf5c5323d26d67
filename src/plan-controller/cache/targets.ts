// targetScope's inputs and evaluateTargets (decide/targets.ts) through the plan's cache: the machines grouped by
// target (groups.ts), the rollout's updates per target patched for the names that changed, and each target's
// evaluation reused while every input it read is the same object (its plan generation, mode and place in the
// sequence, its owner, its machines, their updates and at-target membership, its updates). A target whose machines
// and updates did not change is not read again: a reconcile costs the targets that changed.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import { nameOf } from '../../api/capi/index.js';
import { OverlayMap } from '../../rules/gates.js';
import { sameRefs } from '../../rules/lists.js';
import { targetKey } from '../../rules/machines.js';
import type { NamedTarget } from '../../rules/validate.js';
import { deepFreeze } from '../../runtime/pure/freeze.js';
import type { PlanStance } from '../decide/mode.js';
import type { EvaluatedTarget, ScopeInputs } from '../decide/targets.js';
import { evalTarget, groupTargetMus, inSequence, planTargets, targetOfMu, withSoakNotes } from '../decide/targets.js';
import type { Mode, TargetEval, TargetScope } from '../decide/types.js';
import type { PlanSnapshot } from '../scope.js';
import { groupsThrough } from './groups.js';
import type { PlanCache } from './plan-cache.js';

/**
 * scopeInputs(snap, s) through the cache. Kept on the side: the machines whose update counts under another target than
 * theirs (labels changed since); only the updates and machines that are new objects (cache.delta) are looked at again.
 */
export function scopeInputsThrough(snap: PlanSnapshot, s: PlanStance, cache: PlanCache): ScopeInputs {
  const cluster = snap.plan.spec.clusterName;
  const crossOf = (name: string): boolean => {
    const mu = s.rolloutMus.get(name);
    return !!mu && targetOfMu(cluster, s.machineByName.get(name), mu.spec.target.kind, mu.spec.target.name);
  };
  const delta = cache.delta;
  if (delta && cache.cross) {
    const names = new Set<string>();
    for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
    for (const i of delta.machines) names.add(snap.machines[i]!.metadata.name ?? '');
    for (const n of cache.cross) names.add(n);
    for (const n of names) {
      if (crossOf(n)) cache.cross.add(n);
      else cache.cross.delete(n);
    }
  } else {
    cache.cross = new Set<string>();
    for (const mu of s.rolloutMus.values()) if (crossOf(mu.spec.machineRef.name)) cache.cross.add(mu.spec.machineRef.name);
  }
  const targetMus = patchTargetMus(snap, s, cache) ?? recordTargetMus(s, cache);
  return { machines: groupsThrough(cache, cluster, snap.machines), targetMus };
}

/** groupTargetMus, recorded for the patch of the next decision. */
function recordTargetMus(s: PlanStance, cache: PlanCache): Map<string, MachineUpdate[]> {
  const targetMus = groupTargetMus(s);
  const where = new Map<string, readonly [string, number]>();
  for (const [key, list] of targetMus) list.forEach((mu, i) => where.set(mu.spec.machineRef.name, [key, i]));
  // The soak gate's substitutes (held, failed): read again next time, whether or not their update changed.
  const subst = new Set<string>();
  // The soak gate's overlay names them (every override is a new object); any other map is compared in full.
  if (s.rolloutMus instanceof OverlayMap && s.rolloutMus.base === s.mus) for (const n of s.rolloutMus.overrides.keys()) subst.add(n);
  else if (s.rolloutMus !== s.mus) for (const [n, mu] of s.rolloutMus) if (s.mus.get(n) !== mu) subst.add(n);
  cache.targetMus = { own: s.mus, lists: targetMus, where, subst };
  return targetMus;
}

/**
 * groupTargetMus patched from the last decision's answer for the names whose entry may differ (cache.delta's updates, the
 * names the soak gate read, the soak's substitutes of last time): the lists of their targets are copied and changed,
 * every other list is the same array as last time (evalThrough sees it unchanged at once). The names outside that
 * set hold the same objects (their update is the same object and no gate replaced it). Undefined (group afresh) on
 * the first decision, without a delta, when the plan's update map was rebuilt (its order may differ), or when an
 * update now names another target.
 */
function patchTargetMus(snap: PlanSnapshot, s: PlanStance, cache: PlanCache): Map<string, MachineUpdate[]> | undefined {
  const last = cache.targetMus;
  const delta = cache.delta;
  const read = cache.soakRead;
  // The same map object: ownUpdates patched it in place (existing names keep their order, new ones come last).
  if (!last || !delta || !read || last.own !== s.mus) return undefined;
  // The snapshot's changed updates first, in position order: the only source of new names, appended in map order.
  const names = new Set<string>();
  for (const i of delta.mus) names.add(snap.machineUpdates[i]!.spec.machineRef.name);
  for (const n of last.subst) names.add(n);
  for (const n of read) names.add(n);
  const lists = new Map(last.lists);
  const copied = new Set<MachineUpdate[]>();
  const own = (key: string): MachineUpdate[] => {
    const list = lists.get(key);
    if (list && copied.has(list)) return list;
    const c = list ? [...list] : [];
    copied.add(c);
    lists.set(key, c);
    return c;
  };
  const where = last.where as Map<string, readonly [string, number]>;
  const added: [string, readonly [string, number]][] = [];
  for (const n of names) {
    const mu = s.rolloutMus.get(n);
    const at = where.get(n);
    if (!mu) {
      if (at) return undefined; // gone from the plan's updates (not a patch the store makes, but never trusted)
      continue;
    }
    const key = targetKey(mu.spec.target.kind, mu.spec.target.name);
    if (!at) {
      const list = own(key);
      added.push([n, [key, list.push(mu) - 1]]);
      continue;
    }
    if (at[0] !== key) return undefined;
    if (last.lists.get(key)![at[1]] !== mu) own(key)[at[1]] = mu;
  }
  for (const [n, at] of added) where.set(n, at);
  for (const n of names) {
    const mu = s.rolloutMus.get(n);
    if (mu && s.mus.get(n) !== mu) last.subst.add(n);
    else last.subst.delete(n);
  }
  cache.targetMus = { own: s.mus, lists, where, subst: last.subst };
  return lists;
}

/**
 * evaluateTargets(scope, s) through the cache: a target whose inputs are all the same objects as last time keeps its
 * evaluation (evalThrough).
 */
export function evaluateThrough(scope: TargetScope, s: PlanStance, cache: PlanCache): EvaluatedTarget[] {
  const crossTarget = (cache.cross?.size ?? 0) > 0;
  // The fast path of evalThrough holds when this decision and the last one both had every update counted under its
  // own target: a target's updates then cover what its machines' lookups would read. The at-target set is compared
  // per target: the targets of the machines that joined or left it since the last decision are not fast.
  cache.atDirty = atTargetDirty(scope, cache);
  cache.fast = !crossTarget && cache.lastCrossFree === true && cache.atDirty !== undefined;
  cache.lastCrossFree = !crossTarget;
  cache.lastAtTarget = scope.atTarget;
  // One name index of the MachineDeployments per decision (a search per target was O(targets²)).
  cache.mdByName = new Map();
  for (const o of scope.snap.machineDeployments) if (!cache.mdByName.has(nameOf(o))) cache.mdByName.set(nameOf(o), o);
  const targets = planTargets(scope.snap.plan);
  const ordered = inSequence(targets, (t, reached) => evalThrough(cache, scope, t, s.mode, reached));
  const keys = new Set(targets.map((t) => targetKey(t.kind, t.target.name)));
  for (const key of cache.targets.keys()) if (!keys.has(key)) cache.targets.delete(key);
  return withSoakNotes(ordered, s);
}

/**
 * The target keys whose machines' at-target membership may differ from the last decision's: the groups
 * (machinesByTarget, this decision's) of the names in one set and not the other. A name in no group is in no target's
 * machine list now, so a target that listed it last time has another list (no cache hit). Undefined (every target) on
 * the first decision or when the grouping's name index is not one-to-one (two machines of one name).
 */
function atTargetDirty(scope: TargetScope, cache: PlanCache): Set<string> | undefined {
  const last = cache.lastAtTarget;
  const byTarget = cache.byTarget;
  if (!last || !byTarget || byTarget.out !== scope.machines) return undefined;
  let grouped = 0;
  for (const list of byTarget.out.values()) grouped += list.length;
  if (grouped !== byTarget.where.size) return undefined;
  const dirty = new Set<string>();
  const mark = (name: string): void => {
    const at = byTarget.where.get(name);
    if (at) dirty.add(at[0]);
  };
  const now = scope.atTarget;
  if (now === last) return dirty;
  for (const n of now) if (!last.has(n)) mark(n);
  for (const n of last) if (!now.has(n)) mark(n);
  return dirty;
}

/** The target's object as sizeTarget reads it (the first MachineDeployment of its name, as its search). */
function ownerOf(scope: TargetScope, t: NamedTarget, cache: PlanCache): KubeObject | undefined {
  if (t.kind === 'ControlPlane') return scope.snap.controlPlane?.object;
  return cache.mdByName?.get(t.target.name) ?? scope.snap.machineDeployments.find((o) => nameOf(o) === t.target.name);
}

/**
 * evalTarget through the cache. Its inputs: the plan (uid, generation: the target's spec, failure policy), the mode and
 * whether the sequence reached the target, the target's object, its machines, each machine's MachineUpdate and
 * at-target membership, and the target's MachineUpdates; all compared by identity, position by position. No clock.
 */
function evalThrough(cache: PlanCache, scope: TargetScope, t: NamedTarget, mode: Mode, reached: boolean): TargetEval {
  const plan = scope.snap.plan;
  const generation = plan.metadata?.generation;
  if (generation === undefined) return evalTarget(scope, t, mode, reached);
  const tk = targetKey(t.kind, t.target.name);
  const key = `${plan.metadata?.uid ?? ''}/${generation}/${scope.planName}/${mode}/${reached}`;
  const owner = ownerOf(scope, t, cache);
  const machines = scope.machines.get(tk) ?? [];
  const targetMus = scope.targetMus.get(tk) ?? [];
  const prev = cache.targets.get(tk);
  let hit =
    prev !== undefined &&
    prev.key === key &&
    prev.owner === owner &&
    sameRefs(prev.machines, machines) &&
    sameRefs(prev.targetMus, targetMus);
  // Fast path (see evaluateTargets): the same machines and the same updates of the target read the same records, so no
  // per-machine lookup; the entry's per-machine inputs stay those it was derived from (they are unchanged).
  if (hit && cache.fast && !cache.atDirty!.has(tk)) {
    cache.stats.targetHits++;
    return { ...prev!.ev, row: { ...prev!.ev.row } };
  }
  const mus: (MachineUpdate | undefined)[] = new Array<MachineUpdate | undefined>(machines.length);
  const atTarget: boolean[] = new Array<boolean>(machines.length);
  for (let i = 0; i < machines.length; i++) {
    const name = nameOf(machines[i]!);
    mus[i] = scope.mus.get(name);
    atTarget[i] = scope.atTarget.has(name);
    if (hit && (mus[i] !== prev!.mus[i] || atTarget[i] !== prev!.atTarget[i])) hit = false;
  }
  let ev: TargetEval;
  if (hit) {
    cache.stats.targetHits++;
    ev = prev!.ev;
  } else {
    cache.stats.targetMisses++;
    ev = deepFreeze(evalTarget(scope, t, mode, reached));
  }
  cache.targets.set(tk, { key, owner, machines, mus, atTarget, targetMus, ev });
  // The row is the caller's to annotate (soak notes, status); the rest is read-only.
  return { ...ev, row: { ...ev.row } };
}
