import { expect } from 'chai';
import type { InPlaceUpdatePlan } from '../api/index.js';
import type { SnapOpts } from './testkit.js';
import { cluster, kcp, md, plan, snapshot, target, versionUpdater } from './testkit.js';
import { validatePlan } from '../rules/validate.js';

const osRef = { apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1', kind: 'OSImageUpdateTaskTemplate', name: 'os-image-task' };
const withUpdaters = (...updaters: Parameters<typeof target>[2][]): InPlaceUpdatePlan =>
  plan({ cp: target('cluster1-cp', 1, updaters[0]) });

describe('plan-controller validatePlan', () => {
  it('accepts a plan whose cluster, control plane, MachineDeployments and templates exist', () => {
    const p = withUpdaters([
      versionUpdater({
        name: 'os',
        updaterUpdateTemplateRef: osRef,
        responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'img' }],
      }),
      versionUpdater({ sequence: 2 }),
    ]);
    expect(validatePlan(snapshot({ plan: p, templates: [{ ref: osRef, found: true, bytes: 100 }] }))).to.deep.equal([]);
  });

  const cases: { name: string; snap: SnapOpts; problem: RegExp }[] = [
    { name: 'a missing cluster', snap: { cluster: null }, problem: /Cluster fleet-a\/cluster1 not found/ },
    { name: 'a missing control plane', snap: { kcp: null }, problem: /KubeadmControlPlane fleet-a\/cluster1-cp not found/ },
    {
      name: "a control plane that is not the cluster's controlPlaneRef",
      snap: { cluster: cluster({ apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: 'other-cp' }) },
      problem: /not the control plane of Cluster cluster1 .*other-cp/,
    },
    {
      name: 'a control plane of another cluster',
      snap: {
        kcp: { ...kcp(), metadata: { name: 'cluster1-cp', namespace: 'fleet-a', labels: { 'cluster.x-k8s.io/cluster-name': 'cluster2' } } },
      },
      problem: /belongs to Cluster cluster2/,
    },
    { name: 'a missing MachineDeployment', snap: { mds: [] }, problem: /MachineDeployment fleet-a\/cluster1-md-0 not found/ },
    {
      name: 'a MachineDeployment of another cluster',
      snap: { mds: [md('cluster1-md-0', { clusterName: 'cluster2' })] },
      problem: /MachineDeployment cluster1-md-0 belongs to Cluster cluster2/,
    },
    {
      name: 'a MachineDeployment with the OnDelete strategy',
      snap: { mds: [md('cluster1-md-0', { strategy: 'OnDelete' })] },
      problem: /OnDelete/,
    },
    {
      name: "a MachineDeployment sequence not above the control plane's",
      snap: { plan: plan({ mds: [target('cluster1-md-0', 1)] }) },
      problem: /sequence 1, not higher than controlPlane sequence 1/,
    },
    {
      name: 'duplicate updater names in a target',
      snap: {
        plan: withUpdaters([
          versionUpdater(),
          versionUpdater({ sequence: 2, responsibilities: [{ selectResource: 'Machine', path: '/spec/failureDomain', value: 'a' }] }),
        ]),
      },
      problem: /updater name version is used more than once/,
    },
    {
      name: 'a template that does not exist',
      snap: { plan: withUpdaters([versionUpdater({ updaterUpdateTemplateRef: osRef })]), templates: [{ ref: osRef, found: false }] },
      problem: /template OSImageUpdateTaskTemplate fleet-a\/os-image-task not found/,
    },
    {
      name: 'a template kind that is not served',
      snap: {
        plan: withUpdaters([versionUpdater({ updaterUpdateTemplateRef: osRef })]),
        templates: [{ ref: osRef, found: false, error: 'kind not served' }],
      },
      problem: /kind not served/,
    },
    {
      name: 'a template kind not ending in Template',
      snap: { plan: withUpdaters([versionUpdater({ updaterUpdateTemplateRef: { ...osRef, kind: 'OSImageUpdateTask' } })]) },
      problem: /must end in Template/,
    },
    {
      name: 'a cross-namespace template reference',
      snap: { plan: withUpdaters([versionUpdater({ updaterUpdateTemplateRef: { ...osRef, name: 'other-ns/os-image-task' } })]) },
      problem: /cross-namespace references are not allowed/,
    },
    {
      name: 'a path that is not a JSON pointer',
      snap: {
        plan: withUpdaters([versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: 'spec.version', value: 'v1' }] })]),
      },
      problem: /is not a JSON pointer/,
    },
    {
      name: 'a path into status',
      snap: {
        plan: withUpdaters([versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/status/phase', value: 'x' }] })]),
      },
      problem: /not writable/,
    },
    {
      name: 'a selectResource outside Machine, InfraMachine, BootstrapConfig',
      snap: {
        plan: withUpdaters([versionUpdater({ responsibilities: [{ selectResource: 'Node' as 'Machine', path: '/spec/x', value: 1 }] })]),
      },
      problem: /selectResource Node is not one of Machine, InfraMachine, BootstrapConfig/,
    },
    {
      name: 'two updaters owning overlapping fields',
      snap: {
        plan: withUpdaters([
          versionUpdater({ name: 'a', responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: {} }] }),
          versionUpdater({ name: 'b', responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp/servers', value: [] }] }),
        ]),
      },
      problem: /overlaps \/spec\/ntp\/servers \(updater b\)/,
    },
    {
      name: 'an updater name that is not a DNS label (schema)',
      snap: { plan: withUpdaters([versionUpdater({ name: 'Bad_Name' })]) },
      problem: /name: must be a DNS label/,
    },
    {
      name: 'a plan without targets',
      snap: { plan: plan({ cp: null, mds: [] }) },
      problem: /needs a controlPlane or at least one machineDeployment/,
    },
  ];
  for (const c of cases) {
    it(`rejects ${c.name}, naming the problem`, () => {
      const problems = validatePlan(snapshot(c.snap));
      expect(problems.join('\n')).to.match(c.problem);
    });
  }

  it('lists every problem at once instead of stopping at the first', () => {
    const p = plan({ mds: [target('cluster1-md-0', 1), target('missing-md', 3)] });
    const problems = validatePlan(snapshot({ plan: p, kcp: null }));
    expect(problems).to.have.length.greaterThanOrEqual(3);
    expect(problems.join('\n'))
      .to.match(/KubeadmControlPlane .* not found/)
      .and.match(/missing-md not found/)
      .and.match(/sequence 1, not higher/);
  });

  it("resolves the control plane kind through the cluster's controlPlaneRef", () => {
    const snap = snapshot();
    snap.controlPlane = { kind: { apiGroup: 'controlplane.example.com', kind: 'AcmeControlPlane' } };
    expect(validatePlan(snap).join('\n')).to.match(/AcmeControlPlane fleet-a\/cluster1-cp not found/);
  });
});
