// Plan validation: every problem listed, none short-circuited. Pure: works on a snapshot of the objects the plan names.
import type { InPlaceUpdatePlan, KubeObject, PlanTarget, WritePolicy } from '../api/index.js';
import { DEFAULT_WRITE_POLICY, PlanSpecSchema, formatIssues, planValueSizeProblems, writeRefusal } from '../api/index.js';
import { clusterControlPlaneRef, clusterLabel, field, mdClusterName, mdStrategyType, nameOf } from '../api/capi/index.js';
import { ownerProblems } from './owners.js';
import type { ValidationInput } from './inputs.js';
import { templateKey } from './inputs.js';
import { upgradeProblems } from './upgrade-rules.js';
import { templateProblems } from './templates.js';

/** Kinds a responsibility may select (docs/design.md §2.1). */
export const SELECTABLE_RESOURCES: readonly string[] = ['Machine', 'InfraMachine', 'BootstrapConfig'];
/** JSON pointer syntax (RFC 6901), at least one reference token. */
export const JSON_POINTER = /^(\/([^/~]|~[01])*)+$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TEMPLATE_KIND = /^[A-Z][A-Za-z0-9]*Template$/;
const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;

/** A target as validation and rollout see it. */
export interface NamedTarget {
  kind: 'ControlPlane' | 'MachineDeployment';
  target: PlanTarget;
}

/** The plan's targets, control plane first, in spec order. */
export function targetsOf(plan: InPlaceUpdatePlan): NamedTarget[] {
  const out: NamedTarget[] = [];
  if (plan.spec.controlPlane) out.push({ kind: 'ControlPlane', target: plan.spec.controlPlane });
  for (const md of plan.spec.machineDeployments ?? []) out.push({ kind: 'MachineDeployment', target: md });
  return out;
}

const label = (t: NamedTarget): string => `${t.kind === 'ControlPlane' ? 'controlPlane' : 'machineDeployment'} ${t.target.name}`;

/**
 * Validates a plan against its schema and the objects it names. Returns every problem as a human sentence; empty = valid.
 * Checks: schema (zod); cluster exists; control plane exists and is the cluster's; MachineDeployments exist, belong to the
 * cluster and do not use the OnDelete strategy; every control-plane sequence below every MachineDeployment sequence;
 * unique target and updater names; no two updaters of a target owning the same field; templates are *Template kinds that
 * exist in the plan's namespace; JSON pointers valid and allowed by the write policy; values at most MAX_PLAN_VALUE_BYTES;
 * selectResource allowed; the upgrade rules (semver, no downgrade, no skipped minor, workers never ahead, skew); and
 * what the pre-start check found (schema dry-run; uncovered changes unless spec.acceptUncoveredChanges).
 */
export function validatePlan(input: ValidationInput): string[] {
  const { head, tail } = machineFreeProblems(input);
  const upgrade = input.machines
    ? upgradeProblems({ plan: input.plan, machines: input.machines, controlPlane: input.controlPlane?.object })
    : [];
  return joinProblems(head, upgrade, tail);
}

/** Validation's problems in its order (those before the upgrade rules, the upgrade rules', those after), once each. */
export function joinProblems(head: readonly string[], upgrade: readonly string[], tail: readonly string[]): string[] {
  return [...new Set([...head, ...upgrade, ...tail])];
}

/**
 * Every fact machineFreeProblems reads besides the spec (fixed by uid and generation), the write policy, the
 * pre-start result and the task CRDs (compared by identity): the cluster's control-plane reference and topology, the
 * control plane's cluster, each MachineDeployment's cluster and strategy, each template lookup.
 */
export function validationFacts(input: ValidationInput, generation: number): string {
  const { plan, cluster, controlPlane: cp } = input;
  const ref = cluster ? clusterControlPlaneRef(cluster) : undefined;
  return JSON.stringify([
    plan.metadata?.uid,
    plan.metadata?.namespace,
    plan.metadata?.name,
    generation,
    cluster ? [ref?.kind, ref?.name, field(cluster, 'spec', 'topology') !== undefined] : null,
    cp ? [cp.kind.apiGroup, cp.kind.kind, cp.error, cp.object ? ['found', clusterLabel(cp.object)] : 'absent'] : null,
    input.machineDeployments.map((md) => [nameOf(md), mdClusterName(md), clusterLabel(md), mdStrategyType(md)]),
    input.templates.map((t) => [templateKey(t.ref), t.found, t.error, t.bytes, t.unjudged, t.unchecked, t.task !== undefined]),
  ]);
}

