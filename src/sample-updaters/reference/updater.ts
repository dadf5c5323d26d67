// The reference updater: serves the generic UpdaterUpdateTask kind. It simulates an update that takes
// parameters.durationSeconds (default 1; 0 allowed), measured from status.startTime so a restarted updater
// resumes rather than restarts, and fails with parameters.failWith when set. Used by tests and benchmarks.
import { UpdaterUpdateTasks } from '../../api/index.js';
import { aborted, defineUpdater, done, failed, progress, type Task, type Updater } from '../../contract/sdk/index.js';

/** Default simulated duration (seconds). */
export const DEFAULT_DURATION_SECONDS = 1;

/** The task parameters the reference updater reads. */
export interface ReferenceParameters {
  durationSeconds: number;
  failWith?: string;
}

/** Reads and checks spec.parameters; a string is an error message for a bad parameter. */
export function readParameters(task: Task): ReferenceParameters | string {
  const p = task.spec.parameters ?? {};
  const d = p['durationSeconds'] ?? DEFAULT_DURATION_SECONDS;
  if (typeof d !== 'number' || !Number.isFinite(d) || d < 0) return `parameters.durationSeconds must be a non-negative number, got ${JSON.stringify(d)}`;
  const f = p['failWith'];
  if (f !== undefined && typeof f !== 'string') return `parameters.failWith must be a string, got ${JSON.stringify(f)}`;
  return { durationSeconds: d, ...(f ? { failWith: f } : {}) };
}

/** The reference updater (generic kind); `names` narrows the updater names it serves. */
export function referenceUpdater(names?: string[]): Updater {
  return defineUpdater({
    name: 'reference',
    kind: UpdaterUpdateTasks,
    ...(names && names.length ? { names } : {}),
    async update(task, ctx) {
      const p = readParameters(task);
      if (typeof p === 'string') return failed(p);
      const totalMs = p.durationSeconds * 1000;
      const elapsed = ctx.now().getTime() - ctx.startTime.getTime();
      if (elapsed < totalMs) {
        const end = new Date(ctx.startTime.getTime() + totalMs).toISOString();
        return progress(totalMs - elapsed, `simulating a ${p.durationSeconds}s update of machine ${task.spec.machineRef.name} (until ${end})`);
      }
      if (p.failWith) return failed(p.failWith);
      return done(`simulated update of machine ${task.spec.machineRef.name} finished after ${p.durationSeconds}s`);
    },
    async abort(task, ctx) {
      const secs = Math.round((ctx.now().getTime() - ctx.startTime.getTime()) / 100) / 10;
      return aborted(`simulated update of machine ${task.spec.machineRef.name} aborted after ${secs}s`);
    },
  });
}
