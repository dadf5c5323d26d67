// The machine task controller with spec.previous (contract C8, issue 25): a one-object commit ends with one status write
// that records the values before and after (no journal), and a controller that restarts after the commit's patch but
// before that status write (the Machine at its new value, no journal on the MachineUpdate) finishes the update from
// spec.previous without writing the Machine again. A MachineUpdate without spec.previous is journaled as before.
import { expect } from 'chai';
import { MachineUpdates, Machines, type KubeObject } from '../../src/api/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { noopLogger, type KubeClient, type RuntimeManager } from '../../src/runtime/index.js';
import { createManager } from '../../src/runtime/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { createMachineUpdate, startFixture, waitMUStatus, type Fixture, type MU } from './support.js';

type Spec = KubeObject & { spec: Record<string, unknown> };

/** A client that records the status bodies the controller sends for MachineUpdates (was a journal written?) and the Machines it patches. */
function recording(inner: KubeClient, out: { status: unknown[]; machines: string[] }): KubeClient {
  const c = Object.create(inner) as KubeClient;
  c.patch = (res, ns, name, body, opts) => {
    if (res.kind === MachineUpdates.kind && opts.subresource === 'status') out.status.push(structuredClone(body));
    if (res.kind === Machines.kind && !opts.dryRun) out.machines.push(name);
    return inner.patch(res, ns, name, body, opts);
  };
  return c;
}

const VERSION = { selectResource: 'Machine' as const, path: '/spec/version', value: 'v1.30.1' };
const updaters = [{ name: 'version', sequence: 1, parameters: { durationSeconds: 0 }, responsibilities: [VERSION] }];

describe('machine task controller: commit without a journal write (spec.previous, integration)', function () {
  let f: Fixture;
  let mgr: RuntimeManager;
  let updater: { stop(): Promise<void> };
  const sent = { status: [] as unknown[], machines: [] as string[] };
  const journalSent = (): boolean => sent.status.some((b) => JSON.stringify(b).includes('"commit":{'));

  before(async () => {
    f = await startFixture('mtc-prev', 3);
    mgr = createManager({ client: recording(f.env.client, sent), name: 'mtc-prev', namespace: f.ns });
    await machineTaskController.setup(mgr);
    await mgr.start();
    updater = await sampleUpdaters.reference.start({ client: f.env.client, namespace: f.ns, catchAll: true, log: noopLogger });
  });
  after(async () => {
    await updater?.stop();
    await mgr?.stop();
    await f?.env.stop();
  });

  const get = async (name: string): Promise<Spec> => (await f.env.client.get<Spec>(Machines, f.ns, name))!;
  it('commits with one status write: updated, committed = recorded before → written, no journal ever sent', async () => {
    const machine = f.machines[0]!;
    const before = (await get(machine)).spec['version'];
    sent.status.length = 0;
    await createMachineUpdate(f, 'mu-fast', machine, updaters, 'updating', [
      { selectResource: 'Machine', path: '/spec/version', value: JSON.stringify(before) },
    ]);
    const mu = await waitMUStatus(f, 'mu-fast', 'updated');
    expect(mu.status?.conditions?.find((c) => c.type === 'InPlaceUpdate')).to.include({ reason: 'Updated' });
    expect(mu.status?.committed?.objects).to.deep.equal([
      {
        apiGroup: 'cluster.x-k8s.io',
        kind: 'Machine',
        name: machine,
        entries: [{ path: '/spec/version', before: JSON.stringify(before), after: '"v1.30.1"' }],
      },
    ]);
    expect(mu.status?.commit).to.equal(undefined);
    expect(journalSent(), 'a journal was written').to.equal(false);
    expect((await get(machine)).spec['version']).to.equal('v1.30.1');
  });

  it('restarted after the patch, before the final status write: finishes from spec.previous, the Machine is not written again', async () => {
    const machine = f.machines[1]!;
    const before = (await get(machine)).spec['version'];
    // The state the crash leaves: the Machine holds the new value, the MachineUpdate has no journal.
    await f.env.client.patch(Machines, f.ns, machine, { spec: { version: 'v1.30.1' } }, { type: 'merge' });
    sent.status.length = 0;
    await createMachineUpdate(f, 'mu-resume', machine, updaters, 'updating', [
      { selectResource: 'Machine', path: '/spec/version', value: JSON.stringify(before) },
    ]);
    const mu = await waitMUStatus(f, 'mu-resume', 'updated');
    expect(mu.status?.committed?.objects?.[0]?.entries).to.deep.equal([
      { path: '/spec/version', before: JSON.stringify(before), after: '"v1.30.1"' },
    ]);
    expect(journalSent(), 'a journal was written').to.equal(false);
    expect(sent.machines, 'Machine patches by the controller').to.not.include(machine);
    expect((await get(machine)).spec['version']).to.equal('v1.30.1');
  });

  it('without spec.previous the commit is journaled first, as before', async () => {
    const machine = f.machines[2]!;
    sent.status.length = 0;
    await createMachineUpdate(f, 'mu-journal', machine, updaters);
    const mu: MU = await waitMUStatus(f, 'mu-journal', 'updated');
    expect(mu.status?.commit).to.equal(undefined);
    expect(journalSent(), 'the journal write').to.equal(true);
    expect(mu.status?.committed?.objects?.[0]?.entries?.[0]?.after).to.equal('"v1.30.1"');
  });

  it('spec.previous is immutable like the rest of the spec: set at creation or never', async () => {
    const patch = (name: string, body: unknown): Promise<unknown> =>
      f.env.client.patch(MachineUpdates, f.ns, name, body, { type: 'merge' }).then(
        () => 'accepted',
        (err: { code?: number }) => err.code,
      );
    const other = [{ selectResource: 'Machine', path: '/spec/version', value: '"v0"' }];
    expect(await patch('mu-fast', { spec: { previous: other } }), 'changed').to.equal(422);
    expect(await patch('mu-fast', { spec: { previous: null } }), 'removed').to.equal(422);
    expect(await patch('mu-journal', { spec: { previous: other } }), 'added').to.equal(422);
  });
});
