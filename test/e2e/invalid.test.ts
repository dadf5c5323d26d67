// End to end: invalid plans are rejected — by the API server (schema, CEL) or by the plan controller (Valid=False) —
// with the problem named, and touch nothing: no MachineUpdate, no Machine label, no MachineDeployment change. An
// invalid plan ends (Failed=True reason Invalid) so that `kubectl wait` and `inplace status -w` return, non-zero.
import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject } from '../../src/api/index.js';
import { KubeApiError } from '../../src/runtime/pure/errors.js';
import type { E2eEnv } from './env.js';
import { startE2eEnv } from './env.js';
import type { Platform } from './harness.js';
import { CP, conditionOf, planObject, refUpdater } from './harness.js';
import { cli } from '../support/cli.js';

type Plan = InPlaceUpdatePlan & KubeObject;
const osRef = { apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1', kind: 'OSImageUpdateTaskTemplate', name: 'os-image-task' };
const md = (name = 'cluster1-md-0', sequence = 2, updaters = [refUpdater()]) => ({ name, sequence, updaters });
const cp = (updaters = [refUpdater()], name = CP, sequence = 1) => ({ name, sequence, updaters });

/** A mistake, and how its rejection names it (API server message or the plan's Valid condition). */
interface Mistake {
  name: string;
  plan: (ns: string) => Plan;
  problem: RegExp;
}

const mistakes: Mistake[] = [
  {
    name: 'a cluster that does not exist',
    plan: (ns) => ({
      ...planObject(ns, 'x', { cp: cp() }),
      spec: { ...planObject(ns, 'x', { cp: cp() }).spec, clusterName: 'no-such-cluster' },
    }),
    problem: /Cluster .*no-such-cluster not found/,
  },
  {
    name: 'a control plane that does not exist',
    plan: (ns) => planObject(ns, 'x', { cp: cp([refUpdater()], 'no-such-cp') }),
    problem: /no-such-cp/,
  },
  {
    name: 'a MachineDeployment that does not exist',
    plan: (ns) => planObject(ns, 'x', { mds: [md('no-such-md')] }),
    problem: /MachineDeployment .*no-such-md not found/,
  },
  {
    name: 'a MachineDeployment with the OnDelete strategy',
    plan: (ns) => planObject(ns, 'x', { mds: [md('cluster1-md-ondelete')] }),
    problem: /OnDelete/,
  },
  {
    name: "a MachineDeployment sequence not above the control plane's",
    plan: (ns) => planObject(ns, 'x', { cp: cp(), mds: [md('cluster1-md-0', 1)] }),
    problem: /control-plane sequence must be lower than every MachineDeployment sequence/,
  },
  {
    name: 'two updaters with the same name in a target',
    plan: (ns) =>
      planObject(ns, 'x', {
        cp: cp([
          refUpdater(),
          refUpdater({ sequence: 2, responsibilities: [{ selectResource: 'Machine', path: '/spec/failureDomain', value: 'a' }] }),
        ]),
      }),
    problem: /[Dd]uplicate|used more than once/,
  },
  {
    name: 'a template that does not exist',
    plan: (ns) => planObject(ns, 'x', { cp: cp([refUpdater({ updaterUpdateTemplateRef: { ...osRef, name: 'no-such-template' } })]) }),
    problem: /OSImageUpdateTaskTemplate .*no-such-template not found/,
  },
  {
    name: 'a template kind that is not served',
    plan: (ns) =>
      planObject(ns, 'x', {
        cp: cp([refUpdater({ updaterUpdateTemplateRef: { apiVersion: 'example.com/v1', kind: 'AcmeTemplate', name: 't' } })]),
      }),
    problem: /AcmeTemplate is not served/,
  },
  {
    name: 'a template kind not ending in Template',
    plan: (ns) => planObject(ns, 'x', { cp: cp([refUpdater({ updaterUpdateTemplateRef: { ...osRef, kind: 'OSImageUpdateTask' } })]) }),
    problem: /Template/,
  },
  {
    name: 'a cross-namespace template reference',
    plan: (ns) =>
      planObject(ns, 'x', { cp: cp([refUpdater({ updaterUpdateTemplateRef: { ...osRef, name: 'other-namespace/os-image-task' } })]) }),
    problem: /cross-namespace/,
  },
  {
    name: 'a path that is not a JSON pointer',
    plan: (ns) =>
      planObject(ns, 'x', {
        cp: cp([refUpdater({ responsibilities: [{ selectResource: 'Machine', path: 'spec.version', value: 'v1' }] })]),
      }),
    problem: /path/,
  },
  {
    name: 'a path into status',
    plan: (ns) =>
      planObject(ns, 'x', {
        cp: cp([refUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/status/phase', value: 'Running' }] })]),
      }),
    problem: /\/status\/phase is not writable/,
  },
  {
    name: 'a selectResource that is not allowed',
    plan: (ns) =>
      planObject(ns, 'x', {
        cp: cp([refUpdater({ responsibilities: [{ selectResource: 'Node' as 'Machine', path: '/spec/x', value: 1 }] })]),
      }),
    problem: /selectResource|Unsupported value: "Node"/,
  },
  {
    name: 'two updaters owning overlapping fields',
    plan: (ns) =>
      planObject(ns, 'x', {
        cp: cp([
          refUpdater({ name: 'a', responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true } }] }),
          refUpdater({
            name: 'b',
            sequence: 2,
            responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp/servers', value: ['a'] }],
          }),
        ]),
      }),
    problem: /overlaps \/spec\/ntp\/servers/,
  },
  {
    name: 'an updater name that is not a DNS label',
    plan: (ns) => planObject(ns, 'x', { cp: cp([refUpdater({ name: 'Not_A_Label' })]) }),
    problem: /name/,
  },
];

