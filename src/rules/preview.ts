// What a plan would do, without touching anything: which machines, in which order, how many at once, which updaters,
// which changes they cover and — fail-closed — which differences between the machines and their owners' desired
// state no updater covers. Pure: `inplace preview` builds the snapshot and renders the result.
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate, PlanUpdater, Responsibility, TargetKind } from '../api/index.js';
import { UpdatePhase, isTerminal, orderedUpdaters } from '../api/index.js';
import type { ContractRef } from '../api/capi/index.js';
import {
  cpVersion,
  field,
  isDeleting,
  isMachineReady,
  machineBootstrapRef,
  machineInfraRef,
  machineVersion,
  mdRollingUpdate,
  mdVersion,
  nameOf,
} from '../api/capi/index.js';
import { machineState, machinesByTarget, planAge } from './machines.js';
import { machinesAtTarget, type RefLookup } from './at-target.js';
import { scaleIntOrPercent } from '../api/capi/index.js';
import { mdConcurrency, mdConcurrencyNote } from './concurrency.js';
import type { PrestartResult, ValidationInput } from './inputs.js';
import type { OwnerChangePreview } from './owners.js';
import { ALREADY_CARRIES, previewOwnerChanges } from './owners.js';
import type { NamedTarget } from './validate.js';
import { targetsOf, validatePlan } from './validate.js';
import { alertGateRefusals } from '../api/alert-gate-policy.js';

/** A minimal OpenAPI v3 (structural) schema, as CRDs carry it. */
export interface OpenApiSchema {
  type?: string;
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: boolean | OpenApiSchema;
  items?: OpenApiSchema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
}

/** What selectResource names. */
export type SelectResource = Responsibility['selectResource'];

/** Everything a preview reads; all optional extras sharpen the coverage analysis. */
export interface PreviewSnapshot extends ValidationInput {
  /** Machines of the plan's cluster. */
  machines: KubeObject[];
  /** MachineUpdates of the plan, when it already exists in the cluster (machines already done are shown as such). */
  machineUpdates?: MachineUpdate[];
  /** The InfraMachines (e.g. DevMachines) of the machines, to compare with their owners' infrastructure templates. */
  infraMachines?: KubeObject[];
  /** The BootstrapConfigs (e.g. KubeadmConfigs) of the machines, to compare with their owners' bootstrap templates. */
  bootstrapConfigs?: KubeObject[];
  /** The owners' templates (InfraMachineTemplates such as DevMachineTemplate, KubeadmConfigTemplates). */
  ownerTemplates?: KubeObject[];
  /** Other plans of the namespace: an active plan of the same cluster would be superseded (or waited for). */
  plans?: InPlaceUpdatePlan[];
  /** Schemas of the selected kinds (the CRD's openAPIV3Schema), to flag paths that cannot exist. Machine has a built-in fallback. */
  schemas?: Partial<Record<SelectResource, OpenApiSchema>>;
  /** What the server's dry-run of the commit patches found (see prestart.ts); absent = not run. */
  dryRunProblems?: string[];
  /**
   * Generic updater names of the plan that no updater has ever reported on in the namespace (no task of that name with
   * a status): read by the CLI, absent when not read. Updaters do not register, so this is the evidence there is.
   */
  unheardUpdaters?: string[];
}

/** A machine in the order it would be updated. */
export interface PreviewMachine {
  name: string;
  ready: boolean;
  /** Where the machine stands for this plan: notStarted, inFlight, updated, failed, aborted, or alreadyAtTarget (counted as updated, no updater runs). */
  state: ReturnType<typeof machineState> | 'alreadyAtTarget';
  /** Machine spec.version today. */
  version?: string;
}

/** An updater as it would run on each machine of a target. */
export interface PreviewUpdater {
  name: string;
  sequence: number;
  /** Kind of the task created per machine (template kind without Template, or the generic UpdaterUpdateTask). */
  taskKind: string;
  /** The template the task is built from, when any. */
  template?: { apiVersion: string; kind: string; name: string };
  responsibilities: Responsibility[];
  parameters?: Record<string, unknown>;
}

