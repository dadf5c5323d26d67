// A one-object commit without a journal write (contract C8, issue 25): the MachineUpdate's spec.previous (each path's
// value before the update, recorded by the plan controller) stands in for the journal. Each case builds the state a
// run (or a crash between two writes) leaves and runs the commit as a restarted controller would: the object at its
// previous values (no journal write), at its new values (finished, `committed` from spec.previous), neither (journaled,
// with the recorded `before`), and a multi-object commit (journaled as before). Real CAPI CRDs on the embedded API server.
import { expect } from 'chai';
import {
  DevMachines,
  KubeadmConfigs,
  Machines,
  type KubeObject,
  type PreviousValue,
  type ResourceType,
  type Responsibility,
  type WritePolicy,
} from '../../src/api/index.js';
import { commitResponsibilities } from '../../src/machine-task-controller/commit-apply.js';
import { DryRunMemo } from '../../src/machine-task-controller/commit.js';
import type { CommitJournal, JournalObject } from '../../src/machine-task-controller/journal.js';
import { KubeApiError, type KubeClient, type PatchOptions } from '../../src/runtime/index.js';
import { useFixture } from './support.js';

type Spec = KubeObject & { spec: Record<string, unknown> };

/** A client that counts real and dry-run patches of Machines and rejects the next `reject` real ones (422). */
function machineClient(inner: KubeClient): KubeClient & { real: number; dry: number; reject: number } {
  const c = Object.create(inner) as KubeClient & { real: number; dry: number; reject: number };
  c.real = 0;
  c.dry = 0;
  c.reject = 0;
  c.patch = <T extends KubeObject>(
    res: ResourceType,
    ns: string | undefined,
    name: string,
    body: unknown,
    opts: PatchOptions,
  ): Promise<T> => {
    if (res.kind === 'Machine') {
      if (opts.dryRun) c.dry++;
      else c.real++;
      if (!opts.dryRun && c.reject > 0 && c.reject--)
        return Promise.reject(
          new KubeApiError('patch Machine', 422, { message: 'admission webhook denied the request', reason: 'Invalid', code: 422 }),
        );
    }
    return inner.patch<T>(res, ns, name, body, opts);
  };
  return c;
}

/** An in-memory journal store (the controller keeps it in MachineUpdate.status.commit). */
function store(): {
  journal: CommitJournal | undefined;
  saves: (CommitJournal | undefined)[];
  committed: JournalObject[] | undefined;
  save: (j: CommitJournal | undefined, committed?: readonly JournalObject[]) => Promise<void>;
} {
  const s = {
    journal: undefined as CommitJournal | undefined,
    saves: [] as (CommitJournal | undefined)[],
    committed: undefined as JournalObject[] | undefined,
    save: async (j: CommitJournal | undefined, committed?: readonly JournalObject[]) => {
      s.journal = j && structuredClone(j);
      s.saves.push(s.journal);
      if (committed) s.committed = structuredClone([...committed]);
    },
  };
  return s;
}

const ANNOTATION = '/metadata/annotations/example.com~1tier';
const VERSION: Responsibility = { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' };
const TIER: Responsibility = { selectResource: 'Machine', path: ANNOTATION, value: 'gold' };
/** Annotations are written only when the write policy names the key. */
const POLICY: WritePolicy = { Machine: { allow: ['/spec/version', ANNOTATION] } };
const NTP: Responsibility = { selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true, servers: ['t.example.com'] } };
const prev = (r: Responsibility, value: unknown): PreviousValue => ({
  selectResource: r.selectResource,
  path: r.path,
  ...(value === undefined ? {} : { value: JSON.stringify(value) }),
});
const entry = (committed: JournalObject[] | undefined, kind: string, path: string) =>
  committed?.find((o) => o.kind === kind)?.entries?.find((e) => e.path === path);

