// decideStance's inputs (decide/mode.ts StanceInputs) through the plan's cache: this decision's changes against the
// last one (soakCandidates, the delta every other cached pass reads), the plan's updates by machine and the machines
// by name patched for what changed, the soak gate reading only the updates whose answer may differ, and validation
// (validation.ts). Each equals what stanceInputs derives from the snapshot alone.
import type { KubeObject, MachineUpdate } from '../../api/index.js';
import { UpdateStatus } from '../../api/index.js';
import type { SoakFacts, SoakView } from '../../rules/gates.js';
import { soakFacts, soakGate, soakSettings } from '../../rules/gates.js';
import { changedAt } from '../../rules/lists.js';
import type { StanceInputs } from '../decide/mode.js';
import type { PlanSnapshot } from '../scope.js';
import type { PlanCache } from './plan-cache.js';
import { machinesChangedAt, musChangedAt } from './plan-cache.js';
import { validationThrough } from './validation.js';

/** stanceInputs(snap) through the cache (see the file comment). */
export function stanceInputsThrough(snap: PlanSnapshot, cache: PlanCache): StanceInputs {
  const plan = snap.plan;
  const planName = plan.metadata?.name ?? '';
  const generation = plan.metadata?.generation;
  const soakKey = JSON.stringify([plan.metadata?.uid, generation, planName, plan.status?.gateFailures ?? []]);
  cache.delta = cache.soakRead = undefined;
  // First: its scan of the lists against the last decision's (cache.delta) serves ownUpdates, machineIndex and the rest.
  const only = generation !== undefined ? soakCandidates(cache, soakKey, snap.machineUpdates, snap.machines) : undefined;
  const mus = ownUpdates(snap.machineUpdates, planName, cache);
  const machineByName = machineIndex(snap.machines, cache);
  const soak = soakThrough(snap, mus, machineByName, only, cache);
  return { mus, machineByName, soak, validation: validationThrough(snap, cache) };
}

/**
 * The soak gate over `only` (the names whose answer may differ from the last decision's; undefined: every update) and
 * the names it left open last time, with each pair's time-independent facts kept per MachineUpdate object.
 */
function soakThrough(
  snap: PlanSnapshot,
  mus: ReadonlyMap<string, MachineUpdate>,
  machineByName: ReadonlyMap<string, KubeObject>,
  only: readonly string[] | undefined,
  cache: PlanCache,
): SoakView {
  const kubelet = soakSettings(snap.plan).verifying;
  const facts = new Map<string, SoakFacts>();
  const failed = new Set((snap.plan.status?.gateFailures ?? []).map((f) => f.machine));
  for (const name of only ?? mus.keys()) {
    const mu = mus.get(name);
    const machine = machineByName.get(name);
    if (!mu || !machine || failed.has(name) || mu.status?.updateStatus !== UpdateStatus.updated) continue;
    const cached = cache.soak.get(mu);
    if (cached && cached.machine === machine && cached.kubelet === kubelet) facts.set(name, cached);
    else {
      const f = soakFacts(mu, machine, kubelet);
      cache.soak.set(mu, { machine, kubelet, ...f });
      facts.set(name, f);
    }
  }
  const view = soakGate(snap.plan, mus, snap.machines, new Date(snap.now), { machineByName, names: only, open: cache.soakOpen, facts });
  cache.soakOpen = view.open;
  return view;
}

/**
 * The name index of the snapshot's machines: the last index patched for the machines whose object changed (same names
 * at the same positions), instead of rebuilt for every machine.
 */
export function machineIndex(machines: readonly KubeObject[], cache: PlanCache): ReadonlyMap<string, KubeObject> {
  const prev = cache.byName;
  if (prev && prev.machines.length === machines.length) {
    // Same length: changedAt's positions are machines replaced in place (names moved: undefined, rebuilt).
    const changed = machinesChangedAt(cache, prev.machines, machines);
    if (changed) {
      for (const i of changed) prev.map.set(machines[i]!.metadata.name ?? '', machines[i]!);
      cache.byName = { machines, map: prev.map };
      return prev.map;
    }
  }
  const map = new Map(machines.map((m) => [m.metadata.name ?? '', m]));
  cache.byName = { machines, map };
  return map;
}

