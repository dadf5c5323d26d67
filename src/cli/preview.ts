// `inplace preview -f plan.yaml`: what a plan would do, from a read-only snapshot of the cluster.
import { resolve as resolvePath } from 'node:path';
import {
  Clusters,
  CustomResourceDefinitions,
  InPlaceUpdatePlanSchema,
  InPlaceUpdatePlans,
  Labels,
  MachineDeployments,
  Machines,
  MachineUpdates,
  UpdaterUpdateTasks,
  parseApiVersion,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
  type ResourceType,
} from '../api/index.js';
import type { ScopeReader } from '../plan-controller/scope.js';
import {
  machineBootstrapRef,
  machineInfraRef,
  ownerBootstrapTemplateRef,
  ownerInfraTemplateRef,
  type ContractRef,
} from '../api/capi/index.js';
import type { OpenApiSchema, PlanPreview, PreviewSnapshot } from '../rules/preview.js';
import type { RestClient } from '../runtime/client.js';
import { readYamlDocs } from './install.js';
import { loadWritePolicy } from './write-policy.js';
import { gatePolicyOf } from './alert-gate-policy.js';
import { checkPlan, renderPlanProblems, withOfflineProblems } from './plan-check.js';
import { call, connect, type Connection } from './kube.js';
import { toLabelValue } from '../contract/index.js';
import { safeJson, safeText } from './safe-text.js';
import {
  CliError,
  ExitCode,
  isCliError,
  KUBE_OPTIONS_HELP,
  kubeOptions,
  str,
  UsageError,
  type Io,
  type ParsedArgs,
  type Verb,
} from './verb.js';

