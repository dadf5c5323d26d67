// `inplace status <plan>`: the plan, its targets, machines and tasks as a tree (once, or until terminal with -w).
import {
  InPlaceUpdatePlans,
  isTerminal,
  Labels,
  MachineUpdates,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
} from '../api/index.js';
import { call, connect, findPlan, type Connection } from './kube.js';
import { safeText } from './safe-text.js';
import { buildStatusTree, renderTree } from './tree.js';
import { runCampaignStatus } from './campaign-status.js';
import { CliError, ExitCode, flag, KUBE_OPTIONS_HELP, kubeOptions, positionals, str, type Verb } from './verb.js';

type Plan = InPlaceUpdatePlan & KubeObject;

/** `inplace status`. */
export const statusVerb: Verb = {
  name: 'status',
  summary: 'Show a plan as a tree: plan -> targets -> machines -> tasks, with status, reason and age',
  help: `Usage: inplace status <plan | campaign/NAME> [-n NAMESPACE] [-w] [--kubeconfig FILE]

Prints the plan, its targets (control plane, MachineDeployments), the machines in update and their
updater tasks with status, reason and age. campaign/NAME shows an InPlaceUpdateCampaign as waves ->
clusters -> progress instead. Without -n the plan is looked up in every namespace.
Exit code: 0 when the plan is found (whatever its status; with -w: when it ended updated), 1 when not
found or unreachable (with -w: when it ended failed or aborted).

Options:
  -n, --namespace NS  namespace of the plan
  -w, --watch         redraw every second until the plan is terminal (or Ctrl-C)
${KUBE_OPTIONS_HELP}`,
  options: { ...kubeOptions, namespace: { type: 'string', short: 'n' }, watch: { type: 'boolean', short: 'w' } },
  async run(args, io) {
    const [name] = positionals(args, ['plan']);
    const conn = connect(args);
    try {
      // campaign/<name>: the campaign as a tree of waves -> clusters -> progress (src/cli/campaign-status.ts).
      if (name!.startsWith('campaign/')) return await runCampaignStatus(conn, name!.slice('campaign/'.length), args, io);
      let plan = await findPlan(conn, name!, str(args, 'namespace'));
      const ns = safeText(plan.metadata.namespace!);
      const width = io.isTTY ? io.columns : 200;
      if (!flag(args, 'watch')) {
        io.out(`Namespace: ${ns}\n${renderTree(buildStatusTree(plan, await machineUpdatesOf(conn, plan), new Date()), width)}`);
        return ExitCode.ok;
      }
      let last = '';
      let drawn = 0;
      for (;;) {
        const frame = `Namespace: ${ns}\n${renderTree(buildStatusTree(plan, await machineUpdatesOf(conn, plan), new Date()), width)}`;
        if (io.isTTY) {
          io.out(`${drawn > 0 ? `\x1b[${drawn}F\x1b[J` : ''}${frame}`);
          drawn = frame.split('\n').length - 1;
        } else if (frame.replace(/\s+\d+[smhd](\d+[smh])?(?=\s)/g, '') !== last) {
          // Without a terminal, print a new tree only when something other than the ages changed.
          io.out(`${frame}\n`);
          last = frame.replace(/\s+\d+[smhd](\d+[smh])?(?=\s)/g, '');
        }
        const st = plan.status?.updateStatus;
        if (isTerminal(st)) return st === 'updated' ? ExitCode.ok : ExitCode.failure;
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

async function machineUpdatesOf(conn: Connection, plan: Plan): Promise<(MachineUpdate & KubeObject)[]> {
  const mus = await call(conn, MachineUpdates, () =>
    conn.client.list<MachineUpdate & KubeObject>(MachineUpdates, plan.metadata.namespace, {
      labelSelector: `${Labels.planName}=${plan.metadata.name}`,
    }),
  );
  // The label is the index; spec.planName is the truth (a MachineUpdate keeps its plan for life).
  return mus.items.filter((mu) => mu.spec.planName === plan.metadata.name);
}