/** How many machines of a target may be in update at once, and why. */
export interface PreviewConcurrency {
  max: number;
  why: string;
  /** True when the MachineDeployment is first scaled up by one (maxUnavailable 0). */
  surge: boolean;
}

/** One target of a sequence group. */
export interface PreviewTarget {
  kind: TargetKind;
  name: string;
  sequence: number;
  /** Current (non-deleting) machines in update order. */
  machines: PreviewMachine[];
  concurrency: PreviewConcurrency;
  /** Updaters in the order they run on a machine. */
  updaters: PreviewUpdater[];
}

/** Targets with the same sequence: they run in parallel; a group starts when the previous one is updated. */
export interface PreviewGroup {
  sequence: number;
  targets: PreviewTarget[];
}

/** A responsibility and the updater that covers it. */
export interface PreviewCoverage {
  target: string;
  selectResource: SelectResource;
  path: string;
  value: unknown;
  updater: string;
}

/** A difference between a machine and its owner's desired state that no updater of the plan covers. */
export interface UncoveredChange {
  target: string;
  machine: string;
  selectResource: SelectResource;
  path: string;
  current: unknown;
  desired: unknown;
  why: string;
}

/** A responsibility whose path cannot exist on the selected kind (per its schema). */
export interface ImpossiblePath {
  target: string;
  updater: string;
  selectResource: SelectResource;
  path: string;
  why: string;
}

/** The preview of a plan. */
export interface PlanPreview {
  /** True when the plan passes validation, uncovered changes and schema checks included (the controller's Valid). */
  valid: boolean;
  /** Validation problems (same as the controller's Valid=False message). */
  problems: string[];
  groups: PreviewGroup[];
  coverage: PreviewCoverage[];
  /** Fail-closed: changes the owners want that no updater declares; non-empty means the plan would leave drift behind. */
  uncovered: UncoveredChange[];
  /** Responsibilities whose path the selected kind's schema does not have (the commit would be pruned). */
  impossiblePaths: ImpossiblePath[];
  /** Other observations: plan values that differ from the owner's desired value, paused or aborting plans, etc. */
  warnings: string[];
  /** The owner objects (KCP, MachineDeployments, MachineSets, template clones, InfraMachines) the plan will change (owners.ts). */
  owners?: OwnerChangePreview[];
  /** True when every machine and owner already carries the plan's values (e.g. the plan already ran): applying it changes nothing. */
  alreadyDone?: boolean;
}

const show = (v: unknown): string => {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? 'nothing');
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
};

/**
 * The pre-start findings of a preview as validation sentences: uncovered changes grouped per target and field (a
 * fleet of 10,000 machines is one line per field, not per machine), impossible paths, and the dry-run's problems.
 */
export function prestartResult(
  plan: InPlaceUpdatePlan,
  r: Pick<PlanPreview, 'uncovered' | 'impossiblePaths'>,
  dryRunProblems: string[],
): PrestartResult {
  const groups = new Map<string, UncoveredChange[]>();
  for (const u of r.uncovered) {
    const k = `${u.target}\u0000${u.selectResource}\u0000${u.path}`;
    groups.set(k, [...(groups.get(k) ?? []), u]);
  }
  const uncovered = [...groups.values()].map((us) => {
    const u = us[0]!;
    return `${u.target}: ${u.selectResource} ${u.path} is uncovered on ${us.length} machine(s) (${u.machine} has ${show(u.current)}, its owner wants ${show(u.desired)}): no updater of the plan declares it (cover it, or set spec.acceptUncoveredChanges: true to leave it as drift)`;
  });
  const impossible = r.impossiblePaths.map(
    (i) => `${i.target} updater ${i.updater}: ${i.selectResource} ${i.path} cannot be committed: ${i.why}`,
  );
  return { generation: plan.metadata?.generation ?? 0, schemaProblems: [...impossible, ...dryRunProblems], uncovered };
}

