// Phase 3c of decidePlan (inside each target's evaluation): the restore of a MachineDeployment's surge. Pure.
import { Annotations } from '../../api/index.js';
import { mdReplicas } from '../../api/capi/index.js';
import type { Mode, ScaleIntent, TargetEval, TargetReading } from './types.js';

/**
 * Restores the surge once nothing more will start in this target and nothing is in flight: sets `ev.scale` and
 * returns the row's message, or undefined when there is nothing to restore.
 */
export function restoreSurge(reading: TargetReading, mode: Mode, ev: TargetEval): string | undefined {
  const { t, c, size, halted } = reading;
  const { md } = size;
  if (!md || !size.surged || c.inFlight > 0 || ev.scale) return undefined;
  if (mode !== 'stop' && c.groups.notStarted.length > 0 && !halted) return undefined;
  const orig = Number(size.surgeOrig);
  const restore: ScaleIntent = {
    name: t.target.name,
    annotations: { [Annotations.surgeOriginalReplicas]: null, [Annotations.surgePlan]: null },
    kind: 'restore',
  };
  if (Number.isInteger(orig) && mdReplicas(md) === orig + 1) restore.replicas = orig;
  if (md.metadata.resourceVersion) restore.resourceVersion = md.metadata.resourceVersion;
  ev.scale = restore;
  if (ev.row.updateStatus === 'updated') ev.row.updateStatus = 'updating';
  return `restoring ${t.target.name} to ${orig} replicas after the surge`;
}
