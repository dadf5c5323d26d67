// The typed snapshot a plan reconcile decides from, and its one builder (buildScope), shared by the plan controller
// (informer stores) and `inplace preview` (get/list): both read through a ScopeReader, neither imports the other.
import type { AlertsRead } from './alerts.js';
import type { AlertGatePolicy } from '../api/alert-gate-policy.js';
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, WritePolicy } from '../api/index.js';
import { KubeadmControlPlanes, parseApiVersion } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import { clusterControlPlaneRef } from '../api/capi/index.js';
import { isClusterApiGroup, judgeTemplate } from '../contract/index.js';
import { labelValue } from './names.js';
import { taskKindOfRef } from './templates.js';
import { changedAt } from './decide/memo.js';

/** A template reference as written in a plan (apiVersion, kind, name; always in the plan's namespace). */
export interface TemplateRef {
  apiVersion: string;
  kind: string;
  name: string;
}

/** Whether a referenced template was found in the plan's namespace (`error` says why the lookup failed, e.g. kind not served). */
export interface TemplateLookup {
  ref: TemplateRef;
  found: boolean;
  error?: string;
  /** The task kind's CRD as looked up (crd absent: no CRD), when the lookup got that far. */
  task?: { crd?: KubeObject };
  /** Size of the template's spec as JSON, when found and judged. */
  bytes?: number;
  /** Found, but its size and content cannot be judged (contract judgeTemplate): the plan is not valid with it. */
  unjudged?: string;
  /** Not looked up by this caller (a campaign's pre-check): the plan looks it up itself, so absence is no problem here. */
  unchecked?: boolean;
}

/** Stable key of a template reference. */
export const templateKey = (r: TemplateRef): string => `${r.apiVersion}/${r.kind}/${r.name}`;

/** The control plane the plan names, resolved through Cluster.spec.controlPlaneRef (KubeadmControlPlane when the cluster has none). */
export interface ControlPlaneLookup {
  /** The kind the cluster's controlPlaneRef names (or KubeadmControlPlane). */
  kind: Pick<ContractRef, 'apiGroup' | 'kind'>;
  /** The object, when found. */
  object?: KubeObject;
  /** Why it could not be looked up (kind not served, ...), when that is the case. */
  error?: string;
}

/** The inputs of validation: the plan and the objects it names. */
export interface ValidationInput {
  plan: InPlaceUpdatePlan;
  /** The Cluster named by spec.clusterName in the plan's namespace, when it exists. */
  cluster: KubeObject | undefined;
  /** The control plane, when the plan names one. */
  controlPlane?: ControlPlaneLookup;
  /** MachineDeployments of the plan's namespace (at least every one the plan names that exists). */
  machineDeployments: KubeObject[];
  /** One lookup per distinct template reference of the plan. */
  templates: TemplateLookup[];
  /** Machines of the plan's cluster (the upgrade rules compare versions with them); absent = those rules are skipped. */
  machines?: KubeObject[];
  /** The write policy responsibilities must pass (default DEFAULT_WRITE_POLICY). */
  writePolicy?: WritePolicy;
  /** The operator's alert-gate policy (`--alert-gate-policy`); absent: none configured, every alert gate is refused. */
  alertGatePolicy?: AlertGatePolicy;
  /** The pre-start check of this plan generation (dry-run of the commit, uncovered changes), when it ran. */
  prestart?: PrestartResult;
}

/** What the pre-start check found (computed with I/O once per plan generation, before any machine starts). */
export interface PrestartResult {
  /** The plan generation checked. */
  generation: number;
  /** Values the target schema rejects (4xx), prunes or defaults away, per the server's dry-run of the commit patch. */
  schemaProblems: string[];
  /** Changes the owners want that no updater covers (refused unless spec.acceptUncoveredChanges). */
  uncovered: string[];
}

/** Everything a reconcile of one plan decides from. */
export interface PlanSnapshot extends ValidationInput {
  /** The current time (RFC 3339); the only clock decisions see. */
  now: string;
  /** Machines of the plan's cluster (label cluster.x-k8s.io/cluster-name), deleting ones included. */
  machines: KubeObject[];
  /** MachineUpdates owned by this plan. */
  machineUpdates: MachineUpdate[];
  /** Every plan of the same cluster in the namespace, this one included. */
  plans: InPlaceUpdatePlan[];
  /**
   * Machines without a MachineUpdate of this plan whose objects already carry every value of their target (at-target.ts);
   * absent when not computed (spec.rerunMachinesAtTarget, a terminal plan).
   */
  atTarget?: string[];
  /**
   * The InfraMachines / BootstrapConfigs the at-target check read (the informer caches), for the values new
   * MachineUpdates record in spec.previous; absent when that check did not run.
   */
  refObjects?: (namespace: string, ref: ContractRef) => KubeObject | undefined;
  /** What spec.alertGate's endpoint answered this reconcile (alerts.ts); absent when the plan has no alert gate. */
  alerts?: AlertsRead;
}