/** Machine v1beta2 spec fields (fallback when no Machine schema is given). */
const MACHINE_SPEC_FIELDS = [
  'bootstrap',
  'clusterName',
  'deletion',
  'failureDomain',
  'infrastructureRef',
  'minReadySeconds',
  'providerID',
  'readinessGates',
  'taints',
  'version',
];

const tokens = (pointer: string): string[] =>
  pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
const covers = (outer: string, inner: string): boolean => inner === outer || inner.startsWith(`${outer}/`);

/**
 * Why `pointer` cannot exist in objects with `schema`, or undefined when it can (or when the schema cannot tell:
 * preserve-unknown-fields, free-form maps). Metadata labels/annotations are always possible.
 */
export function impossiblePathReason(schema: OpenApiSchema, pointer: string): string | undefined {
  if (/^\/metadata\/(labels|annotations)\//.test(pointer)) return undefined;
  let cur: OpenApiSchema | undefined = schema;
  const walked: string[] = [];
  for (const t of tokens(pointer)) {
    if (!cur || cur['x-kubernetes-preserve-unknown-fields'] || cur['x-kubernetes-int-or-string']) return undefined;
    if (cur.type === 'array' || cur.items) {
      if (!/^(0|[1-9]\d*|-)$/.test(t)) return `${walked.length ? `/${walked.join('/')}` : '(root)'} is a list; "${t}" is not an index`;
      cur = cur.items;
    } else if (cur.properties && t in cur.properties) cur = cur.properties[t];
    else if (cur.additionalProperties) cur = cur.additionalProperties === true ? undefined : cur.additionalProperties;
    else if (cur.properties || cur.type === 'object')
      return `${walked.length ? `/${walked.join('/')}` : 'the object'} has no field "${t}" (it would be pruned)`;
    else return `${walked.length ? `/${walked.join('/')}` : 'the object'} is a ${cur.type ?? 'scalar'}, it has no field "${t}"`;
    walked.push(t);
  }
  return undefined;
}

// Leaves (pointer -> value) of a JSON object; arrays and empty objects are compared whole.
function leaves(v: unknown, prefix: string, out: Map<string, unknown>): Map<string, unknown> {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v as Record<string, unknown>))
      leaves(x, `${prefix}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
  } else out.set(prefix, v);
  return out;
}
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** A target's concurrency in words: the decision's rule (concurrency.ts) on the decision's input. */
function concurrencyOf(t: NamedTarget, owner: KubeObject | undefined, planName: string): PreviewConcurrency {
  if (t.kind === 'ControlPlane')
    return {
      max: 1,
      why: 'control plane: one machine at a time, after a preflight (every CP machine Ready, none deleting, none in update)',
      surge: false,
    };
  if (!owner) return { max: 0, why: 'MachineDeployment not found', surge: false };
  const ru = mdRollingUpdate(owner);
  const concurrency = mdConcurrency({ md: owner, planName, updaters: t.target.updaters });
  if (!concurrency.ok) return { max: 0, why: concurrency.error, surge: false };
  if (!concurrency.disruptive) return { max: concurrency.max, why: mdConcurrencyNote(concurrency), surge: false };
  // The count before this plan's surge, as the decision reads it (a preview of a running plan sees the surged count).
  const replicas = concurrency.replicas;
  const raw = `maxUnavailable=${ru.maxUnavailable ?? '0 (default)'}`;
  if (concurrency.surge)
    return {
      max: 1,
      why: `${raw}: surge — scale to ${replicas + 1} replicas, wait for the new machine to be Ready, update one at a time, restore ${replicas}`,
      surge: true,
    };
  const rounded = typeof ru.maxUnavailable === 'string' ? ` (${ru.maxUnavailable} of ${replicas} replicas, rounded down)` : '';
  const scaled = scaleIntOrPercent(ru.maxUnavailable ?? 0, replicas, false);
  const fence = scaled.ok && scaled.value === 0 ? ' (resolves to 0 with maxSurge 0: 1, the Kubernetes fencepost rule)' : '';
  return {
    max: concurrency.max,
    why: `${raw}${rounded}${fence}: up to ${concurrency.max} machine(s) unavailable at once, machines already not Ready included`,
    surge: false,
  };
}

function previewUpdater(u: PlanUpdater): PreviewUpdater {
  const ref = u.updaterUpdateTemplateRef;
  const out: PreviewUpdater = {
    name: u.name,
    sequence: u.sequence,
    taskKind: ref ? ref.kind.replace(/Template$/, '') : 'UpdaterUpdateTask',
    responsibilities: u.responsibilities,
  };
  if (ref) out.template = { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name };
  if (u.parameters) out.parameters = u.parameters as Record<string, unknown>;
  return out;
}

const indexByKindName = (objs: KubeObject[] | undefined): Map<string, KubeObject> =>
  new Map((objs ?? []).map((o) => [`${o.kind}/${nameOf(o)}`, o]));
const findRef = (index: Map<string, KubeObject>, r: ContractRef | undefined): KubeObject | undefined =>
  r ? index.get(`${r.kind}/${r.name}`) : undefined;

/** The snapshot indexed once for every target of a preview. */
interface PreviewIndex {
  snapshot: PreviewSnapshot;
  /** The plan previewed (whose surge, if any, the concurrency rule looks through). */
  planName: string;
  /** The plan's MachineUpdates by machine name. */
  mus: Map<string, MachineUpdate>;
  byTarget: Map<string, KubeObject[]>;
  infra: Map<string, KubeObject>;
  bootstrap: Map<string, KubeObject>;
  /** Machines already at target (not updated again). */
  atTarget: ReadonlySet<string>;
}

/** Previews a plan against a snapshot: validation, groups, per-target order and concurrency, updaters, coverage, uncovered changes. */
export function previewPlan(plan: InPlaceUpdatePlan, snapshot: PreviewSnapshot): PlanPreview {
  const result: PlanPreview = { valid: false, problems: [], groups: [], coverage: [], uncovered: [], impossiblePaths: [], warnings: [] };
  result.warnings.push(...planWarnings(plan, snapshot.plans ?? []));
  // A warning, not a problem: an updater may be deployed after the plan, and a new updater has no history yet.
  for (const name of snapshot.unheardUpdaters ?? [])
    result.warnings.push(
      `no updater has ever reported on a task of updater \`${name}\` in namespace ${plan.metadata?.namespace ?? ''}: unless one serving \`${name}\` runs, each machine waits for it (reason UpdaterNotReporting) until the plan is aborted — check the name (a typo is the likeliest mistake) and that its updater is deployed`,
    );
  const index = previewIndex(plan, snapshot);
  for (const t of targetsOf(plan)) {
    const owner =
      t.kind === 'ControlPlane' ? snapshot.controlPlane?.object : snapshot.machineDeployments.find((m) => nameOf(m) === t.target.name);
    const current = (index.byTarget.get(`${t.kind}/${t.target.name}`) ?? []).filter((m) => !isDeleting(m));
    const updaters = orderedUpdaters(Array.isArray(t.target.updaters) ? t.target.updaters : []);
    let group = result.groups.find((g) => g.sequence === t.target.sequence);
    if (!group) result.groups.push((group = { sequence: t.target.sequence, targets: [] }));
    group.targets.push(previewTarget(index, t, owner, current, updaters));
    previewCoverage(result, index, { t, owner, current, updaters });
  }
  result.groups.sort((a, b) => a.sequence - b.sequence);
  const allTargets = result.groups.flatMap((g) => g.targets);
  const targetsDone = new Set(
    allTargets.filter((t) => t.machines.every((m) => m.state === 'alreadyAtTarget' || m.state === 'updated')).map((t) => t.name),
  );
  result.owners = previewOwners(plan, snapshot, allTargets, targetsDone);
  // One validation: the controller refuses what is listed here (same checks, same sentences), so preview NOT OK <=> Valid=False.
  result.problems = validatePlan({ ...snapshot, plan, prestart: prestartResult(plan, result, snapshot.dryRunProblems ?? []) });
  // A gate the operator's policy refuses is Valid=False in the cluster: NOT OK here too (preview --alert-gate-policy).
  if (plan.spec.alertGate)
    result.problems.push(
      ...alertGateRefusals(snapshot.alertGatePolicy, plan.spec.alertGate, plan.metadata?.namespace ?? '', 'spec.alertGate'),
    );
  result.valid = result.problems.length === 0;
  result.alreadyDone =
    allTargets.length > 0 &&
    allTargets.every((t) => targetsDone.has(t.name)) &&
    (result.owners ?? []).every((o) => o.change === ALREADY_CARRIES);
  return result;
}