describe('one-object commit without a journal write (spec.previous, integration)', function () {
  const f = useFixture('commit-prev', 8);

  const get = async (res: ResourceType, name: string): Promise<Spec> => (await f.env.client.get<Spec>(res, f.ns, name))!;

  it('object at its previous values: one patch, no journal saved, committed = previous → written', async () => {
    const machine = f.machines[0]!;
    const before = (await get(Machines, machine)).spec['version'];
    const client = machineClient(f.env.client);
    const s = store();
    const r = await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION],
      save: s.save,
      previous: [prev(VERSION, before)],
    });
    expect(r).to.deep.equal({ ok: true, written: [`Machine ${machine} /spec/version`] });
    // The only save is the final one (no journal): it carries what was committed.
    expect(s.saves).to.deep.equal([undefined]);
    expect(entry(s.committed, 'Machine', '/spec/version')).to.deep.equal({
      path: '/spec/version',
      before: JSON.stringify(before),
      after: '"v1.30.1"',
    });
    expect([client.dry, client.real]).to.deep.equal([1, 1]);
    expect((await get(Machines, machine)).spec['version']).to.equal('v1.30.1');
  });

  it('restart after the patch, before the status write (object at the new values, no journal): finishes from spec.previous, writes nothing', async () => {
    const machine = f.machines[1]!;
    const before = (await get(Machines, machine)).spec['version'];
    await f.env.client.patch(Machines, f.ns, machine, { spec: { version: 'v1.30.1' } }, { type: 'merge' });
    const rv = (await get(Machines, machine)).metadata.resourceVersion;
    const client = machineClient(f.env.client);
    const s = store();
    const r = await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION],
      save: s.save,
      previous: [prev(VERSION, before)],
    });
    expect(r).to.deep.equal({ ok: true, written: [] });
    expect(s.saves).to.deep.equal([undefined]);
    expect(s.committed).to.deep.equal([
      {
        apiGroup: 'cluster.x-k8s.io',
        kind: 'Machine',
        name: machine,
        entries: [{ path: '/spec/version', before: JSON.stringify(before), after: '"v1.30.1"' }],
      },
    ]);
    expect(client.real).to.equal(0);
    expect((await get(Machines, machine)).metadata.resourceVersion).to.equal(rv);
  });

  it('a value that changed between the MachineUpdate and the commit takes the journaled path (before = the value now)', async () => {
    const machine = f.machines[2]!;
    const recorded = (await get(Machines, machine)).spec['version'];
    await f.env.client.patch(Machines, f.ns, machine, { spec: { version: 'v1.30.0-rc.9' } }, { type: 'merge' });
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION],
      save: s.save,
      previous: [prev(VERSION, recorded)],
    });
    expect(r.ok).to.equal(true);
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['Writing', undefined]);
    expect(s.saves[0]?.objects?.[0]?.entries).to.deep.equal([{ path: '/spec/version', before: '"v1.30.0-rc.9"', after: '"v1.30.1"' }]);
    expect(entry(s.committed, 'Machine', '/spec/version')?.before).to.equal('"v1.30.0-rc.9"');
    expect((await get(Machines, machine)).spec['version']).to.equal('v1.30.1');
  });

  it('some paths at the new value, some not: journaled with the recorded before, and committed records it', async () => {
    const machine = f.machines[3]!;
    const before = (await get(Machines, machine)).spec['version'];
    // Someone (not this commit) already set the annotation; the version is still the previous one.
    await f.env.client.patch(Machines, f.ns, machine, { metadata: { annotations: { 'example.com/tier': 'gold' } } }, { type: 'merge' });
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION, TIER],
      save: s.save,
      policy: POLICY,
      previous: [prev(VERSION, before), prev(TIER, undefined)],
    });
    expect(r.ok, JSON.stringify(r)).to.equal(true);
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['Writing', undefined]);
    // The annotation's entry comes from spec.previous (it did not exist before the update).
    expect(s.saves[0]?.objects?.[0]?.entries).to.deep.include({ path: ANNOTATION, after: '"gold"' });
    expect(entry(s.committed, 'Machine', ANNOTATION)).to.deep.equal({ path: ANNOTATION, after: '"gold"' });
    expect(entry(s.committed, 'Machine', '/spec/version')?.before).to.equal(JSON.stringify(before));
  });

  it('some paths at the new value and the rest refused: the rollback restores the recorded previous values', async () => {
    const machine = f.machines[4]!;
    const m0 = await get(Machines, machine);
    await f.env.client.patch(Machines, f.ns, machine, { metadata: { annotations: { 'example.com/tier': 'gold' } } }, { type: 'merge' });
    const client = machineClient(f.env.client);
    client.reject = 1;
    const s = store();
    const r = await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION, TIER],
      save: s.save,
      policy: POLICY,
      previous: [prev(VERSION, m0.spec['version']), prev(TIER, undefined)],
    });
    expect(r).to.deep.include({ ok: false, outcome: 'rolled-back' });
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['Writing', 'RollingBack', undefined]);
    const m1 = await get(Machines, machine);
    expect(m1.spec['version']).to.equal(m0.spec['version']);
    expect(m1.metadata.annotations?.['example.com/tier']).to.equal(undefined);
  });

  it('an answer that does not keep a value (memo skipped the dry-run) is journaled RollingBack and rolled back; a crash before that journal is rolled back on restart', async () => {
    const BOGUS: Responsibility = { selectResource: 'Machine', path: '/spec/notInTheSchema', value: 'x' };
    const resps = [VERSION, BOGUS];
    const memoFor = (): { memo: DryRunMemo; plan: string } => {
      const memo = new DryRunMemo();
      // As if an earlier machine's dry-run had kept it (a schema changed since): the real answer is the only check.
      memo.remember(DryRunMemo.key('uid-x', 'cluster.x-k8s.io', 'Machine', resps));
      return { memo, plan: 'uid-x' };
    };
    const machine = f.machines[5]!;
    const before = (await get(Machines, machine)).spec['version'];
    const previous = [prev(VERSION, before), prev(BOGUS, undefined)];
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps,
      save: s.save,
      memoRef: memoFor(),
      previous,
    });
    expect(r).to.deep.include({ ok: false, outcome: 'rolled-back' });
    expect(r.ok ? '' : r.message).to.match(/would not keep \/spec\/notInTheSchema/);
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['RollingBack', undefined]);
    expect((await get(Machines, machine)).spec['version']).to.equal(before);

    // The crash case: the pruned answer landed, the RollingBack journal did not (version new, the other path absent).
    const other = f.machines[6]!;
    const otherBefore = (await get(Machines, other)).spec['version'];
    await f.env.client.patch(Machines, f.ns, other, { spec: { version: 'v1.30.1' } }, { type: 'merge' });
    const s2 = store();
    const r2 = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: other,
      resps,
      save: s2.save,
      previous: [prev(VERSION, otherBefore), prev(BOGUS, undefined)],
    });
    expect(r2).to.deep.include({ ok: false, outcome: 'rolled-back' });
    expect((await get(Machines, other)).spec['version']).to.equal(otherBefore);
  });

  it('a rejected patch on the fast path changes nothing and saves nothing', async () => {
    const machine = f.machines[7]!;
    const m0 = await get(Machines, machine);
    const client = machineClient(f.env.client);
    client.reject = 1;
    const s = store();
    const r = await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: machine,
      resps: [VERSION],
      save: s.save,
      previous: [prev(VERSION, m0.spec['version'])],
    });
    expect(r).to.deep.include({ ok: false, outcome: 'nothing-committed' });
    expect(s.saves).to.deep.equal([]);
    expect((await get(Machines, machine)).metadata.resourceVersion).to.equal(m0.metadata.resourceVersion);
  });

  it('an InfraMachine-only commit at its previous values takes the same path (no journal)', async () => {
    const machine = f.machines[1]!;
    const IMG: Responsibility = { selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: 'img-2' };
    const d0 = await get(DevMachines, machine);
    const before = (d0.spec['backend'] as { docker?: { customImage?: string } } | undefined)?.docker?.customImage;
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [IMG],
      save: s.save,
      previous: [prev(IMG, before)],
    });
    expect(r.ok, JSON.stringify(r)).to.equal(true);
    expect(s.saves).to.deep.equal([undefined]);
    expect(entry(s.committed, 'DevMachine', IMG.path)).to.deep.equal({
      path: IMG.path,
      ...(before === undefined ? {} : { before: JSON.stringify(before) }),
      after: '"img-2"',
    });
  });

  it('a multi-object commit is journaled as before, spec.previous or not', async () => {
    const machine = f.machines[0]!;
    const m0 = await get(Machines, machine);
    const k0 = await get(KubeadmConfigs, machine);
    const V2 = { ...VERSION, value: 'v1.30.2' };
    const s = store();
    const r = await commitResponsibilities(f.env.client, {
      namespace: f.ns,
      machineName: machine,
      resps: [V2, NTP],
      save: s.save,
      previous: [prev(V2, m0.spec['version']), prev(NTP, k0.spec['ntp'])],
    });
    expect(r.ok).to.equal(true);
    expect(s.saves.map((j) => j?.state)).to.deep.equal(['Writing', undefined]);
    expect(s.committed?.map((o) => o.kind).sort()).to.deep.equal(['KubeadmConfig', 'Machine']);
  });
});
