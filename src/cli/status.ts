// `inplace status [plan]`: a plan, its targets, machines and tasks as a tree (once, or until it ends with -w); without
// a name, the plans of the namespace (or of every namespace) as a table.
import { InPlaceUpdatePlans, Labels, MachineUpdates, type InPlaceUpdatePlan, type KubeObject, type MachineUpdate } from '../api/index.js';
import { call, connect, findPlan, type Connection } from './kube.js';
import { safeText } from './safe-text.js';
import { buildStatusTree, endNotes, planEnd, renderPlanList, renderTree } from './tree.js';
import { runCampaignStatus } from './campaign-status.js';
import { CliError, ExitCode, flag, KUBE_OPTIONS_HELP, kubeOptions, str, UsageError, type Verb } from './verb.js';

type Plan = InPlaceUpdatePlan & KubeObject;

/** `inplace status`. */
export const statusVerb: Verb = {
  name: 'status',
  summary: 'Show a plan (or a campaign) as a tree: plan -> targets -> machines -> tasks (without a name: list the plans)',
  help: `Usage: inplace status <plan | campaign/NAME> [-n NAMESPACE] [-w] [--kubeconfig FILE]
       inplace status [-n NAMESPACE | -A]

Prints the plan, its targets (control plane, MachineDeployments), the machines in update and their
updater tasks with status, reason and age. campaign/NAME shows an InPlaceUpdateCampaign as waves ->
clusters -> progress instead. Without -n the plan is looked up in every namespace.
Without a plan name, lists the plans (of -n NAMESPACE, of the kubeconfig context's namespace, or with -A
or no namespace known, of every namespace) with status, progress and reason.
Exit code: 0 when the plan is found (whatever its status; with -w: when it ended updated), 1 when not
found or unreachable (with -w: when it ended failed or aborted, or ended invalid: Failed=True reason
Invalid, the problems listed), 2 for a usage or kubeconfig mistake.

Options:
  -n, --namespace NS    namespace of the plan
  -A, --all-namespaces  list the plans of every namespace (without a plan name)
  -w, --watch           redraw every second until the plan ends (or Ctrl-C)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    namespace: { type: 'string', short: 'n' },
    'all-namespaces': { type: 'boolean', short: 'A' },
    watch: { type: 'boolean', short: 'w' },
  },
  async run(args, io) {
    if (args.positionals.length > 1) throw new UsageError(`unexpected argument "${args.positionals[1]}"`);
    const name = args.positionals[0];
    if (name === undefined && flag(args, 'watch')) throw new UsageError('-w needs a plan name');
    if (name !== undefined && flag(args, 'all-namespaces')) throw new UsageError('-A lists plans: pass no plan name (or use -n)');
    if (flag(args, 'all-namespaces') && str(args, 'namespace') !== undefined) throw new UsageError('pass either -n or -A, not both');
    const conn = connect(args);
    try {
      if (name === undefined) return await listPlans(conn, args.values, io);
      // campaign/<name>: the campaign as a tree of waves -> clusters -> progress (src/cli/campaign-status.ts).
      if (name.startsWith('campaign/')) return await runCampaignStatus(conn, name.slice('campaign/'.length), args, io);
      let plan = await findPlan(conn, name, str(args, 'namespace'));
      const ns = safeText(plan.metadata.namespace!);
      const width = io.isTTY ? io.columns : 200;
      const frameOf = async (p: Plan): Promise<string> =>
        `Namespace: ${ns}\n${renderTree(buildStatusTree(p, await machineUpdatesOf(conn, p), new Date()), width)}${endNotes(p)
          .map((l) => `${safeText(l)}\n`)
          .join('')}`;
      if (!flag(args, 'watch')) {
        io.out(await frameOf(plan));
        return ExitCode.ok;
      }
      let last = '';
      let drawn = 0;
      for (;;) {
        const frame = await frameOf(plan);
        if (io.isTTY) {
          io.out(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ''}${frame}`);
          drawn = frame.split('\n').length - 1;
        } else if (frame.replace(/\s+\d+[smhd](\d+[smh])?(?=\s)/g, '') !== last) {
          // Without a terminal, print a new tree only when something other than the ages changed.
          io.out(`${frame}\n`);
          last = frame.replace(/\s+\d+[smhd](\d+[smh])?(?=\s)/g, '');
        }
        const end = planEnd(plan);
        if (end) {
          if (end !== 'updated') io.err(`InPlaceUpdatePlan ${ns}/${safeText(plan.metadata.name!)} ended ${end}\n`);
          return end === 'updated' ? ExitCode.ok : ExitCode.failure;
        }
        if (io.signal.aborted) return ExitCode.ok;
        await new Promise((r) => setTimeout(r, 1000));
        const next = await call(conn, InPlaceUpdatePlans, () => conn.client.get<Plan>(InPlaceUpdatePlans, ns, plan.metadata.name!));
        if (!next) throw new CliError(`InPlaceUpdatePlan ${ns}/${plan.metadata.name} was deleted`);
        plan = next;
      }
    } finally {
      conn.client.close();
    }
  },
};

