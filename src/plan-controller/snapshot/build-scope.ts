// The one builder of a plan's snapshot (buildScope), shared by the plan controller (informer stores) and `inplace
// preview` (get/list) through a ScopeReader (scope.ts), and the plan's own MachineUpdates filter it applies.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { KubeadmControlPlanes, parseApiVersion } from '../../api/index.js';
import { clusterControlPlaneRef } from '../../api/capi/index.js';
import { judgeTemplate } from '../../contract/index.js';
import { labelValue } from '../decide/names.js';
import { taskKindOfRef } from '../../rules/templates.js';
import { changedAt } from '../../rules/lists.js';
import type { ControlPlaneLookup, TemplateLookup, TemplateRef } from '../../rules/inputs.js';
import { templateRefsOf, unlookedTemplate } from '../../rules/inputs.js';
import type { OwnFilterMemo, PlanSnapshot, ScopeReader } from '../scope.js';
/** True when the plan is the controller owner of the object (same uid: a recreated plan of the same name is not). */
export const ownedBy = (o: KubeObject, plan: KubeObject): boolean =>
  plan.metadata.uid !== undefined && o.metadata.ownerReferences?.find((r) => r.controller)?.uid === plan.metadata.uid;

const KCP_KIND = { apiGroup: KubeadmControlPlanes.group, kind: KubeadmControlPlanes.kind };
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