/** `inplace preview`. */
export const previewVerb: Verb = {
  name: 'preview',
  summary: 'Show what a plan, or Cluster API with a KCP / MachineDeployment change, would do, without changing anything',
  help: `Usage: inplace preview -f plan.yaml|campaign.yaml [-n NAMESPACE] [-o text|json] [--write-policy FILE]
                       [--alert-gate-policy FILE] [--kubeconfig FILE]
       inplace preview -f kcp.yaml|md.yaml [-n NAMESPACE] [-o text|json] [--version V] [--set PATH=VALUE]...
       inplace preview kcp/NAME|md/NAME [--version V] [--set PATH=VALUE]... [-n NAMESPACE] [-o text|json]

Reads the plan file and the cluster (read-only: nothing is created or changed) and shows:
validation result, the ordered sequence groups, the machines of each target in update order with
the concurrency that applies, which updater covers which change, and — fail-closed — any difference
between the machines and their owners' desired state that no updater of the plan covers.
It runs the controller's validation on the same snapshot, including the server-side dry-run of each
commit patch (nothing is persisted) and the write policy: NOT OK here is Valid=False in the cluster.
Templates in the same file count as present (they are applied together).
With an InPlaceUpdateCampaign: the campaign controller's validation (per cluster the plan's checks and its
pre-start check: template objects, uncovered drift, the commit dry-run on one machine per target), its
waves in order and per cluster the preview of the plan it would create.
Exit code: 0 when the plan is valid and covers every change (or accepts uncovered ones with
spec.acceptUncoveredChanges), 1 otherwise, 2 for wrong usage. Warnings (e.g. a generic updater name no
updater has ever reported on in the namespace: a typo, or an updater not deployed yet) leave it at 0.
When the cluster cannot be read (no kubeconfig, unreachable), the schema, rule and controller problems found
without it are listed all the same (exit 1), then why the cluster was not read.

With a KubeadmControlPlane or MachineDeployment (a file, merged over the live object as kubectl apply
would, or kind/NAME with --version / --set): per machine, whether Cluster API would update it in place
(by which InPlaceUpdaters, in which order: the runtime extension's coverage) or replace it (which changed
fields no updater covers). Exit code 0 when no machine would be replaced, 1 otherwise (a CI gate), 2 for
bad input (an object that does not exist, a file of another kind, an unknown --set path).

Options:
  -f, --filename FILE   the plan (YAML; may also contain its templates), or a changed KCP / MachineDeployment
  --version V           Cluster API preview: the proposed Kubernetes version
  --set PATH=VALUE      Cluster API preview: set a field of the owner (spec.x.y or /spec/x/y; VALUE is YAML)
  -n, --namespace NS    namespace when the plan has none (default: the context's, else default)
  -o, --output FORMAT   text (default) or json
  --write-policy FILE   the write policy the controllers run with (default: the built-in one)
  --alert-gate-policy FILE
                        the alert-gate policy the controllers run with (default: none, every spec.alertGate
                        is refused, as by controllers run without one)
  --max-clusters N      campaign: clusters previewed in detail, in rollout order (default 25)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    filename: { type: 'string', short: 'f' },
    namespace: { type: 'string', short: 'n' },
    output: { type: 'string', short: 'o' },
    'write-policy': { type: 'string' },
    'alert-gate-policy': { type: 'string' },
    'max-clusters': { type: 'string' },
    version: { type: 'string' },
    set: { type: 'string', multiple: true },
  },
  async run(args, io) {
    const output = str(args, 'output') ?? 'text';
    if (output !== 'text' && output !== 'json') throw new UsageError(`--output must be text or json, got "${output}"`);
    const file = str(args, 'filename');
    const capi = await import('./preview-capi.js');
    if (args.positionals.length > 1 || (args.positionals.length === 1 && file))
      throw new UsageError(`unexpected argument "${args.positionals[file ? 0 : 1]}"`);
    // A live owner by kind/NAME: the Cluster API preview of --version / --set.
    if (args.positionals.length === 1) return capi.runCapiPreview(args, io, { target: args.positionals[0]! }, output);
    if (!file) throw new UsageError('missing -f plan.yaml');

    const docs = readYamlDocs(resolvePath(file));
    const plans0 = docs.filter((d) => d.kind === 'InPlaceUpdatePlan' || d.kind === 'InPlaceUpdateCampaign');
    if (plans0.length === 0 && capi.isOwnerFile(docs)) return capi.runCapiPreview(args, io, { file, docs }, output);
    if (str(args, 'version') !== undefined || args.values['set'] !== undefined)
      throw new UsageError('--version and --set apply to a KubeadmControlPlane or MachineDeployment, not to a plan');
    if (plans0.length === 0)
      throw new CliError(
        `"${file}" contains no InPlaceUpdatePlan, InPlaceUpdateCampaign, KubeadmControlPlane or MachineDeployment (found: ${[...new Set(docs.map((d) => d.kind ?? '(no kind)'))].join(', ') || 'nothing'})`,
        'preview a plan (see examples/plan.yaml), a campaign, or a changed KubeadmControlPlane / MachineDeployment',
        ExitCode.usage,
      );
    const plans = docs.filter((d) => d.kind === 'InPlaceUpdatePlan');
    // A campaign: its waves and, per cluster, the preview of the plan it would create (src/cli/campaign-preview.ts).
    if (plans.length === 0 && docs.some((d) => d.kind === 'InPlaceUpdateCampaign'))
      return (await import('./campaign-preview.js')).runCampaignPreview({ file, docs }, args, io, output, readSnapshot);
    if (plans.length !== 1) {
      throw new CliError(
        `"${file}" must contain exactly one InPlaceUpdatePlan, found ${plans.length}`,
        'preview one plan at a time (see examples/plan.yaml)',
      );
    }
    return previewPlanFile(args, io, { file, docs, doc: plans[0]! }, output);
  },
};

/** The plan file's one plan: what the plan controller would do with it against the cluster (`inplace preview -f`). */
async function previewPlanFile(
  args: ParsedArgs,
  io: Io,
  { file, docs, doc }: { file: string; docs: KubeObject[]; doc: KubeObject },
  output: 'text' | 'json',
): Promise<number> {
  const policyFile = str(args, 'write-policy');
  const writePolicy = policyFile !== undefined ? loadWritePolicy(policyFile) : undefined;
  const alertGatePolicy = gatePolicyOf(args);
  const offline = checkPlan(doc, writePolicy ? { writePolicy } : {}); // schema, rules and controller checks, no server
  const offlineError = (why: string): CliError =>
    new CliError(renderPlanProblems(file, offline), `fix them all, then preview again (${why})`);
  const parsed = InPlaceUpdatePlanSchema.safeParse(doc);
  if (!parsed.success) {
    if (offline.length > 0) throw offlineError('the plan is too malformed to read the cluster for');
    const issues = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`).join('\n');
    throw new CliError(
      `"${file}" is not a valid InPlaceUpdatePlan:\n${issues}`,
      'fix the fields above (the CRD schema in crds/ is the reference; kubectl explain inplaceupdateplan.spec)',
    );
  }
  const plan = parsed.data as InPlaceUpdatePlan & KubeObject;
  plan.metadata ??= {};
  const { dryRunCommits } = await import('../effects/prestart.js');
  let conn: Connection;
  try {
    conn = connect(args);
  } catch (e) {
    if (offline.length > 0) throw offlineError(`the cluster was not read: ${(e as Error).message}`);
    throw e;
  }
  try {
    const ns = plan.metadata.namespace ?? str(args, 'namespace') ?? conn.contextNamespace ?? 'default';
    plan.metadata.namespace = ns;
    let snapshot: PreviewSnapshot;
    try {
      snapshot = await readSnapshot(conn, plan, ns, docs);
      snapshot.dryRunProblems = await call(conn, Machines, () => dryRunCommits(conn.client, plan, snapshot.machines, writePolicy));
    } catch (e) {
      // The cluster could not be read (unreachable, forbidden, CRDs missing): the problems found without it are
      // still true, and the operator fixes them while the cluster is down rather than one round later.
      if (!isCliError(e)) throw e;
      if (offline.length > 0) throw offlineError(`the cluster was not read: ${e.message}`);
      throw new CliError(
        e.message,
        `${e.hint ? `${e.hint}; ` : ''}without the cluster no problem was found (schema, rules, plan controller checks)`,
        e.exitCode,
      );
    }
    if (writePolicy) snapshot.writePolicy = writePolicy;
    if (alertGatePolicy) snapshot.alertGatePolicy = alertGatePolicy;
    const { previewPlan } = await import('../rules/preview.js');
    const result = withOfflineProblems(previewPlan(plan, snapshot), offline);
    if (output === 'json') io.out(`${safeJson(result)}\n`);
    else io.out(renderPreview(plan, result, snapshot));
    return result.valid ? ExitCode.ok : ExitCode.failure;
  } finally {
    conn.client.close();
  }
}

