// The reference updater: serves the generic UpdaterUpdateTask kind. It simulates an update that takes
// parameters.durationSeconds (default 1; 0 allowed), measured from status.startTime (written to the microsecond
// by the SDK) so a restarted updater resumes rather than restarts, and fails with parameters.failWith when set.
// Parameters out of bounds fail the task at once with a message naming the bound. Used by tests and benchmarks.
import { z } from 'zod';
import { Nodes, SIMULATED_NODE_ANNOTATION, UpdaterUpdateTasks, type KubeObject } from '../../api/index.js';
import { aborted, defineUpdater, done, failed, progress, type Task, type Updater, type UpdaterContext } from '../../contract/sdk/index.js';

/** Default simulated duration (seconds). */
export const DEFAULT_DURATION_SECONDS = 1;

/** The task parameters the reference updater reads. */
export interface ReferenceParameters {
  durationSeconds: number;
  failWith?: string;
}

/** Longest simulated update (one year): beyond it a deadline is not a date any more (1e300 s was "Invalid time value"). */
export const MAX_DURATION_SECONDS = 31_536_000;
/** Longest failWith message (the SDK would cut a longer one anyway). */
export const MAX_FAIL_WITH_LENGTH = 4096;

/** spec.parameters of the reference updater; other keys are ignored. */
const ParametersSchema = z.looseObject({
  durationSeconds: z
    .number({ error: `must be a number between 0 and ${MAX_DURATION_SECONDS}` })
    .min(0, { error: `must be a number between 0 and ${MAX_DURATION_SECONDS}` })
    .max(MAX_DURATION_SECONDS, { error: `must be a number between 0 and ${MAX_DURATION_SECONDS}` })
    .default(DEFAULT_DURATION_SECONDS),
  failWith: z
    .string({ error: 'must be a string' })
    .max(MAX_FAIL_WITH_LENGTH, { error: `must be at most ${MAX_FAIL_WITH_LENGTH} characters` })
    .optional(),
});

/**
 * Reads and checks spec.parameters; a string is the error message for the first bad parameter, e.g.
 * "parameters.durationSeconds must be a number between 0 and 31536000, got 1e+300". A bad parameter stays bad, so
 * the updater fails the task with it (terminal) rather than retrying.
 */
export function readParameters(task: Task): ReferenceParameters | string {
  const raw = task.spec.parameters ?? {};
  const r = ParametersSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const key = issue.path.map(String).join('.');
    const got = (raw as Record<string, unknown>)[String(issue.path[0])];
    return `parameters.${key} ${issue.message}, got ${JSON.stringify(got) ?? String(got)}`;
  }
  const { durationSeconds, failWith } = r.data;
  return { durationSeconds, ...(failWith ? { failWith } : {}) };
}

/** Where the simulated kubelet reports a task's version: a Node name, or nothing to write (`none`). */
type KubeletTarget = { node: string; version: string } | 'none';

/**
 * For a task owning Machine /spec/version on a Node the CAPI simulator made (no kubelet behind it): the Node whose
 * simulated kubelet reports the new version, as a real one restarted on it would, so the plan's verification sees what
 * a real update leaves. On any other Node nothing is written (`none`): this updater changes nothing real, and
 * verification says so. Undefined when the Machine has no Node yet (look again later).
 */
async function kubeletTarget(task: Task, ctx: UpdaterContext): Promise<KubeletTarget | undefined> {
  const version = task.spec.responsibilities?.find((r) => r.selectResource === 'Machine' && r.path === '/spec/version')?.value;
  if (typeof version !== 'string') return 'none';
  const machine = await ctx.machine();
  const nodeName = (machine?.status as { nodeRef?: { name?: string } } | undefined)?.nodeRef?.name;
  if (!nodeName) return undefined;
  const node = await ctx.client.get<KubeObject & { status?: { nodeInfo?: { kubeletVersion?: string } } }>(Nodes, undefined, nodeName);
  if (node?.metadata.annotations?.[SIMULATED_NODE_ANNOTATION] !== 'true' || node.status?.nodeInfo?.kubeletVersion === version)
    return 'none';
  return { node: nodeName, version };
}

/** The simulated kubelet's report: the Node's kubeletVersion. */
async function playKubelet(target: KubeletTarget | undefined, ctx: UpdaterContext): Promise<void> {
  if (target === undefined || target === 'none') return;
  await ctx.client.patch(
    Nodes,
    undefined,
    target.node,
    { status: { nodeInfo: { kubeletVersion: target.version } } },
    { type: 'merge', subresource: 'status' },
  );
}

/** Most kubelet targets kept looked up ahead (the oldest is dropped; its task then looks its Node up at its end, as after a restart). */
export const MAX_LOOKAHEAD = 16_384;

/** The reference updater (generic kind); `names` narrows the updater names it serves. */
export function referenceUpdater(names?: string[]): Updater {
  // The Node of a running task is looked up while it runs (not awaited: its first status is not held back), so at its
  // deadline only the Node write stands between the timer and `updated` (three round trips were: 22 ms median, 49 mean at
  // 10,003 machines on a busy machine). A failed or missing lookup, or an updater restart, looks it up at the end.
  const ahead = new Map<string, Promise<KubeletTarget | undefined>>();
  // Per generation: a changed spec (another version) is looked up again.
  const keyOf = (task: Task): string =>
    `${task.metadata.uid ?? `${task.metadata.namespace ?? ''}/${task.metadata.name ?? ''}`}/${task.metadata.generation ?? 0}`;
  return defineUpdater({
    name: 'reference',
    kind: UpdaterUpdateTasks,
    ...(names && names.length ? { names } : {}),
    async update(task, ctx) {
      const p = readParameters(task);
      if (typeof p === 'string') return failed(p);
      const deadline = ctx.startTime.getTime() + p.durationSeconds * 1000;
      const left = deadline - ctx.now().getTime();
      const key = keyOf(task);
      if (left > 0) {
        // The oldest goes first when full (a task deleted while it ran leaves its entry behind).
        if (!ahead.has(key) && ahead.size >= MAX_LOOKAHEAD) ahead.delete(ahead.keys().next().value!);
        if (!ahead.has(key))
          ahead.set(
            key,
            kubeletTarget(task, ctx).catch(() => undefined),
          );
        // Woken at the deadline (the SDK requeues; nothing polls meanwhile).
        return progress(
          left,
          `simulating a ${p.durationSeconds}s update of machine ${task.spec.machineRef.name} (until ${new Date(deadline).toISOString()})`,
        );
      }
      const early = ahead.get(key);
      ahead.delete(key);
      if (p.failWith) return failed(p.failWith);
      await playKubelet((early ? await early : undefined) ?? (await kubeletTarget(task, ctx)), ctx);
      return done(`simulated update of machine ${task.spec.machineRef.name} finished after ${p.durationSeconds}s`);
    },
    async abort(task, ctx) {
      ahead.delete(keyOf(task));
      const secs = Math.round((ctx.now().getTime() - ctx.startTime.getTime()) / 100) / 10;
      return aborted(`simulated update of machine ${task.spec.machineRef.name} aborted after ${secs}s`);
    },
  });
}
