// Pure: what Cluster API would do with a proposed KubeadmControlPlane or MachineDeployment, per machine — nothing
// (already up to date), an in-place update (by which InPlaceUpdaters, in which order) or a replacement (which changed
// fields no updater covers). The coverage is the runtime extension's own (coverObject, the same function its
// CanUpdateMachine / CanUpdateMachineSet answers come from); what Cluster API compares, and when it rolls out at all,
// is the upstream model the CAPI simulator plays (tools/capi-sim/rollout.ts and inplace.ts), so the preview and the
// simulated cluster cannot disagree.
import { Labels, orderedUpdaters, type InPlaceUpdater, type KubeObject } from '../api/index.js';
import {
  scaleIntOrPercent,
  type KubeadmControlPlane,
  type Machine,
  type MachineDeployment,
  type MachineSet,
  type ObjectRef,
} from '../api/capi/index.js';
import { coverObject, type ObjectCoverage, type SelectResource, type SpecRoot } from '../runtime-extension/decide.js';
import {
  findNewMachineSet,
  kcpMachineUpToDate,
  kubeadmConfigSpecForDiff,
  machineSpecForDiff,
  machineTemplateUpToDate,
} from '../../tools/capi-sim/model.js';

/** The owner kinds a Cluster API preview takes. */
export type CapiOwnerKind = 'KubeadmControlPlane' | 'MachineDeployment';

/** What one machine would go through. */
export type CapiVerdict = 'unchanged' | 'in-place' | 'replaced';

/** One updater of an in-place update, with the changed fields it covers. */
export interface CapiPreviewUpdater {
  name: string;
  sequence: number;
  /** Changed fields it covers, as `Kind /json/pointer`. */
  fields: string[];
}

/** The preview of one machine. */
export interface CapiPreviewMachine {
  name: string;
  verdict: CapiVerdict;
  /** Why Cluster API sees the machine as out of date (empty when unchanged). */
  outOfDate: string[];
  /** In-place: the updaters in the order they run (the MachineUpdate the UpdateMachine hook creates runs them so). */
  updaters: CapiPreviewUpdater[];
  /** Replaced: the changed fields no InPlaceUpdater covers, as `Kind /json/pointer`. */
  uncovered: string[];
  /** Replaced for another reason than a field: the surge, an object not found, nothing an updater could apply. */
  reason?: string;
}

/** The preview of an owner change. */
export interface CapiPreview {
  kind: CapiOwnerKind;
  namespace: string;
  name: string;
  machines: CapiPreviewMachine[];
  /** Machines Cluster API replaces although the extension covers their change: the surge (maxSurge) machines. */
  surgeReplaced: number;
  /** Notes on what the preview cannot see or what Cluster API does besides (surge machines). */
  notes: string[];
  /** True when any machine would be replaced (the CI gate: a non-zero exit). */
  replaces: boolean;
}

/** What the preview reads: the proposed owner, its machines and their objects, the owner's MachineSets, the updaters. */
export interface CapiPreviewInput {
  owner: KubeadmControlPlane | MachineDeployment;
  kind: CapiOwnerKind;
  /** The owner's live machines (deleting ones are left out). */
  machines: readonly Machine[];
  /** MachineDeployment: its MachineSets. */
  machineSets?: readonly MachineSet[];
  /** The object a reference names in the owner's namespace (InfraMachines, bootstrap configs, templates), if found. */
  lookup(ref: ObjectRef): KubeObject | undefined;
  /** The InPlaceUpdaters registered in the owner's namespace. */
  updaters: readonly InPlaceUpdater[];
  /**
   * The updaters the runtime extension would use for one request, given its desired side (the objects of a
   * CanUpdateMachine or CanUpdateMachineSet request): those whose scope serves the machine. Default: all of them.
   */
  serving?: (side: CapiRequestSide) => readonly InPlaceUpdater[];
}