/**
 * The preview of a plan object built by the CLI itself (e.g. `inplace revert`), against the cluster: the offline
 * checks (schema, rules) and the controller's validation with the commit dry-run, as `inplace preview -f` does.
 */
export async function previewPlanObject(conn: Connection, plan: InPlaceUpdatePlan & KubeObject): Promise<PlanPreview> {
  const offline = checkPlan(plan);
  const snapshot = await readSnapshot(conn, plan, plan.metadata.namespace ?? 'default', []);
  const { previewPlan } = await import('../rules/preview.js');
  const { dryRunCommits } = await import('../effects/prestart.js');
  snapshot.dryRunProblems = await call(conn, Machines, () => dryRunCommits(conn.client, plan, snapshot.machines));
  return withOfflineProblems(previewPlan(plan, snapshot), offline);
}

/** get, list and resolve in the plan's namespace, with the CLI's errors; resolve answers why a kind is not served. */
interface SnapshotReads {
  get<T extends KubeObject>(res: ResourceType, name: string): Promise<T | undefined>;
  list(res: ResourceType, labelSelector?: string): Promise<KubeObject[]>;
  resolve(group: string, kind: string): Promise<ResourceType | string>;
}

function snapshotReads(conn: Connection, ns: string): SnapshotReads {
  const c = conn.client;
  return {
    get: (res, name) => call(conn, res, () => c.get(res, res.namespaced ? ns : undefined, name)),
    list: async (res, labelSelector) =>
      (await call(conn, res, () => c.list(res, res.namespaced ? ns : undefined, labelSelector ? { labelSelector } : {}))).items,
    resolve: async (group, kind) => {
      try {
        return await c.resolve(group, kind);
      } catch (e) {
        return `${kind}.${group} is not served by the API server (${(e as Error).message})`;
      }
    },
  };
}

