// The pre-start check (contract C8): before the first machine of a plan starts, every responsibility value is checked
// against the real schema of the object it targets by a server-side dry-run of the exact commit patch on one machine's
// object per target and selectResource, and the owners' wanted changes no updater covers are looked up. This module
// does the reads and dry-runs; the findings become sentences (prestartResult) that validatePlan lists, so deciding
// stays pure. `inplace preview` runs the same dry-runs (same sentences): preview NOT OK <=> Valid=False.
import type { InPlaceUpdatePlan, KubeObject, ResourceType, Responsibility, WritePolicy } from '../api/index.js';
import { DEFAULT_WRITE_POLICY, Machines, orderedUpdaters, writeRefusal } from '../api/index.js';
import { KubeApiError, isNotFound } from '../runtime/pure/errors.js';
import { SetPathError, setValuesPatch, verifyValues, type PointerValue } from '../runtime/pure/set-patch.js';
import type { KubeClient } from '../runtime/pure/types.js';
import type { ContractRef } from '../api/capi/index.js';
import {
  isDeleting,
  machineBootstrapRef,
  machineInfraRef,
  nameOf,
  ownerBootstrapTemplateRef,
  ownerInfraTemplateRef,
} from '../api/capi/index.js';
import { machinesByTarget, targetKey } from '../rules/machines.js';
import { previewPlan, prestartResult, type PreviewSnapshot } from '../rules/preview.js';
import type { PrestartResult, ValidationInput } from '../rules/inputs.js';
import { JSON_POINTER, targetsOf } from '../rules/validate.js';

const SELECTS: Responsibility['selectResource'][] = ['Machine', 'InfraMachine', 'BootstrapConfig'];
const FIELD_MANAGER = 'plan-controller';

const show = (v: unknown): string => {
  const s = v === undefined ? 'nothing' : (JSON.stringify(v) ?? 'nothing');
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
};

/**
 * Where the pre-start check reads the objects it checks from instead of the API (the plan controller's informer
 * caches): with them a check costs a few dry-runs, not a GET and a list per kind and target (under a flaky API server
 * a check that needs a hundred requests to all succeed never completes, and the plan never starts).
 */
export interface PrestartReads {
  /** Every object of the kind in the namespace, with kind set (undefined: not cached, the check lists it). */
  list(ns: string, ref: ContractRef): Promise<KubeObject[] | undefined>;
  /**
   * When set, the objects the machines and owners reference are read one by one by name instead of listing their kinds
   * (a caller that samples one machine per target, the campaign controller, stays O(targets), not O(machines)).
   */
  get?(ns: string, ref: ContractRef): Promise<KubeObject | undefined>;
  /**
   * Dry-run answers known clean ((kind, patch) keys), shared across calls: a fleet's clusters share their patches, so
   * one dry-run stands for all of them. Absent: one set per call.
   */
  cleanDryRuns?: Set<string>;
  /** What the caller needs, for the problem named when the API refuses the check (401/403); default: the plan controller's. */
  permissionHint?: string;
}

// Where a selectResource points for a machine: the Machine itself, or the object its reference names.
async function locate(
  client: KubeClient,
  ns: string,
  m: KubeObject,
  sel: Responsibility['selectResource'],
  reads?: PrestartReads,
): Promise<{ res: ResourceType; obj: KubeObject; what: string } | { problem: string }> {
  if (sel === 'Machine') return { res: Machines, obj: m, what: `Machine ${nameOf(m)}` };
  const ref = sel === 'InfraMachine' ? machineInfraRef(m) : machineBootstrapRef(m);
  if (!ref)
    return {
      problem: `Machine ${nameOf(m)} has no ${sel === 'InfraMachine' ? 'spec.infrastructureRef' : 'spec.bootstrap.configRef'} to commit ${sel} responsibilities to`,
    };
  let res: ResourceType;
  try {
    res = await client.resolve(ref.apiGroup, ref.kind);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return { problem: `${ref.kind}.${ref.apiGroup} referenced by Machine ${nameOf(m)} is not served` };
  }
  const cached = reads?.get ? undefined : await reads?.list(ns, ref);
  const obj = reads?.get
    ? await reads.get(ns, ref)
    : cached
      ? cached.find((o) => nameOf(o) === ref.name)
      : await client.get(res, ns, ref.name);
  if (!obj) return { problem: `${ref.kind} ${ns}/${ref.name} referenced by Machine ${nameOf(m)} not found` };
  return { res, obj, what: `${ref.kind} ${ref.name}` };
}