/** The desired side of the CanUpdate request Cluster API would send for a machine (KCP) or a MachineSet (MD). */
export type CapiRequestSide =
  | { machine: unknown; infrastructureMachine: unknown; bootstrapConfig?: unknown }
  | { machineSet: unknown; infrastructureMachineTemplate: unknown; bootstrapConfigTemplate?: unknown };

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const specOf = (o: KubeObject | undefined): Json => (isObject(o?.['spec']) ? (o['spec'] as Json) : {});
const templateSpecOf = (o: KubeObject | undefined): Json => {
  const t = specOf(o)['template'];
  return isObject(t) && isObject(t['spec']) ? t['spec'] : {};
};
const nameOf = (o: KubeObject): string => o.metadata.name ?? '';
const byCreation = (a: Machine, b: Machine): number =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || nameOf(a).localeCompare(nameOf(b));

/** One object pair to cover: what the runtime extension gets in a CanUpdate request, cleaned as Cluster API compares it. */
interface Pair {
  label: string;
  select: SelectResource;
  current: unknown;
  desired: unknown;
}

/** Covers every pair as the extension does and turns the result into the machine's verdict. */
function judge(
  name: string,
  outOfDate: string[],
  pairs: readonly Pair[],
  root: SpecRoot,
  updaters: readonly InPlaceUpdater[],
): CapiPreviewMachine {
  const covered = new Map<string, string[]>();
  const uncovered: string[] = [];
  for (const p of pairs) {
    const c: ObjectCoverage = coverObject(p.current, p.desired, p.select, root, updaters);
    for (const x of c.covered) for (const u of x.updaters) covered.set(u, [...(covered.get(u) ?? []), `${p.label} ${x.path}`]);
    uncovered.push(...c.uncovered.map((path) => `${p.label} ${path}`));
  }
  if (uncovered.length > 0) return { name, verdict: 'replaced', outOfDate, updaters: [], uncovered };
  const used = orderedUpdaters(
    updaters
      .filter((u) => covered.has(u.metadata?.name ?? ''))
      .map((u) => ({ name: u.metadata?.name ?? '', sequence: u.spec.sequence, fields: covered.get(u.metadata?.name ?? '') ?? [] })),
  );
  if (used.length === 0)
    return {
      name,
      verdict: 'replaced',
      outOfDate,
      updaters: [],
      uncovered: ['no difference an updater could apply (Cluster API rolls the machine out)'],
    };
  return { name, verdict: 'in-place', outOfDate, updaters: used, uncovered: [] };
}

const refOf = (v: unknown): ObjectRef | undefined =>
  isObject(v) && typeof v['name'] === 'string' && typeof v['kind'] === 'string'
    ? { apiGroup: String(v['apiGroup'] ?? ''), kind: v['kind'], name: v['name'] }
    : undefined;

/** KubeadmControlPlane: each out-of-date machine is offered to CanUpdateMachine with its desired Machine, InfraMachine and KubeadmConfig. */
function previewKcp(i: CapiPreviewInput, kcp: KubeadmControlPlane): { machines: CapiPreviewMachine[]; problems: string[] } {
  const problems: string[] = [];
  const infraRef = kcp.spec.machineTemplate.spec.infrastructureRef;
  const template = i.lookup(infraRef);
  if (!template) problems.push(`${infraRef.kind} ${infraRef.name} (spec.machineTemplate.spec.infrastructureRef) not found`);
  const machines = [...i.machines].sort(byCreation).map((m): CapiPreviewMachine => {
    const name = nameOf(m);
    const infra = i.lookup(m.spec.infrastructureRef);
    const configRef = refOf(m.spec.bootstrap.configRef);
    const config = configRef ? i.lookup(configRef) : undefined;
    const up = kcpMachineUpToDate(kcp, {
      machine: m,
      ...(infra ? { infraMachine: infra } : {}),
      ...(config ? { kubeadmConfigSpec: specOf(config) } : {}),
    });
    if (up.upToDate) return { name, verdict: 'unchanged', outOfDate: [], updaters: [], uncovered: [] };
    // Upstream EligibleForInPlaceUpdate: without its InfraMachine (and KubeadmConfig, when it has one) a machine is replaced.
    if (!infra || (configRef && !config) || !template)
      return {
        name,
        verdict: 'replaced',
        outOfDate: up.reasons,
        updaters: [],
        uncovered: [],
        reason: `${!infra ? `${m.spec.infrastructureRef.kind} ${m.spec.infrastructureRef.name}` : !template ? `${infraRef.kind} ${infraRef.name}` : `${configRef?.kind} ${configRef?.name}`} not found: not eligible for an in-place update`,
      };
    const infraSpec = specOf(infra);
    const desiredInfra = {
      ...templateSpecOf(template),
      ...(infraSpec['providerID'] !== undefined ? { providerID: infraSpec['providerID'] } : {}),
    };
    const pairs: Pair[] = [
      {
        label: 'Machine',
        select: 'Machine',
        current: { spec: machineSpecForDiff(m.spec) },
        desired: { spec: machineSpecForDiff({ ...m.spec, version: kcp.spec.version }) },
      },
      { label: m.spec.infrastructureRef.kind, select: 'InfraMachine', current: { spec: infraSpec }, desired: { spec: desiredInfra } },
    ];
    if (config)
      pairs.push({
        label: configRef?.kind ?? 'KubeadmConfig',
        select: 'BootstrapConfig',
        current: { spec: kubeadmConfigSpecForDiff(specOf(config)) },
        desired: { spec: kubeadmConfigSpecForDiff(kcp.spec.kubeadmConfigSpec) },
      });
    const side = {
      machine: { kind: 'Machine', spec: m.spec },
      infrastructureMachine: infra,
      ...(config ? { bootstrapConfig: config } : {}),
    };
    return judge(name, up.reasons, pairs, '/spec', i.serving ? i.serving(side) : i.updaters);
  });
  return { machines, problems };
}