/** Reads everything the preview needs with get/list only. */
async function readSnapshot(
  conn: Connection,
  plan: InPlaceUpdatePlan & KubeObject,
  ns: string,
  fileDocs: KubeObject[],
): Promise<PreviewSnapshot> {
  const c = conn.client;
  const r = snapshotReads(conn, ns);
  // The live plan of the same name, when there is one: its MachineUpdates are shown (the builder keeps only the records
  // that plan owns, by uid, as the controller does).
  const live = plan.metadata.name ? await r.get(InPlaceUpdatePlans, plan.metadata.name) : undefined;
  const scopePlan: InPlaceUpdatePlan & KubeObject = live?.metadata.uid
    ? { ...plan, metadata: { ...plan.metadata, uid: live.metadata.uid } }
    : plan;
  const { buildScope } = await import('../plan-controller/scope.js');
  const scope = await buildScope(scopePlan, scopeReader(conn, { plan, ns, fileDocs }, r));
  // The file's plan is the one previewed; the live plan of the same name is replaced by it.
  scope.plans = [...scope.plans, plan];
  const { cluster, controlPlane, machineDeployments, templates, machines, machineUpdates } = scope;

  // InfraMachines / BootstrapConfigs of the machines and the owners' templates, listed per kind (read-only).
  const byKind = (refsOf: (m: KubeObject) => ContractRef | undefined, objs: KubeObject[]): Promise<KubeObject[]> =>
    listReferencedKinds(r, refsOf, objs);
  const infraMachines = await byKind(machineInfraRef, machines);
  const bootstrapConfigs = await byKind(machineBootstrapRef, machines);
  const owners = [...machineDeployments, ...(controlPlane?.object ? [controlPlane.object] : [])];
  const ownerTemplates = [...(await byKind(ownerInfraTemplateRef, owners)), ...(await byKind(ownerBootstrapTemplateRef, owners))];
  const schemas = await providerSchemas(c, r, machines);
  const unheardUpdaters = await unheardGenericUpdaters(c, plan, ns);
  return {
    plan,
    cluster,
    ...(controlPlane ? { controlPlane } : {}),
    machineDeployments,
    templates,
    machines,
    machineUpdates,
    plans: scope.plans,
    infraMachines,
    bootstrapConfigs,
    ownerTemplates,
    schemas,
    ...(unheardUpdaters ? { unheardUpdaters } : {}),
  };
}

/** The plan controller's scope reader over get/list: what the plan's snapshot is built from. */
function scopeReader(
  conn: Connection,
  { plan, ns, fileDocs }: { plan: InPlaceUpdatePlan & KubeObject; ns: string; fileDocs: KubeObject[] },
  { get, list, resolve }: SnapshotReads,
): ScopeReader {
  return {
    now: () => new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    cluster: (_ns, name) => get(Clusters, name),
    machineDeployments: async (_ns, names) => (await list(MachineDeployments)).filter((o) => names.includes(o.metadata.name ?? '')),
    machines: (_ns, clusterName) => list(Machines, `${Labels.clusterName}=${clusterName}`),
    machineUpdates: async (_ns, planLabel) => (await list(MachineUpdates, `${Labels.planName}=${planLabel}`)) as unknown as MachineUpdate[],
    plans: async (_ns, clusterName) =>
      ((await list(InPlaceUpdatePlans)) as unknown as InPlaceUpdatePlan[]).filter(
        (p) => p.spec?.clusterName === clusterName && p.metadata?.name !== plan.metadata.name,
      ),
    async read(_ns, apiGroup, kind, name, purpose) {
      const res = await resolve(apiGroup, kind);
      if (typeof res === 'string') return { notServed: res };
      // Templates in the same file count as present: they are applied together.
      const inFile =
        purpose === 'template'
          ? fileDocs.find(
              (d) =>
                parseApiVersion(d.apiVersion ?? '').group === apiGroup &&
                d.kind === kind &&
                d.metadata?.name === name &&
                (d.metadata.namespace ?? ns) === ns,
            )
          : undefined;
      const object = inFile ?? (await get(res, name));
      return object ? { object } : {};
    },
    async taskCrd(group, kind) {
      const res = await resolve(group, kind);
      if (typeof res === 'string') return undefined;
      try {
        return await conn.client.get(CustomResourceDefinitions, undefined, `${res.plural}.${res.group}`);
      } catch {
        return undefined; // best effort: a caller who may not read CRDs gets the controller's check at apply time
      }
    },
  };
}

