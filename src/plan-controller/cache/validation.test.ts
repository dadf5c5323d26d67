import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import type { SnapOpts } from '../testkit.js';
import { cluster, kcp, machines, md, plan, snapshot, target, versionUpdater } from '../testkit.js';
import { upgradeProblems } from '../../rules/upgrade-rules.js';
import { validatePlan } from '../../rules/validate.js';
import type { PlanSnapshot } from '../scope.js';
import { PlanCache } from './plan-cache.js';
import { upgradeProblemsThrough, validationThrough } from './validation.js';

// Validation through the plan's cache answers as the plain rules do, and reuses an answer only while what it read is
// the same (plan-cache.test.ts checks whole decisions; these check validation's own keys).

const osRef = { apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1', kind: 'OSImageUpdateTaskTemplate', name: 'os-image-task' };
const withUpdaters = (...updaters: Parameters<typeof target>[2][]): InPlaceUpdatePlan =>
  plan({ cp: target('cluster1-cp', 1, updaters[0]) });
const v = (value: unknown): ReturnType<typeof versionUpdater> =>
  versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value }] });
const fleet = (cp: string, md: string): KubeObject[] => [
  ...machines('cluster1-cp', 3, { cp: 'cluster1-cp', version: cp }),
  ...machines('cluster1-md-0', 3, { md: 'cluster1-md-0', version: md }),
];

describe('plan cache: validationThrough', () => {
  it('reuses its answer while the spec and every object fact it reads are the same, and re-checks on any change', () => {
    const p = withUpdaters([versionUpdater({ name: 'os', updaterUpdateTemplateRef: osRef })]);
    p.metadata!.uid = 'uid-1';
    p.metadata!.generation = 1;
    p.spec.machineDeployments = [target('cluster1-md-0', 2)];
    const memo = new PlanCache();
    // Each step: the memo's answer equals a fresh validation's, and it was reused (hit) or derived again (miss).
    const step = (name: string, snap: PlanSnapshot, expectHit: boolean): string[] => {
      const before = { ...memo.stats };
      const fresh = validatePlan(snap);
      expect(validationThrough(snap, memo), name).to.deep.equal(fresh);
      expect(memo.stats.validationHits - before.validationHits, `${name}: reused`).to.equal(expectHit ? 1 : 0);
      return fresh;
    };
    const found = [{ ref: osRef, found: true, bytes: 100 }];
    const base = (o: SnapOpts = {}): PlanSnapshot => snapshot({ plan: p, templates: found, ...o });
    expect(step('first', base(), false)).to.deep.equal([]);
    // New objects with the same facts (a status write, another resourceVersion): reused.
    const mdStatus = { ...md(), status: { readyReplicas: 2 } };
    expect(step('same facts', base({ mds: [mdStatus], cluster: { ...cluster(), status: { phase: 'Provisioned' } } }), true)).to.deep.equal(
      [],
    );
    const changes: [string, PlanSnapshot, RegExp][] = [
      ['OnDelete strategy', base({ mds: [md('cluster1-md-0', { strategy: 'OnDelete' })] }), /OnDelete rollout strategy/],
      ['another cluster', base({ mds: [md('cluster1-md-0', { clusterName: 'cluster2' })] }), /belongs to Cluster cluster2/],
      [
        'topology',
        base({ cluster: { ...cluster(), spec: { ...(cluster()['spec'] as object), topology: { class: 'c' } } } }),
        /ClusterClass topology/,
      ],
      [
        'control plane of another cluster',
        base({ kcp: { ...kcp(), metadata: { ...kcp().metadata, labels: { 'cluster.x-k8s.io/cluster-name': 'cluster2' } } } }),
        /KubeadmControlPlane cluster1-cp belongs to Cluster cluster2/,
      ],
      ['control plane gone', base({ kcp: null }), /KubeadmControlPlane fleet-a\/cluster1-cp not found/],
      ['template gone', base({ templates: [{ ref: osRef, found: false }] }), /os-image-task not found/],
    ];
    for (const [name, snap, problem] of changes) {
      expect(step(name, snap, false).join('\n'), name).to.match(problem);
      expect(step(`${name} back`, base(), false)).to.deep.equal([]);
    }
    // The pre-start result, the write policy and a task CRD are compared by identity: a new result is a new answer.
    const prestart = { generation: 1, schemaProblems: ['controlPlane cluster1-cp: the API server rejects it'], uncovered: [] };
    expect(step('pre-start problems', { ...base(), prestart }, false).join('\n')).to.match(/rejects it/);
    expect(step('pre-start again', { ...base(), prestart }, true).join('\n')).to.match(/rejects it/);
    const policy = { Machine: { allow: ['/spec/other'] } };
    expect(step('write policy', { ...base(), writePolicy: policy } as PlanSnapshot, false).join('\n')).to.match(/is not writable/);
    // A new generation (the spec changed): validated again.
    const p2 = structuredClone(p);
    p2.metadata!.generation = 2;
    p2.spec.machineDeployments = [target('cluster1-md-0', 2), target('cluster1-md-0', 3)];
    expect(step('new generation', snapshot({ plan: p2, templates: found }), false).join('\n')).to.match(/listed more than once/);
    // No generation (a snapshot built by hand): never from the memo.
    const p3 = structuredClone(p);
    delete p3.metadata!.generation;
    step('no generation', snapshot({ plan: p3, templates: found }), false);
    step('no generation again', snapshot({ plan: p3, templates: found }), false);
  });
});

describe('plan cache: upgradeProblemsThrough', () => {
  it("compares the machines itself when the decision's delta is of other lists (a validation outside decidePlan)", () => {
    const p = plan({ cp: target('cluster1-cp', 1, [v('v1.31.0')]), mds: [target('cluster1-md-0', 2, [v('v1.31.0')])] });
    p.metadata!.uid = 'uid-1';
    const memo = new PlanCache();
    const before = fleet('v1.30.0', 'v1.30.0');
    expect(upgradeProblemsThrough({ plan: p, machines: before, controlPlane: kcp() }, memo)).to.deep.equal([]);
    // A worker now runs a newer version; the memo holds a delta of two other lists, which says nothing changed.
    const after = before.map((m) =>
      m.metadata.name === 'cluster1-md-0-1' ? { ...m, spec: { ...(m['spec'] as object), version: 'v1.32.0' } } : m,
    );
    memo.delta = { mus: [], machines: [], baseMus: [], baseMachines: [...before], nextMachines: [...after] };
    const problems = upgradeProblemsThrough({ plan: p, machines: after, controlPlane: kcp() }, memo);
    expect(problems).to.deep.equal(upgradeProblems({ plan: p, machines: after, controlPlane: kcp() }));
    expect(problems.join()).to.match(/no-downgrade/);
  });
});
