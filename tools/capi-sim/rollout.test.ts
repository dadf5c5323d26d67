import { expect } from 'chai';
import { Annotations, Labels } from '../../src/api/index.js';
import type { KubeObject } from '../../src/api/index.js';
import {
  CLONED_FROM_GROUPKIND_ANNOTATION,
  CLONED_FROM_NAME_ANNOTATION,
  TOPOLOGY_DEPLOYMENT_NAME_LABEL,
  clonedFromAnnotations,
  decideKcpStep,
  decideMdRollout,
  decideTopology,
  findNewMachineSet,
  isPaused,
  kcpMachineUpToDate,
  kubeadmConfigMatches,
  machineFromSet,
  machineTemplateUpToDate,
  type ClusterView,
  type KcpMember,
  type MdSetView,
} from './rollout.js';
import type { KubeadmControlPlane, Machine, MachineDeployment, MachineSet, MachineTemplateSpec } from '../../src/api/capi/index.js';

const TPL = { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 'cp-v1' };
const kcp = (
  o: { version?: string; replicas?: number; maxSurge?: number; paused?: boolean; spec?: Record<string, unknown>; infra?: string } = {},
): KubeadmControlPlane => ({
  metadata: { name: 'cp', ...(o.paused ? { annotations: { [Annotations.paused]: '' } } : {}) },
  spec: {
    replicas: o.replicas ?? 3,
    version: o.version ?? 'v1.30.0',
    ...(o.maxSurge !== undefined
      ? { rollout: { strategy: { type: 'RollingUpdate' as const, rollingUpdate: { maxSurge: o.maxSurge } } } }
      : {}),
    kubeadmConfigSpec: o.spec ?? { format: 'cloud-config' },
    machineTemplate: { spec: { infrastructureRef: { ...TPL, name: o.infra ?? TPL.name } } },
  },
});
const machine = (version = 'v1.30.0'): Machine => ({
  metadata: { name: 'm' },
  spec: {
    clusterName: 'c',
    version,
    bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'm' } },
    infrastructureRef: { apiGroup: TPL.apiGroup, kind: 'DevMachine', name: 'm' },
  },
});
const infra = (annotations?: Record<string, string>): KubeObject => ({ metadata: { name: 'm', ...(annotations ? { annotations } : {}) } });