/** Every object of each kind `refsOf` names among `objs` (listed once per kind). */
async function listReferencedKinds(
  r: SnapshotReads,
  refsOf: (m: KubeObject) => ContractRef | undefined,
  objs: KubeObject[],
): Promise<KubeObject[]> {
  const kinds = new Map<string, ContractRef>();
  for (const o of objs) {
    const ref = refsOf(o);
    if (ref) kinds.set(`${ref.apiGroup}/${ref.kind}`, ref);
  }
  const out: KubeObject[] = [];
  for (const ref of kinds.values()) {
    const res = await r.resolve(ref.apiGroup, ref.kind);
    if (typeof res !== 'string') out.push(...(await r.list(res)).map((o) => ({ ...o, kind: res.kind })));
  }
  return out;
}

/** The CRD schemas of Machine and of the machines' InfraMachine and BootstrapConfig kinds (those served). */
async function providerSchemas(c: RestClient, r: SnapshotReads, machines: readonly KubeObject[]): Promise<PreviewSnapshot['schemas']> {
  const schemas: PreviewSnapshot['schemas'] = {};
  const machineSchema = await crdSchema(c, Machines);
  if (machineSchema) schemas.Machine = machineSchema;
  const firstRef = (f: (m: KubeObject) => ContractRef | undefined): ContractRef | undefined => machines.map(f).find((x) => x);
  for (const [sel, ref] of [
    ['InfraMachine', firstRef(machineInfraRef)],
    ['BootstrapConfig', firstRef(machineBootstrapRef)],
  ] as const) {
    if (!ref) continue;
    const res = await r.resolve(ref.apiGroup, ref.kind);
    const s = typeof res === 'string' ? undefined : await crdSchema(c, res);
    if (s) schemas[sel] = s;
  }
  return schemas;
}

/** Tasks of one updater name looked at for a status: evidence of an updater serving it (a page, not every task). */
const EVIDENCE_TASKS = 100;

/**
 * The plan's generic updater names (no template: routed by name) on which no task of the namespace ever got a status
 * from an updater. Updaters do not register with the platform, so a past report is the evidence there is that one
 * serves the name; best effort: undefined when tasks cannot be listed.
 */
async function unheardGenericUpdaters(c: RestClient, plan: InPlaceUpdatePlan, ns: string): Promise<string[] | undefined> {
  const targets = [...(plan.spec.controlPlane ? [plan.spec.controlPlane] : []), ...(plan.spec.machineDeployments ?? [])];
  const names = [
    ...new Set(
      targets
        .flatMap((t) => (Array.isArray(t.updaters) ? t.updaters : []))
        .filter((u) => !u.updaterUpdateTemplateRef)
        .map((u) => u.name),
    ),
  ].sort();
  const out: string[] = [];
  try {
    for (const name of names) {
      const tasks = await c.list(UpdaterUpdateTasks, ns, {
        labelSelector: `${Labels.updaterName}=${toLabelValue(name)}`,
        limit: EVIDENCE_TASKS,
      });
      if (!tasks.items.some((t) => (t as { status?: { updateStatus?: string } }).status?.updateStatus)) out.push(name);
    }
  } catch {
    return undefined; // a caller who may not list tasks gets no warning, not an error
  }
  return out;
}

