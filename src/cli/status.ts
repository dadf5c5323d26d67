// `inplace status <plan>`: the plan, its targets, machines and tasks as a tree.
import { Labels, MachineUpdates, type KubeObject, type MachineUpdate } from '../api/index.js';
import { call, connect, findPlan } from './kube.js';
import { buildStatusTree, renderTree } from './tree.js';
import { ExitCode, KUBE_OPTIONS_HELP, kubeOptions, positionals, str, type Verb } from './verb.js';

/** `inplace status`. */
export const statusVerb: Verb = {
  name: 'status',
  summary: 'Show a plan as a tree: plan -> targets -> machines -> tasks, with status, reason and age',
  help: `Usage: inplace status <plan> [-n NAMESPACE] [--kubeconfig FILE]

Prints the plan, its targets (control plane, MachineDeployments), the machines in update and their
updater tasks with status, reason and age. Without -n the plan is looked up in every namespace.
Exit code: 0 when the plan is found (whatever its status), 1 when not found or unreachable.

Options:
  -n, --namespace NS  namespace of the plan
${KUBE_OPTIONS_HELP}`,
  options: { ...kubeOptions, namespace: { type: 'string', short: 'n' } },
  async run(args, io) {
    const [name] = positionals(args, ['plan']);
    const conn = connect(args);
    try {
      const plan = await findPlan(conn, name!, str(args, 'namespace'));
      const ns = plan.metadata.namespace;
      const mus = await call(conn, MachineUpdates, () =>
        conn.client.list<MachineUpdate & KubeObject>(MachineUpdates, ns, { labelSelector: `${Labels.planName}=${plan.metadata.name}` }),
      );
      // The label is the index; spec.planName is the truth (a MachineUpdate keeps its plan for life).
      const mine = mus.items.filter((mu) => mu.spec.planName === plan.metadata.name);
      io.out(`Namespace: ${ns}\n`);
      io.out(renderTree(buildStatusTree(plan, mine, new Date()), io.isTTY ? io.columns : 200));
      return ExitCode.ok;
    } finally {
      conn.client.close();
    }
  },
};
