import { expect } from 'chai';
import { Annotations, Labels } from '../../src/api/index.js';
import {
  DELETE_MACHINE_ANNOTATION,
  countReplicas,
  decideProvisioning,
  decideScale,
  maxUnhealthy,
  mhcCounts,
  mirroredNodeInfo,
  newMachineName,
  ownerOf,
  remediationVerdict,
} from './decisions.js';
import { nodeInfoFor } from './builders.js';
import type { Machine, MachineHealthCheck } from '../../src/api/capi/index.js';

const m = (
  name: string,
  opts: {
    created?: string;
    ready?: boolean;
    available?: boolean;
    deleting?: boolean;
    del?: boolean;
    version?: string;
    phase?: string;
    node?: string;
  } = {},
): Machine => ({
  metadata: {
    name,
    creationTimestamp: opts.created ?? '2026-01-01T00:00:00Z',
    ...(opts.deleting ? { deletionTimestamp: '2026-01-01T01:00:00Z' } : {}),
    ...(opts.del ? { annotations: { [DELETE_MACHINE_ANNOTATION]: '' } } : {}),
  },
  spec: { clusterName: 'c', version: opts.version ?? 'v1.29.5', bootstrap: {}, infrastructureRef: { apiGroup: 'g', kind: 'K', name } },
  status: {
    ...(opts.phase ? { phase: opts.phase } : {}),
    ...(opts.node ? { nodeRef: { name: opts.node } } : {}),
    conditions: [
      { type: 'Ready', status: opts.ready === false ? 'False' : 'True', reason: 'R', message: '', lastTransitionTime: 'x' },
      { type: 'Available', status: opts.available === false ? 'False' : 'True', reason: 'R', message: '', lastTransitionTime: 'x' },
    ],
  },
});

