import { expect } from 'chai';
import type { KubeObject, TargetKind, TargetStatus } from '../api/index.js';
import { Annotations } from '../api/index.js';
import type { AlignInput, OwnerField, OwnerStepInput } from './owners.js';
import {
  ALREADY_CARRIES,
  CLONED_BY_PLAN,
  CLONED_FROM_GROUPKIND,
  CLONED_FROM_NAME,
  CLONED_FROM_TEMPLATE,
  MAX_CLONE_NAME,
  PAUSED_BY_PLAN,
  carrierName,
  cloneName,
  originalTemplateName,
  ownerCarries,
  ownerFieldFor,
  ownerProblems,
  ownerStep,
  ownerValues,
  ownersCondition,
  planAlignment,
  previewOwnerChanges,
  withClonedFrom,
  withPause,
  withoutPause,
} from './owners.js';
import { previewPlan } from './preview.js';
import { getPointer } from '../runtime/pure/jsonpointer.js';
import { cluster, kcp, machines, md, plan, snapshot, target, versionUpdater } from '../plan-controller/testkit.js';

describe('plan-controller owners: responsibility -> owner field', () => {
  const cases: { kind: TargetKind; sel: string; path: string; want: OwnerField }[] = [
    { kind: 'ControlPlane', sel: 'Machine', path: '/spec/version', want: { slot: 'owner', path: '/spec/version' } },
    { kind: 'MachineDeployment', sel: 'Machine', path: '/spec/version', want: { slot: 'owner', path: '/spec/template/spec/version' } },
    {
      kind: 'ControlPlane',
      sel: 'Machine',
      path: '/spec/deletion/nodeDrainTimeoutSeconds',
      want: { slot: 'owner', path: '/spec/machineTemplate/spec/deletion/nodeDrainTimeoutSeconds' },
    },
    {
      kind: 'MachineDeployment',
      sel: 'Machine',
      path: '/spec/minReadySeconds',
      want: { slot: 'owner', path: '/spec/template/spec/minReadySeconds' },
    },
    {
      kind: 'ControlPlane',
      sel: 'Machine',
      path: '/metadata/labels/tier',
      want: { slot: 'owner', path: '/spec/machineTemplate/metadata/labels/tier' },
    },
    {
      kind: 'MachineDeployment',
      sel: 'Machine',
      path: '/metadata/annotations/a~1b',
      want: { slot: 'owner', path: '/spec/template/metadata/annotations/a~1b' },
    },
    { kind: 'ControlPlane', sel: 'BootstrapConfig', path: '/spec/ntp', want: { slot: 'owner', path: '/spec/kubeadmConfigSpec/ntp' } },
    {
      kind: 'MachineDeployment',
      sel: 'BootstrapConfig',
      path: '/spec/ntp/servers',
      want: { slot: 'bootstrapTemplate', path: '/spec/template/spec/ntp/servers' },
    },
    { kind: 'ControlPlane', sel: 'InfraMachine', path: '/spec/image', want: { slot: 'infraTemplate', path: '/spec/template/spec/image' } },
    {
      kind: 'MachineDeployment',
      sel: 'InfraMachine',
      path: '/spec/backend/docker/customImage',
      want: { slot: 'infraTemplate', path: '/spec/template/spec/backend/docker/customImage' },
    },
    { kind: 'MachineDeployment', sel: 'InfraMachine', path: '/metadata/labels/x', want: { slot: 'untracked' } },
    { kind: 'ControlPlane', sel: 'BootstrapConfig', path: '/metadata/annotations/x', want: { slot: 'untracked' } },
  ];
  for (const c of cases) {
    it(`${c.kind} ${c.sel} ${c.path} -> ${c.want.slot} ${'path' in c.want ? c.want.path : ''}`, () => {
      expect(ownerFieldFor(c.kind, c.sel, c.path)).to.deep.equal(c.want);
    });
  }
  const none: { kind: TargetKind; sel: string; path: string; why: RegExp }[] = [
    {
      kind: 'ControlPlane',
      sel: 'Machine',
      path: '/spec/failureDomain',
      why: /KubeadmControlPlane has no field for Machine \/spec\/failureDomain/,
    },
    { kind: 'ControlPlane', sel: 'Machine', path: '/spec/minReadySeconds', why: /no field/ },
    { kind: 'MachineDeployment', sel: 'Machine', path: '/spec/providerID', why: /identity/ },
    { kind: 'MachineDeployment', sel: 'Machine', path: '/spec/infrastructureRef/name', why: /identity/ },
    { kind: 'ControlPlane', sel: 'BootstrapConfig', path: '/spec/notAField', why: /kubeadmConfigSpec has no field notAField/ },
    { kind: 'ControlPlane', sel: 'InfraMachine', path: '/spec/providerID', why: /identity/ },
  ];
  for (const c of none) {
    it(`${c.kind} ${c.sel} ${c.path} has no owner field`, () => {
      const f = ownerFieldFor(c.kind, c.sel, c.path);
      expect(f.slot).to.equal('none');
      expect(f.slot === 'none' ? f.why : '').to.match(c.why);
    });
  }
  it('collects the carried values of a target, leaving untracked ones out', () => {
    const u = versionUpdater({
      responsibilities: [
        { selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' },
        { selectResource: 'InfraMachine', path: '/metadata/labels/x', value: 'y' },
      ],
    });
    expect(ownerValues('ControlPlane', [u])).to.deep.equal([{ slot: 'owner', path: '/spec/version', value: 'v1.30.1' }]);
  });
  it('maps a path by target kind and selected resource, whatever was mapped before (the mapping is remembered)', () => {
    const of = (kind: TargetKind, selectResource: 'Machine' | 'InfraMachine', path: string, value: unknown): unknown =>
      ownerValues(kind, [versionUpdater({ responsibilities: [{ selectResource, path, value }] })]);
    for (let round = 0; round < 2; round++) {
      expect(of('ControlPlane', 'Machine', '/spec/version', 'v1')).to.deep.equal([{ slot: 'owner', path: '/spec/version', value: 'v1' }]);
      expect(of('MachineDeployment', 'Machine', '/spec/version', 'v2')).to.deep.equal([
        { slot: 'owner', path: '/spec/template/spec/version', value: 'v2' },
      ]);
      expect(of('MachineDeployment', 'InfraMachine', '/spec/version', 'v3')).to.deep.equal([
        { slot: 'infraTemplate', path: '/spec/template/spec/version', value: 'v3' },
      ]);
      expect(of('MachineDeployment', 'Machine', '/spec/nope', 'v4')).to.deep.equal([]);
    }
  });
});

describe('plan-controller owners: validation', () => {
  it('accepts responsibilities every owner can carry', () => {
    expect(ownerProblems({ plan: plan(), cluster: cluster() })).to.deep.equal([]);
  });
  it('refuses a topology-managed cluster, saying the topology controller would rewrite the owners', () => {
    const c = cluster();
    (c['spec'] as Record<string, unknown>)['topology'] = { classRef: { name: 'cc' }, version: 'v1.30.0' };
    expect(ownerProblems({ plan: plan(), cluster: c }).join('\n')).to.match(/ClusterClass topology.*topology controller owns/);
  });
  it('does not apply the KubeadmControlPlane mapping to another control-plane kind', () => {
    const p = plan({
      cp: target('cluster1-cp', 1, [
        versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/failureDomain', value: 'fd-1' }] }),
      ]),
    });
    expect(ownerProblems({ plan: p, cluster: cluster(), controlPlane: { kind: { kind: 'K0smotronControlPlane' } } })).to.deep.equal([]);
  });
  it('refuses a responsibility no owner can carry: CAPI would roll the machine back', () => {
    const p = plan({
      cp: target('cluster1-cp', 1, [
        versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/failureDomain', value: 'fd-1' }] }),
      ]),
    });
    expect(ownerProblems({ plan: p, cluster: cluster() })).to.deep.equal([
      'controlPlane cluster1-cp updater version: Machine /spec/failureDomain has no owner field (KubeadmControlPlane has no field for Machine /spec/failureDomain): after the plan CAPI would roll this machine back',
    ]);
  });
});

describe('plan-controller owners: step per target', () => {
  const row = (updateStatus: TargetStatus['updateStatus'], o: Partial<TargetStatus> = {}): TargetStatus => ({
    kind: 'ControlPlane',
    name: 'cp',
    sequence: 1,
    updateStatus,
    machines: 3,
    updated: 0,
    updating: 0,
    failed: 0,
    aborted: 0,
    ...o,
  });
  const base: OwnerStepInput = { row: row('updating'), started: true, planTerminal: false, surge: false, ownerExists: true };
  const cases: { name: string; in: Partial<OwnerStepInput>; want: string }[] = [
    { name: 'a target not started touches nothing', in: { row: row('pending'), started: false }, want: 'none' },
    { name: 'a target starting or updating holds its owner paused', in: {}, want: 'hold' },
    { name: 'a pending target whose first machine starts now holds', in: { row: row('pending') }, want: 'hold' },
    { name: 'an aborting target holds', in: { row: row('aborting', { updating: 1 }) }, want: 'hold' },
    { name: 'a surging MachineDeployment is not paused while machines update (it must scale)', in: { surge: true }, want: 'none' },
    { name: 'an updated target aligns', in: { row: row('updated', { updated: 3 }) }, want: 'align' },
    { name: 'an aborted target where nothing committed releases', in: { row: row('aborted', { aborted: 1 }) }, want: 'release' },
    { name: 'a failed target where nothing committed releases', in: { row: row('failed', { failed: 1 }) }, want: 'release' },
    {
      name: 'an aborted target with mixed machines is kept paused',
      in: { row: row('aborted', { updated: 1, aborted: 1 }) },
      want: 'mixed',
    },
    {
      name: 'a terminal plan touches nothing (it settled its owners when it got there)',
      in: { planTerminal: true, row: row('updated') },
      want: 'none',
    },
  ];
  for (const c of cases) it(c.name, () => expect(ownerStep({ ...base, ...c.in }).op).to.equal(c.want));
});

describe('plan-controller owners: pause', () => {
  it('pauses an unpaused owner, recording the plan', () => {
    expect(withPause(kcp(), 'p')?.metadata.annotations).to.deep.equal({ [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p' });
  });
  it("never records an operator's pause as the plan's (so the plan never lifts it)", () => {
    const o = { ...kcp(), metadata: { ...kcp().metadata, annotations: { [Annotations.paused]: '' } } };
    expect(withPause(o, 'p')).to.equal(undefined);
    expect(withoutPause(o, 'p')).to.equal(undefined);
  });
  it('takes over a pause an earlier plan left (mixed machines), and lifts only its own', () => {
    const o = { ...kcp(), metadata: { ...kcp().metadata, annotations: { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'old' } } };
    const next = withPause(o, 'p')!;
    expect(next.metadata.annotations?.[PAUSED_BY_PLAN]).to.equal('p');
    expect(withoutPause(next, 'p')?.metadata.annotations).to.deep.equal({});
  });
});

describe('plan-controller owners: alignment', () => {
  const tpl = (kind: string, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): KubeObject => ({
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
    kind,
    metadata: {
      name,
      namespace: 'fleet-a',
      labels: { 'cluster.x-k8s.io/cluster-name': 'cluster1' },
      ...(annotations ? { annotations } : {}),
    },
    spec: { template: { spec } },
  });
  const withCluster = (): KubeObject => ({ ...cluster(), metadata: { ...cluster().metadata, uid: 'u-1' } });
  const cpOwner = (): KubeObject => {
    const o = kcp();
    (o['spec'] as Record<string, unknown>)['machineTemplate'] = {
      spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 'cluster1-cp' } },
    };
    o.metadata.annotations = { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p' };
    return o;
  };
  const cpInput = (over: Partial<AlignInput> = {}): AlignInput => ({
    planName: 'p',
    kind: 'ControlPlane',
    owner: cpOwner(),
    cluster: withCluster(),
    clones: [],
    machineSets: [],
    values: [
      { slot: 'owner', path: '/spec/version', value: 'v1.30.1' },
      { slot: 'owner', path: '/spec/kubeadmConfigSpec/ntp', value: { enabled: true } },
      { slot: 'infraTemplate', path: '/spec/template/spec/image', value: 'img-2' },
    ],
    infraTemplate: tpl('DevMachineTemplate', 'cluster1-cp', { image: 'img-1' }),
    ...over,
  });

  it('KCP: clones the infra template with the value (owned by the Cluster), points the KCP at it, sets version and kubeadmConfigSpec, lifts the pause', () => {
    const a = planAlignment(cpInput());
    expect(a.problems).to.deep.equal([]);
    expect(a.create).to.have.length(1);
    const clone = a.create[0]!;
    expect(clone.metadata.name).to.match(/^cluster1-cp-[0-9a-f]{10}$/);
    expect(clone.metadata.annotations).to.include({ [CLONED_BY_PLAN]: 'p', [CLONED_FROM_TEMPLATE]: 'cluster1-cp' });
    expect(clone.metadata.ownerReferences?.[0]).to.include({ kind: 'Cluster', name: 'cluster1', uid: 'u-1' });
    expect(clone['spec']).to.deep.equal({ template: { spec: { image: 'img-2' } } });
    const after = a.owner!.after;
    expect(getPointer(after, '/spec/version')).to.equal('v1.30.1');
    expect(getPointer(after, '/spec/kubeadmConfigSpec')).to.deep.equal({ ntp: { enabled: true } });
    expect(getPointer(after, '/spec/machineTemplate/spec/infrastructureRef/name')).to.equal(clone.metadata.name);
    expect(after.metadata.annotations).to.deep.equal({});
    expect(a.infraClonedFrom).to.deep.equal({ name: clone.metadata.name, groupKind: 'DevMachineTemplate.infrastructure.cluster.x-k8s.io' });
  });

  it('is level-based: an owner already pointing at its clone and carrying the values needs no write', () => {
    const first = planAlignment(cpInput());
    const again = planAlignment(cpInput({ owner: first.owner!.after, infraTemplate: first.create[0]! }));
    expect(again).to.deep.equal({
      create: [],
      machineSets: [],
      problems: [],
      infraClonedFrom: { name: first.create[0]!.metadata.name, groupKind: 'DevMachineTemplate.infrastructure.cluster.x-k8s.io' },
    });
    expect(ownerCarries(first.owner!.after, 'p', cpInput().values)).to.equal(true);
  });

  it('reuses a clone created by an earlier attempt, and refuses one that carries other values', () => {
    const clone = planAlignment(cpInput()).create[0]!;
    expect(planAlignment(cpInput({ clones: [clone] })).create).to.deep.equal([]);
    const other = structuredClone(clone);
    (other['spec'] as { template: { spec: Record<string, unknown> } }).template.spec['image'] = 'img-9';
    expect(planAlignment(cpInput({ clones: [other] })).problems.join()).to.match(/does not carry the plan's values/);
  });

  it('MachineDeployment: aligns the MD and the MachineSets with version and both cloned templates', () => {
    const owner = md();
    const spec = (owner['spec'] as { template: { spec: Record<string, unknown> } }).template.spec;
    spec['infrastructureRef'] = { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 'cluster1-md-0' };
    spec['bootstrap'] = { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'cluster1-md-0' } };
    const ms: KubeObject = {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'MachineSet',
      metadata: { name: 'ms-1', namespace: 'fleet-a', resourceVersion: '3' },
      spec: { template: structuredClone((owner['spec'] as { template: unknown }).template) },
    };
    const a = planAlignment({
      planName: 'p',
      kind: 'MachineDeployment',
      owner,
      cluster: withCluster(),
      clones: [],
      machineSets: [ms],
      values: [
        { slot: 'owner', path: '/spec/template/spec/version', value: 'v1.30.1' },
        { slot: 'infraTemplate', path: '/spec/template/spec/image', value: 'img-2' },
        { slot: 'bootstrapTemplate', path: '/spec/template/spec/ntp', value: { enabled: true } },
      ],
      infraTemplate: tpl('DevMachineTemplate', 'cluster1-md-0', { image: 'img-1' }),
      bootstrapTemplate: { ...tpl('KubeadmConfigTemplate', 'cluster1-md-0', {}), apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2' },
    });
    expect(a.problems).to.deep.equal([]);
    const [infraClone, bootClone] = a.create.map((c) => `${c.kind}/${c.metadata.name}`);
    expect(infraClone).to.match(/^DevMachineTemplate\/cluster1-md-0-[0-9a-f]{10}$/);
    expect(bootClone).to.match(/^KubeadmConfigTemplate\/cluster1-md-0-[0-9a-f]{10}$/);
    for (const o of [a.owner!.after, a.machineSets[0]!.after]) {
      expect(getPointer(o, '/spec/template/spec/version')).to.equal('v1.30.1');
      expect(getPointer(o, '/spec/template/spec/infrastructureRef/name')).to.equal(a.create[0]!.metadata.name);
      expect(getPointer(o, '/spec/template/spec/bootstrap/configRef/name')).to.equal(a.create[1]!.metadata.name);
    }
  });

  it('reports a missing template instead of writing anything', () => {
    const a = planAlignment(cpInput({ infraTemplate: undefined as unknown as KubeObject }));
    expect(a.problems.join()).to.match(/infrastructure template of ControlPlane cluster1-cp was not found/);
    expect(a.owner).to.equal(undefined);
  });

  it('moves an InfraMachine cloned-from to the clone, once', () => {
    const dm: KubeObject = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'DevMachine',
      metadata: { name: 'm', annotations: { [CLONED_FROM_NAME]: 'cluster1-cp' } },
    };
    const to = { name: 'p-cluster1-cp', groupKind: 'DevMachineTemplate.infrastructure.cluster.x-k8s.io' };
    const next = withClonedFrom(dm, to)!;
    expect(next.metadata.annotations).to.deep.equal({ [CLONED_FROM_NAME]: to.name, [CLONED_FROM_GROUPKIND]: to.groupKind });
    expect(withClonedFrom(next, to)).to.equal(undefined);
  });

  it('names clones from the original template and the spec: deterministic, key-order independent, bounded to 63', () => {
    expect(cloneName('tpl', { a: 1, b: 2 })).to.equal(cloneName('tpl', { b: 2, a: 1 }));
    expect(cloneName('tpl', { a: 1 })).to.not.equal(cloneName('tpl', { a: 2 }));
    expect(cloneName('tpl', { a: 1 })).to.match(/^tpl-[0-9a-f]{10}$/);
    const long = cloneName('t'.repeat(300), {});
    expect(long.length).to.be.at.most(MAX_CLONE_NAME);
    expect(cloneName('t'.repeat(300), {})).to.equal(long);
  });

  it('over 6 successive plans the clone name stays bounded and never chains; a plan that already ran writes nothing', () => {
    // Each plan aligns the owner as the controller would: the new clone becomes the template the next plan starts from.
    const templates: KubeObject[] = [tpl('DevMachineTemplate', 'cluster1-cp', { image: 'img-0' })];
    let owner = cpOwner();
    const names: string[] = [];
    for (let n = 1; n <= 6; n++) {
      const planName = `${'long-plan-name-'.repeat(4)}${n}`;
      owner.metadata.annotations = { [Annotations.paused]: '', [PAUSED_BY_PLAN]: planName };
      const ref = getPointer(owner, '/spec/machineTemplate/spec/infrastructureRef/name') as string;
      const current = templates.find((t) => t.metadata.name === ref)!;
      const byName = (x: string): KubeObject | undefined => templates.find((t) => t.metadata.name === x);
      const a = planAlignment(
        cpInput({
          planName,
          owner,
          infraTemplate: current,
          infraOriginal: originalTemplateName(current, byName),
          values: [{ slot: 'infraTemplate', path: '/spec/template/spec/image', value: `img-${n}` }],
        }),
      );
      expect(a.problems).to.deep.equal([]);
      expect(a.create).to.have.length(1);
      templates.push(a.create[0]!);
      names.push(a.create[0]!.metadata.name!);
      owner = a.owner!.after;
    }
    for (const name of names) {
      expect(name.length).to.be.at.most(MAX_CLONE_NAME);
      expect(name).to.match(/^cluster1-cp-[0-9a-f]{10}$/);
    }
    expect(new Set(names).size).to.equal(6);
    // The last plan again: the owner's template already carries its value, nothing to create or write.
    const last = templates[templates.length - 1]!;
    const again = planAlignment(
      cpInput({
        planName: 'again',
        owner,
        infraTemplate: last,
        values: [{ slot: 'infraTemplate', path: '/spec/template/spec/image', value: 'img-6' }],
      }),
    );
    expect(again.create).to.deep.equal([]);
    expect(again.owner).to.equal(undefined);
    expect(again.infraClonedFrom?.name).to.equal(last.metadata.name);
  });

  it('carrierName names the clone the alignment creates, or the template itself when it already carries the values', () => {
    const a = planAlignment(cpInput());
    const values = cpInput().values.filter((v) => v.slot === 'infraTemplate');
    expect(carrierName(cpInput().infraTemplate!, 'cluster1-cp', values)).to.equal(a.create[0]!.metadata.name);
    expect(carrierName(a.create[0]!, 'cluster1-cp', values)).to.equal(a.create[0]!.metadata.name);
  });

  it('follows a chain of old-style clones back to the original template', () => {
    const orig = tpl('DevMachineTemplate', 'cluster1-cp', {});
    const c1 = tpl('DevMachineTemplate', 'p1-cluster1-cp', {}, { [CLONED_BY_PLAN]: 'p1', [CLONED_FROM_TEMPLATE]: 'cluster1-cp' });
    const c2 = tpl('DevMachineTemplate', 'p2-p1-cluster1-cp', {}, { [CLONED_BY_PLAN]: 'p2', [CLONED_FROM_TEMPLATE]: 'p1-cluster1-cp' });
    const all = [orig, c1, c2];
    expect(originalTemplateName(c2, (n) => all.find((t) => t.metadata.name === n))).to.equal('cluster1-cp');
    expect(originalTemplateName(orig, () => undefined)).to.equal('cluster1-cp');
  });
});

describe('plan-controller owners: OwnersAligned condition', () => {
  it('is absent before any owner is touched', () => expect(ownersCondition([{ owner: 'x', op: 'none' }])).to.equal(undefined));
  it('is True while owners of running targets are held and finished ones carry the values', () => {
    expect(
      ownersCondition([
        { owner: 'KubeadmControlPlane cp', op: 'align' },
        { owner: 'MachineDeployment md', op: 'hold' },
      ]),
    ).to.deep.equal({
      type: 'OwnersAligned',
      status: 'True',
      reason: 'Aligned',
      message: "carry the plan's values: KubeadmControlPlane cp; paused while their machines update: MachineDeployment md",
    });
  });
  it('is False MixedMachines, saying what to do, when a stopped target left mixed machines', () => {
    const c = ownersCondition([{ owner: 'KubeadmControlPlane cp', op: 'mixed', updated: 1, machines: 3 }]);
    expect(c).to.include({ status: 'False', reason: 'MixedMachines' });
    expect(c?.message).to.match(/KubeadmControlPlane cp kept paused: 1 of 3 machines .* apply a plan with the same changes/);
  });
  it('is False AlignFailed when alignment met a problem', () => {
    expect(ownersCondition([{ owner: 'o', op: 'align', problems: ['boom'] }])).to.include({
      status: 'False',
      reason: 'AlignFailed',
      message: 'o: boom',
    });
  });
});

describe('plan-controller owners: preview', () => {
  const cpWithInfra = (): KubeObject => {
    const o = kcp();
    (o['spec'] as Record<string, unknown>)['machineTemplate'] = {
      spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DevMachineTemplate', name: 'cluster1-cp' } },
    };
    return o;
  };
  it('lists exactly which owner objects change: pause, spec fields, template clone, InfraMachines, MachineSets', () => {
    const image = versionUpdater({
      name: 'os',
      responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'img-2' }],
    });
    const out = previewOwnerChanges({
      planName: 'p',
      controlPlane: cpWithInfra(),
      machineDeployments: [md('cluster1-md-0', { maxUnavailable: 0 })],
      surging: new Set(['cluster1-md-0']),
      machines: [...machines('cluster1-cp', 2, { cp: 'cluster1-cp' }), ...machines('cluster1-md-0', 1, { md: 'cluster1-md-0' })],
      targets: [
        { kind: 'ControlPlane', name: 'cluster1-cp', updaters: [versionUpdater(), image] },
        { kind: 'MachineDeployment', name: 'cluster1-md-0', updaters: [versionUpdater()] },
      ],
    });
    expect(out.map((o) => `${o.object}: ${o.change}`)).to.deep.equal([
      'KubeadmControlPlane cluster1-cp: paused (cluster.x-k8s.io/paused) while its machines update, unpaused when they are done',
      'KubeadmControlPlane cluster1-cp: /spec/version = "v1.30.1"',
      'DevMachineTemplate cluster1-cp-<hash> (new): clone of cluster1-cp with /spec/template/spec/image = "img-2"',
      'KubeadmControlPlane cluster1-cp: /spec/machineTemplate/spec/infrastructureRef/name = cluster1-cp-<hash>',
      `2 InfraMachine(s): annotation ${CLONED_FROM_NAME} = cluster1-cp-<hash>`,
      'MachineDeployment cluster1-md-0: not paused while machines update (it surges); paused only while its spec is aligned',
      'MachineDeployment cluster1-md-0: /spec/template/spec/version = "v1.30.1"',
      'MachineSet cluster1-md-0-abc: spec.template aligned with the MachineDeployment (same values and template names)',
    ]);
  });
  it('names the clone it would create from the template, and says "already carries" for a plan that already ran', () => {
    const image = versionUpdater({
      name: 'os',
      responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'img-2' }],
    });
    const template: KubeObject = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'DevMachineTemplate',
      metadata: { name: 'cluster1-cp', namespace: 'fleet-a' },
      spec: { template: { spec: { image: 'img-1' } } },
    };
    const input = {
      planName: 'p',
      controlPlane: cpWithInfra(),
      machineDeployments: [],
      surging: new Set<string>(),
      machines: machines('cluster1-cp', 2, { cp: 'cluster1-cp' }),
      targets: [{ kind: 'ControlPlane' as const, name: 'cluster1-cp', updaters: [image] }],
      templates: [template],
    };
    const want = cloneName('cluster1-cp', { template: { spec: { image: 'img-2' } } });
    expect(previewOwnerChanges(input).map((o) => o.object)).to.include(`DevMachineTemplate ${want} (new)`);
    // After the plan ran: the KCP points at the clone, which carries the value; every machine is done.
    const ran = cpWithInfra();
    (getPointer(ran, '/spec/machineTemplate/spec/infrastructureRef') as { name: string }).name = want;
    const clone = { ...template, metadata: { name: want, namespace: 'fleet-a' }, spec: { template: { spec: { image: 'img-2' } } } };
    const after = previewOwnerChanges({ ...input, controlPlane: ran, templates: [template, clone], done: new Set(['cluster1-cp']) });
    expect(after.map((o) => `${o.object}: ${o.change}`)).to.deep.equal([`KubeadmControlPlane cluster1-cp: ${ALREADY_CARRIES}`]);
  });
  it('is part of previewPlan', () => {
    expect(previewPlan(plan(), snapshot()).owners?.map((o) => o.object)).to.include('KubeadmControlPlane cluster1-cp');
  });
});