/** What holds or stops the plan as a whole: paused, aborting, an older plan it waits for, a newer one superseding it. */
function planWarnings(plan: InPlaceUpdatePlan, plans: readonly InPlaceUpdatePlan[]): string[] {
  const planName = plan.metadata?.name ?? '';
  const out: string[] = [];
  if (plan.spec.paused) out.push('the plan is paused: no machine starts until spec.paused is false');
  if (plan.spec.updatePhase === UpdatePhase.aborting) out.push('the plan is aborting: no machine starts');
  for (const other of plans) {
    if (other.metadata?.name === planName || other.spec.clusterName !== plan.spec.clusterName || isTerminal(other.status?.updateStatus))
      continue;
    // A plan not yet in the cluster is newer than every existing one.
    const older = !plan.metadata?.creationTimestamp || planAge(other, plan) < 0;
    if (older)
      out.push(
        `plan ${other.metadata?.name} of cluster ${plan.spec.clusterName} is ${other.status?.updateStatus ?? 'pending'}: this plan waits until it is terminal${!plan.spec.paused && other.spec.updatePhase !== UpdatePhase.aborting ? ', and aborts it (supersede) once valid' : ''}`,
      );
    else
      out.push(
        `plan ${other.metadata?.name} of cluster ${plan.spec.clusterName} is newer and ${other.status?.updateStatus ?? 'pending'}: it will supersede this plan`,
      );
  }
  return out;
}

