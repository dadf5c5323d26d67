// What the fleet-scale reliability suites share beyond the harness: the fleet they start (cluster c1 at v1.30.0,
// MachineHealthChecks that never fire during a run) and a plan run recorded from before it starts to its settled
// invariants. The suites keep only what makes them different (when they abort, which faults they inject).
import type { KubeObject, MachineUpdate } from '../../src/api/index.js';
import { MachineUpdates } from '../../src/api/index.js';
import { Recorder, machinesBefore, settledInvariants, startWorld, type Expect, type MachineBefore, type World } from './harness.js';

/** The size of a fleet: worker machines, machines per MachineDeployment, and its maxUnavailable. */
export interface FleetSize {
  workers: number;
  mdSize: number;
  maxUnavailable: number;
}

/** Starts a world whose fleet is cluster c1 at v1.30.0 of `size` (MHC timeout 30m: remediation stays out of the run). */
export const startFleet = (size: FleetSize, prefix: string): Promise<World> =>
  startWorld({ clusterName: 'c1', version: 'v1.30.0', ...size, mhcTimeout: '30m' }, prefix);

/** A plan run being recorded: the machines as they were before it, and the check once it settled. */
export interface RecordedRun {
  before: Map<string, MachineBefore>;
  /** The harness invariants of the settled run (violations; empty = all hold); stops the recording. */
  settle(e: Omit<Expect, 'before'>): Promise<string[]>;
}

/** Starts recording a plan run: every watch event from now on, and the machines as they are before the plan. */
export async function recordRun(w: World): Promise<RecordedRun> {
  const rec = new Recorder(w.client, w.ns);
  await rec.start();
  const before = await machinesBefore(w.client, w.ns);
  return {
    before,
    settle: async (e) => {
      try {
        return await settledInvariants(w, { ...e, before }, rec);
      } finally {
        await rec.stop();
      }
    },
  };
}

/** The MachineUpdates of one plan. */
export async function planUpdates(w: World, plan: string): Promise<(MachineUpdate & KubeObject)[]> {
  return (await w.client.list<MachineUpdate & KubeObject>(MachineUpdates, w.ns)).items.filter((m) => m.spec.planName === plan);
}