/** MachineDeployment: each old MachineSet is offered to CanUpdateMachineSet against the deployment's template; its machines share the answer. */
function previewMd(i: CapiPreviewInput, md: MachineDeployment): { machines: CapiPreviewMachine[]; problems: string[] } {
  const problems: string[] = [];
  const sets = (i.machineSets ?? []).filter((s) => !s.metadata.deletionTimestamp);
  const current = findNewMachineSet(md, sets);
  const desiredInfraRef = md.spec.template.spec.infrastructureRef;
  const desiredBootRef = refOf(md.spec.template.spec.bootstrap.configRef);
  const desiredInfra = i.lookup(desiredInfraRef);
  const desiredBoot = desiredBootRef ? i.lookup(desiredBootRef) : undefined;
  if (!desiredInfra) problems.push(`${desiredInfraRef.kind} ${desiredInfraRef.name} (spec.template.spec.infrastructureRef) not found`);
  if (desiredBootRef && !desiredBoot)
    problems.push(`${desiredBootRef.kind} ${desiredBootRef.name} (spec.template.spec.bootstrap.configRef) not found`);
  const bySet = new Map<string, Omit<CapiPreviewMachine, 'name'>>();
  const verdictOfSet = (setName: string | undefined): Omit<CapiPreviewMachine, 'name'> => {
    const set = sets.find((s) => nameOf(s) === setName);
    if (!set)
      return { verdict: 'replaced', outOfDate: ['the machine belongs to no MachineSet of the deployment'], updaters: [], uncovered: [] };
    if (current && nameOf(current) === setName) return { verdict: 'unchanged', outOfDate: [], updaters: [], uncovered: [] };
    const up = machineTemplateUpToDate(set.spec.template, md.spec.template);
    // A set whose template already matches (not the chosen new one) is scaled into it by CAPI: nothing to update.
    if (up.upToDate) return { verdict: 'unchanged', outOfDate: [], updaters: [], uncovered: [] };
    const known = bySet.get(nameOf(set));
    if (known) return known;
    const oldInfraRef = set.spec.template.spec.infrastructureRef;
    const oldBootRef = refOf(set.spec.template.spec.bootstrap.configRef);
    const oldInfra = i.lookup(oldInfraRef);
    const oldBoot = oldBootRef ? i.lookup(oldBootRef) : undefined;
    let out: Omit<CapiPreviewMachine, 'name'>;
    if (!oldInfra || !desiredInfra || (desiredBootRef && !desiredBoot) || (oldBootRef && !oldBoot)) {
      const missing = !oldInfra
        ? oldInfraRef
        : !desiredInfra
          ? desiredInfraRef
          : !desiredBoot && desiredBootRef
            ? desiredBootRef
            : oldBootRef!;
      out = {
        verdict: 'replaced',
        outOfDate: up.reasons,
        updaters: [],
        uncovered: [],
        reason: `${missing.kind} ${missing.name} not found: Cluster API rolls out`,
      };
    } else {
      const pairs: Pair[] = [
        {
          label: 'MachineSet',
          select: 'Machine',
          current: { spec: { template: { spec: machineSpecForDiff(set.spec.template.spec) } } },
          desired: { spec: { template: { spec: machineSpecForDiff(md.spec.template.spec) } } },
        },
        { label: oldInfraRef.kind, select: 'InfraMachine', current: { spec: specOf(oldInfra) }, desired: { spec: specOf(desiredInfra) } },
      ];
      if (oldBoot || desiredBoot)
        pairs.push({
          label: (oldBootRef ?? desiredBootRef)!.kind,
          select: 'BootstrapConfig',
          current: { spec: specOf(oldBoot) },
          desired: { spec: specOf(desiredBoot) },
        });
      const side = {
        machineSet: { kind: 'MachineSet', spec: md.spec },
        infrastructureMachineTemplate: desiredInfra,
        ...(desiredBoot ? { bootstrapConfigTemplate: desiredBoot } : {}),
      };
      const { name: _n, ...rest } = judge('', up.reasons, pairs, '/spec/template/spec', i.serving ? i.serving(side) : i.updaters);
      out = rest;
    }
    bySet.set(nameOf(set), out);
    return out;
  };
  const machines = [...i.machines].sort(byCreation).map((m) => ({ name: nameOf(m), ...verdictOfSet(m.metadata.labels?.[Labels.setName]) }));
  return { machines, problems };
}

