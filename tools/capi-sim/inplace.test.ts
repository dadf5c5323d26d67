import { expect } from 'chai';
import type { Machine } from '../../src/api/capi/index.js';
import {
  ACKNOWLEDGED_MOVE_ANNOTATION,
  PENDING_ACKNOWLEDGE_MOVE_ANNOTATION,
  RECEIVE_MACHINES_FROM_ANNOTATION,
  acknowledgeMoves,
  decideMoves,
  inPlaceCandidates,
  judgeCanUpdateMachineSet,
  machineSpecForDiff,
  moveAnnotations,
  ApplyPatchError,
  PENDING_HOOKS_ANNOTATION,
  UPDATE_IN_PROGRESS_ANNOTATION,
  applyHookPatch,
  decideKcpInPlace,
  kcpSurgeCandidate,
  decideMachineInPlace,
  judgeCanUpdateMachine,
  pendingHooks,
  pendingHooksValue,
  updateMachineOutcome,
  updatingCondition,
  type KcpInPlaceInput,
  type MachineObjects,
} from './inplace.js';

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64');

describe('capi-sim in-place decisions (upstream InPlaceUpdates)', () => {
  describe('decideKcpInPlace', () => {
    const base: KcpInPlaceInput = { enabled: true, canUpdateHandlers: 1, eligible: true, upToDateReplicas: 0, desiredReplicas: 3 };
    const del = { kind: 'delete', machine: 'm1', why: 'rollout: out of date' } as const;
    const outdated = new Set(['m1']);
    const cases: [string, Parameters<typeof decideKcpInPlace>[0], Partial<KcpInPlaceInput>, string][] = [
      ['asks the extension before deleting an out-of-date machine', del, {}, 'askCanUpdate'],
      ['gate off: rollout as before', del, { enabled: false }, 'asIs'],
      ['no extension registered: rollout', del, { canUpdateHandlers: 0 }, 'asIs'],
      ['two CanUpdateMachine handlers: an error (upstream supports one)', del, { canUpdateHandlers: 2 }, 'error'],
      ['machine without its clones is not eligible', del, { eligible: false }, 'asIs'],
      ['enough up-to-date machines (surplus after a surge): scale down', del, { upToDateReplicas: 3 }, 'asIs'],
      ['create steps are left alone', { kind: 'create' }, {}, 'asIs'],
      ['waits (preflight) are left alone', { kind: 'wait', why: 'not ready' }, {}, 'asIs'],
    ];
    for (const [name, step, patch, want] of cases)
      it(name, () => expect(decideKcpInPlace(step, outdated, { ...base, ...patch }).kind).to.equal(want));
    it('a scale-down of an up-to-date machine is never offered in place', () =>
      expect(decideKcpInPlace({ kind: 'delete', machine: 'm2', why: 'scale down' }, outdated, base).kind).to.equal('asIs'));
  });

  describe('kcpSurgeCandidate (v1.15: offer the machine before surging)', () => {
    const member = (name: string, upToDate: boolean, createdAtMs: number) => ({
      name,
      upToDate,
      ready: true,
      deleting: false,
      deleteMarked: false,
      updatingInPlace: false,
      createdAtMs,
    });
    const members = [member('new', true, 3), member('old-b', false, 2), member('old-a', false, 1)];
    it("offers the out-of-date machine KCP would replace (the oldest) instead of the rollout's surge", () =>
      expect(kcpSurgeCandidate({ kind: 'create' }, members, 3, 1)).to.equal('old-a'));
    it('not for a real scale-up, another step, no out-of-date machine, or not exactly one handler', () => {
      expect(kcpSurgeCandidate({ kind: 'create' }, members, 4, 1)).to.equal(undefined);
      expect(kcpSurgeCandidate({ kind: 'delete', machine: 'old-a', why: '' }, members, 3, 1)).to.equal(undefined);
      expect(kcpSurgeCandidate({ kind: 'create' }, [member('a', true, 1)], 1, 1)).to.equal(undefined);
      expect(kcpSurgeCandidate({ kind: 'create' }, members, 3, 2)).to.equal(undefined);
    });
  });

  describe('applyHookPatch', () => {
    const doc = { spec: { version: 'v1', list: [1, 2], keep: true } };
    it('applies a JSONPatch (add / replace / remove, arrays)', () =>
      expect(
        applyHookPatch(doc, {
          patchType: 'JSONPatch',
          patch: b64([
            { op: 'replace', path: '/spec/version', value: 'v2' },
            { op: 'add', path: '/spec/list/-', value: 3 },
            { op: 'remove', path: '/spec/keep' },
            { op: 'add', path: '/spec/a~1b', value: 'x' },
          ]),
        }),
      ).to.deep.equal({ spec: { version: 'v2', list: [1, 2, 3], 'a/b': 'x' } }));
    it('applies a JSON merge patch (null removes)', () =>
      expect(applyHookPatch(doc, { patchType: 'JSONMergePatch', patch: b64({ spec: { version: 'v2', keep: null } }) })).to.deep.equal({
        spec: { version: 'v2', list: [1, 2] },
      }));
    it('an empty patch changes nothing and never touches the input', () => {
      expect(applyHookPatch(doc, undefined)).to.deep.equal(doc);
      expect(applyHookPatch(doc, {})).to.deep.equal(doc);
      expect(doc.spec.version).to.equal('v1');
    });
    it('rejects unknown types, bad payloads and missing paths', () => {
      expect(() => applyHookPatch(doc, { patchType: 'StrategicMergePatch', patch: b64({}) })).to.throw(ApplyPatchError);
      expect(() => applyHookPatch(doc, { patchType: 'JSONPatch', patch: 'not base64 json' })).to.throw(ApplyPatchError);
      expect(() => applyHookPatch(doc, { patchType: 'JSONPatch', patch: b64([{ op: 'replace', path: '/spec/nope', value: 1 }]) })).to.throw(
        ApplyPatchError,
      );
    });
  });

  describe('judgeCanUpdateMachine', () => {
    const obj = (kind: string, spec: unknown) => ({ apiVersion: 'x/v1', kind, metadata: { name: 'm1' }, spec });
    const current: MachineObjects = {
      machine: obj('Machine', { version: 'v1.29.5' }),
      infrastructureMachine: obj('DevMachine', { image: 'a' }),
      bootstrapConfig: obj('KubeadmConfig', { format: 'cloud-config' }),
    };
    const desired: MachineObjects = {
      machine: obj('Machine', { version: 'v1.30.1' }),
      infrastructureMachine: obj('DevMachine', { image: 'b' }),
      bootstrapConfig: obj('KubeadmConfig', { format: 'cloud-config' }),
    };
    const machinePatch = { patchType: 'JSONMergePatch', patch: b64({ spec: { version: 'v1.30.1' } }) };
    const infraPatch = { patchType: 'JSONPatch', patch: b64([{ op: 'replace', path: '/spec/image', value: 'b' }]) };
    it('every change covered: in place', () =>
      expect(judgeCanUpdateMachine(current, desired, { machinePatch, infrastructureMachinePatch: infraPatch })).to.deep.equal({
        covered: true,
        reasons: [],
      }));
    it('a change left uncovered: rollout, naming the object', () =>
      expect(judgeCanUpdateMachine(current, desired, { machinePatch })).to.deep.equal({
        covered: false,
        reasons: ['DevMachine cannot be updated in-place'],
      }));
    it('no patches at all: nothing covered', () => expect(judgeCanUpdateMachine(current, desired, {}).reasons).to.have.length(2));
    it('metadata differences never count, only specs', () =>
      expect(
        judgeCanUpdateMachine(
          { ...current, machine: { ...current.machine, metadata: { name: 'm1', labels: { a: 'b' } } } },
          { ...desired, infrastructureMachine: obj('DevMachine', { image: 'a' }), machine: obj('Machine', { version: 'v1.29.5' }) },
          {},
        ).covered,
      ).to.equal(true));
  });

  describe('the machine controller (UpdateMachine)', () => {
    const machine = (annotations: Record<string, string>, nodeRef = true): Machine => ({
      metadata: { name: 'm1', annotations },
      spec: { clusterName: 'c1', bootstrap: {}, infrastructureRef: { apiGroup: 'g', kind: 'DevMachine', name: 'm1' } },
      ...(nodeRef ? { status: { nodeRef: { name: 'n1' } } } : {}),
    });
    const triggered = { [UPDATE_IN_PROGRESS_ANNOTATION]: '', [PENDING_HOOKS_ANNOTATION]: 'UpdateMachine' };
    const annotatedInfra = { metadata: { name: 'm1', annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '' } } };
    const view = (m: Machine, infra: unknown = annotatedInfra) => ({
      machine: m,
      infraMachine: (infra ?? undefined) as never,
      bootstrapConfig: undefined,
      hasBootstrapRef: false,
    });
    const cases: [string, boolean, ReturnType<typeof view>, string][] = [
      ['gate off: nothing', false, view(machine(triggered)), 'none'],
      ['no annotation, no pending hook: nothing', true, view(machine({})), 'none'],
      ['triggered and ready: call UpdateMachine', true, view(machine(triggered)), 'callUpdateMachine'],
      ['not provisioned yet: wait', true, view(machine(triggered, false)), 'wait'],
      ['InfraMachine not yet annotated by the trigger: wait', true, view(machine(triggered), { metadata: { name: 'm1' } }), 'wait'],
      ['InfraMachine gone: failed', true, view(machine(triggered), null), 'failed'],
      [
        'pending hook without the annotation: orphan cleaned up',
        true,
        view(machine({ [PENDING_HOOKS_ANNOTATION]: 'UpdateMachine' })),
        'complete',
      ],
      [
        'annotation without the pending hook: nothing (not yet marked)',
        true,
        view(machine({ [UPDATE_IN_PROGRESS_ANNOTATION]: '' })),
        'none',
      ],
    ];
    for (const [name, enabled, v, want] of cases) it(name, () => expect(decideMachineInPlace(enabled, v).kind).to.equal(want));

    it('reads an UpdateMachine answer as upstream: retryAfterSeconds > 0 in progress, 0 done, Failure failed', () => {
      expect(updateMachineOutcome({ status: 'Success', retryAfterSeconds: 5, message: 'm' })).to.deep.equal({
        kind: 'inProgress',
        retryAfterMs: 5000,
        message: 'm',
      });
      expect(updateMachineOutcome({ status: 'Success' })).to.deep.equal({ kind: 'done' });
      expect(updateMachineOutcome({ status: 'Failure', message: 'boom', retryAfterSeconds: 5 })).to.deep.equal({
        kind: 'failed',
        message: 'boom',
      });
    });
    it('the Updating condition: True while in progress or failed, False NotUpdating otherwise', () => {
      expect(updatingCondition(false)).to.deep.equal({ type: 'Updating', status: 'False', reason: 'NotUpdating' });
      expect(updatingCondition(true)).to.include({ status: 'True', reason: 'InPlaceUpdating' });
      expect(updatingCondition(true, 'InPlaceUpdateFailed', 'x')).to.include({
        status: 'True',
        reason: 'InPlaceUpdateFailed',
        message: 'x',
      });
    });
  });

  describe('pending hooks annotation', () => {
    it('adds, removes and lists hooks (comma-separated)', () => {
      expect(pendingHooksValue(undefined, 'UpdateMachine', true)).to.equal('UpdateMachine');
      expect(pendingHooksValue({ [PENDING_HOOKS_ANNOTATION]: 'AfterUpgrade' }, 'UpdateMachine', true)).to.equal(
        'AfterUpgrade,UpdateMachine',
      );
      expect(pendingHooksValue({ [PENDING_HOOKS_ANNOTATION]: 'UpdateMachine' }, 'UpdateMachine', false)).to.equal(undefined);
      expect(pendingHooks({ [PENDING_HOOKS_ANNOTATION]: 'A, B' })).to.deep.equal(['A', 'B']);
    });
  });

  describe('MachineDeployment / MachineSet in place', () => {
    it('asks about old sets with machines while the new set is short of the deployment (one handler, gate on)', () => {
      const olds = [
        { name: 'a', machines: 2 },
        { name: 'b', machines: 0 },
      ];
      expect(inPlaceCandidates(true, 1, 1, 3, olds)).to.deep.equal(['a']);
      expect(inPlaceCandidates(true, 1, 3, 3, olds)).to.deep.equal([]);
      expect(inPlaceCandidates(false, 1, 1, 3, olds)).to.deep.equal([]);
      expect(inPlaceCandidates(true, 2, 1, 3, olds)).to.deep.equal([]);
    });
    it('annotates the old sets to move to the new one, which receives from them', () =>
      expect(moveAnnotations('new', ['b', 'a'])).to.deep.equal({
        old: {
          b: { 'in-place-updates.internal.cluster.x-k8s.io/move-machines-to-machineset': 'new' },
          a: { 'in-place-updates.internal.cluster.x-k8s.io/move-machines-to-machineset': 'new' },
        },
        receive: 'a,b',
      }));
    const m = (name: string, pending: boolean) => ({
      metadata: { name, ...(pending ? { annotations: { [PENDING_ACKNOWLEDGE_MOVE_ANNOTATION]: '' } } : {}) },
    });
    it('the deployment acknowledges newly moved machines once (replicas + n)', () => {
      expect(acknowledgeMoves(undefined, [m('x', true), m('y', false)])).to.deep.equal({ scaleUp: 1, acknowledged: 'x' });
      expect(acknowledgeMoves('x', [m('x', true), m('z', true)])).to.deep.equal({ scaleUp: 1, acknowledged: 'x,z' });
      expect(acknowledgeMoves('x', [m('x', false)])).to.deep.equal({ scaleUp: 0, acknowledged: 'x' });
    });
    it('the new set leaves unacknowledged moved machines out and triggers acknowledged ones', () => {
      const ms = {
        metadata: { name: 'new', annotations: { [RECEIVE_MACHINES_FROM_ANNOTATION]: 'old', [ACKNOWLEDGED_MOVE_ANNOTATION]: 'x' } },
      };
      expect(decideMoves(ms, [m('x', true), m('y', true), m('z', false)])).to.deep.equal({ notAcknowledged: ['y'], trigger: ['x'] });
    });
    it('judges a CanUpdateMachineSet answer on spec.template.spec only, refs and clusterName left out', () => {
      const set = (version: string, infra: string) => ({
        metadata: { name: infra },
        spec: {
          template: { spec: { clusterName: 'c', version, infrastructureRef: { name: infra }, bootstrap: { configRef: { name: infra } } } },
        },
      });
      const tpl = (image: string) => ({ kind: 'DevMachineTemplate', metadata: { name: image }, spec: { template: { spec: { image } } } });
      const current = { machineSet: set('v1', 'old'), infrastructureMachineTemplate: tpl('a') };
      const desired = { machineSet: set('v2', 'new'), infrastructureMachineTemplate: tpl('b') };
      const machineSetPatch = { patchType: 'JSONMergePatch', patch: b64({ spec: { template: { spec: { version: 'v2' } } } }) };
      const infraPatch = { patchType: 'JSONMergePatch', patch: b64({ spec: { template: { spec: { image: 'b' } } } }) };
      expect(
        judgeCanUpdateMachineSet(current, desired, { machineSetPatch, infrastructureMachineTemplatePatch: infraPatch }).covered,
      ).to.equal(true);
      expect(judgeCanUpdateMachineSet(current, desired, { machineSetPatch }).reasons).to.deep.equal([
        'DevMachineTemplate cannot be updated in-place',
      ]);
    });
    it('machineSpecForDiff drops what never makes an in-place update', () =>
      expect(
        machineSpecForDiff({ clusterName: 'c', version: 'v1', providerID: 'p', taints: [], deletion: { nodeDrainTimeoutSeconds: 5 } }),
      ).to.deep.equal({ version: 'v1' }));
  });
});
