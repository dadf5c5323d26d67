// Integration tests of the MHC extension against the shared test env (local API server, or a real cluster with
// INPLACE_TEST_KUBECONFIG) with CAPI CRDs from capiCrdDirs() (the fixtures, or the real ones via CAPI_CRDS_DIR).
// The plan and task controllers are not running: the tests write MachineUpdates as they would.
import { expect } from 'chai';
import {
  API_VERSION,
  Annotations,
  ConditionTypes,
  Events,
  Labels,
  MachineHealthChecks,
  MachineUpdates,
  Machines,
  Reasons,
  type Condition,
  type KubeObject,
} from '../../src/api/index.js';
import { createManager, type KubeClient, type RuntimeManager } from '../../src/runtime/index.js';
import {
  applyInventory,
  buildInventory,
  capiCrdDirs,
  deleteWorkloadNodes,
  startCapiSimulator,
  type Machine,
} from '../../tools/capi-sim/index.js';
import { createMhcExtension } from '../../src/mhc-extension/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const R = Annotations.remediateMachine;
const md = 'c1-md';
const kubeTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface Ctx {
  env: TestEnv;
  client: KubeClient;
  ns: string;
}

/** Starts the extension; `now` replaces its clock where a test controls time. */
async function startExtension(client: KubeClient, ns: string, now?: () => number): Promise<RuntimeManager> {
  const mgr = createManager({ client, name: 'mhc-extension', namespace: ns });
  await createMhcExtension(now ? { now } : {}).setup(mgr);
  await mgr.start();
  await Promise.all([MachineHealthChecks, Machines, MachineUpdates].map((r) => mgr.informer(r).synced()));
  return mgr;
}

/** Creates the MachineUpdate the plan controller would create, and the status the task controller would write. */
async function startUpdate(
  c: Ctx,
  machine: string,
  o: { startedMsAgo?: number; startMs?: number; status?: string; message?: string; plan?: string } = {},
): Promise<string> {
  const plan = o.plan ?? 'p1';
  const name = `${plan}-${machine}`;
  await c.client.create(MachineUpdates, {
    apiVersion: API_VERSION,
    kind: 'MachineUpdate',
    metadata: { name, namespace: c.ns, labels: { [Labels.machineName]: machine, [Labels.planName]: plan, [Labels.clusterName]: 'c1' } },
    spec: {
      planName: plan,
      clusterName: 'c1',
      target: { kind: 'MachineDeployment', name: md },
      machineRef: { name: machine },
      updatePhase: 'updating',
      updaters: [{ name: 'u', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] }],
    },
  });
  await setUpdateStatus(c, name, {
    updateStatus: o.status ?? 'updating',
    startTime: kubeTime(o.startMs ?? Date.now() - (o.startedMsAgo ?? 0)),
    ...(o.message ? { message: o.message } : {}),
  });
  return name;
}

async function setUpdateStatus(c: Ctx, name: string, status: Record<string, unknown>): Promise<void> {
  await c.client.patch(MachineUpdates, c.ns, name, { status }, { type: 'merge', subresource: 'status' });
}

const getMachine = async (c: Ctx, name: string): Promise<Machine | undefined> => c.client.get<Machine>(Machines, c.ns, name);
const annotations = async (c: Ctx, name: string): Promise<Record<string, string>> =>
  (await getMachine(c, name))?.metadata.annotations ?? {};
const healthCondition = async (c: Ctx, update: string): Promise<Condition | undefined> =>
  ((await c.client.get(MachineUpdates, c.ns, update))?.['status'] as { conditions?: Condition[] } | undefined)?.conditions?.find(
    (x) => x.type === ConditionTypes.healthCheckSucceeded,
  );
const eventsFor = async (c: Ctx, name: string, reason: string): Promise<KubeObject[]> =>
  (await c.client.list(Events, c.ns)).items.filter(
    (e) => (e['involvedObject'] as { name?: string }).name === name && e['reason'] === reason,
  );
/** The HealthCheckSucceeded condition once its message matches (the condition is written after the annotations). */
const healthConditionMatching = async (c: Ctx, update: string, re: RegExp): Promise<Condition> =>
  waitFor(
    async () => {
      const x = await healthCondition(c, update);
      return x && re.test(x.message ?? '') ? x : undefined;
    },
    { message: `HealthCheckSucceeded of ${update} matching ${re}` },
  );