/**
 * Dry-runs the commit patch of every target and selectResource on the first current machine of the target (by name).
 * Returns the problems: the server's 4xx, values pruned or defaulted away, paths that cannot be set. Responsibilities
 * the write policy refuses are left out (validation reports them). Throws on a non-4xx error (retry later).
 */
export async function dryRunCommits(
  client: KubeClient,
  plan: InPlaceUpdatePlan,
  machines: readonly KubeObject[],
  policy: WritePolicy = DEFAULT_WRITE_POLICY,
  reads?: PrestartReads,
): Promise<string[]> {
  const ns = plan.metadata?.namespace ?? '';
  const problems: string[] = [];
  // The same patch on the same kind gets the same answer from the schema: targets sharing their updaters (a fleet's
  // MachineDeployments) are checked once. Only a clean answer is reused; a problem is looked up per target.
  const clean = reads?.cleanDryRuns ?? new Set<string>();
  const byTarget = machinesByTarget(plan.spec.clusterName, machines);
  for (const t of targetsOf(plan)) {
    const label = `${t.kind === 'ControlPlane' ? 'controlPlane' : 'machineDeployment'} ${t.target.name}`;
    const m = (byTarget.get(targetKey(t.kind, t.target.name)) ?? []).find((x) => !isDeleting(x));
    if (!m) continue;
    const resps = orderedUpdaters(Array.isArray(t.target.updaters) ? t.target.updaters : [])
      .flatMap((u) => (Array.isArray(u.responsibilities) ? u.responsibilities : []))
      .filter(
        (r) =>
          typeof r.path === 'string' &&
          JSON_POINTER.test(r.path) &&
          r.value !== undefined &&
          writeRefusal(policy, r.selectResource, r.path) === undefined,
      );
    for (const sel of SELECTS) {
      const items: PointerValue[] = resps.filter((r) => r.selectResource === sel).map((r) => ({ path: r.path, value: r.value }));
      if (items.length === 0) continue;
      const where = await locate(client, ns, m, sel, reads);
      if ('problem' in where) {
        problems.push(`${label}: ${where.problem}`);
        continue;
      }
      let ops;
      try {
        // No resourceVersion test: a dry-run answers about the schema, and a concurrent write must not fail it.
        ops = setValuesPatch(where.obj, items).filter((o) => o.op !== 'test');
      } catch (err) {
        if (!(err instanceof SetPathError)) throw err;
        problems.push(`${label}: ${sel} ${err.message} on ${where.what}`);
        continue;
      }
      if (ops.length === 0) continue;
      const key = `${where.res.group}/${where.res.version}/${where.res.kind}\n${JSON.stringify(ops)}`;
      if (clean.has(key)) continue;
      let after: KubeObject;
      try {
        after = await client.patch(where.res, ns, nameOf(where.obj), ops, { type: 'json', dryRun: true, fieldManager: FIELD_MANAGER });
      } catch (err) {
        if (err instanceof KubeApiError && err.code >= 400 && err.code < 500 && err.code !== 409 && err.code !== 429) {
          const msg = (err.status?.message ?? err.message).slice(0, 300);
          problems.push(
            `${label}: the API server rejects ${sel} ${items.map((i) => i.path).join(', ')} on ${where.what} (dry-run of the commit, HTTP ${err.code}): ${msg}`,
          );
          continue;
        }
        throw err;
      }
      const kept = verifyValues(after, items);
      if (kept.length === 0) clean.add(key);
      for (const x of kept) {
        problems.push(
          `${label}: ${sel} ${x.path} would not be kept by ${where.what} (dry-run: wanted ${show(x.expected)}, the server keeps ${show(x.actual)}): the field is not in its schema (pruned) or is defaulted away`,
        );
      }
    }
  }
  return problems;
}