/** Indexes the snapshot once: machines by target, InfraMachines and BootstrapConfigs by kind/name, machines at target. */
function previewIndex(plan: InPlaceUpdatePlan, snapshot: PreviewSnapshot): PreviewIndex {
  const planName = plan.metadata?.name ?? '';
  const mus = new Map((snapshot.machineUpdates ?? []).filter((m) => m.spec.planName === planName).map((m) => [m.spec.machineRef.name, m]));
  const infra = indexByKindName(snapshot.infraMachines);
  const bootstrap = indexByKindName(snapshot.bootstrapConfigs);
  // Same rule as the controller (at-target.ts): machines whose objects already hold every value are not updated again.
  const lookup: RefLookup = (_ns, ref) => findRef(infra, ref) ?? findRef(bootstrap, ref);
  const atTarget = new Set(
    plan.spec.rerunMachinesAtTarget === true ? [] : machinesAtTarget(plan, snapshot.machines, lookup, new Set(mus.keys())),
  );
  return { snapshot, planName, mus, byTarget: machinesByTarget(plan.spec.clusterName, snapshot.machines), infra, bootstrap, atTarget };
}

/** One target of the preview: its machines in order with their state, its concurrency and its updaters. */
function previewTarget(
  index: PreviewIndex,
  t: NamedTarget,
  owner: KubeObject | undefined,
  current: readonly KubeObject[],
  updaters: readonly PlanUpdater[],
): PreviewTarget {
  return {
    kind: t.kind,
    name: t.target.name,
    sequence: t.target.sequence,
    machines: current.map((m) => {
      const state = machineState(index.mus.get(nameOf(m)));
      const pm: PreviewMachine = {
        name: nameOf(m),
        ready: isMachineReady(m),
        state: state === 'notStarted' && index.atTarget.has(nameOf(m)) ? 'alreadyAtTarget' : state,
      };
      const v = machineVersion(m);
      if (v !== undefined) pm.version = v;
      return pm;
    }),
    concurrency: concurrencyOf(t, owner, index.planName),
    updaters: updaters.map(previewUpdater),
  };
}