/** What reading one object of a kind named at run time (control plane, template) gave. */
export type KindRead =
  /** The kind is served and readable; `object` when the name exists. `bytes` of its spec (templates). */
  | { object?: KubeObject }
  /** The kind is not served by the API server (message from the discovery). */
  | { notServed: string }
  /** The kind is served but could not be read (e.g. not listable: RBAC); the full sentence. */
  | { unreadable: string };

/**
 * Where a plan's snapshot is read from: the plan controller's informer stores, or `inplace preview`'s get/list calls.
 * No client types: each caller adapts its own reads.
 */
export interface ScopeReader {
  /** The current time (RFC 3339). */
  now(): string;
  /** The Cluster of the plan. */
  cluster(namespace: string, name: string): Promise<KubeObject | undefined>;
  /** The MachineDeployments of the namespace with these names (those that exist). */
  machineDeployments(namespace: string, names: readonly string[]): Promise<KubeObject[]>;
  /** Machines labelled with the cluster's name. */
  machines(namespace: string, clusterName: string): Promise<KubeObject[]>;
  /** MachineUpdates carrying the plan-name label value (the builder keeps only the plan's own). */
  machineUpdates(namespace: string, planLabel: string): Promise<MachineUpdate[]>;
  /** Every plan of the namespace for the cluster. */
  plans(namespace: string, clusterName: string): Promise<InPlaceUpdatePlan[]>;
  /** One object of a kind named at run time; `purpose` lets the reader route events (controller watches). */
  read(namespace: string, apiGroup: string, kind: string, name: string, purpose: 'controlPlane' | 'template'): Promise<KindRead>;
  /** The CRD of a task kind (undefined: not served or no CRD). */
  taskCrd(group: string, kind: string): Promise<KubeObject | undefined>;
}

/** True when the plan is the controller owner of the object (same uid: a recreated plan of the same name is not). */
export const ownedBy = (o: KubeObject, plan: KubeObject): boolean =>
  plan.metadata.uid !== undefined && o.metadata.ownerReferences?.find((r) => r.controller)?.uid === plan.metadata.uid;

const KCP_KIND = { apiGroup: KubeadmControlPlanes.group, kind: KubeadmControlPlanes.kind };
const DNS_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** True when a template reference has nothing to look up: malformed (validation reports it) or a Cluster API kind. */
export function unlookedTemplate(ref: TemplateRef): boolean {
  const { group } = parseApiVersion(ref.apiVersion ?? '');
  // Malformed references are reported by validation; a Cluster API kind is refused from the reference alone (templates.ts).
  return !group || !/Template$/.test(ref.kind ?? '') || !DNS_NAME.test(ref.name ?? '') || isClusterApiGroup(group);
}

/** The distinct template references of a plan's updaters. */
export function templateRefsOf(plan: InPlaceUpdatePlan): TemplateRef[] {
  const refs = new Map<string, TemplateRef>();
  for (const t of [plan.spec.controlPlane, ...(plan.spec.machineDeployments ?? [])]) {
    for (const u of t?.updaters ?? [])
      if (u.updaterUpdateTemplateRef) refs.set(templateKey(u.updaterUpdateTemplateRef), u.updaterUpdateTemplateRef);
  }
  return [...refs.values()];
}

/**
 * Looks a template up and judges it. A read that fails is an `error` of the lookup (the plan is Valid=False naming it
 * and checked again), never a template taken as found and small: validation fails closed.
 */
async function lookupTemplate(reader: ScopeReader, ns: string, ref: TemplateRef): Promise<TemplateLookup> {
  try {
    return await readTemplate(reader, ns, ref);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { ref, found: false, error: `could not be read, so it cannot be judged (${why.slice(0, 300)}); checked again shortly` };
  }
}

async function readTemplate(reader: ScopeReader, ns: string, ref: TemplateRef): Promise<TemplateLookup> {
  if (unlookedTemplate(ref)) return { ref, found: false };
  const { group } = parseApiVersion(ref.apiVersion);
  const r = await reader.read(ns, group, ref.kind, ref.name, 'template');
  if ('notServed' in r) return { ref, found: false, error: `kind ${ref.kind} is not served by group ${group} (is its CRD installed?)` };
  if ('unreadable' in r) return { ref, found: false, error: r.unreadable };
  const out: TemplateLookup = { ref, found: r.object !== undefined };
  if (r.object) Object.assign(out, judgeTemplate(r.object));
  const tk = taskKindOfRef(ref);
  if (tk) {
    const crd = await reader.taskCrd(tk.group, tk.kind);
    out.task = crd ? { crd } : {};
  }
  return out;
}