/** The openAPIV3Schema of a served CRD version, when the caller may read CRDs (best effort: absent otherwise). */
async function crdSchema(c: RestClient, res: ResourceType): Promise<OpenApiSchema | undefined> {
  try {
    const crd = await c.get(CustomResourceDefinitions, undefined, `${res.plural}.${res.group}`);
    const versions =
      (crd?.['spec'] as { versions?: { name: string; schema?: { openAPIV3Schema?: OpenApiSchema } }[] } | undefined)?.versions ?? [];
    return versions.find((v) => v.name === res.version)?.schema?.openAPIV3Schema;
  } catch {
    return undefined;
  }
}

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** Renders a preview for people. */
export function renderPreview(plan: InPlaceUpdatePlan & KubeObject, r: PlanPreview, s: Pick<PreviewSnapshot, 'machines'>): string {
  const L: string[] = [];
  L.push(
    `InPlaceUpdatePlan ${plan.metadata.namespace}/${plan.metadata.name ?? '(unnamed)'} — cluster ${plan.spec.clusterName}, failurePolicy ${plan.spec.failurePolicy ?? 'Halt'}`,
  );
  L.push('');
  L.push(
    r.valid
      ? 'Validation: OK'
      : `Validation: INVALID (${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}) — the controller would set Valid=False and touch nothing`,
  );
  for (const p of r.problems) L.push(`  ✖ ${p}`);
  for (const g of r.groups) {
    L.push('');
    L.push(`Sequence ${g.sequence}${g.targets.length > 1 ? ` (${g.targets.length} targets in parallel)` : ''}:`);
    for (const t of g.targets) {
      L.push(
        `  ${t.kind} ${t.name}: ${t.machines.length} machine${t.machines.length === 1 ? '' : 's'}, at most ${t.concurrency.max} at once`,
      );
      L.push(`    concurrency: ${t.concurrency.why}`);
      L.push('    updaters, in order on each machine:');
      for (const u of t.updaters) {
        L.push(
          `      ${u.sequence}. ${u.name} -> ${u.taskKind}${u.template ? ` from ${u.template.kind}/${u.template.name}` : ''}${u.parameters ? ` parameters ${JSON.stringify(u.parameters)}` : ''}`,
        );
        for (const x of u.responsibilities) L.push(`           ${x.selectResource} ${x.path} = ${show(x.value)}`);
      }
      L.push('    machines, in update order:');
      t.machines.forEach((m, i) =>
        L.push(
          `      ${String(i + 1).padStart(2)}. ${m.name.padEnd(30)} ${(m.version ?? '').padEnd(9)} ${m.ready ? 'Ready   ' : 'NotReady'} ${m.state}`,
        ),
      );
      if (t.machines.length === 0) L.push('      (none)');
    }
  }
  L.push('');
  L.push('Coverage (change -> updater):');
  for (const c of r.coverage) L.push(`  ${c.target}: ${c.selectResource} ${c.path} = ${show(c.value)}  <- ${c.updater}`);
  if (r.coverage.length === 0) L.push('  (no changes declared)');
  L.push('');
  if (r.uncovered.length === 0) L.push('Uncovered changes: none');
  else {
    L.push(
      `Uncovered changes: ${r.uncovered.length} — the owners want these and no updater of the plan declares them${plan.spec.acceptUncoveredChanges ? ' (accepted: spec.acceptUncoveredChanges)' : ''}:`,
    );
    for (const u of r.uncovered)
      L.push(`  ✖ ${u.target} ${u.machine}: ${u.selectResource} ${u.path} is ${show(u.current)}, wants ${show(u.desired)} (${u.why})`);
  }
  for (const p of r.impossiblePaths) L.push(`  ✖ ${p.target} updater ${p.updater}: ${p.selectResource} ${p.path}: ${p.why}`);
  if (r.owners && r.owners.length > 0) {
    L.push('');
    L.push('Owners (so that Cluster API sees the updated machines as up to date; see docs/operations.md):');
    for (const o of r.owners) L.push(`  ${o.target}: ${o.object}: ${o.change}`);
  }
  if (r.warnings.length > 0) {
    L.push('');
    L.push('Warnings:');
    for (const w of r.warnings) L.push(`  ! ${w}`);
  }
  L.push('');
  const ok = r.valid;
  L.push(
    ok && r.alreadyDone
      ? `Result: already done — every machine and owner already carries the plan's values; applying it changes nothing.`
      : ok
        ? `Result: OK — ${s.machines.length} machines in the cluster; nothing was changed.`
        : 'Result: NOT OK — fix the problems above before applying; nothing was changed.',
  );
  // Names, values and problems come from the plan file and the cluster: each line is made terminal-safe.
  return L.map(safeText).join('\n') + '\n';
}
