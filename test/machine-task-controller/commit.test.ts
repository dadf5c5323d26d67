// All-or-nothing commit (C8) against the API server with the real CAPI CRDs: every patch is dry-run first, a write
// that fails after the dry-run rolls back what was written, and a journal makes an interrupted commit finish or roll
// back on the next run. The commit is driven directly (no updater needed) with an injectable failing client.
import { expect } from 'chai';
import { DevMachines, KubeadmConfigs, Machines, type KubeObject, type ResourceType, type Responsibility } from '../../src/api/index.js';
import { commitResponsibilities } from '../../src/machine-task-controller/commit-apply.js';
import type { CommitJournal } from '../../src/machine-task-controller/journal.js';
import { KubeApiError, type KubeClient, type PatchOptions } from '../../src/runtime/index.js';
import { useFixture } from './support.js';

type Spec = KubeObject & { spec: Record<string, unknown> };

/** A client whose real (not dry-run) patches of `kind` fail with `fail()` while `armed` is true. */
function failingClient(inner: KubeClient, kind: string, fail: () => Error): KubeClient & { armed: boolean } {
  const c = Object.create(inner) as KubeClient & { armed: boolean };
  c.armed = true;
  c.patch = <T extends KubeObject>(
    res: ResourceType,
    ns: string | undefined,
    name: string,
    body: unknown,
    opts: PatchOptions,
  ): Promise<T> => {
    if (c.armed && res.kind === kind && !opts.dryRun) return Promise.reject(fail());
    return inner.patch<T>(res, ns, name, body, opts);
  };
  return c;
}

const rejected = (): Error =>
  new KubeApiError('patch KubeadmConfig', 422, { message: 'admission webhook denied the request', reason: 'Invalid', code: 422 });
const unavailable = (): Error =>
  new KubeApiError('patch KubeadmConfig', 503, { message: 'etcd timeout', reason: 'ServiceUnavailable', code: 503 });

