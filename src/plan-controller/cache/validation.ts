// Validation through the plan's cache: the problems that do not read the machines (the schema, the named objects, the
// updaters) reused while the plan's generation and every fact they read are the same (rules/validate.ts
// validationFacts); the upgrade rules reused while what they read of every machine is the same, and otherwise re-run
// over the machines that changed (their grouping patched, each target's check kept while its machines are the same
// objects). Parsing a 200-target spec and checking its updaters every reconcile was an eighth of the plan controller's
// CPU at 10,003 machines, for an answer that changes only with the spec or the objects it names.
import { cpVersion } from '../../api/capi/index.js';
import type { UpgradeInput } from '../../rules/upgrade-rules.js';
import type { KubeObject } from '../../api/index.js';
import type { Grouping, TargetCheck, UpgradeGiven } from '../../rules/upgrade-rules.js';
import {
  VersionReader,
  checkHolds,
  firstOutsideSkew,
  groupAll,
  patchGrouping,
  sameUpgradeFacts,
  targetCheck,
  upgradeProblems,
  versionKey,
} from '../../rules/upgrade-rules.js';
import { sameRefs } from '../../rules/lists.js';
import type { ValidationInput } from '../../rules/inputs.js';
import { joinProblems, machineFreeProblems, validationFacts } from '../../rules/validate.js';
import type { PlanCache, UpgradeChecks } from './plan-cache.js';
import { machinesChangedAt } from './plan-cache.js';

/** validatePlan(input) through the cache (see the file comment). */
export function validationThrough(input: ValidationInput, cache: PlanCache): string[] {
  const { head, tail } = machineFreeThrough(input, cache);
  const upgrade = input.machines
    ? upgradeProblemsThrough({ plan: input.plan, machines: input.machines, controlPlane: input.controlPlane?.object }, cache)
    : [];
  return joinProblems(head, upgrade, tail);
}

/** machineFreeProblems, reused while the plan's generation, validationFacts and the objects it reads are the same. */
function machineFreeThrough(input: ValidationInput, cache: PlanCache): { head: readonly string[]; tail: readonly string[] } {
  const generation = input.plan.metadata?.generation;
  if (generation === undefined) return machineFreeProblems(input);
  const key = validationFacts(input, generation);
  const refs = [input.writePolicy, input.prestart, ...input.templates.map((t) => t.task?.crd)];
  const prev = cache.validation;
  if (prev && prev.key === key && prev.refs.length === refs.length && prev.refs.every((r, i) => r === refs[i])) {
    cache.stats.validationHits++;
    return prev;
  }
  cache.stats.validationMisses++;
  const out = machineFreeProblems(input);
  cache.validation = { key, refs, ...out };
  return out;
}

/**
 * upgradeProblems through the plan's cache: reused while the plan's generation, the control plane's version and
 * what the rules read of every machine (position by position; only the machines whose object changed are compared) are
 * unchanged. Every machine progress event replaced a few machines, and the rules re-read all of them each reconcile.
 */
export function upgradeProblemsThrough(input: UpgradeInput, cache: PlanCache): string[] {
  const generation = input.plan.metadata?.generation;
  if (generation === undefined) return upgradeProblems(input);
  const key = JSON.stringify([
    input.plan.metadata?.uid,
    generation,
    input.controlPlane ? (cpVersion(input.controlPlane) ?? null) : undefined,
  ]);
  const prev = cache.upgrade;
  // Only the positions holding new objects are compared (a pass of reference checks finds them).
  const at = prev && prev.key === key ? machinesChangedAt(cache, prev.machines, input.machines) : undefined;
  if (at) {
    let same = true;
    for (let k = 0; k < at.length && same; k++) {
      const i = at[k]!;
      if (i >= prev!.machines.length || !sameUpgradeFacts(input.machines[i]!, prev!.machines[i]!)) same = false;
    }
    if (same) {
      cache.stats.upgradeHits++;
      // The grouping stands for these machines too (same facts at every changed position; its lists may hold the
      // older objects, which read the same), so the next miss compares against them once more, not twice.
      const g = cache.upgradeGroups?.key === key ? cache.upgradeGroups.grouping : undefined;
      if (g && g.machines === prev!.machines) cache.upgradeGroups!.grouping = { ...g, machines: input.machines };
      // The machines compared next time are these (their facts are the same as those the problems came from).
      cache.upgrade = { key, machines: input.machines, problems: prev!.problems };
      return [...prev!.problems];
    }
  }
  cache.stats.upgradeMisses++;
  if (cache.upgradeGroups?.key !== key) cache.upgradeGroups = { key, targets: new Map(), skew: new Map() };
  const u = cache.upgradeGroups;
  // A miss costs the changed machines and their targets: the grouping is patched (copying only the changed groups, so
  // every other target's check and skew answer is reused by identity), not rebuilt from the fleet.
  const cluster = input.plan.spec.clusterName;
  const cpName = input.plan.spec.controlPlane?.name;
  const g = u.grouping;
  if (g && g.cluster === cluster && g.cpName === cpName)
    u.grouping = patchGrouping(g, input.machines, g.machines === prev?.machines && at ? at : undefined);
  if (u.grouping?.machines !== input.machines || u.grouping.cluster !== cluster || u.grouping.cpName !== cpName)
    u.grouping = groupAll(input.machines, cluster, cpName);
  const grouping = u.grouping;
  const versions = new VersionReader();
  const given = upgradeChecksThrough(input, u, grouping, versions);
  const problems = upgradeProblems(input, given, versions);
  cache.upgrade = { key, machines: input.machines, problems: [...problems] };
  return problems;
}

/**
 * The per-target checks upgradeProblems is handed: each target's check kept while its value and machines are the same
 * (a finished machine re-checks its own target only), each MachineDeployment's skew check while the control plane's
 * version after the plan and its workers are the same; the others derived now and kept.
 */
function upgradeChecksThrough(input: UpgradeInput, u: UpgradeChecks, grouping: Grouping, versions: VersionReader): UpgradeGiven {
  const check = (label: string, target: { updaters?: unknown }, machines: KubeObject[]): TargetCheck | undefined => {
    const prev = u.targets.get(label);
    if (prev && checkHolds(prev, target, machines)) return prev;
    const c = targetCheck(label, target, machines, versions);
    if (c) u.targets.set(label, c);
    return c;
  };
  const { plan } = input;
  const cp = plan.spec.controlPlane;
  const cpWant = cp ? check(`controlPlane ${cp.name}`, cp, grouping.cp)?.want : undefined;
  const withVersion = new Set<string>();
  for (const md of plan.spec.machineDeployments ?? [])
    if (check(`machineDeployment ${md.name}`, md, grouping.workersOf.get(md.name) ?? [])?.want) withVersion.add(md.name);
  if (cpWant) {
    const cpKey = versionKey(cpWant);
    for (const [md, list] of grouping.workersOf) {
      if (withVersion.has(md)) continue;
      const e = u.skew.get(md);
      if (!e || e.cp !== cpKey || !sameRefs(e.machines, list))
        u.skew.set(md, { machines: list, cp: cpKey, first: firstOutsideSkew(list, cpWant, versions) });
    }
  }
  return { grouping, checks: u.targets, skew: u.skew };
}
