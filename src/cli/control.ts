// Shared body of `inplace abort|pause|resume <plan>`: find the plan, decide, send one merge patch of its spec.
import { InPlaceUpdatePlans, isTerminal, type InPlaceUpdatePlan, type KubeObject } from '../api/index.js';
import { call, connect, findPlan } from './kube.js';
import { safeText } from './safe-text.js';
import { ExitCode, KUBE_OPTIONS_HELP, kubeOptions, positionals, str, type Io, type ParsedArgs, type Verb } from './verb.js';

/** What a control verb does to a plan, decided purely from the plan. */
export type ControlDecision = { patch: { spec: Record<string, unknown> }; done: string } | { noop: string };

/** Builds a control verb from its pure decision. */
export function controlVerb(name: string, summary: string, details: string, decide: (plan: InPlaceUpdatePlan & KubeObject) => ControlDecision): Verb {
  return {
    name,
    summary,
    help: `Usage: inplace ${name} <plan> [-n NAMESPACE] [--kubeconfig FILE]

${details}
Without -n the plan is looked up in every namespace. Exit code 0 when done (or nothing to do), 1 when the
plan is not found or the change was rejected.

Options:
  -n, --namespace NS  namespace of the plan
${KUBE_OPTIONS_HELP}`,
    options: { ...kubeOptions, namespace: { type: 'string', short: 'n' } },
    run: (args, io) => runControl(args, io, decide),
  };
}

async function runControl(args: ParsedArgs, io: Io, decide: (plan: InPlaceUpdatePlan & KubeObject) => ControlDecision): Promise<number> {
  const [name] = positionals(args, ['plan']);
  const conn = connect(args);
  try {
    const plan = await findPlan(conn, name!, str(args, 'namespace'));
    const ref = `${plan.metadata.namespace}/${plan.metadata.name}`;
    const d = decide(plan);
    if ('noop' in d) {
      io.out(`${safeText(`InPlaceUpdatePlan ${ref}: ${d.noop}`)}\n`);
      return ExitCode.ok;
    }
    await call(conn, InPlaceUpdatePlans, () =>
      conn.client.patch(InPlaceUpdatePlans, plan.metadata.namespace, plan.metadata.name!, d.patch, { type: 'merge', fieldManager: 'inplace-cli' }),
    );
    io.out(`${safeText(`InPlaceUpdatePlan ${ref}: ${d.done}`)}\n`);
    io.out(`${safeText(`follow it with: inplace status ${plan.metadata.name} -n ${plan.metadata.namespace}   (or kubectl get inplaceupdateplans -n ${plan.metadata.namespace} -w)`)}\n`);
    return ExitCode.ok;
  } finally {
    conn.client.close();
  }
}

const statusOf = (p: InPlaceUpdatePlan): string => p.status?.updateStatus ?? 'pending';

/** Abort: spec.updatePhase -> aborting (one way). */
export function decideAbort(plan: InPlaceUpdatePlan): ControlDecision {
  if (isTerminal(plan.status?.updateStatus)) return { noop: `already ${statusOf(plan)}; nothing to abort` };
  if (plan.spec.updatePhase === 'aborting') return { noop: 'already aborting' };
  return { patch: { spec: { updatePhase: 'aborting' } }, done: 'abort requested: no new machines start, machines in update are aborted' };
}

/** Pause: spec.paused -> true. */
export function decidePause(plan: InPlaceUpdatePlan): ControlDecision {
  if (isTerminal(plan.status?.updateStatus)) return { noop: `already ${statusOf(plan)}; nothing to pause` };
  if (plan.spec.paused === true) return { noop: 'already paused' };
  return { patch: { spec: { paused: true } }, done: 'paused: no new machines start; machines in update finish' };
}

/** Resume: spec.paused -> false. */
export function decideResume(plan: InPlaceUpdatePlan): ControlDecision {
  if (plan.spec.paused !== true) return { noop: 'not paused; nothing to resume' };
  return { patch: { spec: { paused: false } }, done: 'resumed' };
}
