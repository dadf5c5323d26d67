// The demo's view of a running plan: follow it until it is terminal (drawing progress), then read the final
// objects and check what the plan promised (every declared change committed, no machine left labelled).
import {
  ConditionTypes,
  InPlaceUpdatePlans,
  Reasons,
  isTerminal,
  Labels,
  Machines,
  MachineUpdates,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
} from '../api/index.js';
import { getPointer, jsonEqual, type RestClient } from '../runtime/index.js';
import { watchExits } from './demo-platform.js';
import type { Child } from './procs.js';
import { buildProgress, diffProgress, renderProgress, secs, type ProgressView } from './progress.js';
import { CliError, type Io } from './verb.js';

type Plan = InPlaceUpdatePlan & KubeObject;
type Mu = MachineUpdate & KubeObject;

/** Which plan to follow and for how long. */
export interface FollowOptions {
  planName: string;
  planNamespace: string;
  timeoutMs: number;
}

/** Final state of the demo objects, as written by --state-out. */
export interface DemoState {
  plan: Plan;
  machineUpdates: Mu[];
  machines: KubeObject[];
  stillLabelled: string[];
  /** Values committed by the plan's MachineUpdates (ok/total); inPlace: values of those that found them already in place. */
  committed: { ok: number; total: number; wrong: string[]; inPlace?: number };
}

/** How following a plan ended. */
export type Outcome =
  | { kind: 'terminal'; plan: Plan; view: ProgressView }
  | { kind: 'timeout'; plan: Plan; view: ProgressView }
  | { kind: 'invalid'; plan: Plan; view: ProgressView; message: string }
  | { kind: 'interrupted' }
  | { kind: 'childExited'; child: Child; how: string };