/**
 * A target's coverage into `result`: what its updaters claim, the paths that cannot exist, a version its owner
 * disagrees with, and every difference between its machines and their owner's desired state that no updater covers.
 */
function previewCoverage(
  result: PlanPreview,
  index: PreviewIndex,
  target: { t: NamedTarget; owner: KubeObject | undefined; current: readonly KubeObject[]; updaters: readonly PlanUpdater[] },
): void {
  const { t, owner, current, updaters } = target;
  const { snapshot } = index;
  const claims: PreviewCoverage[] = updaters.flatMap((u) =>
    (Array.isArray(u.responsibilities) ? u.responsibilities : []).map((r) => ({
      target: t.target.name,
      selectResource: r.selectResource,
      path: r.path,
      value: r.value,
      updater: u.name,
    })),
  );
  result.coverage.push(...claims);
  for (const c of claims) {
    const why = pathProblem(c.selectResource, c.path, snapshot.schemas);
    if (why) result.impossiblePaths.push({ target: c.target, updater: c.updater, selectResource: c.selectResource, path: c.path, why });
  }
  const claimFor = (sel: SelectResource, path: string): PreviewCoverage | undefined =>
    claims.find((c) => c.selectResource === sel && covers(c.path, path));

  // Machine /spec/version: the owner's desired version against each machine's.
  const desiredVersion = owner ? (t.kind === 'ControlPlane' ? cpVersion(owner) : mdVersion(owner)) : undefined;
  const versionClaim = claimFor('Machine', '/spec/version');
  if (desiredVersion !== undefined && versionClaim && !same(versionClaim.value, desiredVersion)) {
    result.warnings.push(
      `${t.target.name}: updater ${versionClaim.updater} sets Machine /spec/version to ${String(versionClaim.value)} but the ${t.kind === 'ControlPlane' ? 'control plane spec.version' : 'MachineDeployment spec.template.spec.version'} is ${desiredVersion}: the plan pauses it and aligns it to ${String(versionClaim.value)} when the target is done (see Owners)`,
    );
  }
  // The leaves each owner's templates want and no updater claims, once per target (not once per machine).
  const wantInfra = unclaimedLeaves(owner && desiredSpec(owner, t.kind, 'InfraMachine', snapshot.ownerTemplates), 'InfraMachine', claimFor);
  const wantBootstrap = unclaimedLeaves(
    owner && desiredSpec(owner, t.kind, 'BootstrapConfig', snapshot.ownerTemplates),
    'BootstrapConfig',
    claimFor,
  );
  for (const m of current) {
    const have = machineVersion(m);
    if (desiredVersion !== undefined && have !== desiredVersion && !versionClaim) {
      result.uncovered.push({
        target: t.target.name,
        machine: nameOf(m),
        selectResource: 'Machine',
        path: '/spec/version',
        current: have,
        desired: desiredVersion,
        why: 'the owner wants another Kubernetes version and no updater declares Machine /spec/version',
      });
    }
    result.uncovered.push(...templateDrift(t.target.name, m, 'InfraMachine', findRef(index.infra, machineInfraRef(m)), wantInfra));
    result.uncovered.push(
      ...templateDrift(t.target.name, m, 'BootstrapConfig', findRef(index.bootstrap, machineBootstrapRef(m)), wantBootstrap),
    );
  }
}