/**
 * The problems that do not read the machines, in validation's order around the upgrade rules: `head` before them,
 * `tail` after (what the plan controller's cache reuses while validationFacts and the generation are the same).
 */
export function machineFreeProblems(input: ValidationInput): { head: string[]; tail: string[] } {
  const { plan } = input;
  const head: string[] = [];
  const ns = plan.metadata?.namespace ?? '';
  const parsed = PlanSpecSchema.safeParse(plan.spec);
  if (!parsed.success) head.push(...formatIssues(parsed.error, 'spec'));

  const spec = plan.spec as Partial<InPlaceUpdatePlan['spec']>;
  const clusterName = spec.clusterName ?? '';
  const targets = targetsOf(plan);
  if (targets.length === 0) head.push('spec: a plan needs a controlPlane or at least one machineDeployment');

  if (!input.cluster) head.push(`Cluster ${ns}/${clusterName} not found`);
  else head.push(...validateControlPlane(input, clusterName));
  head.push(...validateMachineDeployments(input, clusterName));
  head.push(...validateSequences(plan));
  head.push(...validateUpdaters(input, targets));
  const tail: string[] = [];
  if (input.prestart) {
    tail.push(...input.prestart.schemaProblems);
    if (!spec.acceptUncoveredChanges) tail.push(...input.prestart.uncovered);
  }
  tail.push(...ownerProblems(input)); // next to real CAPI: topology refusal, values no owner can carry (owners.ts)
  return { head, tail };
}

function validateControlPlane(input: ValidationInput, clusterName: string): string[] {
  const cp = input.plan.spec.controlPlane;
  if (!cp || !input.cluster) return [];
  const ns = input.plan.metadata?.namespace ?? '';
  const problems: string[] = [];
  const ref = clusterControlPlaneRef(input.cluster);
  if (ref && ref.name !== cp.name)
    problems.push(
      `controlPlane ${cp.name} is not the control plane of Cluster ${clusterName} (its controlPlaneRef names ${ref.kind} ${ref.name})`,
    );
  const lookup = input.controlPlane;
  const kind = lookup?.kind.kind ?? 'KubeadmControlPlane';
  if (lookup?.error) problems.push(`controlPlane ${cp.name}: cannot look up ${kind}: ${lookup.error}`);
  else if (!lookup?.object) problems.push(`${kind} ${ns}/${cp.name} not found`);
  else {
    const owner = clusterLabel(lookup.object);
    if (owner !== undefined && owner !== clusterName) problems.push(`${kind} ${cp.name} belongs to Cluster ${owner}, not ${clusterName}`);
  }
  return problems;
}

function validateMachineDeployments(input: ValidationInput, clusterName: string): string[] {
  const ns = input.plan.metadata?.namespace ?? '';
  const byName = new Map<string, KubeObject>(input.machineDeployments.map((md) => [nameOf(md), md]));
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const t of input.plan.spec.machineDeployments ?? []) {
    if (seen.has(t.name)) problems.push(`machineDeployment ${t.name} is listed more than once`);
    seen.add(t.name);
    const md = byName.get(t.name);
    if (!md) {
      problems.push(`MachineDeployment ${ns}/${t.name} not found`);
      continue;
    }
    const owner = mdClusterName(md) ?? clusterLabel(md);
    if (owner !== clusterName) problems.push(`MachineDeployment ${t.name} belongs to Cluster ${owner ?? '(none)'}, not ${clusterName}`);
    if (mdStrategyType(md) === 'OnDelete')
      problems.push(
        `MachineDeployment ${t.name} uses the OnDelete rollout strategy: its machines are not updated in place (remove it from the plan or switch it to RollingUpdate)`,
      );
  }
  return problems;
}

