// The commit's dry-run memo (issue 25): a single-object commit patch that dry-ran clean for a plan on a kind is not
// dry-run again on the next machine (pruning and validation are the schema's), while a multi-object commit dry-runs
// every object on every machine (all or nothing across objects). A rejected real patch still changes nothing.
import { expect } from 'chai';
import { KubeadmConfigs, Machines, type KubeObject, type ResourceType, type Responsibility } from '../../src/api/index.js';
import { commitResponsibilities } from '../../src/machine-task-controller/commit-apply.js';
import { DryRunMemo } from '../../src/machine-task-controller/commit.js';
import type { CommitJournal } from '../../src/machine-task-controller/journal.js';
import { KubeApiError, type KubeClient, type PatchOptions } from '../../src/runtime/index.js';
import { useFixture } from './support.js';

type Spec = KubeObject & { spec: Record<string, unknown> };

/** A client that counts patches by kind (dry-run or real) and can reject real patches of one kind. */
function countingClient(inner: KubeClient): KubeClient & { dry: Map<string, number>; real: Map<string, number>; reject?: string } {
  const c = Object.create(inner) as KubeClient & { dry: Map<string, number>; real: Map<string, number>; reject?: string };
  c.dry = new Map();
  c.real = new Map();
  c.patch = <T extends KubeObject>(
    res: ResourceType,
    ns: string | undefined,
    name: string,
    body: unknown,
    opts: PatchOptions,
  ): Promise<T> => {
    const counts = opts.dryRun ? c.dry : c.real;
    counts.set(res.kind, (counts.get(res.kind) ?? 0) + 1);
    if (!opts.dryRun && c.reject === res.kind)
      return Promise.reject(
        new KubeApiError('patch', 422, { message: 'admission webhook denied the request', reason: 'Invalid', code: 422 }),
      );
    return inner.patch<T>(res, ns, name, body, opts);
  };
  return c;
}

const save = (saves: (CommitJournal | undefined)[]) => async (j: CommitJournal | undefined) => void saves.push(j && structuredClone(j));

describe('commit dry-run memo (issue 25, integration)', function () {
  const f = useFixture('commit-memo', 6);

  const get = async (res: ResourceType, name: string): Promise<Spec> => (await f.env.client.get<Spec>(res, f.ns, name))!;
  const VERSION: Responsibility = { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' };
  const NTP: Responsibility = {
    selectResource: 'BootstrapConfig',
    path: '/spec/ntp',
    value: { enabled: true, servers: ['t.example.com'] },
  };

  it('dry-runs a single-object patch once per plan and kind, and every object of a multi-object commit every time', async () => {
    const memo = new DryRunMemo();
    const client = countingClient(f.env.client);
    for (const m of [f.machines[0]!, f.machines[1]!]) {
      const r = await commitResponsibilities(client, {
        namespace: f.ns,
        machineName: m,
        resps: [VERSION],
        save: save([]),
        memoRef: {
          memo,
          plan: 'uid-1',
        },
      });
      expect(r.ok, m).to.equal(true);
      expect((await get(Machines, m)).spec['version']).to.equal('v1.30.1');
    }
    expect(client.dry.get('Machine'), 'dry-runs of the Machine patch').to.equal(1);
    expect(client.real.get('Machine'), 'real Machine patches').to.equal(2);
    // Another plan (another uid) dry-runs its own first commit.
    const other = { ...VERSION, value: 'v1.30.2' };
    await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: f.machines[0]!,
      resps: [other],
      save: save([]),
      memoRef: { memo, plan: 'uid-2' },
    });
    expect(client.dry.get('Machine')).to.equal(2);
    // Machine + BootstrapConfig: both dry-run on each machine, memo or not.
    for (const m of [f.machines[2]!, f.machines[3]!]) {
      const r = await commitResponsibilities(client, {
        namespace: f.ns,
        machineName: m,
        resps: [VERSION, NTP],
        save: save([]),
        memoRef: {
          memo,
          plan: 'uid-1',
        },
      });
      expect(r.ok, m).to.equal(true);
    }
    expect(client.dry.get('Machine')).to.equal(4);
    expect(client.dry.get('KubeadmConfig')).to.equal(2);
  });

  it('a rejected real patch of a single object whose dry-run was skipped commits nothing, and the next commit dry-runs again', async () => {
    const memo = new DryRunMemo();
    const client = countingClient(f.env.client);
    const ntp = (v: string): Responsibility => ({ ...NTP, value: { enabled: true, servers: [v] } });
    const ok = await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: f.machines[4]!,
      resps: [ntp('a.example.com')],
      save: save([]),
      memoRef: {
        memo,
        plan: 'uid-3',
      },
    });
    expect(ok.ok).to.equal(true);
    expect(client.dry.get('KubeadmConfig')).to.equal(1);
    const k0 = await get(KubeadmConfigs, f.machines[5]!);
    client.reject = 'KubeadmConfig';
    const saves: (CommitJournal | undefined)[] = [];
    const r = await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: f.machines[5]!,
      resps: [ntp('a.example.com')],
      save: save(saves),
      memoRef: {
        memo,
        plan: 'uid-3',
      },
    });
    expect(client.dry.get('KubeadmConfig'), 'the dry-run was skipped').to.equal(1);
    expect(r).to.deep.include({ ok: false, outcome: 'nothing-committed' });
    expect(r.ok ? '' : r.message).to.match(/nothing committed: .*admission webhook denied/);
    expect(saves.map((j) => j?.state)).to.deep.equal(['Writing', undefined]);
    const k1 = await get(KubeadmConfigs, f.machines[5]!);
    expect(k1.metadata.resourceVersion).to.equal(k0.metadata.resourceVersion);
    expect(k1.spec).to.deep.equal(k0.spec);
    // Forgotten: the next commit of that patch dry-runs again (and the dry-run answer is what fails it now).
    client.reject = undefined;
    await commitResponsibilities(client, {
      namespace: f.ns,
      machineName: f.machines[5]!,
      resps: [ntp('a.example.com')],
      save: save([]),
      memoRef: {
        memo,
        plan: 'uid-3',
      },
    });
    expect(client.dry.get('KubeadmConfig')).to.equal(2);
  });
});

describe('DryRunMemo', () => {
  it('forgets the least recently used patch beyond its size', () => {
    const memo = new DryRunMemo(2);
    const k = (v: string): string => DryRunMemo.key('p', 'cluster.x-k8s.io', 'Machine', [{ path: '/spec/version', value: v }]);
    memo.remember(k('a'));
    memo.remember(k('b'));
    expect(memo.has(k('a'))).to.equal(true);
    memo.remember(k('c'));
    expect([memo.has(k('a')), memo.has(k('b')), memo.has(k('c'))]).to.deep.equal([true, false, true]);
    expect(memo.size).to.equal(2);
  });
});