async function nothingTouched(p: Platform, mdReplicas: Map<string, unknown>): Promise<void> {
  expect(await p.machineUpdates(), 'no MachineUpdate').to.deep.equal([]);
  expect(await p.labelledMachines(), 'no Machine label').to.deep.equal([]);
  expect(await p.tasks(), 'no task').to.deep.equal([]);
  for (const [name, replicas] of mdReplicas) {
    const md = await p.md(name);
    expect((md?.['spec'] as { replicas?: unknown }).replicas, `${name} replicas`).to.equal(replicas);
    expect(
      Object.keys(md?.metadata.annotations ?? {}).filter((k) => k.startsWith('inplace.')),
      `${name} annotations`,
    ).to.deep.equal([]);
  }
}

describe('e2e: invalid plans', function () {
  this.timeout(120_000);
  let env: E2eEnv;
  let p: Platform;
  const replicas = new Map<string, unknown>();
  before(async () => {
    env = await startE2eEnv();
    p = await env.platform();
    await p.provision({
      cpReplicas: 1,
      mds: [
        { name: 'cluster1-md-0', replicas: 1, maxUnavailable: 0 },
        { name: 'cluster1-md-ondelete', replicas: 1, strategy: 'OnDelete' },
      ],
    });
    await p.startPlatform();
    for (const name of ['cluster1-md-0', 'cluster1-md-ondelete'])
      replicas.set(name, ((await p.md(name))?.['spec'] as { replicas?: unknown }).replicas);
  });
  after(async () => env?.stop());

  it(`covers at least 10 kinds of mistake (${mistakes.length})`, () => {
    expect(mistakes.length).to.be.at.least(10);
  });

  mistakes.forEach((m, i) => {
    it(`rejects ${m.name}, names the problem and touches nothing`, async () => {
      const plan = m.plan(p.ns);
      plan.metadata.name = `invalid-${i}`;
      let rejectedBy: string;
      try {
        await p.apply(plan);
        const seen = await p.waitPlan(
          plan.metadata.name,
          (x) => conditionOf(x, 'Valid')?.status === 'False',
          `Valid=False on ${plan.metadata.name}`,
        );
        rejectedBy = conditionOf(seen, 'Valid')!.message ?? '';
        expect(seen.status?.updateStatus).to.equal('pending');
        expect(conditionOf(seen, 'Ready')).to.include({ status: 'False', reason: 'Invalid' });
      } catch (err) {
        if (!(err instanceof KubeApiError)) throw err;
        expect(err.code, err.message).to.equal(422);
        rejectedBy = err.message;
      }
      expect(rejectedBy).to.match(m.problem);
      await nothingTouched(p, replicas);
    });
  });

  it('an invalid plan ends: Failed=True reason Invalid, and `inplace status -w` exits 1 listing the problems', async () => {
    const plan = planObject(p.ns, 'invalid-ends', {
      cp: cp([refUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/providerID', value: 'x' }] })]),
      mds: [md('no-such-md')],
    });
    await p.apply(plan);
    // -w returns by itself once the plan ended (the settle time and a recheck: well under the test's timeout).
    const r = await cli('status', 'invalid-ends', '-n', p.ns, '-w', '--kubeconfig', env.kubeconfigPath);
    expect(r.code, r.err).to.equal(1);
    expect(r.err).to.contain('ended invalid');
    expect(r.out).to.contain('The plan ended invalid and touched nothing. Problems:');
    expect(r.out)
      .to.match(/^ {2}- .*providerID/m)
      .and.to.match(/^ {2}- MachineDeployment .*no-such-md not found/m);
    const seen = (await p.plan('invalid-ends'))!;
    expect(conditionOf(seen, 'Failed')).to.include({ status: 'True', reason: 'Invalid', observedGeneration: seen.metadata.generation });
    expect(conditionOf(seen, 'Ready')).to.include({ status: 'False', reason: 'Invalid' });
    expect(seen.status?.updateStatus).to.equal('pending');
    await nothingTouched(p, replicas);
    // Listed as ended, not as waiting.
    const list = await cli('status', '-n', p.ns, '--kubeconfig', env.kubeconfigPath);
    expect(list.code, list.err).to.equal(0);
    expect(list.out).to.match(/^invalid-ends\s+cluster1\s+invalid\s+/m);
  });

  it('a plan with several mistakes lists every one of them', async () => {
    const plan = planObject(p.ns, 'invalid-many', {
      cp: cp([refUpdater()], 'no-such-cp'),
      mds: [md('no-such-md'), md('cluster1-md-ondelete')],
    });
    await p.apply(plan);
    const seen = await p.waitPlan('invalid-many', (x) => conditionOf(x, 'Valid')?.status === 'False', 'Valid=False');
    expect(conditionOf(seen, 'Valid')?.message)
      .to.match(/no-such-cp/)
      .and.match(/no-such-md/)
      .and.match(/OnDelete/);
    await nothingTouched(p, replicas);
  });
});