/** What the plan does to the owners (pause, template clones, alignment), as owner alignment would. */
function previewOwners(
  plan: InPlaceUpdatePlan,
  snapshot: PreviewSnapshot,
  targets: readonly PreviewTarget[],
  done: ReadonlySet<string>,
): OwnerChangePreview[] {
  return previewOwnerChanges({
    planName: plan.metadata?.name ?? '',
    done: new Set(done),
    ...(snapshot.ownerTemplates ? { templates: snapshot.ownerTemplates } : {}),
    machines: snapshot.machines,
    machineDeployments: snapshot.machineDeployments,
    ...(snapshot.controlPlane?.object ? { controlPlane: snapshot.controlPlane.object } : {}),
    targets: targetsOf(plan)
      .filter((t) => typeof t.target?.name === 'string')
      .map((t) => ({ kind: t.kind, name: t.target.name, updaters: Array.isArray(t.target.updaters) ? t.target.updaters : [] })),
    surging: new Set(targets.filter((t) => t.kind === 'MachineDeployment' && t.concurrency.surge).map((t) => t.name)),
  });
}

function pathProblem(sel: SelectResource, path: string, schemas: PreviewSnapshot['schemas']): string | undefined {
  const schema = schemas?.[sel];
  if (schema) return impossiblePathReason(schema, path);
  if (sel !== 'Machine') return undefined;
  const t = tokens(path);
  if (t[0] === 'spec' && t[1] !== undefined && !MACHINE_SPEC_FIELDS.includes(t[1]))
    return `Machine spec has no field "${t[1]}" (it would be pruned)`;
  return undefined;
}

// The spec an owner wants its machines' InfraMachine / BootstrapConfig to have, from its templates.
function desiredSpec(
  owner: KubeObject,
  kind: TargetKind,
  sel: 'InfraMachine' | 'BootstrapConfig',
  templates: KubeObject[] | undefined,
): unknown {
  if (kind === 'ControlPlane' && sel === 'BootstrapConfig') return field(owner, 'spec', 'kubeadmConfigSpec');
  const refPath =
    kind === 'ControlPlane'
      ? ['spec', 'machineTemplate', 'spec', 'infrastructureRef']
      : sel === 'InfraMachine'
        ? ['spec', 'template', 'spec', 'infrastructureRef']
        : ['spec', 'template', 'spec', 'bootstrap', 'configRef'];
  const ref = field(owner, ...refPath) as Partial<ContractRef> | undefined;
  const tpl = ref?.kind && ref.name ? templates?.find((o) => o.kind === ref.kind && nameOf(o) === ref.name) : undefined;
  return tpl ? field(tpl, 'spec', 'template', 'spec') : undefined;
}

// The leaves of a desired spec (pointer -> value) that no updater of the target claims; undefined: nothing desired.
function unclaimedLeaves(
  desired: unknown,
  sel: 'InfraMachine' | 'BootstrapConfig',
  claimFor: (s: SelectResource, p: string) => PreviewCoverage | undefined,
): UnclaimedLeaf[] | undefined {
  if (desired === undefined || desired === null) return undefined;
  const out: UnclaimedLeaf[] = [];
  for (const [p, want] of leaves(desired, '/spec', new Map())) {
    if (claimFor(sel, p)) continue;
    const keys = p
      .split('/')
      .slice(2)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    out.push({ path: p, keys, want, json: JSON.stringify(want) });
  }
  return out;
}

/** A leaf an owner's template wants: its pointer, the pointer's keys below /spec, the value and its JSON. */
interface UnclaimedLeaf {
  path: string;
  keys: string[];
  want: unknown;
  json: string | undefined;
}

function templateDrift(
  target: string,
  m: KubeObject,
  sel: 'InfraMachine' | 'BootstrapConfig',
  actual: KubeObject | undefined,
  wanted: readonly UnclaimedLeaf[] | undefined,
): UncoveredChange[] {
  if (!actual || wanted === undefined) return [];
  const out: UncoveredChange[] = [];
  const have = field(actual, 'spec');
  for (const { path: p, keys, want, json } of wanted) {
    const cur = keys.reduce<unknown>((o, k) => field(o, k), have);
    if (JSON.stringify(cur) === json) continue;
    out.push({
      target,
      machine: nameOf(m),
      selectResource: sel,
      path: p,
      current: cur,
      desired: want,
      why: `the owner's template wants another value and no updater declares ${sel} ${p}`,
    });
  }
  return out;
}
