// `inplace revert <plan>`: reads the plan, its MachineUpdates (what each commit changed: status.committed) and the
// machines' objects now (get/list only), shows the plan that sets the values before again (src/cli/revert-decide.ts),
// and creates it with --apply. Refusals (a pruned journal, machines changed since, a plan still running) create nothing.
import { stringify } from 'yaml';
import {
  InPlaceUpdatePlans,
  KubeadmControlPlanes,
  Labels,
  MachineUpdates,
  Machines,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
} from '../api/index.js';
import { toLabelValue } from '../contract/index.js';
import { isAlreadyExists } from '../runtime/pure/errors.js';
import { call, connect, explainApiError, findPlan, type Connection } from './kube.js';
import type { PlanPreview } from '../rules/preview.js';
import { decideRevert, type LiveMachine, type RevertDecision } from './revert-decide.js';
import { safeLines, safeText } from './safe-text.js';
import { CliError, ExitCode, KUBE_OPTIONS_HELP, flag, kubeOptions, positionals, str, UsageError, type Verb } from './verb.js';

type Ref = { apiGroup?: string; kind?: string; name?: string } | undefined;

/** `inplace revert`. */
export const revertVerb: Verb = {
  name: 'revert',
  summary: 'Build (and with --apply create) a plan that puts back the values a finished or aborted plan committed',
  help: `Usage: inplace revert <plan> [-n NAMESPACE] [--apply] [--name NAME] [-o text|yaml] [--kubeconfig FILE]

Builds a plan that brings the machines a finished (updated, failed) or aborted plan changed back to the values
they held before its commit (each MachineUpdate keeps them in status.committed), on the same targets with the same
sequences and updaters: the same order and the owners' budgets. Only values a machine still holds from the plan
revert. A Kubernetes version is never set back (kubeadm does not support a downgrade: it stays, and is listed);
OS images, configuration and other values revert. The revert plan is validated as inplace preview -f does
(an invalid one is not created). Nothing is created without --apply.
Refused, with nothing created: a plan still running, a plan whose MachineUpdates were pruned by the plan history,
machines changed since the plan (another value now, replaced, gone), machines of a target that held different
values before (one plan sets one value per target).
Exit code 0 when the revert plan was shown (or created), 1 when refused or there is nothing to revert, 2 for wrong usage.

Options:
  -n, --namespace NS  namespace of the plan (default: looked up in every namespace)
  --apply             create the revert plan
  --name NAME         name of the revert plan (default: <plan>-revert)
  -o, --output FMT    text (default) or yaml (the revert plan, e.g. for inplace preview -f or kubectl apply -f)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    namespace: { type: 'string', short: 'n' },
    apply: { type: 'boolean' },
    name: { type: 'string' },
    output: { type: 'string', short: 'o' },
  },
  async run(args, io) {
    const [planName] = positionals(args, ['plan']);
    const output = str(args, 'output') ?? 'text';
    if (output !== 'text' && output !== 'yaml') throw new UsageError(`--output must be text or yaml, got "${output}"`);
    const conn = connect(args);
    try {
      const plan = await findPlan(conn, planName!, str(args, 'namespace'));
      const ns = plan.metadata.namespace ?? '';
      const name = str(args, 'name');
      const d = decideRevert({ ...(await readRevertInput(conn, plan)), ...(name ? { name } : {}) });
      const ref = `InPlaceUpdatePlan ${ns}/${plan.metadata.name}`;
      if (d.problems.length > 0)
        throw new CliError(
          `cannot revert ${ref} (nothing created):\n  ${d.problems.join('\n  ')}`,
          'a revert needs the plan finished, its MachineUpdates kept, and the machines as the plan left them',
        );
      if (!d.plan)
        throw new CliError(
          `nothing to revert in ${ref}${d.refused.length > 0 ? `:\n${refusedLines(d).join('\n')}` : ': no machine holds a value the plan committed'}`,
        );
      // The plan controller's own validation of the revert plan, as `inplace preview -f` runs it: an invalid plan is not created.
      const checked = await (await import('./preview.js')).previewPlanObject(conn, structuredClone(d.plan));
      if (output === 'yaml') io.out(safeLines(stringify(d.plan)));
      else io.out(renderRevert(ref, d) + renderValidation(checked));
      if (!checked.valid)
        throw new CliError(
          `the revert plan of ${ref} is not valid (nothing created):\n  ${checked.problems.join('\n  ')}`,
          'fix the causes above, or write a plan of your own from -o yaml',
        );
      if (!flag(args, 'apply')) {
        if (output === 'text') io.out('Nothing was created: run again with --apply to create the revert plan.\n');
        return ExitCode.ok;
      }
      try {
        await conn.client.create(InPlaceUpdatePlans, d.plan, { fieldManager: 'inplace-cli' });
      } catch (e) {
        if (isAlreadyExists(e))
          throw new CliError(
            `InPlaceUpdatePlan ${ns}/${d.plan.metadata.name} already exists`,
            'pass --name NAME for another name, or delete it first',
          );
        throw explainApiError(e, conn, InPlaceUpdatePlans);
      }
      (output === 'yaml' ? io.err : io.out)(
        `${safeText(`created InPlaceUpdatePlan ${ns}/${d.plan.metadata.name}; follow it with: inplace status ${d.plan.metadata.name} -n ${ns}`)}\n`,
      );
      return ExitCode.ok;
    } finally {
      conn.client.close();
    }
  },
};

/** Reads what the revert decides on: the plan's MachineUpdates, their machines' objects now, the cluster's machines and control plane. */
async function readRevertInput(conn: Connection, plan: InPlaceUpdatePlan & KubeObject) {
  const c = conn.client;
  const ns = plan.metadata.namespace ?? '';
  const uid = plan.metadata.uid;
  const mus = (
    await call(conn, MachineUpdates, () =>
      c.list<MachineUpdate & KubeObject>(MachineUpdates, ns, {
        labelSelector: `${Labels.planName}=${toLabelValue(plan.metadata.name ?? '')}`,
      }),
    )
  ).items.filter((mu) => (mu.metadata.ownerReferences ?? []).some((r) => r.kind === 'InPlaceUpdatePlan' && r.uid === uid));
  const getRef = async (ref: Ref): Promise<KubeObject | undefined> => {
    if (!ref?.apiGroup || !ref.kind || !ref.name) return undefined;
    const res = await c.resolve(ref.apiGroup, ref.kind).catch(() => undefined);
    return res ? ((await call(conn, res, () => c.get<KubeObject>(res, ns, ref.name!))) ?? undefined) : undefined;
  };
  const live = new Map<string, LiveMachine>();
  for (const mu of mus) {
    const machineName = mu.spec.machineRef.name;
    if (live.has(machineName)) continue;
    const m = await call(conn, Machines, () => c.get<KubeObject>(Machines, ns, machineName));
    if (!m) {
      live.set(machineName, {});
      continue;
    }
    const spec = (m as KubeObject & { spec?: { infrastructureRef?: Ref; bootstrap?: { configRef?: Ref } } }).spec;
    const infra = await getRef(spec?.infrastructureRef);
    const boot = await getRef(spec?.bootstrap?.configRef);
    live.set(machineName, { Machine: m, ...(infra ? { InfraMachine: infra } : {}), ...(boot ? { BootstrapConfig: boot } : {}) });
  }
  const machines = (
    await call(conn, Machines, () => c.list<KubeObject>(Machines, ns, { labelSelector: `${Labels.clusterName}=${plan.spec.clusterName}` }))
  ).items;
  const cpName = plan.spec.controlPlane?.name;
  const controlPlane = cpName
    ? ((await c.get<KubeObject>(KubeadmControlPlanes, ns, cpName).catch(() => undefined)) ?? undefined)
    : undefined;
  return { plan, machineUpdates: mus, live, machines, ...(controlPlane ? { controlPlane } : {}) };
}

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** The validation result of the revert plan (the preview's own words), with what the plan's preview warns about. */
function renderValidation(p: PlanPreview): string {
  const L = [
    p.valid
      ? `Validation (as inplace preview -f): OK${p.alreadyDone ? ' — already done' : ''}`
      : `Validation (as inplace preview -f): INVALID — ${p.problems.length} problem${p.problems.length === 1 ? '' : 's'}`,
    ...p.problems.map((x) => `  ✖ ${x}`),
    ...p.uncovered.map((u) => `  ! uncovered: ${u.target} ${u.machine}: ${u.selectResource} ${u.path} (${u.why})`),
    ...p.warnings.map((w) => `  ! ${w}`),
    '',
  ];
  return L.map(safeText).join('\n') + '\n';
}

/** The values left as they are, one line per target, field and reason with the machines it holds for (not one per machine). */
const refusedLines = (d: RevertDecision): string[] => {
  const groups = new Map<string, { head: string; machines: string[] }>();
  for (const r of d.refused) {
    const key = `${r.target}\u0000${r.selectResource}\u0000${r.path}\u0000${r.why}`;
    const g = groups.get(key) ?? { head: `${r.target}: ${r.selectResource} ${r.path} stays: ${r.why}`, machines: [] };
    g.machines.push(r.machine);
    groups.set(key, g);
  }
  return [...groups.values()].map((g) => {
    const ms = [...new Set(g.machines)].sort();
    return `  ✖ ${g.head} (${ms.length} machine${ms.length === 1 ? '' : 's'}: ${ms.join(', ')})`;
  });
};

/** The revert plan for people: per target the values back, the machines they go back on, and what stays. */
export function renderRevert(ref: string, d: RevertDecision): string {
  const plan = d.plan!;
  const L: string[] = [`Revert of ${ref}: InPlaceUpdatePlan ${plan.metadata.namespace}/${plan.metadata.name}`, ''];
  const targets = [
    ...(plan.spec.controlPlane ? [{ label: `controlPlane ${plan.spec.controlPlane.name}`, t: plan.spec.controlPlane }] : []),
  ].concat((plan.spec.machineDeployments ?? []).map((t) => ({ label: `machineDeployment ${t.name}`, t })));
  for (const { label, t } of targets.sort((a, b) => a.t.sequence - b.t.sequence)) {
    const machines = [...new Set(d.values.filter((v) => v.target === label).map((v) => v.machine))].sort();
    L.push(`Sequence ${t.sequence}: ${label} — ${machines.length} machine${machines.length === 1 ? '' : 's'} back: ${machines.join(', ')}`);
    for (const u of [...t.updaters].sort((a, b) => a.sequence - b.sequence))
      for (const r of u.responsibilities) {
        const from = d.values.find((v) => v.target === label && v.updater === u.name && v.path === r.path)?.from;
        L.push(`  ${u.sequence}. ${u.name}: ${r.selectResource} ${r.path} ${show(from)} -> ${show(r.value)}`);
      }
  }
  if (d.refused.length > 0) L.push('', 'Not reverted:', ...refusedLines(d));
  if (d.alreadyReverted.length > 0) L.push('', `Already back at the values before: ${d.alreadyReverted.join(', ')}`);
  if (d.warnings.length > 0) L.push('', 'Warnings:', ...d.warnings.map((w) => `  ! ${w}`));
  L.push('');
  return L.map(safeText).join('\n') + '\n';
}
