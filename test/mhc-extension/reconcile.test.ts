// The MHC reconcile driven directly: caches filled by hand, the clock fixed, writes to the shared test env (local API
// server or a real cluster). Covers the race of issue 19, reproduced deterministically (the extension decides on its
// cache, in which a machine's update is past its timeout, while on the API server that update has just completed: it
// must confirm the verdict there and leave the freshly updated machine alone), and the requeue at the deadline.
import { expect } from 'chai';
import {
  API_VERSION,
  Annotations,
  ConditionTypes,
  Labels,
  MachineHealthChecks,
  MachineUpdates,
  Machines,
  Reasons,
  type Condition,
  type KubeObject,
} from '../../src/api/index.js';
import { Action, MemoryStore, noopLogger, type EventRecorder } from '../../src/runtime/index.js';
import {
  applyInventory,
  buildInventory,
  capiCrdDirs,
  deleteWorkloadNodes,
  type Machine,
  type MachineHealthCheck,
} from '../../tools/capi-sim/index.js';
import { STALE_VIEW_RECHECK_MS, mhcDeps, reconcile } from '../../src/mhc-extension/controller.js';
import { MAX_REQUEUE_MS } from '../../src/mhc-extension/decide.js';
import type { MachineUpdate } from '../../src/mhc-extension/scope.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';

const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const R = Annotations.remediateMachine;
const kubeTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