/** The InfraMachines and BootstrapConfigs of the machines and the owners' templates, read per kind (for uncovered changes). */
export async function readCoverageObjects(
  client: KubeClient,
  ns: string,
  machines: readonly KubeObject[],
  owners: readonly KubeObject[],
  reads?: PrestartReads,
): Promise<Pick<PreviewSnapshot, 'infraMachines' | 'bootstrapConfigs' | 'ownerTemplates'>> {
  // `onlyNamed`: only the objects the refs name are returned (the machines' own objects; the preview looks them up by kind
  // and name only). A plan controller's cache lists the namespace: a fleet's 30,000 InfraMachines indexed per plan.
  const byKind = async (refs: (ContractRef | undefined)[], onlyNamed = false): Promise<KubeObject[]> => {
    const get = reads?.get;
    if (get) {
      const named = new Map<string, ContractRef>();
      for (const r of refs) if (r) named.set(`${r.apiGroup}/${r.kind}/${r.name}`, r);
      const out: KubeObject[] = [];
      for (const r of named.values()) {
        const o = await get(ns, r);
        if (o) out.push({ ...o, kind: r.kind });
      }
      return out;
    }
    const kinds = new Map<string, ContractRef>();
    const names = new Map<string, Set<string>>();
    for (const r of refs) {
      if (!r) continue;
      const k = `${r.apiGroup}/${r.kind}`;
      kinds.set(k, r);
      let set = names.get(k);
      if (!set) names.set(k, (set = new Set()));
      set.add(r.name);
    }
    const out: KubeObject[] = [];
    const keep = (k: string, objs: readonly KubeObject[]): void => {
      if (!onlyNamed) {
        out.push(...objs);
        return;
      }
      const wanted = names.get(k)!;
      for (const o of objs) if (wanted.has(nameOf(o))) out.push(o);
    };
    for (const [k, r] of kinds) {
      const cached = await reads?.list(ns, r);
      if (cached) {
        keep(k, cached);
        continue;
      }
      let res: ResourceType;
      try {
        res = await client.resolve(r.apiGroup, r.kind);
      } catch (err) {
        if (isNotFound(err)) continue;
        throw err;
      }
      keep(
        k,
        (await client.list(res, ns)).items.map((o) => ({ ...o, kind: res.kind })),
      );
    }
    return out;
  };
  // Side by side: at a plan's start each kind's first read lists it (the plan controller's informer starts then), and
  // two lists of 10,003 objects one after the other held the first machine back ~0.2 s more than the two at once.
  // Settled, then the first failure in this order: the error a caller sees does not depend on which list ended first.
  const settled = await Promise.allSettled([
    byKind(machines.map(machineInfraRef), true),
    byKind(machines.map(machineBootstrapRef), true),
    byKind(owners.map(ownerInfraTemplateRef)),
    byKind(owners.map(ownerBootstrapTemplateRef)),
  ]);
  const [infraMachines, bootstrapConfigs, infraTemplates, bootstrapTemplates] = settled.map((r) => {
    if (r.status === 'rejected') throw r.reason;
    return r.value;
  }) as [KubeObject[], KubeObject[], KubeObject[], KubeObject[]];
  return { infraMachines, bootstrapConfigs, ownerTemplates: [...infraTemplates, ...bootstrapTemplates] };
}

/** Runs the whole pre-start check of a plan against the cluster (reads and dry-runs only). */
export async function prestartCheck(
  client: KubeClient,
  input: ValidationInput & { machines: KubeObject[] },
  reads?: PrestartReads,
): Promise<PrestartResult> {
  const { plan } = input;
  const ns = plan.metadata?.namespace ?? '';
  const owners = [...input.machineDeployments, ...(input.controlPlane?.object ? [input.controlPlane.object] : [])];
  try {
    const coverage = await readCoverageObjects(client, ns, input.machines, owners, reads);
    const preview = previewPlan(plan, { ...input, ...coverage });
    const dryRun = await dryRunCommits(client, plan, input.machines, input.writePolicy, reads);
    return prestartResult(plan, preview, dryRun);
  } catch (err) {
    // Fail closed: a check that may not run is a problem of the plan (named), not a silent pass or an endless retry.
    if (err instanceof KubeApiError && (err.code === 401 || err.code === 403)) {
      return {
        generation: plan.metadata?.generation ?? 0,
        schemaProblems: [
          `the pre-start check cannot run: ${err.message.slice(0, 300)} (${reads?.permissionHint ?? 'the plan controller needs get, list and patch on the InfraMachine and BootstrapConfig kinds and list on their templates'}; see docs/operations.md)`,
        ],
        uncovered: [],
      };
    }
    throw err;
  }
}