/** Polls the plan and its MachineUpdates, drawing progress, until the plan is terminal (or time out / Ctrl-C / a child died). */
export async function followPlan(client: RestClient, o: FollowOptions, children: Child[], io: Io, started: number): Promise<Outcome> {
  const exited = watchExits(children);
  const counts: Record<string, number> = {};
  let prev: ProgressView | undefined;
  let drawnLines = 0;
  // The timeout is the plan's (--timeout: "when the plan is not terminal after this long"): it runs from the plan's
  // apply, not from the demo's start, whose servers and processes take longer to come up on a busy machine.
  const deadline = Date.now() + o.timeoutMs;
  const width = Math.max(40, io.columns - 1);
  if (io.isTTY) io.out('\x1b[?25l');
  try {
    for (;;) {
      if (io.signal.aborted) return { kind: 'interrupted' };
      const died = exited();
      if (died) return { kind: 'childExited', ...died };
      const plan = await client.get<Plan>(InPlaceUpdatePlans, o.planNamespace, o.planName);
      if (!plan) throw new CliError(`InPlaceUpdatePlan ${o.planNamespace}/${o.planName} disappeared`);
      const mus = (await client.list<Mu>(MachineUpdates, o.planNamespace, { labelSelector: `${Labels.planName}=${o.planName}` })).items;
      const machines = (await client.list(Machines, o.planNamespace, { labelSelector: `${Labels.clusterName}=${plan.spec.clusterName}` }))
        .items;
      for (const t of [plan.spec.controlPlane, ...(plan.spec.machineDeployments ?? [])]) {
        if (!t) continue;
        counts[t.name] = machines.filter(
          (m) =>
            !m.metadata.deletionTimestamp &&
            (m.metadata.labels?.[Labels.controlPlaneName] === t.name || m.metadata.labels?.[Labels.deploymentName] === t.name),
        ).length;
      }
      const view = buildProgress(plan, mus, counts);
      if (io.isTTY) {
        const frame = renderProgress(view, Date.now() - started, width, (io.rows ?? 24) - 1)
          .split('\n')
          .map((l) => [...l].slice(0, width).join(''))
          .join('\n');
        io.out(`${drawnLines > 0 ? `\x1b[${drawnLines}F\x1b[J` : ''}${frame}`);
        drawnLines = frame.split('\n').length - 1;
      } else {
        for (const line of diffProgress(prev, view)) io.out(`[${secs(Date.now() - started).padStart(6)}] ${line}\n`);
      }
      prev = view;
      const done = isTerminal(plan.status?.updateStatus) && (plan.status?.observedGeneration ?? 0) >= (plan.metadata.generation ?? 0);
      if (done) return { kind: 'terminal', plan, view };
      // An invalid plan never starts (its spec is immutable): say why now instead of waiting for the timeout.
      const valid = plan.status?.conditions?.find((c) => c.type === 'Valid');
      if (!plan.status?.startTime && valid?.status === 'False' && (valid.observedGeneration ?? 0) >= (plan.metadata.generation ?? 0)) {
        return { kind: 'invalid', plan, view, message: valid.message ?? valid.reason };
      }
      if (Date.now() > deadline) return { kind: 'timeout', plan, view };
      await new Promise((r) => setTimeout(r, io.isTTY ? 200 : 250));
    }
  } finally {
    if (io.isTTY) io.out('\x1b[?25h');
  }
}

/** Reads the final objects and checks what the plan promised: every change committed, no machine left labelled. */
export async function finalState(client: RestClient, o: Omit<FollowOptions, 'timeoutMs'>, plan: Plan): Promise<DemoState> {
  const ns = o.planNamespace;
  // Labels are removed right after a MachineUpdate turns terminal; give that last write a moment to land.
  let machines: KubeObject[] = [];
  let stillLabelled: string[] = [];
  for (let i = 0; i < 20; i++) {
    machines = (await client.list(Machines, ns, { labelSelector: `${Labels.clusterName}=${plan.spec.clusterName}` })).items;
    stillLabelled = machines.filter((m) => m.metadata.labels?.[Labels.planName] === o.planName).map((m) => m.metadata.name ?? '');
    if (stillLabelled.length === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const fresh = (await client.get<Plan>(InPlaceUpdatePlans, ns, o.planName)) ?? plan;
  const machineUpdates = (await client.list<Mu>(MachineUpdates, ns)).items.filter((mu) => mu.spec.planName === o.planName);
  const committed = { ok: 0, total: 0, wrong: [] as string[], inPlace: 0 };
  for (const mu of machineUpdates.filter((m) => m.status?.updateStatus === 'updated')) {
    const machine = machines.find((m) => m.metadata.name === mu.spec.machineRef.name);
    // A MachineUpdate that found every value already in place wrote nothing: its values are counted as such, not as committed.
    const inPlace =
      mu.status?.conditions?.some((c) => c.type === ConditionTypes.inPlaceUpdate && c.reason === Reasons.alreadyInPlace) ?? false;
    for (const u of mu.spec.updaters) {
      for (const r of u.responsibilities) {
        const target = machine ? await selectObject(client, machine, r.selectResource) : undefined;
        const actual = target ? getPointer(target, r.path) : undefined;
        const there = !!target && jsonEqual(actual, r.value);
        if (there && inPlace) {
          committed.inPlace++;
          continue;
        }
        committed.total++;
        if (there) committed.ok++;
        else
          committed.wrong.push(
            `${mu.spec.machineRef.name}: ${r.selectResource} ${r.path} is ${JSON.stringify(actual)}, want ${JSON.stringify(r.value)}`,
          );
      }
    }
  }
  return { plan: fresh, machineUpdates, machines, stillLabelled, committed };
}

/** The object a responsibility points into: the Machine, its InfraMachine or its BootstrapConfig. */
async function selectObject(client: RestClient, machine: KubeObject, select: string): Promise<KubeObject | undefined> {
  if (select === 'Machine') return machine;
  const spec = machine['spec'] as {
    infrastructureRef?: { apiGroup: string; kind: string; name: string };
    bootstrap?: { configRef?: { apiGroup: string; kind: string; name: string } };
  };
  const ref = select === 'InfraMachine' ? spec.infrastructureRef : spec.bootstrap?.configRef;
  if (!ref) return undefined;
  const res = await client.resolve(ref.apiGroup, ref.kind);
  return client.get(res, machine.metadata.namespace, ref.name);
}