describe('all-or-nothing commit (C8, integration)', function () {
  const f = useFixture('commit', 6);

  const get = async (res: ResourceType, name: string): Promise<Spec> => (await f.env.client.get<Spec>(res, f.ns, name))!;
  /** An in-memory journal store (the controller keeps it in MachineUpdate.status.commit). */
  const store = (): {
    journal: CommitJournal | undefined;
    saves: (CommitJournal | undefined)[];
    committed: CommitJournal['objects'] | undefined;
    save: (j: CommitJournal | undefined, committed?: Readonly<CommitJournal['objects']>) => Promise<void>;
  } => {
    const s = {
      journal: undefined as CommitJournal | undefined,
      saves: [] as (CommitJournal | undefined)[],
      committed: undefined as CommitJournal['objects'] | undefined,
      save: async (j: CommitJournal | undefined, committed?: Readonly<CommitJournal['objects']>) => {
        s.journal = j && structuredClone(j);
        s.saves.push(s.journal);
        if (committed) s.committed = structuredClone([...committed]);
      },
    };
    return s;
  };
  const VERSION: Responsibility = { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' };
  const NTP: Responsibility = {
    selectResource: 'BootstrapConfig',
    path: '/spec/ntp',
    value: { enabled: true, servers: ['time.example.com'] },
  };

  it('writes nothing when a later object would not keep its value (dry-run answer checked)', async () => {
    const machine = f.machines[0]!;
    const [m0, d0] = [await get(Machines, machine), await get(DevMachines, machine)];
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION, { selectResource: 'InfraMachine', path: '/spec/image', value: 'img' }],
      save: s.save,
    });
    expect(r).to.deep.include({ ok: false, outcome: 'nothing-committed' });
    expect(r.ok ? '' : r.message).to.match(new RegExp(`DevMachine ${machine} would not keep /spec/image`));
    expect(s.saves).to.deep.equal([]);
    const [m1, d1] = [await get(Machines, machine), await get(DevMachines, machine)];
    expect(m1.metadata.resourceVersion).to.equal(m0.metadata.resourceVersion);
    expect(m1.spec).to.deep.equal(m0.spec);
    expect(d1.metadata.resourceVersion).to.equal(d0.metadata.resourceVersion);
  });

  it('a Machine deleted under the update is machine-gone (the update is aborted), not a failure; nothing is written', async () => {
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: 'no-such-machine',
      resps: [VERSION, NTP],
      save: s.save,
    });
    expect(r).to.deep.include({ ok: false, outcome: 'machine-gone' });
    expect(r.ok ? '' : r.message).to.match(/nothing committed: Machine .*no-such-machine not found/);
    expect(s.saves).to.deep.equal([]);
  });

  it('commits every object and clears its journal, keeping what it changed (for inplace revert)', async () => {
    const machine = f.machines[1]!;
    const before = (await get(Machines, machine)).spec['version'];
    const s = store();
    const r = await commitResponsibilities(f.env.client, { namespace: f.ns, machineName: machine, resps: [VERSION, NTP], save: s.save });
    expect(r.ok).to.equal(true);
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['Writing', undefined]);
    const version = s.committed?.find((o) => o.kind === 'Machine')?.entries?.find((e) => e.path === '/spec/version');
    expect(version).to.deep.equal({ path: '/spec/version', before: JSON.stringify(before), after: JSON.stringify('v1.30.1') });
    expect(s.committed?.find((o) => o.kind === 'KubeadmConfig')?.entries?.map((e) => e.path)).to.include('/spec/ntp');
    // Committing again finds every value in place: it changed nothing, and says so.
    const again = store();
    expect(
      (await commitResponsibilities(f.env.client, { namespace: f.ns, machineName: machine, resps: [VERSION, NTP], save: again.save })).ok,
    ).to.equal(true);
    expect(again.committed).to.deep.equal([]);
    expect((await get(Machines, machine)).spec['version']).to.equal('v1.30.1');
    expect((await get(KubeadmConfigs, machine)).spec['ntp']).to.deep.equal(NTP.value);
  });

  it('rolls back the written Machine when the next write is rejected after the dry-run accepted it', async () => {
    const machine = f.machines[2]!;
    const [m0, k0] = [await get(Machines, machine), await get(KubeadmConfigs, machine)];
    const s = store();
    const client = failingClient(f.env.client, KubeadmConfigs.kind, rejected);
    const r = await commitResponsibilities(client, { namespace: f.ns, machineName: machine, resps: [VERSION, NTP], save: s.save });
    expect(r).to.deep.include({ ok: false, outcome: 'rolled-back' });
    expect(r.ok ? '' : r.message).to.match(/rolled back.*admission webhook denied.*restored Machine/);
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['Writing', 'RollingBack', undefined]);
    const [m1, k1] = [await get(Machines, machine), await get(KubeadmConfigs, machine)];
    expect(m1.spec).to.deep.equal(m0.spec);
    expect(k1.metadata.resourceVersion).to.equal(k0.metadata.resourceVersion);
  });

  it('resumes an interrupted commit from its journal and finishes it, keeping the values from before the first run', async () => {
    const machine = f.machines[3]!;
    const before = (await get(Machines, machine)).spec['version'];
    const s = store();
    const client = failingClient(f.env.client, KubeadmConfigs.kind, unavailable);
    // The Machine is written, the KubeadmConfig write fails transiently: the journal stays (as after a crash).
    await commitResponsibilities(client, { namespace: f.ns, machineName: machine, resps: [VERSION, NTP], save: s.save }).then(
      () => expect.fail('a transient error must be retried'),
      (err: Error) => expect(err.name).to.equal('RetryableError'),
    );
    expect(s.journal?.state).to.equal('Writing');
    expect((await get(Machines, machine)).spec['version']).to.equal('v1.30.1');
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION, NTP],
      journal: s.journal,
      save: s.save,
    });
    expect(r.ok).to.equal(true);
    expect(s.journal).to.equal(undefined);
    expect((await get(KubeadmConfigs, machine)).spec['ntp']).to.deep.equal(NTP.value);
    // The Machine was written by the first run: its value before comes from that run's journal, not from now.
    const version = s.committed?.find((o) => o.kind === 'Machine')?.entries?.find((e) => e.path === '/spec/version');
    expect(version?.before).to.equal(JSON.stringify(before));
  });

  it('rolls back the half an interrupted run wrote when the rest can no longer be committed', async () => {
    const machine = f.machines[4]!;
    const m0 = await get(Machines, machine);
    const s = store();
    const client = failingClient(f.env.client, KubeadmConfigs.kind, unavailable);
    await commitResponsibilities(client, { namespace: f.ns, machineName: machine, resps: [VERSION, NTP], save: s.save }).catch(
      () => undefined,
    );
    expect((await get(Machines, machine)).spec['version']).to.equal('v1.30.1');
    // The next run finds the rest refused (here: the BootstrapConfig is gone) and restores the Machine.
    await f.env.client.delete(KubeadmConfigs, f.ns, machine);
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION, NTP],
      journal: s.journal,
      save: s.save,
    });
    expect(r).to.deep.include({ ok: false, outcome: 'rolled-back' });
    expect((await get(Machines, machine)).spec['version']).to.equal(m0.spec['version']);
  });

  it('finishes a rollback a restart interrupted and reports an object changed meanwhile as needing an operator', async () => {
    const machine = f.machines[5]!;
    const m0 = await get(Machines, machine);
    const journal: CommitJournal = {
      state: 'RollingBack',
      reason: 'test',
      objects: [
        {
          apiGroup: 'cluster.x-k8s.io',
          kind: 'Machine',
          name: machine,
          entries: [{ path: '/spec/version', before: JSON.stringify(m0.spec['version']), after: '"v1.30.1"' }],
        },
        {
          apiGroup: 'infrastructure.cluster.x-k8s.io',
          kind: 'DevMachine',
          name: machine,
          entries: [{ path: '/spec/backend/docker/customImage', after: '"ours"' }],
        },
      ],
    };
    await f.env.client.patch(Machines, f.ns, machine, { spec: { version: 'v1.30.1' } }, { type: 'merge' });
    await f.env.client.patch(
      DevMachines,
      f.ns,
      machine,
      { spec: { backend: { docker: { customImage: 'someone-elses' } } } },
      { type: 'merge' },
    );
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION],
      journal,
      save: s.save,
    });
    expect(r).to.deep.include({ ok: false, outcome: 'restore-failed' });
    expect(r.ok ? '' : r.message).to.match(
      /operator action needed: DevMachine .* \/spec\/backend\/docker\/customImage \(changed by someone else/,
    );
    expect((await get(Machines, machine)).spec['version']).to.equal(m0.spec['version']);
    expect(((await get(DevMachines, machine)).spec['backend'] as { docker: { customImage: string } }).docker.customImage).to.equal(
      'someone-elses',
    );
    expect(s.journal).to.equal(undefined);
  });
});