describe('capi-sim decisions', () => {
  describe('decideScale', () => {
    const cases: Array<{
      name: string;
      desired: number;
      machines: Machine[];
      order?: 'Newest' | 'Oldest' | 'Random';
      want: { create: number; delete: string[] };
    }> = [
      { name: 'creates the shortage', desired: 3, machines: [m('a')], want: { create: 2, delete: [] } },
      { name: 'does nothing at the desired count', desired: 2, machines: [m('a'), m('b')], want: { create: 0, delete: [] } },
      {
        name: 'does not count machines being deleted',
        desired: 2,
        machines: [m('a'), m('b', { deleting: true })],
        want: { create: 1, delete: [] },
      },
      {
        name: 'deletes the newest first by default',
        desired: 1,
        machines: [
          m('a', { created: '2026-01-01T00:00:01Z' }),
          m('b', { created: '2026-01-01T00:00:03Z' }),
          m('c', { created: '2026-01-01T00:00:02Z' }),
        ],
        want: { create: 0, delete: ['b', 'c'] },
      },
      {
        name: 'deletes the oldest first when asked',
        desired: 2,
        order: 'Oldest',
        machines: [
          m('a', { created: '2026-01-01T00:00:01Z' }),
          m('b', { created: '2026-01-01T00:00:03Z' }),
          m('c', { created: '2026-01-01T00:00:02Z' }),
        ],
        want: { create: 0, delete: ['a'] },
      },
      {
        name: 'deletes machines marked delete-machine, then not-Ready ones, before any healthy one',
        desired: 1,
        machines: [m('new', { created: '2026-01-01T00:00:09Z' }), m('sick', { ready: false }), m('marked', { del: true })],
        want: { create: 0, delete: ['marked', 'sick'] },
      },
    ];
    for (const c of cases) it(c.name, () => expect(decideScale(c.desired, c.machines, c.order)).to.deep.equal(c.want));
  });

  describe('countReplicas', () => {
    it('counts live, ready, available and up-to-date machines', () => {
      const machines = [m('a'), m('b', { ready: false, available: false }), m('c', { version: 'v1.30.1' }), m('d', { deleting: true })];
      expect(countReplicas(machines, 'v1.29.5')).to.deep.equal({
        replicas: 3,
        readyReplicas: 2,
        availableReplicas: 2,
        upToDateReplicas: 2,
      });
    });
  });

  describe('decideProvisioning', () => {
    const cases = [
      {
        name: 'waits until the ready delay elapsed',
        machine: m('a', { phase: 'Provisioning' }),
        now: 1050,
        want: { kind: 'wait', afterMs: 150 },
      },
      {
        name: 'makes the machine ready once the delay elapsed',
        machine: m('a', { phase: 'Provisioning' }),
        now: 1200,
        want: { kind: 'makeReady' },
      },
      {
        name: 'leaves a running machine with a node alone',
        machine: m('a', { phase: 'Running', node: 'n' }),
        now: 1000,
        want: { kind: 'none' },
      },
      { name: 'leaves a deleting machine alone', machine: m('a', { deleting: true }), now: 5000, want: { kind: 'none' } },
    ];
    for (const c of cases) it(c.name, () => expect(decideProvisioning(c.machine, 1000, c.now, 200)).to.deep.equal(c.want));
  });

  describe('ownerOf', () => {
    const cases: Array<{ name: string; labels: Record<string, string>; want: unknown }> = [
      {
        name: 'a control-plane machine belongs to its control plane',
        labels: { [Labels.controlPlane]: '', [Labels.controlPlaneName]: 'cp' },
        want: { kind: 'KubeadmControlPlane', name: 'cp' },
      },
      {
        name: 'a worker belongs to its MachineSet and deployment',
        labels: { [Labels.deploymentName]: 'md', [Labels.setName]: 'md-x' },
        want: { kind: 'MachineSet', name: 'md-x', deployment: 'md' },
      },
      { name: 'an unlabelled machine has no owner', labels: {}, want: undefined },
    ];
    for (const c of cases) it(c.name, () => expect(ownerOf({ metadata: { labels: c.labels } })).to.deep.equal(c.want));
  });

  describe('mirroredNodeInfo', () => {
    const info = nodeInfoFor('n', 'v1.29.5', 'img-a');
    it("mirrors nothing when the Machine already shows the Node's info", () => expect(mirroredNodeInfo(info, info)).to.equal(undefined));
    it('follows a kubelet upgraded on the Node', () =>
      expect(mirroredNodeInfo({ ...info, kubeletVersion: 'v1.30.1' }, info)).to.include({ kubeletVersion: 'v1.30.1', osImage: 'img-a' }));
    it("completes a partial Node report from the Machine's last known info", () =>
      expect(mirroredNodeInfo({ osImage: 'img-b' }, info)).to.include({ kubeletVersion: 'v1.29.5', osImage: 'img-b' }));
    it('mirrors nothing the Machine schema would reject (required fields missing)', () =>
      expect(mirroredNodeInfo({ kubeletVersion: 'v1.30.1' }, undefined)).to.equal(undefined));
    it('needs a Node report', () => expect(mirroredNodeInfo(undefined, info)).to.equal(undefined));
  });

  describe('newMachineName', () => {
    it('skips names that are taken', () => {
      const suffixes = ['aaaaa', 'bbbbb'];
      expect(newMachineName('md', new Set(['md-aaaaa']), () => suffixes.shift() ?? 'zzzzz')).to.equal('md-bbbbb');
    });
  });

  describe('MHC remediation gate', () => {
    const target = (name: string, o: { remediate?: boolean; hcFalse?: boolean; cluster?: string; role?: string } = {}): Machine => ({
      metadata: {
        name,
        namespace: 'ns',
        labels: { [Labels.clusterName]: o.cluster ?? 'c1', role: o.role ?? 'worker' },
        ...(o.remediate ? { annotations: { [Annotations.remediateMachine]: '' } } : {}),
      },
      spec: { clusterName: o.cluster ?? 'c1', bootstrap: {}, infrastructureRef: { apiGroup: 'g', kind: 'K', name } },
      status: {
        conditions: o.hcFalse ? [{ type: 'HealthCheckSucceeded', status: 'False', reason: 'R', message: '', lastTransitionTime: 'x' }] : [],
      },
    });
    const mhc = (
      triggerIf?: { unhealthyLessThanOrEqualTo?: number | string; unhealthyInRange?: string },
      role = 'worker',
    ): MachineHealthCheck => ({
      metadata: { name: 'mhc', namespace: 'ns' },
      spec: { clusterName: 'c1', selector: { matchLabels: { role } }, ...(triggerIf ? { remediation: { triggerIf } } : {}) },
    });

    const scaled: Array<[number | string | undefined, number, number]> = [
      [undefined, 5, 5],
      [2, 5, 2],
      ['40%', 5, 2],
      ['50%', 3, 1],
      ['33%', 3, 0],
      ['x', 3, 0],
    ];
    for (const [v, expected, want] of scaled)
      it(`maxUnhealthy ${JSON.stringify(v)} of ${expected} is ${want}`, () => expect(maxUnhealthy(v, expected)).to.equal(want));

    it("counts expected, healthy and allowed remediations like CAPI's MHC status", () => {
      const ms = [
        target('a', { remediate: true }),
        target('b', { hcFalse: true }),
        target('c'),
        target('d'),
        target('other', { cluster: 'c2' }),
      ];
      expect(mhcCounts(mhc({ unhealthyLessThanOrEqualTo: 3 }), ms.slice(0, 4))).to.deep.equal({
        expectedMachines: 4,
        currentHealthy: 2,
        remediationsAllowed: 1,
        remediationAllowed: true,
      });
      expect(mhcCounts(mhc({ unhealthyLessThanOrEqualTo: 1 }), ms.slice(0, 4))).to.deep.equal({
        expectedMachines: 4,
        currentHealthy: 2,
        remediationsAllowed: 0,
        remediationAllowed: false,
      });
      expect(mhcCounts(mhc({ unhealthyInRange: '[3-5]' }), ms.slice(0, 4))).to.include({ remediationAllowed: false });
    });

    const cases: Array<{ name: string; mhcs: MachineHealthCheck[]; machines: Machine[]; want: boolean }> = [
      {
        name: 'remediates a marked machine its MHC targets within budget',
        mhcs: [mhc({ unhealthyLessThanOrEqualTo: 1 })],
        machines: [target('a', { remediate: true }), target('b')],
        want: true,
      },
      {
        name: 'does not remediate when no MHC targets the machine',
        mhcs: [mhc(undefined, 'control-plane')],
        machines: [target('a', { remediate: true })],
        want: false,
      },
      {
        name: 'does not remediate when the MHC has too many unhealthy machines',
        mhcs: [mhc({ unhealthyLessThanOrEqualTo: 1 })],
        machines: [target('a', { remediate: true }), target('b', { hcFalse: true })],
        want: false,
      },
      {
        name: 'remediates by default (100%)',
        mhcs: [mhc()],
        machines: [target('a', { remediate: true }), target('b', { remediate: true })],
        want: true,
      },
    ];
    for (const c of cases) it(c.name, () => expect(remediationVerdict(c.machines[0]!, c.mhcs, c.machines).remediate).to.equal(c.want));
  });
});
