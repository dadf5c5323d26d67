// The Kubernetes version updater: its own task kind (KubernetesVersionUpdateTask, template
// KubernetesVersionUpdateTaskTemplate) and responsibility Machine /spec/version. It upgrades the machine's node
// in four steps — Cordon, UpgradeKubelet, WaitNodeReady, Uncordon — each recorded in the task status with its
// start time, so a restarted updater resumes at the step it reached (C7). It never writes the Machine (C8).
import { KubernetesVersionUpdateTasks, type KubernetesVersionUpdateTask } from '../../api/index.js';
import {
  aborted,
  defineUpdater,
  done,
  failed,
  progress,
  type Result,
  type Task,
  type Updater,
  type UpdaterContext,
} from '../../contract/sdk/index.js';
import { LocalNodeActions, NodeNotFoundError, type NodeActions } from './node-actions.js';

/** The steps, in order. */
export const STEPS = ['Cordon', 'UpgradeKubelet', 'WaitNodeReady', 'Uncordon'] as const;
/** One step. */
export type Step = (typeof STEPS)[number];

/** The task as this updater reads it. */
export type KubernetesVersionTask = Task &
  Pick<KubernetesVersionUpdateTask, 'spec'> & { status?: KubernetesVersionUpdateTask['status'] & Task['status'] };

/** The version this task must install: its Machine /spec/version responsibility. */
export function targetVersion(task: Task): string | undefined {
  const r = task.spec.responsibilities?.find((x) => x.selectResource === 'Machine' && x.path === '/spec/version');
  return typeof r?.value === 'string' && r.value ? r.value : undefined;
}

const secs = (ms: number): string => `${Math.round(ms / 100) / 10}s`;

async function runStep(task: KubernetesVersionTask, ctx: UpdaterContext, nodes: NodeActions): Promise<Result> {
  const version = targetVersion(task);
  if (!version) return failed('the task has no Machine /spec/version responsibility with a version string: nothing to upgrade to');
  let node = ctx.status['nodeName'] as string | undefined;
  if (!node) {
    const machine = await ctx.machine();
    if (!machine) return failed(`Machine ${task.spec.machineRef.name} not found`);
    node = (machine.status as { nodeRef?: { name?: string } } | undefined)?.nodeRef?.name;
    if (!node)
      return failed(`Machine ${task.spec.machineRef.name} has no status.nodeRef: its node is not up, so it cannot be upgraded in place`);
  }
  const step: Step = (ctx.status['step'] as Step | undefined) ?? 'Cordon';
  const i = STEPS.indexOf(step);
  const now = ctx.now();
  const stepStart = ctx.status['stepStartTime'] ? new Date(ctx.status['stepStartTime'] as string) : now;
  const stepMs = (task.spec.simulatedStepSeconds ?? 1) * 1000;
  const fields = { step, stepStartTime: stepStart.toISOString(), nodeName: node };
  const elapsed = now.getTime() - stepStart.getTime();
  try {
    switch (step) {
      case 'Cordon':
        await nodes.cordon(node);
        break;
      case 'UpgradeKubelet':
        await nodes.upgradeKubelet(node, version);
        break;
      case 'WaitNodeReady': {
        const s = await nodes.state(node);
        if (!s.ready || s.kubeletVersion !== version) {
          const timeoutMs = (task.spec.nodeReadyTimeoutSeconds ?? 600) * 1000;
          if (elapsed > timeoutMs)
            return failed(
              `node ${node} was not Ready with kubelet ${version} within ${secs(timeoutMs)} (Ready=${s.ready}, kubelet ${s.kubeletVersion ?? 'unknown'})`,
              fields,
            );
          return progress(
            Math.min(1000, Math.max(100, stepMs)),
            `step ${i + 1}/${STEPS.length} WaitNodeReady: node ${node} Ready=${s.ready}, kubelet ${s.kubeletVersion ?? 'unknown'}`,
            fields,
          );
        }
        break;
      }
      case 'Uncordon':
        await nodes.uncordon(node);
        break;
    }
  } catch (err) {
    if (err instanceof NodeNotFoundError) return failed(`${err.message} (Machine ${task.spec.machineRef.name} status.nodeRef)`, fields);
    throw err;
  }
  if (elapsed < stepMs)
    return progress(stepMs - elapsed, `step ${i + 1}/${STEPS.length} ${step} on node ${node} (target ${version})`, fields);
  const next = STEPS[i + 1];
  if (!next) return done(`node ${node} runs kubelet ${version} and is schedulable again`, fields);
  // Advancing changes the status, and the status write triggers the next reconcile.
  return progress(undefined, `step ${i + 2}/${STEPS.length} ${next} on node ${node} (target ${version})`, {
    step: next,
    stepStartTime: now.toISOString(),
    nodeName: node,
  });
}

/** The Kubernetes version updater; `nodes` defaults to the local (simulated workload cluster) implementation. */
export function kubernetesVersionUpdater(opts: { nodes?: (ctx: UpdaterContext) => NodeActions } = {}): Updater<KubernetesVersionTask> {
  const nodesFor = opts.nodes ?? ((ctx: UpdaterContext) => new LocalNodeActions(ctx.client));
  return defineUpdater<KubernetesVersionTask>({
    name: 'kubernetes-version',
    kind: KubernetesVersionUpdateTasks,
    update: (task, ctx) => runStep(task, ctx, nodesFor(ctx)),
    async abort(task, ctx) {
      const step = ctx.status['step'] as Step | undefined;
      const node = ctx.status['nodeName'] as string | undefined;
      if (!step || step === 'Cordon') {
        if (node) {
          try {
            await nodesFor(ctx).uncordon(node);
          } catch (err) {
            if (!(err instanceof NodeNotFoundError)) throw err;
          }
        }
        return aborted(node ? `aborted before the kubelet upgrade; node ${node} uncordoned` : 'aborted before the upgrade started');
      }
      // Once the kubelet is being replaced, stopping halfway is worse than finishing: complete the upgrade.
      const r = await runStep(task, ctx, nodesFor(ctx));
      const why = 'abort requested after the kubelet upgrade started; finishing it';
      return r.type === 'progress' ? { ...r, message: `${why}: ${r.message ?? ''}` } : r;
    },
  });
}