describe('mhc-extension reconcile on a given view', function () {
  let env: TestEnv;
  let ns = '';
  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
  });
  after(async () => env?.stop());
  afterEach(async () => {
    if (ns) await deleteWorkloadNodes(env.client, ns);
  });

  /**
   * One machine in update, protected by an earlier pass, its update started 10 minutes before the (fixed) clock with a
   * 2 s timeout. The caches hold that state; `completeOnServer` then marks the update updated on the API server only.
   */
  async function decideOnStaleView(
    completeOnServer: boolean,
    o: { timeout?: string; startedMsAgo?: number; machineChange?: Record<string, unknown> } = {},
  ): Promise<{ action: Action; events: string[]; machine: string; mu: string }> {
    const client = env.client;
    ns = await env.newNamespace('mhc-race');
    const objs = buildInventory({
      namespace: ns,
      clusterName: 'c1',
      version: 'v1.29.5',
      machineDeployments: [{ name: 'c1-md', replicas: 3, maxUnavailable: 3 }],
      mhc: { name: 'c1-mhc', inPlaceUpdateTimeout: o.timeout ?? '2s', unhealthyLessThanOrEqualTo: 2 },
    });
    await applyInventory(client, objs);
    const machine = objs
      .filter((x) => x.kind === 'Machine')
      .map((x) => x.metadata.name ?? '')
      .sort()[0]!;
    // Whole seconds: startTime is stored to the second, so the deadline is exact.
    const now = Math.floor(Date.now() / 1000) * 1000;
    const mu = `p1-${machine}`;
    await client.create(MachineUpdates, {
      apiVersion: API_VERSION,
      kind: 'MachineUpdate',
      metadata: { name: mu, namespace: ns, labels: { [Labels.machineName]: machine, [Labels.planName]: 'p1', [Labels.clusterName]: 'c1' } },
      spec: {
        planName: 'p1',
        clusterName: 'c1',
        target: { kind: 'MachineDeployment', name: 'c1-md' },
        machineRef: { name: machine },
        updatePhase: 'updating',
        updaters: [{ name: 'u', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] }],
      },
    } as KubeObject);
    await client.patch(
      MachineUpdates,
      ns,
      mu,
      { status: { updateStatus: 'updating', startTime: kubeTime(now - (o.startedMsAgo ?? 600_000)) } },
      { type: 'merge', subresource: 'status' },
    );
    await client.patch(Machines, ns, machine, { metadata: { annotations: { [S]: '', [P]: 'false' } } }, { type: 'merge' });

    // The caches as the extension saw them when it decided.
    const stores = {
      mhcs: new MemoryStore<MachineHealthCheck>(),
      machines: new MemoryStore<Machine>(),
      updates: new MemoryStore<MachineUpdate>(),
    };
    for (const h of (await client.list<MachineHealthCheck>(MachineHealthChecks, ns)).items) stores.mhcs.upsert(h);
    for (const m of (await client.list<Machine>(Machines, ns)).items) stores.machines.upsert(m);
    for (const u of (await client.list<MachineUpdate>(MachineUpdates, ns)).items) stores.updates.upsert(u);

    // The completion lands after the view was taken, before the write.
    if (completeOnServer)
      await client.patch(
        MachineUpdates,
        ns,
        mu,
        { status: { updateStatus: 'updated', completionTime: kubeTime(now) } },
        { type: 'merge', subresource: 'status' },
      );

    // Someone else writes the Machine after the view was taken (the plan's label, an operator's annotation).
    if (o.machineChange) await client.patch(Machines, ns, machine, o.machineChange, { type: 'merge' });

    const events: string[] = [];
    const recorder: EventRecorder = { event: (_o, _t, reason) => void events.push(reason) };
    const action = await reconcile(
      mhcDeps(stores, client, recorder, () => now),
      { namespace: ns, name: 'c1-mhc' },
      noopLogger,
    );
    return { action, events, machine, mu };
  }

  const annotationsOf = async (name: string): Promise<Record<string, string>> =>
    (await env.client.get<Machine>(Machines, ns, name))?.metadata.annotations ?? {};
  const verdictOf = async (mu: string): Promise<Condition | undefined> =>
    ((await env.client.get(MachineUpdates, ns, mu))?.['status'] as { conditions?: Condition[] } | undefined)?.conditions?.find(
      (c) => c.type === ConditionTypes.healthCheckSucceeded,
    );

  describe('an update completing between the decision and the write (issue 19)', () => {
    it('does not remediate a machine whose update completed after the decision, nor lift its protection', async () => {
      const { action, events, machine, mu } = await decideOnStaleView(true);
      const a = await annotationsOf(machine);
      expect(a).to.not.have.property(R);
      expect(a).to.include({ [S]: '', [P]: 'false' });
      expect(await verdictOf(mu)).to.equal(undefined);
      expect(events).to.deep.equal([]);
      // It looks again soon (the watch event of the completion normally comes first).
      expect(action).to.deep.equal(Action.requeue(STALE_VIEW_RECHECK_MS));
    });

    it('control: the same view remediates when the update is still running on the API server', async () => {
      const { events, machine, mu } = await decideOnStaleView(false);
      const a = await annotationsOf(machine);
      expect(a)
        .to.include({ [R]: '', [P]: 'false' })
        .and.not.have.property(S);
      expect(await verdictOf(mu)).to.include({ status: 'False', reason: Reasons.inPlaceUpdateTimedOut });
      expect(events).to.include(Reasons.remediationTriggered);
    });
  });

  describe('the annotation patch is guarded by the annotations the decision read, not the resourceVersion (issue 25)', () => {
    it('a label written after the decision does not conflict: the machine is remediated in one patch', async () => {
      const { events, machine } = await decideOnStaleView(false, { machineChange: { metadata: { labels: { 'example.com/other': 'x' } } } });
      const m = await env.client.get<Machine>(Machines, ns, machine);
      expect(m?.metadata.labels).to.include({ 'example.com/other': 'x' });
      expect(m?.metadata.annotations)
        .to.include({ [R]: '', [P]: 'false' })
        .and.not.have.property(S);
      expect(events).to.include(Reasons.remediationTriggered);
    });

    it('an annotation written after the decision conflicts: nothing is written, the pass is retried on fresh annotations', async () => {
      let err: unknown;
      try {
        await decideOnStaleView(false, { machineChange: { metadata: { annotations: { 'example.com/note': 'x' } } } });
      } catch (e) {
        err = e;
      }
      expect((err as Error | undefined)?.name).to.equal('ConflictError');
      const machine = (await env.client.list<Machine>(Machines, ns)).items.map((x) => x.metadata.name ?? '').sort()[0]!;
      expect(await annotationsOf(machine)).to.deep.equal({ [S]: '', [P]: 'false', 'example.com/note': 'x' });
    });
  });

  describe('waiting costs nothing: requeue at the deadline (issue 15)', () => {
    it('a machine in update under a 1000 h timeout: the pass requeues at the bound, not at once (a timer cannot wait 1000 h)', async () => {
      const { action } = await decideOnStaleView(false, { timeout: '1000h', startedMsAgo: 60_000 });
      expect(action).to.deep.equal(Action.requeue(MAX_REQUEUE_MS));
    });
    it('a machine in update under a 30 m timeout, one minute in: the pass requeues exactly at its deadline', async () => {
      const { action } = await decideOnStaleView(false, { timeout: '30m', startedMsAgo: 60_000 });
      expect(action).to.deep.equal(Action.requeue(29 * 60_000));
    });
  });
});
