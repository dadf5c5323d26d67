// Shared set-up of the task controller, sample updater and conformance integration tests: a test env with the
// platform, sample and CAPI CRDs, a small CAPI inventory, the machine task controller in a manager, and helpers
// to create and wait for MachineUpdates the way the plan controller would.
import {
  API_VERSION,
  InPlaceUpdatePlans,
  Labels,
  Machines,
  MachineUpdates,
  type KubeObject,
  type MachineUpdateSpec,
  type MachineUpdateStatus,
} from '../../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { createManager, type RuntimeManager } from '../../src/runtime/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

/** A MachineUpdate as tests read it. */
export interface MU extends KubeObject {
  spec: MachineUpdateSpec;
  status?: MachineUpdateStatus;
}

/** The environment of one suite. */
export interface Fixture {
  env: TestEnv;
  ns: string;
  /** Names of the inventory's machines (one MachineDeployment). */
  machines: string[];
}

/** Starts the env, installs every CRD and a one-MachineDeployment inventory of `replicas` machines. */
export async function startFixture(prefix: string, replicas = 3): Promise<Fixture> {
  const env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
  const ns = await env.newNamespace(prefix);
  await applyInventory(
    env.client,
    buildInventory({ namespace: ns, clusterName: 'c1', version: 'v1.30.0', machineDeployments: [{ name: 'md0', replicas }] }),
  );
  const machines = (await env.client.list(Machines, ns)).items.map((m) => m.metadata.name!).sort();
  return { env, ns, machines };
}

/**
 * The suite's fixture, started before its first test and stopped after its last (mocha hooks registered here): the
 * returned object is filled in by the `before` hook, so tests read `f.env`, `f.ns` and `f.machines` as usual.
 */
export function useFixture(prefix: string, replicas = 3): Fixture {
  const f = {} as Fixture;
  before(async () => {
    Object.assign(f, await startFixture(prefix, replicas));
  });
  after(async () => {
    await f.env?.stop();
  });
  return f;
}

/** Runs the machine task controller in its own manager (stop it to simulate a controller restart). */
export async function startTaskController(f: Fixture): Promise<RuntimeManager> {
  const mgr = createManager({ client: f.env.client, name: 'mtc-test', namespace: f.ns });
  await machineTaskController.setup(mgr);
  await mgr.start();
  return mgr;
}

/** The plan the tests' MachineUpdates belong to (only a plan's MachineUpdates are acted on). */
export const TEST_PLAN = 'p1';

/** Creates (once) the InPlaceUpdatePlan `plan` the tests' MachineUpdates belong to; no plan controller runs, so it only exists. */
export async function ensurePlan(f: Fixture, plan = TEST_PLAN): Promise<KubeObject> {
  const existing = await f.env.client.get(InPlaceUpdatePlans, f.ns, plan);
  if (existing) return existing;
  return f.env.client.create(InPlaceUpdatePlans, {
    apiVersion: API_VERSION,
    kind: InPlaceUpdatePlans.kind,
    metadata: { name: plan, namespace: f.ns },
    spec: {
      clusterName: 'c1',
      machineDeployments: [
        {
          name: 'md0',
          sequence: 1,
          updaters: [
            {
              name: 'placeholder',
              sequence: 1,
              responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.0' }],
            },
          ],
        },
      ],
    },
  });
}

/** Creates a MachineUpdate as the plan controller would: owned by the plan, after labelling the machine with it (spec.previous when given). */
export async function createMachineUpdate(
  f: Fixture,
  name: string,
  machine: string,
  updaters: MachineUpdateSpec['updaters'],
  phase: 'updating' | 'aborting' = 'updating',
  previous?: MachineUpdateSpec['previous'],
): Promise<MU> {
  const plan = await ensurePlan(f);
  await f.env.client.patch(Machines, f.ns, machine, { metadata: { labels: { [Labels.planName]: TEST_PLAN } } }, { type: 'merge' });
  return f.env.client.create<MU>(MachineUpdates, {
    apiVersion: API_VERSION,
    kind: 'MachineUpdate',
    metadata: {
      name,
      namespace: f.ns,
      labels: { [Labels.planName]: TEST_PLAN, [Labels.machineName]: machine },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: InPlaceUpdatePlans.kind,
          name: TEST_PLAN,
          uid: plan.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      planName: TEST_PLAN,
      clusterName: 'c1',
      target: { kind: 'MachineDeployment', name: 'md0' },
      machineRef: { name: machine },
      updatePhase: phase,
      updaters,
      ...(previous ? { previous } : {}),
    },
  });
}

/** Waits until the MachineUpdate's status satisfies `pred`. */
export function waitMU(f: Fixture, name: string, pred: (mu: MU) => boolean, message: string, timeoutMs = 20_000): Promise<MU> {
  return waitFor(
    async () => {
      const mu = await f.env.client.get<MU>(MachineUpdates, f.ns, name);
      return mu && pred(mu) ? mu : undefined;
    },
    { timeoutMs, intervalMs: 25, message },
  );
}

/** Waits until the MachineUpdate reaches `status` (and returns it). */
export const waitMUStatus = (f: Fixture, name: string, status: string, timeoutMs?: number): Promise<MU> =>
  waitMU(f, name, (mu) => mu.status?.updateStatus === status, `MachineUpdate ${name} to be ${status}`, timeoutMs);