function validateSequences(plan: InPlaceUpdatePlan): string[] {
  const cp = plan.spec.controlPlane;
  if (!cp || typeof cp.sequence !== 'number') return [];
  return (plan.spec.machineDeployments ?? [])
    .filter((md) => typeof md.sequence === 'number' && md.sequence <= cp.sequence)
    .map(
      (md) =>
        `machineDeployment ${md.name} has sequence ${md.sequence}, not higher than controlPlane sequence ${cp.sequence}: every control-plane sequence must be lower than every MachineDeployment sequence (Kubernetes version-skew rule)`,
    );
}

function validateUpdaters(input: ValidationInput, targets: NamedTarget[]): string[] {
  const problems: string[] = [];
  const lookups = new Map(input.templates.map((l) => [templateKey(l.ref), l]));
  const ns = input.plan.metadata?.namespace ?? '';
  const policy: WritePolicy = input.writePolicy ?? DEFAULT_WRITE_POLICY;
  for (const t of targets) {
    const names = new Set<string>();
    const claims: Claim[] = [];
    for (const u of Array.isArray(t.target.updaters) ? t.target.updaters : []) {
      const where = `${label(t)} updater ${u.name}`;
      if (names.has(u.name))
        problems.push(`${label(t)}: updater name ${u.name} is used more than once (updater names are unique per target)`);
      names.add(u.name);
      const ref = u.updaterUpdateTemplateRef;
      if (ref) {
        if (!TEMPLATE_KIND.test(ref.kind ?? '')) problems.push(`${where}: template kind ${ref.kind} must end in Template`);
        if (!API_VERSION.test(ref.apiVersion ?? '')) problems.push(`${where}: template apiVersion ${ref.apiVersion} is not group/version`);
        if (!DNS_SUBDOMAIN.test(ref.name ?? ''))
          problems.push(
            `${where}: template name ${ref.name} must be the name of an object in the plan's namespace ${ns} (cross-namespace references are not allowed)`,
          );
        else {
          const l = lookups.get(templateKey(ref));
          const refused = templateProblems(ref, l);
          if (refused.length > 0) problems.push(...refused.map((p) => `${where}: ${p}`));
          else if (l?.error) problems.push(`${where}: template ${ref.kind} ${ref.name}: ${l.error}`);
          else if (!l?.found && !l?.unchecked) problems.push(`${where}: template ${ref.kind} ${ns}/${ref.name} not found`);
        }
      }
      for (const r of Array.isArray(u.responsibilities) ? u.responsibilities : []) {
        if (!SELECTABLE_RESOURCES.includes(r.selectResource))
          problems.push(`${where}: selectResource ${String(r.selectResource)} is not one of ${SELECTABLE_RESOURCES.join(', ')}`);
        if (typeof r.path !== 'string' || !JSON_POINTER.test(r.path))
          problems.push(`${where}: path ${String(r.path)} is not a JSON pointer such as /spec/version`);
        else if (SELECTABLE_RESOURCES.includes(r.selectResource)) {
          const why = writeRefusal(policy, r.selectResource, r.path);
          if (why) problems.push(`${where}: ${r.selectResource} ${r.path} is not writable: ${why}`);
        }
        if (r.value === undefined) problems.push(`${where}: responsibility ${r.selectResource} ${r.path} has no value`);
        else problems.push(...planValueSizeProblems(r.value, `${where}: responsibility ${r.selectResource} ${r.path}`));
        if (typeof r.path === 'string') claims.push({ updater: u.name, selectResource: r.selectResource, path: r.path });
      }
    }
    problems.push(...overlappingClaims(label(t), claims));
  }
  return problems;
}

interface Claim {
  updater: string;
  selectResource: string;
  path: string;
}

// Two updaters committing the same field (or one inside the other) would overwrite each other's result.
function overlappingClaims(where: string, claims: Claim[]): string[] {
  const problems: string[] = [];
  const within = (outer: string, inner: string): boolean => inner === outer || inner.startsWith(`${outer}/`);
  claims.forEach((a, i) => {
    for (const b of claims.slice(i + 1)) {
      if (a.selectResource !== b.selectResource || !(within(a.path, b.path) || within(b.path, a.path))) continue;
      problems.push(
        a.updater === b.updater
          ? `${where} updater ${a.updater}: ${a.selectResource} ${a.path} and ${b.path} overlap`
          : `${where}: ${a.selectResource} ${a.path} (updater ${a.updater}) overlaps ${b.path} (updater ${b.updater}); a field has one owner`,
      );
    }
  });
  return problems;
}