/** ownMachineUpdates' last input and answer for one plan, with each input position's place in the answer (-1: not kept). */
export interface OwnFilterMemo {
  last?: {
    name: string;
    uid: string;
    input: readonly MachineUpdate[];
    out: readonly MachineUpdate[];
    at: Int32Array;
    /** When `out` was patched from `base` (the answer before): the positions in `out` holding new objects, ascending. */
    base?: readonly MachineUpdate[];
    changed?: readonly number[];
  };
}

/**
 * The plan's own MachineUpdates of a list (its name in spec.planName, and the plan the controller owner: never adopt
 * another plan's record, e.g. of a deleted plan of the same name, the owner's uid decides). With a memo, the last
 * answer is patched for the positions holding new objects when the list is a patch of the last one (the store keeps
 * objects in place and appends, store.ts byLabelView), instead of filtering every update per reconcile; the answer is
 * then frozen (shared with the next reconciles until the list changes).
 */
export function ownMachineUpdates(
  list: readonly MachineUpdate[],
  plan: InPlaceUpdatePlan & KubeObject,
  memo?: OwnFilterMemo,
): MachineUpdate[] {
  const name = plan.metadata.name ?? '';
  const uid = plan.metadata.uid ?? '';
  const own = (m: MachineUpdate): boolean => m.spec?.planName === name && ownedBy(m as MachineUpdate & KubeObject, plan);
  if (!memo) return list.filter(own);
  const last = memo.last;
  const changed = last && last.name === name && last.uid === uid ? changedAt(last.input, list) : undefined;
  if (changed) {
    if (changed.length === 0) {
      memo.last = { ...last!, input: list, base: last!.out, changed: [] };
      return last!.out as MachineUpdate[];
    }
    const outChanged: number[] = [];
    const out = [...last!.out];
    const at = new Int32Array(list.length);
    at.set(last!.at);
    let patched = true;
    for (const i of changed) {
      const keep = own(list[i]!);
      if (i < last!.input.length) {
        // Kept before and now, or neither: in place. A change of membership moves the others: filter afresh.
        if (at[i]! >= 0 !== keep) {
          patched = false;
          break;
        }
        if (keep) outChanged.push(at[i]!);
        if (keep) out[at[i]!] = list[i]!;
      } else if (keep) {
        at[i] = out.length;
        outChanged.push(out.push(list[i]!) - 1);
      } else at[i] = -1;
    }
    if (patched) {
      memo.last = { name, uid, input: list, out: Object.freeze(out), at, base: last!.out, changed: outChanged };
      return out;
    }
  }
  const out: MachineUpdate[] = [];
  const at = new Int32Array(list.length);
  list.forEach((m, i) => {
    at[i] = own(m) ? out.push(m) - 1 : -1;
  });
  memo.last = { name, uid, input: list, out: Object.freeze(out), at };
  return out;
}

/**
 * Builds the snapshot of one plan: the one builder the plan controller and `inplace preview` share, so that both
 * decide from the same objects (the hashed plan-name label value, the plan's own MachineUpdates, the same template
 * lookups). The controller adds what only it computes (pre-start check, expectations, machines at target), and
 * passes a memo of the ownership filter (ownMachineUpdates).
 */
export async function buildScope(plan: InPlaceUpdatePlan & KubeObject, reader: ScopeReader, memo?: OwnFilterMemo): Promise<PlanSnapshot> {
  const ns = plan.metadata.namespace ?? '';
  const name = plan.metadata.name ?? '';
  const clusterName = plan.spec.clusterName;
  const cluster = await reader.cluster(ns, clusterName);

  let controlPlane: ControlPlaneLookup | undefined;
  if (plan.spec.controlPlane) {
    const ref = cluster ? clusterControlPlaneRef(cluster) : undefined;
    const kind = ref ? { apiGroup: ref.apiGroup, kind: ref.kind } : KCP_KIND;
    controlPlane = { kind };
    const r = await reader.read(ns, kind.apiGroup, kind.kind, plan.spec.controlPlane.name, 'controlPlane');
    if ('notServed' in r) controlPlane.error = `kind ${kind.kind} is not served (${r.notServed})`;
    else if ('unreadable' in r) controlPlane.error = r.unreadable;
    else if (r.object) controlPlane.object = r.object;
  }

  const templates: TemplateLookup[] = [];
  for (const ref of templateRefsOf(plan)) templates.push(await lookupTemplate(reader, ns, ref));

  const machineUpdates = ownMachineUpdates(await reader.machineUpdates(ns, labelValue(name)), plan, memo);
  return {
    plan,
    now: reader.now(),
    cluster,
    controlPlane,
    machineDeployments: await reader.machineDeployments(
      ns,
      (plan.spec.machineDeployments ?? []).map((t) => t.name),
    ),
    templates,
    machines: await reader.machines(ns, clusterName),
    machineUpdates,
    plans: await reader.plans(ns, clusterName),
  };
}