/** The surge: CAPI creates up to maxSurge new machines first and, once as many are up to date, scales old ones down instead of updating them. */
function surgeOf(i: CapiPreviewInput): number {
  const strategy = i.owner.spec.rollout?.strategy;
  const replicas = i.owner.spec.replicas ?? 1;
  if (i.kind === 'MachineDeployment' && strategy?.type === 'OnDelete') return 0;
  const raw = strategy?.rollingUpdate?.maxSurge ?? 1;
  const s = scaleIntOrPercent(raw, replicas, true);
  return s.ok ? s.value : 1;
}

/** The preview of a proposed owner; `problems` (a template that does not exist) make it unusable. */
export function previewCapiChange(i: CapiPreviewInput): { preview: CapiPreview; problems: string[] } {
  const { machines, problems } =
    i.kind === 'KubeadmControlPlane' ? previewKcp(i, i.owner as KubeadmControlPlane) : previewMd(i, i.owner as MachineDeployment);
  const notes: string[] = [];
  // The newest in-place candidates are the ones left when the surge machines already make the owner's replicas.
  const inPlace = machines.filter((m) => m.verdict === 'in-place');
  const surge = Math.min(surgeOf(i), inPlace.length);
  for (const m of inPlace.slice(inPlace.length - surge)) {
    m.verdict = 'replaced';
    m.updaters = [];
    m.reason = `maxSurge ${surge}: Cluster API creates ${surge} new machine${surge === 1 ? '' : 's'} first and scales as many old ones down instead of updating them (set spec.rollout.strategy.rollingUpdate.maxSurge to 0 to update every machine in place)`;
  }
  if (surge > 0)
    notes.push(
      `${surge} machine${surge === 1 ? ' is' : 's are'} replaced by the surge although the updaters cover the change; which one${surge === 1 ? '' : 's'} is Cluster API's choice at the time (shown: the newest)`,
    );
  if (i.updaters.length === 0 && machines.some((m) => m.verdict !== 'unchanged'))
    notes.push(`no InPlaceUpdater is registered in namespace ${i.owner.metadata.namespace ?? ''}: every change is a rollout`);
  const preview: CapiPreview = {
    kind: i.kind,
    namespace: i.owner.metadata.namespace ?? '',
    name: nameOf(i.owner),
    machines,
    surgeReplaced: surge,
    notes,
    replaces: machines.some((m) => m.verdict === 'replaced'),
  };
  return { preview, problems };
}
