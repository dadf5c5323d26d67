// The simulated MachineHealthCheck status (upstream: internal/controllers/machinehealthcheck).
import { MachineHealthChecks } from '../../../src/api/index.js';
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import { mhcCounts, mhcTargets } from '../decisions.js';
import type { MachineHealthCheck } from '../../../src/api/capi/index.js';
import { type SimWorld } from './world.js';

/** The MachineHealthCheck controller's status: expected machines, healthy ones, remediations allowed. */
export class MachineHealthCheckController {
  constructor(private readonly world: SimWorld) {}

  /** MHC status as CAPI reports it: expected machines, healthy ones, and how many remediations are allowed. */
  async reconcile(key: ObjectKey): Promise<Action> {
    const mhc = this.world.mgr.informer<MachineHealthCheck>(MachineHealthChecks).store.get(key.namespace, key.name);
    if (!mhc) return Action.awaitChange();
    const targets = mhcTargets(mhc, this.world.machines);
    const counts = mhcCounts(mhc, targets);
    const status = {
      observedGeneration: mhc.metadata.generation ?? 1,
      expectedMachines: counts.expectedMachines,
      currentHealthy: counts.currentHealthy,
      remediationsAllowed: counts.remediationsAllowed,
      targets: targets.map((m) => m.metadata.name ?? '').sort(),
    };
    await this.world.patchStatusIfChanged(MachineHealthChecks, mhc, status);
    return Action.awaitChange();
  }
}
