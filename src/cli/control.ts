// Shared body of `inplace abort|pause|resume <plan>`: find the plan, decide, send one merge patch of its spec
// (guarded by the resourceVersion the decision was made on: a plan that changed meanwhile is decided again).
import { InPlaceUpdateCampaigns, InPlaceUpdatePlans, isTerminal, type InPlaceUpdatePlan, type KubeObject } from '../api/index.js';
import { findCampaign } from './campaign-status.js';
import { isConflict } from '../runtime/pure/errors.js';
import { connect, explainApiError, findPlan } from './kube.js';
import { safeText } from './safe-text.js';
import { CliError, ExitCode, KUBE_OPTIONS_HELP, kubeOptions, positionals, str, type Io, type ParsedArgs, type Verb } from './verb.js';

/**
 * What a control verb does to a plan, decided purely from the plan: a patch, nothing (already in the asked state,
 * exit 0), or a refusal (the request cannot take effect on this plan, exit 1).
 */
export type ControlDecision =
  { patch: { spec: Record<string, unknown> }; done: string } | { noop: string } | { refuse: string; hint: string };

/** Attempts at deciding again when the plan changed between the read and the patch. */
const CONFLICT_ATTEMPTS = 3;

/** Builds a control verb from its pure decision. */
export function controlVerb(
  name: string,
  summary: string,
  details: string,
  decide: (plan: InPlaceUpdatePlan & KubeObject) => ControlDecision,
): Verb {
  return {
    name,
    summary,
    help: `Usage: inplace ${name} <plan | campaign/NAME> [-n NAMESPACE] [--kubeconfig FILE]

${details}
campaign/NAME does the same to an InPlaceUpdateCampaign, which passes it on to the plans it runs.
Without -n the plan is looked up in every namespace. Exit code 0 when done (or already so: nothing to do), 1 when
the plan is not found, the plan is finished (updated, failed, aborted; for abort: updated or failed, an aborted
plan is already what abort asks) or the change was rejected.

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
    // campaign/<name>: the same spec fields on an InPlaceUpdateCampaign (which propagates them to its plans). A halted
    // campaign (status failed) is not finished: a higher budget resumes it, so it is decided as still updating.
    const campaign = name!.startsWith('campaign/') ? name!.slice('campaign/'.length) : undefined;
    const res = campaign ? InPlaceUpdateCampaigns : InPlaceUpdatePlans;
    const kind = campaign ? 'InPlaceUpdateCampaign' : 'InPlaceUpdatePlan';
    for (let attempt = 1; ; attempt++) {
      const plan = campaign
        ? asPlanShape(await findCampaign(conn, campaign, str(args, 'namespace')))
        : await findPlan(conn, name!, str(args, 'namespace'));
      const ref = `${plan.metadata.namespace}/${plan.metadata.name}`;
      const d = decide(plan);
      if ('refuse' in d) throw new CliError(`${kind} ${ref}: ${d.refuse}`, d.hint);
      if ('noop' in d) {
        io.out(`${safeText(`${kind} ${ref}: ${d.noop}`)}\n`);
        return ExitCode.ok;
      }
      const patch = { metadata: { resourceVersion: plan.metadata.resourceVersion }, ...d.patch };
      try {
        await conn.client.patch(res, plan.metadata.namespace, plan.metadata.name!, patch, {
          type: 'merge',
          fieldManager: 'inplace-cli',
        });
      } catch (e) {
        if (isConflict(e) && attempt < CONFLICT_ATTEMPTS) continue;
        throw explainApiError(e, conn, res);
      }
      io.out(`${safeText(`${kind} ${ref}: ${d.done}`)}\n`);
      const follow = campaign ? `campaign/${plan.metadata.name}` : plan.metadata.name;
      io.out(
        `${safeText(`follow it with: inplace status ${follow} -n ${plan.metadata.namespace}   (or kubectl get ${res.plural} -n ${plan.metadata.namespace} -w)`)}\n`,
      );
      return ExitCode.ok;
    }
  } finally {
    conn.client.close();
  }
}

/** A campaign seen through the fields the control decisions read (spec.updatePhase, spec.paused, status.updateStatus). */
function asPlanShape(
  c: KubeObject & { spec: { updatePhase?: string; paused?: boolean }; status?: { updateStatus?: string } },
): InPlaceUpdatePlan & KubeObject {
  const st = c.status?.updateStatus === 'failed' ? 'updating' : c.status?.updateStatus;
  return { ...c, status: st ? { updateStatus: st } : {} } as unknown as InPlaceUpdatePlan & KubeObject;
}

const statusOf = (p: InPlaceUpdatePlan): string => p.status?.updateStatus ?? 'pending';

/** An owner the plan kept paused (OwnersAligned=False), with the condition's own instructions; '' when none. */
export function ownersNote(p: InPlaceUpdatePlan): string {
  const c = p.status?.conditions?.find((x) => x.type === 'OwnersAligned');
  return c?.status === 'False' ? `. OwnersAligned=False ${c.reason}: ${c.message ?? ''}` : '';
}

/** Abort: spec.updatePhase -> aborting (one way). */
export function decideAbort(plan: InPlaceUpdatePlan): ControlDecision {
  // Aborted is what abort asks (nothing to do, exit 0); a plan that ended updated or failed cannot be aborted any
  // more, and a script that asked for an abort must learn that it did not happen (exit 1, as pause and resume).
  if (plan.status?.updateStatus === 'aborted') return { noop: `already aborted; nothing to abort${ownersNote(plan)}` };
  if (isTerminal(plan.status?.updateStatus))
    return {
      refuse: `cannot abort: the plan is ${statusOf(plan)} (finished; nothing is running to abort)${ownersNote(plan)}`,
      hint: `to put back what it committed: inplace revert ${plan.metadata?.name ?? '<plan>'} (shows the revert plan; --apply creates it)`,
    };
  if (plan.spec.updatePhase === 'aborting') return { noop: 'already aborting' };
  return {
    patch: { spec: { updatePhase: 'aborting' } },
    done:
      'abort requested: no new machines start; machines in update stop at their current task, or finish and commit if their updaters are done. ' +
      'An owner left over mixed machines stays paused: inplace status <plan> says what to do',
  };
}

const refuseFinished = (plan: InPlaceUpdatePlan, verb: string): ControlDecision => ({
  refuse: `cannot ${verb}: the plan is ${statusOf(plan)} (finished; a finished plan never starts machines again)`,
  hint: 'to update again, apply a new plan (inplace preview -f plan.yaml first)',
});
const refuseAborting = (verb: string): ControlDecision => ({
  refuse: `cannot ${verb}: the plan is being aborted (spec.updatePhase: aborting is one way)`,
  hint: 'wait for it to end aborted (inplace status <plan> -w), then apply a new plan',
});

/** Pause: spec.paused -> true; refused on finished or aborting plans (it could not take effect). */
export function decidePause(plan: InPlaceUpdatePlan): ControlDecision {
  if (isTerminal(plan.status?.updateStatus)) return refuseFinished(plan, 'pause');
  if (plan.spec.updatePhase === 'aborting') return refuseAborting('pause');
  if (plan.spec.paused === true) return { noop: 'already paused' };
  return { patch: { spec: { paused: true } }, done: 'paused: no new machines start; machines in update finish' };
}

/** Resume: spec.paused -> false; refused on finished or aborting plans (nothing would resume). */
export function decideResume(plan: InPlaceUpdatePlan): ControlDecision {
  if (isTerminal(plan.status?.updateStatus)) return refuseFinished(plan, 'resume');
  if (plan.spec.updatePhase === 'aborting') return refuseAborting('resume');
  if (plan.spec.paused !== true) return { noop: 'not paused; nothing to resume' };
  return { patch: { spec: { paused: false } }, done: 'resumed: new machines start again' };
}