/** Lists the plans of one namespace, or of every namespace (-A, or no namespace given nor in the kubeconfig context). */
async function listPlans(
  conn: Connection,
  values: Record<string, unknown>,
  io: { out(s: string): void; isTTY: boolean; columns: number },
): Promise<number> {
  const explicit = typeof values['namespace'] === 'string' ? values['namespace'] : undefined;
  const ns = values['all-namespaces'] === true ? undefined : (explicit ?? conn.contextNamespace);
  const plans = await call(conn, InPlaceUpdatePlans, () => conn.client.list<Plan>(InPlaceUpdatePlans, ns));
  if (plans.items.length === 0) {
    io.out(`No InPlaceUpdatePlans found${ns !== undefined ? ` in namespace ${safeText(ns)}` : ''}.\n`);
    // The namespace was the context's default (e.g. `default` after npm start) or mistyped: say where plans are.
    if (ns !== undefined) io.out(`${safeText(await elsewhereHint(conn))}\n`);
    return ExitCode.ok;
  }
  io.out(renderPlanList(plans.items, new Date(), { allNamespaces: ns === undefined, width: io.isTTY ? io.columns : 200 }));
  return ExitCode.ok;
}

/** Where plans are when a namespace has none: their namespaces, with the -A / -n to use. */
async function elsewhereHint(conn: Connection): Promise<string> {
  const all = (await call(conn, InPlaceUpdatePlans, () => conn.client.list<Plan>(InPlaceUpdatePlans, undefined))).items;
  if (all.length === 0) return 'There are none in any namespace either (apply one: kubectl apply -f examples/plan.yaml).';
  const namespaces = [...new Set(all.map((p) => p.metadata.namespace ?? ''))].sort();
  const shown = `${namespaces.slice(0, 5).join(', ')}${namespaces.length > 5 ? ` and ${namespaces.length - 5} more` : ''}`;
  return `${all.length} plan${all.length === 1 ? '' : 's'} in namespace${namespaces.length === 1 ? '' : 's'} ${shown}: inplace status -A lists them all, inplace status -n ${namespaces[0]} that namespace's.`;
}

async function machineUpdatesOf(conn: Connection, plan: Plan): Promise<(MachineUpdate & KubeObject)[]> {
  const mus = await call(conn, MachineUpdates, () =>
    conn.client.list<MachineUpdate & KubeObject>(MachineUpdates, plan.metadata.namespace, {
      labelSelector: `${Labels.planName}=${plan.metadata.name}`,
    }),
  );
  // The label is the index; spec.planName is the truth (a MachineUpdate keeps its plan for life).
  return mus.items.filter((mu) => mu.spec.planName === plan.metadata.name);
}