/**
 * The machine names the soak gate reads this decision, in the snapshot's order of updates: those it left open last
 * time and those whose update or machine is a new object. Undefined (read them all) on the first decision, when the
 * key (plan generation, recorded gate failures) changed, or when updates or machines were added or removed.
 */
export function soakCandidates(
  cache: PlanCache,
  key: string,
  mus: readonly MachineUpdate[],
  machines: readonly KubeObject[],
): string[] | undefined {
  const last = cache.soakLast;
  cache.delta = undefined;
  // The ownership filter (scope.ts) patched this list from the last decision's: its positions, no scan of the updates.
  const f = cache.ownFilter.last;
  const musChanged =
    last && last.key === key ? (f?.changed && f.out === mus && f.base === last.mus ? [...f.changed] : changedAt(last.mus, mus)) : undefined;
  const machinesChanged = musChanged && changedAt(last!.machines, machines);
  if (!musChanged || !machinesChanged) {
    // Read them all; the position of each machine's first update, for the next decisions' order.
    const position = new Map<string, number>();
    mus.forEach((mu, i) => {
      if (!position.has(mu.spec.machineRef.name)) position.set(mu.spec.machineRef.name, i);
    });
    cache.soakLast = { key, mus, machines, position };
    return (cache.soakRead = undefined);
  }
  // Same names at the same positions (and some appended): the positions still hold, the appended ones join.
  const position = last!.position as Map<string, number>;
  for (let i = last!.mus.length; i < mus.length; i++)
    if (!position.has(mus[i]!.spec.machineRef.name)) position.set(mus[i]!.spec.machineRef.name, i);
  cache.soakLast = { key, mus, machines, position };
  cache.delta = { mus: musChanged, machines: machinesChanged, baseMus: last!.mus, baseMachines: last!.machines, nextMachines: machines };
  const names = new Set(cache.soakOpen);
  for (const i of musChanged) names.add(mus[i]!.spec.machineRef.name);
  for (const i of machinesChanged) names.add(machines[i]!.metadata.name ?? '');
  const at: [number, string][] = [];
  for (const n of names) {
    const i = last!.position.get(n);
    if (i !== undefined) at.push([i, n]);
  }
  return (cache.soakRead = at.sort((a, b) => a[0] - b[0]).map(([, n]) => n));
}

/**
 * The plan's MachineUpdates by machine name (the last one in snapshot order wins). Last decision's map is
 * patched for the positions holding new objects when the list is a patch of the last (same names at the same
 * positions, some appended), instead of a map of every update built per reconcile; otherwise built afresh.
 */
export function ownUpdates(mus: readonly MachineUpdate[], planName: string, cache: PlanCache): Map<string, MachineUpdate> {
  const last = cache.own;
  const at = last && last.planName === planName ? musChangedAt(cache, last.mus, mus) : undefined;
  if (at) {
    const { map, from } = last!;
    let patched = true;
    for (const i of at) {
      const mu = mus[i]!;
      const was = last!.mus[i];
      // An update now naming another machine or plan (not a change the API allows, but the cache must not trust
      // that) leaves a stale entry behind: start over.
      if (was && (was.spec.machineRef.name !== mu.spec.machineRef.name || was.spec.planName !== mu.spec.planName)) {
        patched = false;
        break;
      }
      if (mu.spec.planName !== planName) continue;
      const name = mu.spec.machineRef.name;
      // A later position holds this machine's entry: it wins, as in the full pass.
      if ((from.get(name) ?? -1) > i) continue;
      map.set(name, mu);
      from.set(name, i);
      cache.ownTouched?.add(name);
    }
    if (patched) {
      cache.own = { planName, mus, map, from };
      return map;
    }
  }
  const map = new Map<string, MachineUpdate>();
  const from = new Map<string, number>();
  mus.forEach((mu, i) => {
    if (mu.spec.planName !== planName) return;
    map.set(mu.spec.machineRef.name, mu);
    from.set(mu.spec.machineRef.name, i);
  });
  cache.own = { planName, mus, map, from };
  cache.ownTouched = undefined;
  return map;
}
