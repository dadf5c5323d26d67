// The OS image updater: its own task kind (OSImageUpdateTask, template OSImageUpdateTaskTemplate) and the
// InfraMachine image responsibility (whatever pointer the plan names, e.g. the DevMachine's
// /spec/backend/docker/customImage). Steps StageImage, Reboot, VerifyImage are recorded in the task status with
// their start time, so a restarted updater resumes (C7). Abort before the reboot discards the staged image;
// after the reboot started the update is finished instead. It never writes the InfraMachine (C8).
import { OSImageUpdateTasks, type OSImageUpdateTask } from '../../api/index.js';
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
import { LocalHostActions, type HostActions } from './host-actions.js';

/** The steps, in order. */
export const STEPS = ['StageImage', 'Reboot', 'VerifyImage'] as const;
/** One step. */
export type Step = (typeof STEPS)[number];

/** The task as this updater reads it. */
export type OSImageTask = Task & Pick<OSImageUpdateTask, 'spec'>;

/** The image this task installs: its InfraMachine responsibility's value, under spec.imageRepository unless already qualified. */
export function targetImage(task: OSImageTask): string | undefined {
  const r = task.spec.responsibilities?.find((x) => x.selectResource === 'InfraMachine');
  if (typeof r?.value !== 'string' || !r.value) return undefined;
  return r.value.includes('/') ? r.value : `${task.spec.imageRepository ?? 'registry.example.com/os-images'}/${r.value}`;
}

async function runStep(task: OSImageTask, ctx: UpdaterContext, host: HostActions): Promise<Result> {
  const image = targetImage(task);
  if (!image) return failed('the task has no InfraMachine responsibility with an image name: nothing to install');
  const machine = await ctx.machine();
  if (!machine) return failed(`Machine ${task.spec.machineRef.name} not found`);
  const node = (machine.status as { nodeRef?: { name?: string } } | undefined)?.nodeRef?.name;
  if (!node) return failed(`Machine ${task.spec.machineRef.name} has no status.nodeRef: no host to update`);
  const step: Step = (ctx.status['step'] as Step | undefined) ?? 'StageImage';
  const i = STEPS.indexOf(step);
  const now = ctx.now();
  const stepStart = ctx.status['stepStartTime'] ? new Date(ctx.status['stepStartTime'] as string) : now;
  const stepMs = (task.spec.simulatedStepSeconds ?? 1) * 1000;
  const elapsed = now.getTime() - stepStart.getTime();
  const fields = { step, stepStartTime: stepStart.toISOString(), image };
  switch (step) {
    case 'StageImage':
      await host.stage(node, image);
      break;
    case 'Reboot':
      await host.reboot(node, image);
      break;
    case 'VerifyImage': {
      const running = await host.runningImage(node);
      if (running !== image) {
        const timeoutMs = (task.spec.rebootTimeoutSeconds ?? 900) * 1000;
        if (elapsed > timeoutMs)
          return failed(
            `host of node ${node} did not come back on ${image} within ${timeoutMs / 1000}s (running ${running ?? 'unknown'})`,
            fields,
          );
        return progress(1000, `step 3/3 VerifyImage: node ${node} runs ${running ?? 'an unknown image'}, waiting for ${image}`, fields);
      }
      break;
    }
  }
  if (elapsed < stepMs) return progress(stepMs - elapsed, `step ${i + 1}/${STEPS.length} ${step} on node ${node} (${image})`, fields);
  const next = STEPS[i + 1];
  if (!next) return done(`node ${node} booted ${image}`, fields);
  return progress(undefined, `step ${i + 2}/${STEPS.length} ${next} on node ${node} (${image})`, {
    step: next,
    stepStartTime: now.toISOString(),
    image,
  });
}

/** The OS image updater; `host` defaults to the local (simulated) implementation. */
export function osImageUpdater(opts: { host?: (ctx: UpdaterContext) => HostActions } = {}): Updater<OSImageTask> {
  const hostFor = opts.host ?? ((ctx: UpdaterContext) => new LocalHostActions(ctx.client));
  return defineUpdater<OSImageTask>({
    name: 'os-image',
    kind: OSImageUpdateTasks,
    update: (task, ctx) => runStep(task, ctx, hostFor(ctx)),
    async abort(task, ctx) {
      const step = ctx.status['step'] as Step | undefined;
      if (!step || step === 'StageImage') return aborted('aborted before the reboot; the staged image was discarded');
      const r = await runStep(task, ctx, hostFor(ctx));
      const why = 'abort requested after the reboot into the new image started; finishing it';
      return r.type === 'progress' ? { ...r, message: `${why}: ${r.message ?? ''}` } : r;
    },
  });
}