/** How many times an Event was recorded (repeats are aggregated into a `series`). */
const eventCount = async (c: Ctx, name: string, reason: string): Promise<number> =>
  (await eventsFor(c, name, reason)).reduce((n, e) => n + ((e['series'] as { count?: number } | undefined)?.count ?? 1), 0);

describe('mhc-extension (integration)', function () {
  const c = {} as Ctx;
  let ext: RuntimeManager | undefined;
  let workers: string[] = [];

  before(async () => {
    c.env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    c.client = c.env.client;
  });
  after(async () => c.env?.stop());

  async function setUp(mhc: { timeout?: string; max?: number | string; nodeStartup?: number }, now?: () => number): Promise<void> {
    c.ns = await c.env.newNamespace('mhc-ext');
    const objs = buildInventory({
      namespace: c.ns,
      clusterName: 'c1',
      version: 'v1.29.5',
      machineDeployments: [{ name: md, replicas: 3, maxUnavailable: 1 }],
      mhc: {
        name: 'c1-mhc',
        ...(mhc.timeout !== undefined ? { inPlaceUpdateTimeout: mhc.timeout } : {}),
        ...(mhc.max !== undefined ? { unhealthyLessThanOrEqualTo: mhc.max } : {}),
        ...(mhc.nodeStartup !== undefined ? { nodeStartupTimeoutSeconds: mhc.nodeStartup } : {}),
      },
    });
    await applyInventory(c.client, objs);
    workers = objs
      .filter((o) => o.kind === 'Machine')
      .map((o) => o.metadata.name ?? '')
      .sort();
    ext = await startExtension(c.client, c.ns, now);
  }

  afterEach(async () => {
    await ext?.stop();
    ext = undefined;
    await deleteWorkloadNodes(c.client, c.ns);
  });

  it('protects a machine within its in-place timeout with skip-remediation, and restores it when the update ends', async () => {
    await setUp({ timeout: '1h' });
    const [m] = workers;
    const mu = await startUpdate(c, m!);
    await waitFor(async () => (await annotations(c, m!))[S] !== undefined, { message: 'skip-remediation set' });
    // The annotation is the record of the protection: it names the MHC, the update and the expiry.
    expect(await annotations(c, m!)).to.include({ [P]: 'false' });
    expect((await annotations(c, m!))[S]).to.match(
      new RegExp(`^in-place update ${mu}: MachineHealthCheck \\S+ skips remediation until \\d{4}-`),
    );
    // A protected machine within its timeout gets no condition (it would repeat the annotation) and no Event.
    expect(await healthCondition(c, mu)).to.equal(undefined);
    expect(await eventCount(c, m!, 'SkipRemediationSet')).to.equal(0);
    expect(await annotations(c, workers[1]!)).to.not.have.property(S);

    await setUpdateStatus(c, mu, { updateStatus: 'updated', completionTime: kubeTime(Date.now()) });
    await waitFor(async () => (await annotations(c, m!))[P] === undefined, { message: 'prior-state annotation removed' });
    const after = await annotations(c, m!);
    expect(after).to.not.have.property(S);
    expect(after).to.not.have.property(R);
  });

  it('restores a skip-remediation the machine carried before the update', async () => {
    await setUp({ timeout: '1h' });
    const [m] = workers;
    await c.client.patch(Machines, c.ns, m!, { metadata: { annotations: { [S]: 'operator' } } }, { type: 'merge' });
    const mu = await startUpdate(c, m!);
    await waitFor(async () => (await annotations(c, m!))[P] === 'true', { message: 'prior state recorded as present' });
    await c.client.delete(MachineUpdates, c.ns, mu);
    await waitFor(async () => (await annotations(c, m!))[P] === undefined, { message: 'prior-state annotation removed' });
    expect(await annotations(c, m!)).to.include({ [S]: 'operator' });
  });

  it('remediates a machine whose update exceeds its timeout, and CAPI replaces it', async () => {
    await setUp({ timeout: '2s' });
    const sim = await startCapiSimulator({ client: c.client, namespace: c.ns, readyDelayMs: 20 });
    try {
      const [m] = workers;
      const mu = await startUpdate(c, m!);
      await waitFor(async () => (await annotations(c, m!))[S] !== undefined, { message: 'protected at first' });
      // No further change to any object: the extension must wake up by itself when the timeout expires.
      const cond = await waitFor(
        async () => {
          const x = await healthCondition(c, mu);
          return x?.reason === Reasons.inPlaceUpdateTimedOut ? x : undefined;
        },
        { message: 'timed out verdict' },
      );
      expect(cond.status).to.equal('False');
      await waitFor(async () => (await getMachine(c, m!)) === undefined, {
        message: 'timed-out machine remediated (deleted by the simulated owner)',
      });
      await waitFor(
        async () => (await c.client.list<Machine>(Machines, c.ns)).items.filter((x) => x.status?.phase === 'Running').length === 3,
        { message: 'replacement running' },
      );
      expect(await eventCount(c, m!, Reasons.remediationTriggered)).to.equal(1);
    } finally {
      await sim.stop();
    }
  });

  it('sets remediate-machine and lifts skip-remediation on a timed-out machine', async () => {
    await setUp({ timeout: '1s' });
    const [m] = workers;
    await startUpdate(c, m!, { startedMsAgo: 5000 });
    await waitFor(async () => (await annotations(c, m!))[R] !== undefined, { message: 'remediate-machine set' });
    expect(await annotations(c, m!)).to.not.have.property(S);
  });

  it('remediates a machine whose update failed', async () => {
    await setUp({ timeout: '1h' });
    const [m] = workers;
    const mu = await startUpdate(c, m!, { status: 'failed', message: 'updater os-image: disk full' });
    await waitFor(async () => (await annotations(c, m!))[R] !== undefined, { message: 'remediate-machine set' });
    // The condition is written after the Machine's annotations: wait for it rather than read it once.
    const cond = await healthConditionMatching(c, mu, /disk full/);
    expect(cond).to.include({ status: 'False', reason: Reasons.inPlaceUpdateFailed });
  });

  it('does not remediate when the budget is exhausted, and records RemediationBlocked', async () => {
    await setUp({ timeout: '2s', max: 1 });
    const [a, b] = workers;
    // b's timeout is a minute away: it stays within it however slow the machine is. The extension must have seen b
    // under update (it protects b) before a's update exists: seen alone, a would fit the budget and be remediated.
    await startUpdate(c, b!, { startedMsAgo: -60_000 });
    await waitFor(async () => (await annotations(c, b!))[S] !== undefined || undefined, { message: 'b protected' });
    const muA = await startUpdate(c, a!, { startedMsAgo: 10_000 });
    const cond = await waitFor(
      async () => {
        const x = await healthCondition(c, muA);
        return x?.reason === Reasons.inPlaceUpdateTimedOut ? x : undefined;
      },
      { message: 'a judged timed out' },
    );
    expect(cond.message).to.match(/remediation blocked/);
    await waitFor(async () => (await eventsFor(c, a!, Reasons.remediationBlocked)).length > 0, { message: 'RemediationBlocked event' });
    expect(await annotations(c, a!)).to.not.have.property(R);
    expect(await annotations(c, a!)).to.not.have.property(S);
    expect(await annotations(c, b!)).to.have.property(S);
  });

  it("remediates a blocked machine once the budget frees (another machine's update ends)", async () => {
    await setUp({ timeout: '2s', max: 1 });
    const [a, b] = workers;
    // b's timeout is a minute away, so no timer wakes the extension before the test ends. As above, b is seen under
    // update before a's update exists.
    const muB = await startUpdate(c, b!, { startedMsAgo: -60_000 });
    await waitFor(async () => (await annotations(c, b!))[S] !== undefined || undefined, { message: 'b protected' });
    const muA = await startUpdate(c, a!, { startedMsAgo: 10_000 });
    await waitFor(async () => ((await healthCondition(c, muA))?.message ?? '').includes('remediation blocked') || undefined, {
      message: 'a blocked',
    });
    // b's update ends: it no longer counts against the budget. Only that event can unblock a.
    await setUpdateStatus(c, muB, { updateStatus: 'updated' });
    await waitFor(async () => (await annotations(c, a!))[R] !== undefined || undefined, { message: 'a remediated after the budget freed' });
    // The condition is written after the annotation: wait for it rather than read it at once.
    expect((await healthConditionMatching(c, muA, /remediation triggered/)).reason).to.equal(Reasons.inPlaceUpdateTimedOut);
    expect(await annotations(c, b!)).to.not.have.property(R);
  });

  it('ignores an MHC with an invalid timeout: a Warning Event on the MHC and no change to any machine', async () => {
    await setUp({ timeout: 'half an hour' });
    const [m] = workers;
    const mu = await startUpdate(c, m!, { status: 'failed' });
    await waitFor(
      async () =>
        (await c.client.list(Events, c.ns)).items.some(
          (e) => (e['involvedObject'] as { kind?: string }).kind === 'MachineHealthCheck' && e['type'] === 'Warning',
        ),
      { message: 'warning on the MHC' },
    );
    // The reconcile that warned also decided about the machines: it left them alone.
    expect(await annotations(c, m!)).to.deep.equal({});
    expect(await healthCondition(c, mu)).to.equal(undefined);
  });

  it('keeps the same decisions across a restart: prior state kept, remediation after the timeout passed while it was down', async () => {
    // The extension's clock is the test's: nothing here depends on how fast the machine runs.
    let clock = Date.now();
    await setUp({ timeout: '1h' }, () => clock);
    const [m] = workers;
    const mu = await startUpdate(c, m!, { startMs: clock });
    await waitFor(async () => (await annotations(c, m!))[S] !== undefined, { message: 'protected' });
    await ext!.stop();
    // Down past the timeout. The new instance sees its own skip-remediation and must not record it as the operator's.
    clock += 2 * 3_600_000;
    ext = await startExtension(c.client, c.ns, () => clock);
    const cond = await healthConditionMatching(c, mu, /remediation triggered/);
    expect(cond).to.include({ status: 'False', reason: Reasons.inPlaceUpdateTimedOut });
    expect(await annotations(c, m!))
      .to.include({ [P]: 'false', [R]: '' })
      .and.not.have.property(S);

    // Down again while the machine is remediated: a third instance changes nothing and records no second event.
    // Another machine starting its update proves the new instance reconciled the MHC with all of this state.
    const before = await getMachine(c, m!);
    await ext.stop();
    ext = await startExtension(c.client, c.ns, () => clock);
    const mu2 = await startUpdate(c, workers[1]!, { startMs: clock });
    await waitFor(async () => (await annotations(c, workers[1]!))[S] !== undefined, {
      message: 'second machine protected by the new instance',
    });
    expect((await annotations(c, workers[1]!))[S]).to.include(`in-place update ${mu2}: MachineHealthCheck`);
    expect((await getMachine(c, m!))?.metadata.annotations).to.deep.equal(before?.metadata.annotations);
    expect((await getMachine(c, m!))?.metadata.resourceVersion).to.equal(before?.metadata.resourceVersion);
    expect(await eventCount(c, m!, Reasons.remediationTriggered)).to.equal(1);
  });

  it("never remediates a healthy machine for an old plan's failure once a retry plan updated it (issue 15)", async () => {
    await setUp({});
    const [m, other] = workers;
    // Plan p1 failed on the machine; the retry plan p2 updated it and unlabelled it (the machine carries no plan label).
    const failed = await startUpdate(c, m!, {
      plan: 'p1',
      status: 'failed',
      message: 'updater os-image: disk full',
      startedMsAgo: 600_000,
    });
    await startUpdate(c, m!, { plan: 'p2', status: 'updated', startedMsAgo: 60_000 });
    // Then the operator configures the in-place timeout.
    await c.client.patch(
      MachineHealthChecks,
      c.ns,
      'c1-mhc',
      { metadata: { annotations: { [Annotations.inPlaceUpdateTimeout]: '2s' } } },
      { type: 'merge' },
    );
    // Proof the extension passed over the MHC with the new configuration: another machine in update gets protected.
    await startUpdate(c, other!, { plan: 'p3', startedMsAgo: -60_000 });
    await waitFor(async () => (await annotations(c, other!))[S] !== undefined, {
      message: 'the other machine protected (the MHC was reconciled)',
    });
    expect(await annotations(c, m!)).to.not.have.property(R);
    expect(await annotations(c, m!)).to.not.have.property(S);
    expect(await healthCondition(c, failed)).to.equal(undefined);
    expect(await eventCount(c, m!, Reasons.remediationTriggered)).to.equal(0);
  });
});