describe('capi-sim rollout (faithful CAPI rollout triggers)', () => {
  describe('isPaused (util/annotations IsPaused)', () => {
    it("is paused by the object's paused annotation or by Cluster.spec.paused, and not otherwise", () => {
      const obj = (paused: boolean): KubeObject => ({
        metadata: { name: 'x', ...(paused ? { annotations: { [Annotations.paused]: '' } } : {}) },
      });
      const cluster = (paused?: boolean): ClusterView => ({ metadata: { name: 'c' }, spec: paused === undefined ? {} : { paused } });
      expect(isPaused(obj(true), cluster())).to.equal(true);
      expect(isPaused(obj(false), cluster(true))).to.equal(true);
      expect(isPaused(obj(false), cluster(false))).to.equal(false);
      expect(isPaused(obj(false), undefined)).to.equal(false);
    });
  });

  describe('kubeadmConfigMatches (controlplane/kubeadm/pkg/filters.go matchesKubeadmConfig, PrepareKubeadmConfigsForDiff)', () => {
    const cases: Array<{ name: string; current: Record<string, unknown>; desired: Record<string, unknown>; want: boolean }> = [
      {
        name: 'equal specs match',
        current: { format: 'cloud-config', ntp: { enabled: true } },
        desired: { format: 'cloud-config', ntp: { enabled: true } },
        want: true,
      },
      {
        name: 'a field committed on the machine only does not match',
        current: { format: 'cloud-config', ntp: { enabled: true, servers: ['a'] } },
        desired: { format: 'cloud-config' },
        want: false,
      },
      { name: 'the default format equals an unset one', current: { format: 'cloud-config' }, desired: {}, want: true },
      { name: 'another format does not match', current: { format: 'ignition' }, desired: {}, want: false },
      {
        name: 'empty arrays and objects equal absent ones (dropOmittableFields)',
        current: { files: [], clusterConfiguration: { apiServer: {} } },
        desired: {},
        want: true,
      },
      {
        name: 'controlPlaneEndpoint and DNS are ignored',
        current: { clusterConfiguration: { controlPlaneEndpoint: { host: 'h', port: 6443 }, dns: { imageTag: 'x' } } },
        desired: {},
        want: true,
      },
      {
        name: 'join discovery and controlPlaneComponentHealthCheckSeconds are ignored',
        current: {
          joinConfiguration: { discovery: { bootstrapToken: { token: 't' } }, timeouts: { controlPlaneComponentHealthCheckSeconds: 5 } },
        },
        desired: {},
        want: true,
      },
      {
        name: 'an init configuration compares as the equivalent join configuration',
        current: { initConfiguration: { nodeRegistration: { name: 'n' } } },
        desired: { joinConfiguration: { nodeRegistration: { name: 'n' } } },
        want: true,
      },
      {
        name: 'a different nodeRegistration does not match',
        current: { joinConfiguration: { nodeRegistration: { name: 'a' } } },
        desired: { joinConfiguration: { nodeRegistration: { name: 'b' } } },
        want: false,
      },
      {
        name: 'key order does not matter',
        current: { ntp: { servers: ['a'], enabled: true } },
        desired: { ntp: { enabled: true, servers: ['a'] } },
        want: true,
      },
    ];
    for (const c of cases) it(c.name, () => expect(kubeadmConfigMatches(c.current, c.desired)).to.equal(c.want));
  });

  describe('kcpMachineUpToDate (controlplane/kubeadm/pkg/filters.go UpToDate / matchesMachineSpec)', () => {
    const cloned = clonedFromAnnotations(TPL);
    const cases: Array<{
      name: string;
      kcp: KubeadmControlPlane;
      machine: Machine;
      infra?: KubeObject;
      config?: Record<string, unknown>;
      want: boolean;
    }> = [
      {
        name: 'a machine matching version, KubeadmConfig and template is up to date',
        kcp: kcp(),
        machine: machine(),
        infra: infra(cloned),
        config: { format: 'cloud-config' },
        want: true,
      },
      {
        name: 'a machine at another version than KCP spec.version is out of date',
        kcp: kcp(),
        machine: machine('v1.30.1'),
        infra: infra(cloned),
        config: {},
        want: false,
      },
      {
        name: 'a KubeadmConfig differing from kubeadmConfigSpec is out of date',
        kcp: kcp(),
        machine: machine(),
        infra: infra(cloned),
        config: { ntp: { enabled: true } },
        want: false,
      },
      {
        name: 'an InfraMachine cloned from another template is out of date',
        kcp: kcp({ infra: 'cp-v2' }),
        machine: machine(),
        infra: infra(cloned),
        want: false,
      },
      {
        name: 'an InfraMachine cloned from another group kind is out of date',
        kcp: kcp(),
        machine: machine(),
        infra: infra({ ...cloned, [CLONED_FROM_GROUPKIND_ANNOTATION]: 'OtherTemplate.x.io' }),
        want: false,
      },
      {
        name: 'an InfraMachine without cloned-from annotations matches (adopted machines)',
        kcp: kcp({ infra: 'cp-v2' }),
        machine: machine(),
        infra: infra(),
        want: true,
      },
      { name: 'a missing InfraMachine or KubeadmConfig is never a mismatch', kcp: kcp(), machine: machine(), want: true },
    ];
    for (const c of cases) {
      it(c.name, () =>
        expect(
          kcpMachineUpToDate(c.kcp, {
            machine: c.machine,
            ...(c.infra ? { infraMachine: c.infra } : {}),
            ...(c.config ? { kubeadmConfigSpec: c.config } : {}),
          }).upToDate,
        ).to.equal(c.want),
      );
    }
    it('names every reason', () => {
      const r = kcpMachineUpToDate(kcp({ infra: 'cp-v2' }), {
        machine: machine('v1.30.1'),
        infraMachine: infra(cloned),
        kubeadmConfigSpec: { ntp: {}, files: [{ path: '/x' }] },
      });
      expect(r.reasons).to.deep.equal([
        'Version v1.30.1, v1.30.0 required',
        'KubeadmConfig is not up-to-date',
        'DevMachine is not up-to-date',
      ]);
    });
  });

  describe('decideKcpStep (reconcilers/kubeadmcontrolplane update.go rollingUpdate, scale.go preflight)', () => {
    const mem = (name: string, o: Partial<KcpMember> = {}): KcpMember => ({
      name,
      upToDate: true,
      ready: true,
      deleting: false,
      deleteMarked: false,
      updatingInPlace: false,
      createdAtMs: Number(name.replace(/\D/g, '')) || 0,
      ...o,
    });
    const cases: Array<{ name: string; kcp?: KubeadmControlPlane; cluster?: ClusterView; members: KcpMember[]; want: string }> = [
      { name: 'all up to date at replicas: nothing', members: [mem('m1'), mem('m2'), mem('m3')], want: 'none' },
      {
        name: 'an out-of-date machine: scale up one first (maxSurge 1)',
        members: [mem('m1', { upToDate: false }), mem('m2'), mem('m3')],
        want: 'create',
      },
      {
        name: 'at replicas + maxSurge: delete the oldest out-of-date machine',
        members: [mem('m1'), mem('m2', { upToDate: false }), mem('m3', { upToDate: false }), mem('m4')],
        want: 'delete m2',
      },
      {
        name: 'a delete-machine mark goes before age',
        members: [mem('m1', { upToDate: false }), mem('m2', { upToDate: false, deleteMarked: true }), mem('m3'), mem('m4')],
        want: 'delete m2',
      },
      {
        name: 'maxSurge 0: delete first, then scale up',
        kcp: kcp({ maxSurge: 0 }),
        members: [mem('m1', { upToDate: false }), mem('m2'), mem('m3')],
        want: 'delete m1',
      },
      {
        name: 'preflight: a machine not ready holds the rollout',
        members: [mem('m1', { upToDate: false }), mem('m2', { ready: false }), mem('m3')],
        want: 'wait',
      },
      {
        name: 'preflight: a machine being deleted holds everything',
        members: [mem('m1'), mem('m2', { deleting: true }), mem('m3')],
        want: 'wait',
      },
      {
        name: 'an in-place update in progress holds the rollout',
        members: [mem('m1', { upToDate: false, updatingInPlace: true }), mem('m2'), mem('m3')],
        want: 'wait',
      },
      {
        name: 'a paused KCP does nothing',
        kcp: kcp({ paused: true }),
        members: [mem('m1', { upToDate: false }), mem('m2'), mem('m3')],
        want: 'none',
      },
      {
        name: 'a paused Cluster stops the KCP',
        cluster: { metadata: { name: 'c' }, spec: { paused: true } },
        members: [mem('m1', { upToDate: false })],
        want: 'none',
      },
      { name: 'below replicas: create (replacement after remediation)', members: [mem('m1'), mem('m2')], want: 'create' },
      { name: 'above replicas: delete the oldest', members: [mem('m1'), mem('m2'), mem('m3'), mem('m4')], want: 'delete m1' },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const s = decideKcpStep(c.kcp ?? kcp(), c.cluster, c.members);
        expect(s.kind === 'delete' ? `delete ${s.machine}` : s.kind).to.equal(c.want);
      });
    }
  });

  const tpl = (
    version: string,
    o: { infra?: string; bootstrap?: string; labels?: Record<string, string>; fd?: string } = {},
  ): MachineTemplateSpec => ({
    ...(o.labels ? { metadata: { labels: o.labels } } : {}),
    spec: {
      clusterName: 'c',
      version,
      bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: o.bootstrap ?? 'md-b1' } },
      infrastructureRef: { apiGroup: TPL.apiGroup, kind: 'DevMachineTemplate', name: o.infra ?? 'md-i1' },
      ...(o.fd ? { failureDomain: o.fd } : {}),
    },
  });

  describe('machineTemplateUpToDate (machinedeployment/mdutil MachineTemplateUpToDate)', () => {
    const cases: Array<{ name: string; current: MachineTemplateSpec; want: boolean }> = [
      { name: 'same template is up to date', current: tpl('v1.30.0'), want: true },
      {
        name: 'labels, annotations, clusterName and providerID do not matter',
        current: { ...tpl('v1.30.0', { labels: { a: 'b' } }), spec: { ...tpl('v1.30.0').spec, clusterName: 'other', providerID: 'p' } },
        want: true,
      },
      { name: 'a version differs', current: tpl('v1.30.1'), want: false },
      { name: 'another infrastructure template', current: tpl('v1.30.0', { infra: 'md-i2' }), want: false },
      { name: 'another bootstrap template', current: tpl('v1.30.0', { bootstrap: 'md-b2' }), want: false },
      { name: 'another failure domain', current: tpl('v1.30.0', { fd: 'fd1' }), want: false },
    ];
    for (const c of cases) it(c.name, () => expect(machineTemplateUpToDate(c.current, tpl('v1.30.0')).upToDate).to.equal(c.want));
  });

  const md = (
    o: {
      replicas?: number;
      version?: string;
      maxSurge?: number | string;
      maxUnavailable?: number | string;
      onDelete?: boolean;
      paused?: boolean;
    } = {},
  ): MachineDeployment => ({
    metadata: { name: 'md', ...(o.paused ? { annotations: { [Annotations.paused]: '' } } : {}) },
    spec: {
      clusterName: 'c',
      replicas: o.replicas ?? 3,
      selector: {},
      rollout: {
        strategy: o.onDelete
          ? { type: 'OnDelete' }
          : { type: 'RollingUpdate', rollingUpdate: { maxSurge: o.maxSurge ?? 1, maxUnavailable: o.maxUnavailable ?? 0 } },
      },
      template: tpl(o.version ?? 'v1.30.0'),
    },
  });
  const ms = (name: string, version: string, replicas: number): MachineSet => ({
    metadata: { name },
    spec: { clusterName: 'c', replicas, selector: {}, template: tpl(version) },
  });
  const view = (set: MachineSet, machines: number, available = machines, createdAtMs = 0): MdSetView => ({
    set,
    machines,
    available,
    createdAtMs,
  });

  describe('findNewMachineSet (mdutil FindNewAndOldMachineSets)', () => {
    it('finds the set whose template matches, the one with most replicas first', () => {
      expect(findNewMachineSet(md(), [ms('old', 'v1.29.0', 3), ms('a', 'v1.30.0', 1), ms('b', 'v1.30.0', 2)])?.metadata.name).to.equal('b');
    });
    it('finds none when every template differs', () => {
      expect(findNewMachineSet(md({ version: 'v1.31.0' }), [ms('a', 'v1.30.0', 3)])).to.equal(undefined);
    });
  });

  describe('decideMdRollout (machinedeployment rolloutRolling / rolloutOnDelete)', () => {
    const cases: Array<{
      name: string;
      md: MachineDeployment;
      views: MdSetView[];
      want: { create?: { replicas: number }; scale: Record<string, number>; delete: string[] };
    }> = [
      { name: 'a matching set at replicas: nothing', md: md(), views: [view(ms('a', 'v1.30.0', 3), 3)], want: { scale: {}, delete: [] } },
      {
        name: 'scaling the deployment scales its set',
        md: md({ replicas: 5 }),
        views: [view(ms('a', 'v1.30.0', 3), 3)],
        want: { scale: { a: 5 }, delete: [] },
      },
      {
        name: 'no set matches the template: create one within maxSurge',
        md: md({ version: 'v1.30.1' }),
        views: [view(ms('a', 'v1.30.0', 3), 3)],
        want: { create: { replicas: 1 }, scale: {}, delete: [] },
      },
      {
        name: 'maxUnavailable 0: old set goes down only as new machines become available',
        md: md({ version: 'v1.30.1' }),
        views: [view(ms('a', 'v1.30.0', 3), 3, 3, 0), view(ms('b', 'v1.30.1', 1), 1, 1, 1)],
        want: { scale: { a: 2 }, delete: [] },
      },
      {
        name: 'a new machine not yet available holds the old set',
        md: md({ version: 'v1.30.1' }),
        views: [view(ms('a', 'v1.30.0', 3), 3, 3, 0), view(ms('b', 'v1.30.1', 1), 1, 0, 1)],
        want: { scale: {}, delete: [] },
      },
      {
        name: 'maxUnavailable 1, maxSurge 0: old set down by one, new set up by one',
        md: md({ version: 'v1.30.1', maxSurge: 0, maxUnavailable: 1 }),
        views: [view(ms('a', 'v1.30.0', 3), 3)],
        want: { create: { replicas: 0 }, scale: { a: 2 }, delete: [] },
      },
      {
        name: 'percent: maxSurge rounds up, maxUnavailable down',
        md: md({ version: 'v1.30.1', replicas: 3, maxSurge: '10%', maxUnavailable: '50%' }),
        views: [view(ms('a', 'v1.30.0', 3), 3)],
        want: { create: { replicas: 1 }, scale: { a: 2 }, delete: [] },
      },
      {
        name: 'unavailable old machines go first',
        md: md({ version: 'v1.30.1' }),
        views: [view(ms('a', 'v1.30.0', 3), 3, 2, 0), view(ms('b', 'v1.30.1', 1), 1, 1, 1)],
        want: { scale: { a: 2 }, delete: [] },
      },
      {
        name: 'rollout done: a drained old set is deleted',
        md: md({ version: 'v1.30.1' }),
        views: [view(ms('a', 'v1.30.0', 0), 0, 0, 0), view(ms('b', 'v1.30.1', 3), 3, 3, 1)],
        want: { scale: {}, delete: ['a'] },
      },
      {
        name: 'a set going back to an old template is reused, not recreated',
        md: md({ version: 'v1.30.0' }),
        views: [view(ms('a', 'v1.30.0', 0), 0, 0, 0), view(ms('b', 'v1.30.1', 3), 3, 3, 1)],
        want: { scale: { a: 1 }, delete: [] },
      },
      {
        name: 'an old set scaled to 0 whose machines are still there holds the new set at replicas + maxSurge (NewMSNewReplicas)',
        md: md({ version: 'v1.30.1', replicas: 3, maxSurge: 0, maxUnavailable: 3 }),
        views: [view(ms('a', 'v1.30.0', 0), 2, 2, 0), view(ms('b', 'v1.30.1', 1), 1, 1, 1)],
        want: { scale: {}, delete: [] },
      },
      {
        name: 'in place: a machine moved to the new set and not yet acknowledged counts there (status.replicas), no machine is created for it',
        md: md({ version: 'v1.30.1', replicas: 30, maxSurge: 0, maxUnavailable: 30 }),
        views: [view(ms('a', 'v1.30.0', 0), 0, 0, 0), view(ms('b', 'v1.30.1', 29), 30, 0, 1)],
        want: { scale: {}, delete: ['a'] },
      },
      {
        name: 'OnDelete: old sets keep their machines; the new set fills what was deleted',
        md: md({ version: 'v1.30.1', onDelete: true }),
        views: [view(ms('a', 'v1.30.0', 3), 2)],
        want: { create: { replicas: 1 }, scale: { a: 2 }, delete: [] },
      },
      {
        name: 'a paused deployment does nothing',
        md: md({ version: 'v1.30.1', paused: true }),
        views: [view(ms('a', 'v1.30.0', 3), 3)],
        want: { scale: {}, delete: [] },
      },
    ];
    for (const c of cases) it(c.name, () => expect(decideMdRollout(c.md, undefined, c.views)).to.deep.equal(c.want));
    it('non-disruptive in place (v1.15): no surge machine with maxUnavailable 0, paced by maxSurge + maxUnavailable', () => {
      const next = md({ version: 'v1.30.1' });
      // The new set exists with no machine yet: a disruptive rollout surges, a non-disruptive one moves one old machine.
      const start = [view(ms('a', 'v1.30.0', 3), 3, 3, 0), view(ms('b', 'v1.30.1', 0), 0, 0, 1)];
      expect(decideMdRollout(next, undefined, start)).to.deep.equal({ scale: { b: 1 }, delete: [] });
      expect(decideMdRollout(next, undefined, start, { nonDisruptive: true })).to.deep.equal({ scale: { a: 2 }, delete: [] });
      // One machine in update: the pace (1) is used, nothing more moves until it is done.
      const busy = [{ ...view(ms('a', 'v1.30.0', 2), 3, 2, 0), updating: 1 }, view(ms('b', 'v1.30.1', 0), 0, 0, 1)];
      expect(decideMdRollout(next, undefined, busy, { nonDisruptive: true })).to.deep.equal({ scale: {}, delete: [] });
      // Scaled down and its set has not moved the machine yet (a pass in between, seen on a real server under load):
      // the machine above the set's replicas is about to move, so it uses the pace too.
      const scaled = [view(ms('a', 'v1.30.0', 2), 3, 3, 0), view(ms('b', 'v1.30.1', 0), 0, 0, 1)];
      expect(decideMdRollout(next, undefined, scaled, { nonDisruptive: true })).to.deep.equal({ scale: {}, delete: [] });
    });

    it('a paused Cluster stops the deployment', () => {
      expect(
        decideMdRollout(md({ version: 'v1.30.1' }), { metadata: { name: 'c' }, spec: { paused: true } }, [view(ms('a', 'v1.30.0', 3), 3)]),
      ).to.deep.equal({ scale: {}, delete: [] });
    });
  });

  describe('machineFromSet (machineset computeDesiredMachine, external.CreateFromTemplate)', () => {
    it("takes the version and the templates to clone from the set's own template, with the set's labels", () => {
      const set = ms('md-abc', 'v1.30.1', 1);
      set.spec.template.metadata = { labels: { team: 'a' }, annotations: { note: 'x' } };
      const got = machineFromSet(set, 'md-abc', 'md');
      expect(got).to.deep.equal({
        version: 'v1.30.1',
        labels: { team: 'a', [Labels.clusterName]: 'c', [Labels.setName]: 'md-abc', [Labels.deploymentName]: 'md' },
        annotations: { note: 'x' },
        infraTemplate: set.spec.template.spec.infrastructureRef,
        bootstrapTemplate: set.spec.template.spec.bootstrap.configRef,
        failureDomain: undefined,
      });
    });
    it("annotates clones with the template's name and group kind", () => {
      expect(clonedFromAnnotations(TPL)).to.deep.equal({
        [CLONED_FROM_NAME_ANNOTATION]: 'cp-v1',
        [CLONED_FROM_GROUPKIND_ANNOTATION]: 'DevMachineTemplate.infrastructure.cluster.x-k8s.io',
      });
    });
  });

  describe('decideTopology (internal/controllers/topology/cluster desired state)', () => {
    const cluster = (version: string | undefined, paused = false): ClusterView => ({
      metadata: { name: 'c' },
      spec: { paused, ...(version ? { topology: { version } } : {}) },
    });
    const managed = (name: string, version: string): MachineDeployment => ({
      ...md({ version }),
      metadata: { name, labels: { [TOPOLOGY_DEPLOYMENT_NAME_LABEL]: name } },
    });
    it('writes the topology version to the KCP first, holding the workers', () => {
      expect(decideTopology(cluster('v1.30.1'), kcp(), [managed('md', 'v1.30.0')])).to.deep.equal({
        controlPlaneVersion: 'v1.30.1',
        machineDeploymentVersions: {},
      });
    });
    it('writes managed MachineDeployments once the control plane runs the version', () => {
      const cp = kcp({ version: 'v1.30.1' });
      cp.status = { version: 'v1.30.1' };
      expect(decideTopology(cluster('v1.30.1'), cp, [managed('md', 'v1.30.0'), md({ version: 'v1.30.0' })])).to.deep.equal({
        machineDeploymentVersions: { md: 'v1.30.1' },
      });
    });
    it('leaves a paused or topology-less cluster alone', () => {
      expect(decideTopology(cluster('v1.30.1', true), kcp(), [])).to.deep.equal({ machineDeploymentVersions: {} });
      expect(decideTopology(cluster(undefined), kcp(), [])).to.deep.equal({ machineDeploymentVersions: {} });
    });
  });
});
