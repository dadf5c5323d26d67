import { expect } from 'chai';
import { Annotations, ConditionTypes, Labels, MhcEventReasons, Reasons } from '../api/index.js';
import {
  MAX_REQUEUE_MS,
  activeUpdateOf,
  confirmUnhealthy,
  currentUpdateOf,
  isNodeInitialized,
  judge,
  liftPatch,
  machineNeedsPass,
  planMachineHealthCheck,
  planNeedsAttention,
  protectPatch,
  readTimeoutAnnotation,
  remediationCount,
  remediationWindow,
  restoreDeferredToPlan,
  restoreDue,
  restoreGraceMs,
  PLAN_CACHE_GRACE_MS,
  restorePatch,
  updateTimeoutMs,
} from './decide.js';
import type { Machine, MachineHealthCheck, MachineUpdate } from './scope.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const machine = (
  name: string,
  o: { annotations?: Record<string, string>; initialized?: boolean; hcFalse?: boolean; deleting?: boolean; plan?: string } = {},
): Machine => ({
  metadata: {
    name,
    namespace: 'ns',
    labels: { [Labels.clusterName]: 'c1', ...(o.plan ? { [Labels.planName]: o.plan } : {}) },
    ...(o.annotations ? { annotations: o.annotations } : {}),
    ...(o.deleting ? { deletionTimestamp: iso(T0) } : {}),
  },
  spec: {
    clusterName: 'c1',
    bootstrap: {},
    infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DockerMachine', name },
  },
  status: {
    ...(o.initialized === false
      ? {}
      : { nodeRef: { name: `n-${name}` }, initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true } }),
    conditions: o.hcFalse
      ? [{ type: 'HealthCheckSucceeded', status: 'False', reason: 'UnhealthyNode', message: '', lastTransitionTime: iso(T0) }]
      : [],
  },
});

const update = (
  machineName: string,
  o: { status?: string; startMs?: number; created?: number; message?: string; name?: string; plan?: string } = {},
): MachineUpdate => ({
  metadata: {
    name: o.name ?? `mu-${machineName}`,
    namespace: 'ns',
    labels: { [Labels.machineName]: machineName, [Labels.planName]: o.plan ?? 'p' },
    creationTimestamp: iso(o.created ?? T0),
  },
  spec: {
    planName: o.plan ?? 'p',
    clusterName: 'c1',
    target: { kind: 'MachineDeployment', name: 'md' },
    machineRef: { name: machineName },
    updatePhase: 'updating',
    updaters: [],
  },
  status: {
    updateStatus: (o.status ?? 'updating') as 'updating',
    ...(o.startMs !== undefined ? { startTime: iso(o.startMs) } : {}),
    ...(o.message ? { message: o.message } : {}),
  },
});

const mhc = (o: { timeout?: string; max?: number | string; range?: string; nodeStartup?: number } = {}): MachineHealthCheck => ({
  metadata: {
    name: 'mhc',
    namespace: 'ns',
    ...(o.timeout !== undefined ? { annotations: { [Annotations.inPlaceUpdateTimeout]: o.timeout } } : {}),
  },
  spec: {
    clusterName: 'c1',
    selector: { matchLabels: { [Labels.clusterName]: 'c1' } },
    ...(o.nodeStartup !== undefined ? { checks: { nodeStartupTimeoutSeconds: o.nodeStartup } } : {}),
    ...(o.max !== undefined || o.range !== undefined
      ? {
          remediation: {
            triggerIf: {
              ...(o.max !== undefined ? { unhealthyLessThanOrEqualTo: o.max } : {}),
              ...(o.range ? { unhealthyInRange: o.range } : {}),
            },
          },
        }
      : {}),
  },
});

describe('mhc-extension decisions', () => {
  describe('readTimeoutAnnotation', () => {
    const cases: Array<[string | undefined, string, number?]> = [
      [undefined, 'absent'],
      ['30m', 'valid', 1_800_000],
      ['1h30m', 'valid', 5_400_000],
      ['90s', 'valid', 90_000],
      [' 2s ', 'valid', 2000],
      ['30', 'invalid'],
      ['soon', 'invalid'],
      ['0s', 'invalid'],
      ['-5m', 'invalid'],
    ];
    for (const [value, kind, ms] of cases) {
      it(`${JSON.stringify(value)} is ${kind}`, () => {
        const got = readTimeoutAnnotation(mhc(value === undefined ? {} : { timeout: value }));
        expect(got.kind).to.equal(kind);
        if (ms !== undefined && got.kind === 'valid') expect(got.ms).to.equal(ms);
      });
    }
  });

  describe('timeouts', () => {
    it('a machine with node, infrastructure and bootstrap data is initialized', () =>
      expect(isNodeInitialized(machine('a'))).to.equal(true));
    it('a machine without a nodeRef is not initialized', () =>
      expect(isNodeInitialized(machine('a', { initialized: false }))).to.equal(false));
    it('a machine whose bootstrap data is missing is not initialized', () => {
      const m = machine('a');
      m.status!.initialization!.bootstrapDataSecretCreated = false;
      expect(isNodeInitialized(m)).to.equal(false);
    });
    const cases: Array<{ name: string; inPlace: number; startup: number | undefined; init: boolean; want: number }> = [
      { name: 'an initialized node gets the in-place timeout', inPlace: 60_000, startup: 300, init: true, want: 60_000 },
      { name: 'an uninitialized node also gets nodeStartupTimeoutSeconds', inPlace: 60_000, startup: 300, init: false, want: 360_000 },
      {
        name: "an uninitialized node gets CAPI's 10m default node startup timeout when unset",
        inPlace: 60_000,
        startup: undefined,
        init: false,
        want: 660_000,
      },
      { name: 'nodeStartupTimeoutSeconds 0 adds nothing', inPlace: 60_000, startup: 0, init: false, want: 60_000 },
    ];
    for (const c of cases) it(c.name, () => expect(updateTimeoutMs(c.inPlace, c.startup, c.init)).to.equal(c.want));

    it('judges a machine timed out exactly when start + timeout is reached', () => {
      const m = machine('a');
      const u = update('a', { startMs: T0 });
      expect(judge(m, u, 2000, 600, T0 + 1999).kind).to.equal('within');
      expect(judge(m, u, 2000, 600, T0 + 2000).kind).to.equal('timedOut');
    });
    it('takes the start time from the Machine annotation when the MachineUpdate has none', () => {
      const m = machine('a', { annotations: { [Annotations.updateStartedAt]: iso(T0 + 10_000) } });
      expect(judge(m, update('a', { created: T0 }), 2000, 600, T0 + 11_000)).to.deep.include({ kind: 'within', expiresAtMs: T0 + 12_000 });
    });
    it('a failed MachineUpdate is failed whatever the time', () =>
      expect(judge(machine('a'), update('a', { status: 'failed', startMs: T0, message: 'boom' }), 60_000, 600, T0)).to.deep.equal({
        kind: 'failed',
        message: 'boom',
      }));
  });

  describe('budget', () => {
    const scaled: Array<[number | string, number, number]> = [
      [2, 10, 2],
      ['40%', 10, 4],
      ['40%', 3, 1],
      ['50%', 3, 1],
      ['100%', 3, 3],
      ['34%', 3, 1],
      ['33%', 3, 0],
      ['0%', 5, 0],
    ];
    for (const [v, total, want] of scaled)
      it(`unhealthyLessThanOrEqualTo ${JSON.stringify(v)} of ${total} machines is ${want} (rounded down like CAPI)`, () =>
        expect(remediationWindow(mhc({ max: v }), total)).to.deep.equal({ min: 0, max: want }));
    it('rejects a string that is not a percentage', () =>
      expect(() => remediationWindow(mhc({ max: '3' }), 10)).to.throw(/unhealthyLessThanOrEqualTo/));
    it('defaults to 100% of the expected machines', () => expect(remediationWindow(mhc(), 7)).to.deep.equal({ min: 0, max: 7 }));
    it('unhealthyInRange takes precedence', () =>
      expect(remediationWindow(mhc({ max: 1, range: '[2-5]' }), 7)).to.deep.equal({ min: 2, max: 5 }));
    const counts: Array<[number, number, number, number]> = [
      [3, 0, 0, 3],
      [1, 0, 0, 1],
      [1, 1, 0, 0],
      [2, 0, 1, 1],
      [2, 1, 1, 0],
      [1, 2, 0, -1],
    ];
    for (const [max, unhealthy, inUpdate, want] of counts)
      it(`max ${max} − unhealthy ${unhealthy} − in update ${inUpdate} = ${want}`, () =>
        expect(remediationCount(max, unhealthy, inUpdate)).to.equal(want));
  });

  describe('skip-remediation bookkeeping', () => {
    const S = Annotations.skipRemediation;
    const P = Annotations.skipRemediationPrior;
    const R = Annotations.remediateMachine;
    const cases: Array<{ name: string; fn: () => unknown; want: unknown }> = [
      {
        name: 'protecting a machine records that skip-remediation was absent and sets it',
        fn: () => protectPatch({}),
        want: { [P]: 'false', [S]: '' },
      },
      {
        name: 'protecting a machine that already had skip-remediation records it was present',
        fn: () => protectPatch({ [S]: '' }),
        want: { [P]: 'true' },
      },
      {
        name: 'protecting an already protected machine changes nothing',
        fn: () => protectPatch({ [S]: '', [P]: 'false' }),
        want: undefined,
      },
      {
        name: 'lifting removes the skip-remediation we set and triggers remediation',
        fn: () => liftPatch({ [S]: '', [P]: 'false' }, true),
        want: { [S]: null, [R]: '' },
      },
      {
        name: 'lifting without budget removes our skip-remediation only',
        fn: () => liftPatch({ [S]: '', [P]: 'false' }, false),
        want: { [S]: null },
      },
      {
        name: "lifting keeps the operator's own skip-remediation and does not remediate",
        fn: () => liftPatch({ [S]: '', [P]: 'true' }, true),
        want: undefined,
      },
      { name: 'lifting a never-protected machine records its prior state', fn: () => liftPatch({}, true), want: { [P]: 'false', [R]: '' } },
      {
        name: 'restoring removes skip-remediation that was absent before',
        fn: () => restorePatch({ [S]: '', [P]: 'false' }),
        want: { [P]: null, [S]: null },
      },
      {
        name: 'restoring puts back skip-remediation that was present before',
        fn: () => restorePatch({ [P]: 'true' }),
        want: { [P]: null, [S]: '' },
      },
      {
        name: 'restoring keeps skip-remediation that was present before and still is',
        fn: () => restorePatch({ [S]: '', [P]: 'true' }),
        want: { [P]: null },
      },
      { name: 'restoring a machine the extension never touched changes nothing', fn: () => restorePatch({ [S]: '' }), want: undefined },
    ];
    for (const c of cases) it(c.name, () => expect(c.fn()).to.deep.equal(c.want));
  });

  describe('restoreDeferredToPlan (the end-of-update restore rides on the plan unlabel, issue 25)', () => {
    const done = update('m1', { status: 'updated', plan: 'p' });
    it('defers while the machine carries a plan label and that plan has a MachineUpdate for it', () => {
      expect(restoreDeferredToPlan(machine('m1', { plan: 'p' }), [done])).to.equal(true);
    });
    it('restores itself once the label is gone (unlabelled, or never labelled: the runtime extension drives updates)', () => {
      expect(restoreDeferredToPlan(machine('m1'), [done])).to.equal(false);
    });
    it("restores itself when the labelling plan has no MachineUpdate for the machine (gone, deleting, or another plan's)", () => {
      expect(restoreDeferredToPlan(machine('m1', { plan: 'p' }), [])).to.equal(false);
      const deleting: MachineUpdate = { ...done, metadata: { ...done.metadata, deletionTimestamp: iso(T0) } };
      expect(restoreDeferredToPlan(machine('m1', { plan: 'p' }), [deleting])).to.equal(false);
      expect(restoreDeferredToPlan(machine('m1', { plan: 'p2' }), [done])).to.equal(false);
      expect(restoreDeferredToPlan(machine('m1', { plan: 'p' }), [update('m2', { status: 'updated' })])).to.equal(false);
    });
    it('defers while the plan its label names exists, before that plan created its MachineUpdate (it protected the machine as it labelled it)', () => {
      expect(restoreDeferredToPlan(machine('m1', { plan: 'p' }), [], true)).to.equal(true);
      expect(restoreDeferredToPlan(machine('m1'), [], true)).to.equal(false);
    });
  });

  describe('restoreDue (the restore has something to do now; its MachineUpdate events wake it only then)', () => {
    const prior = { [Annotations.skipRemediation]: 'note', [Annotations.skipRemediationPrior]: 'false' };
    const cases: Array<[string, Machine, MachineUpdate[], boolean]> = [
      ['the update ended, no plan label: due', machine('m1', { annotations: prior }), [update('m1', { status: 'updated' })], true],
      ['no prior state (never protected): nothing to restore', machine('m1'), [update('m1', { status: 'updated' })], false],
      ['still in update', machine('m1', { annotations: prior }), [update('m1', { status: 'updating' })], false],
      ['failed (still a remediation candidate)', machine('m1', { annotations: prior }), [update('m1', { status: 'failed' })], false],
      [
        "the labelling plan's unlabel will restore",
        machine('m1', { annotations: prior, plan: 'p' }),
        [update('m1', { status: 'updated', plan: 'p' })],
        false,
      ],
      [
        'the plan label stays but the plan and its MachineUpdates are gone: due',
        machine('m1', { annotations: prior, plan: 'p' }),
        [],
        true,
      ],
      ['a deleting machine', machine('m1', { annotations: prior, deleting: true }), [], false],
    ];
    for (const [name, m, mine, want] of cases) it(name, () => expect(restoreDue(m, mine, false, T0)).to.equal(want));
    it('labelled and protected by a plan that has not created its MachineUpdate yet: not due (the plan restores)', () => {
      expect(restoreDue(machine('m1', { annotations: prior, plan: 'p' }), [], true, T0)).to.equal(false);
    });
    it('labelled moments ago by a plan neither cache shows yet: not due until the grace ends, then due by the clock', () => {
      // The plan controller labels within milliseconds of a new plan; the plan's watch event may come after the machine's.
      const labelled = machine('m1', { annotations: { ...prior, [Annotations.updateStartedAt]: iso(T0 - 5_000) }, plan: 'p' });
      expect(restoreDue(labelled, [], false, T0)).to.equal(false);
      expect(restoreGraceMs(labelled, [], false, T0)).to.equal(PLAN_CACHE_GRACE_MS - 5_000);
      expect(restoreDue(labelled, [], false, T0 - 5_000 + PLAN_CACHE_GRACE_MS)).to.equal(true);
      // The plan shows up meanwhile: the plan restores, nothing waits for the clock.
      expect(restoreGraceMs(labelled, [], true, T0)).to.equal(undefined);
      // A label older than the grace (the plan deleted, its finalizer removed by hand): due now.
      const old = machine('m1', {
        annotations: { ...prior, [Annotations.updateStartedAt]: iso(T0 - PLAN_CACHE_GRACE_MS - 1_000) },
        plan: 'p',
      });
      expect(restoreDue(old, [], false, T0)).to.equal(true);
      expect(restoreGraceMs(old, [], false, T0)).to.equal(undefined);
    });
  });

  describe("a machine's current update", () => {
    const A = (o: { status?: string; created?: number } = {}): MachineUpdate =>
      update('a', { name: 'planA-a', plan: 'planA', status: 'failed', created: T0, message: 'boom', ...o });
    const B = (o: { status?: string; created?: number } = {}): MachineUpdate =>
      update('a', { name: 'planB-a', plan: 'planB', status: 'updated', created: T0 + 1000, ...o });
    const cases: Array<{ name: string; m: Machine; mine: MachineUpdate[]; current: string | undefined; active: string | undefined }> = [
      {
        name: 'a failed update superseded by a newer successful one (the retry plan) is history',
        m: machine('a'),
        mine: [A(), B()],
        current: 'planB-a',
        active: undefined,
      },
      {
        name: 'a failed update superseded by a newer failed one: only the newer counts',
        m: machine('a'),
        mine: [A(), B({ status: 'failed' })],
        current: 'planB-a',
        active: 'planB-a',
      },
      {
        name: 'a failed update superseded by a newer running one: the running one counts',
        m: machine('a'),
        mine: [B({ status: 'updating' }), A()],
        current: 'planB-a',
        active: 'planB-a',
      },
      {
        name: 'the latest update, failed, stays active (remediation candidate)',
        m: machine('a'),
        mine: [A()],
        current: 'planA-a',
        active: 'planA-a',
      },
      {
        name: 'same creation second: the name breaks the tie',
        m: machine('a'),
        mine: [B({ created: T0 }), A()],
        current: 'planB-a',
        active: undefined,
      },
      {
        name: 'the plan labelling the machine wins over a newer update of another plan',
        m: machine('a', { plan: 'planA' }),
        mine: [A({ status: 'updating' }), B()],
        current: 'planA-a',
        active: 'planA-a',
      },
      {
        name: 'a machine labelled by a plan that has not created its update yet has no current update (an older failure does not count)',
        m: machine('a', { plan: 'planC' }),
        mine: [A(), B()],
        current: undefined,
        active: undefined,
      },
      {
        name: 'an updated or aborted latest update is not active',
        m: machine('a'),
        mine: [A({ status: 'aborted' })],
        current: 'planA-a',
        active: undefined,
      },
      {
        name: 'a just-created update without status is active',
        m: machine('a'),
        mine: [{ ...A(), status: {} }],
        current: 'planA-a',
        active: 'planA-a',
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        expect(currentUpdateOf(c.m, c.mine)?.metadata.name).to.equal(c.current);
        expect(activeUpdateOf(c.m, c.mine)?.metadata.name).to.equal(c.active);
      });
    }
    it('ignores updates of other machines', () => expect(activeUpdateOf(machine('a'), [update('b')])).to.equal(undefined));

    it("never remediates a healthy machine for an old plan's failure once a retry updated it (issue 15)", () => {
      const p = planMachineHealthCheck(mhc({ timeout: '2s' }), [machine('a'), machine('b')], [A(), B()], T0 + 60_000);
      expect(p.actions).to.deep.equal([]);
      expect(machineNeedsPass(mhc({ timeout: '2s' }), machine('a'), [A(), B()], T0 + 60_000)).to.equal(false);
    });
  });

  describe("confirmUnhealthy (the verdict re-checked on the API server's current MachineUpdate)", () => {
    const H = mhc({ timeout: '2s' });
    const cases: Array<[string, MachineUpdate | undefined, Machine, boolean]> = [
      ['still updating past its timeout', update('a', { startMs: T0 }), machine('a'), true],
      ['failed', update('a', { startMs: T0, status: 'failed' }), machine('a'), true],
      ['completed meanwhile', update('a', { startMs: T0, status: 'updated' }), machine('a'), false],
      ['aborted meanwhile', update('a', { startMs: T0, status: 'aborted' }), machine('a'), false],
      ['deleted meanwhile', undefined, machine('a'), false],
      ['restarted meanwhile (a new start time within the timeout)', update('a', { startMs: T0 + 9000 }), machine('a'), false],
      ['no longer the update of the plan labelling the machine', update('a', { startMs: T0 }), machine('a', { plan: 'other' }), false],
    ];
    for (const [name, fresh, m, want] of cases)
      it(`${want ? 'confirms' : 'refutes'}: ${name}`, () => expect(confirmUnhealthy(H, m, fresh, T0 + 10_000)).to.equal(want));
  });

  describe('requeue at the deadline', () => {
    it('a machine in update with a far timeout requeues at the deadline, bounded (a timer cannot wait 1000 h)', () => {
      const p = planMachineHealthCheck(mhc({ timeout: '1000h' }), [machine('a')], [update('a', { startMs: T0 })], T0 + 1000);
      expect(p.requeueAfterMs).to.equal(MAX_REQUEUE_MS);
      expect(MAX_REQUEUE_MS).to.be.at.most(2 ** 31 - 1);
    });
    it('a deadline nearer than the bound requeues exactly at it', () => {
      const p = planMachineHealthCheck(mhc({ timeout: '30m' }), [machine('a')], [update('a', { startMs: T0 })], T0 + 60_000);
      expect(p.requeueAfterMs).to.equal(29 * 60_000);
    });
    it('nothing in update: no requeue', () =>
      expect(planMachineHealthCheck(mhc({ timeout: '1000h' }), [machine('a')], [], T0).requeueAfterMs).to.equal(undefined));
  });

  describe('planMachineHealthCheck', () => {
    const S = Annotations.skipRemediation;
    const P = Annotations.skipRemediationPrior;
    const R = Annotations.remediateMachine;
    const byMachine = (
      p: ReturnType<typeof planMachineHealthCheck>,
    ): Record<string, { annotations?: unknown; reason?: string; status?: string }> =>
      Object.fromEntries(
        p.actions.map((a) => [
          a.machine,
          {
            ...(a.annotations ? { annotations: a.annotations } : {}),
            ...(a.update ? { reason: a.update.condition.reason, status: a.update.condition.status } : {}),
          },
        ]),
      );

    it('ignores an MHC without the annotation', () => {
      expect(planMachineHealthCheck(mhc(), [machine('a')], [update('a', { startMs: T0 })], T0)).to.deep.equal({
        ignored: true,
        mhcEvents: [],
        actions: [],
      });
    });

    it('ignores an MHC with an invalid timeout, touches nothing and warns on the MHC', () => {
      const p = planMachineHealthCheck(mhc({ timeout: 'half an hour' }), [machine('a')], [update('a', { startMs: T0 })], T0);
      expect(p.ignored).to.equal(true);
      expect(p.actions).to.deep.equal([]);
      expect(p.mhcEvents).to.have.length(1);
      expect(p.mhcEvents[0]).to.include({ on: 'MachineHealthCheck', type: 'Warning', reason: MhcEventReasons.invalidInPlaceUpdateTimeout });
    });

    it('protects a machine within its timeout by the annotation alone (naming the MHC, the update and the expiry) and asks to look again when it expires', () => {
      const p = planMachineHealthCheck(mhc({ timeout: '2s' }), [machine('a'), machine('b')], [update('a', { startMs: T0 })], T0 + 500);
      expect(byMachine(p)).to.deep.equal({
        a: {
          annotations: {
            [P]: 'false',
            [S]: `in-place update mu-a: MachineHealthCheck mhc skips remediation until ${new Date(T0 + 2000).toISOString()}`,
          },
        },
      });
      expect(p.actions[0]).to.not.have.property('update');
      expect(p.actions[0]?.eventsOnPatch).to.deep.equal([]);
      expect(p.requeueAfterMs).to.equal(1500);
    });

    it('writes True over a non-True verdict written before (a timeout raised since), and leaves an operator value of skip-remediation alone', () => {
      const m = machine('a', { annotations: { [S]: 'operator', [P]: 'true' } });
      const stale = update('a', { startMs: T0 });
      stale.status = {
        ...stale.status,
        conditions: [
          {
            type: 'HealthCheckSucceeded',
            status: 'False',
            reason: Reasons.inPlaceUpdateTimedOut,
            message: 'x',
            lastTransitionTime: iso(T0),
          },
        ],
      };
      const p = planMachineHealthCheck(mhc({ timeout: '2s' }), [m], [stale], T0 + 500);
      expect(byMachine(p)).to.deep.equal({ a: { reason: Reasons.withinInPlaceUpdateTimeout, status: 'True' } });
    });

    it('looks again at the earliest expiry among protected machines', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '10s' }),
        [machine('a'), machine('b', { initialized: false })],
        [update('a', { startMs: T0 }), update('b', { startMs: T0 - 8000 })],
        T0,
      );
      expect(p.requeueAfterMs).to.equal(10_000);
      const p2 = planMachineHealthCheck(
        mhc({ timeout: '10s', nodeStartup: 1 }),
        [machine('a'), machine('b', { initialized: false })],
        [update('a', { startMs: T0 }), update('b', { startMs: T0 - 8000 })],
        T0,
      );
      expect(p2.requeueAfterMs).to.equal(3000);
    });

    it('remediates a machine whose update exceeded its timeout', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '2s' }),
        [machine('a', { annotations: { [S]: '', [P]: 'false' } }), machine('b')],
        [update('a', { startMs: T0 })],
        T0 + 2000,
      );
      expect(byMachine(p)).to.deep.equal({
        a: { annotations: { [S]: null, [R]: '' }, reason: Reasons.inPlaceUpdateTimedOut, status: 'False' },
      });
      expect(p.actions[0]!.eventsOnPatch[0]).to.include({ reason: Reasons.remediationTriggered, on: 'Machine' });
      expect(p.requeueAfterMs).to.equal(undefined);
    });

    it('remediates a machine whose update failed, even within its timeout', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '1h' }),
        [machine('a'), machine('b')],
        [update('a', { startMs: T0, status: 'failed', message: 'disk full' })],
        T0 + 1000,
      );
      expect(byMachine(p)).to.deep.equal({
        a: { annotations: { [P]: 'false', [R]: '' }, reason: Reasons.inPlaceUpdateFailed, status: 'False' },
      });
    });

    it('bounds an updater failure message of any length in the condition', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '1h' }),
        [machine('a'), machine('b')],
        [update('a', { startMs: T0, status: 'failed', message: `disk full ${'e'.repeat(100_000)}` })],
        T0 + 1000,
      );
      const msg = p.actions.find((x) => x.machine === 'a')!.update!.condition.message;
      expect(Buffer.byteLength(msg)).to.be.below(8192);
      expect(msg).to.match(/^In-place update failed: disk full e+\.\.\. \(\d+ more bytes\); remediation triggered/);
    });

    it('blocks remediation when other in-update machines exhaust the budget, lifting protection and reporting RemediationBlocked', () => {
      const machines = [
        machine('a', { annotations: { [S]: '', [P]: 'false' } }),
        machine('b', { annotations: { [S]: '', [P]: 'false' } }),
        machine('c'),
      ];
      const p = planMachineHealthCheck(
        mhc({ timeout: '2s', max: 1 }),
        machines,
        [update('a', { startMs: T0 - 5000 }), update('b', { startMs: T0 })],
        T0 + 100,
      );
      expect(byMachine(p)).to.deep.equal({
        a: { annotations: { [S]: null }, reason: Reasons.inPlaceUpdateTimedOut, status: 'False' },
        b: {},
      });
      const a = p.actions.find((x) => x.machine === 'a')!;
      expect(a.eventsOnChange[0]).to.include({ reason: Reasons.remediationBlocked, type: 'Warning' });
      expect(a.update?.condition.message).to.match(/budget exhausted/);
    });

    it('counts machines whose HealthCheckSucceeded is False against the budget', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '2s', max: '40%' }),
        [machine('a'), machine('b', { hcFalse: true }), machine('c'), machine('d'), machine('e')],
        [update('a', { startMs: T0 })],
        T0 + 5000,
      );
      // 40% of 5 = 2; others unhealthy = 1 (b) → count 1 → remediate.
      expect(byMachine(p)['a']?.annotations).to.deep.equal({ [P]: 'false', [R]: '' });
      const p2 = planMachineHealthCheck(
        mhc({ timeout: '2s', max: '20%' }),
        [machine('a'), machine('b', { hcFalse: true }), machine('c'), machine('d'), machine('e')],
        [update('a', { startMs: T0 })],
        T0 + 5000,
      );
      // 20% of 5 = 1; others unhealthy = 1 → count 0 → blocked.
      expect(byMachine(p2)['a']?.annotations).to.deep.equal({ [P]: 'false' });
    });

    it('does not remediate a machine that carried skip-remediation before the update', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '2s' }),
        [machine('a', { annotations: { [S]: '', [P]: 'true' } }), machine('b')],
        [update('a', { startMs: T0 })],
        T0 + 3000,
      );
      expect(byMachine(p)).to.deep.equal({ a: { reason: Reasons.inPlaceUpdateTimedOut, status: 'False' } });
    });

    it('does not repeat the remediation of a machine already marked remediate-machine', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '2s' }),
        [machine('a', { annotations: { [R]: '', [P]: 'false' } }), machine('b')],
        [update('a', { startMs: T0 })],
        T0 + 3000,
      );
      expect(byMachine(p)).to.deep.equal({ a: { reason: Reasons.inPlaceUpdateTimedOut, status: 'False' } });
    });

    it('remediates timed-out machines while the unhealthy total stays within the limit, earliest expiry first', () => {
      const ms = [machine('a'), machine('b'), machine('c'), machine('d')];
      const ups = [update('a', { startMs: T0 }), update('b', { startMs: T0 - 1000 })];
      const two = planMachineHealthCheck(mhc({ timeout: '2s', max: 2 }), ms, ups, T0 + 5000);
      expect(two.actions.map((a) => [a.machine, a.annotations?.[R]])).to.deep.equal([
        ['b', ''],
        ['a', ''],
      ]);
      const one = planMachineHealthCheck(mhc({ timeout: '2s', max: 1 }), ms, ups, T0 + 5000);
      expect(one.actions.map((a) => [a.machine, a.annotations?.[R]])).to.deep.equal([
        ['b', undefined],
        ['a', undefined],
      ]);
    });

    it('skips machines being deleted and machines without an active update', () => {
      const p = planMachineHealthCheck(
        mhc({ timeout: '2s' }),
        [machine('a', { deleting: true }), machine('b')],
        [update('a', { startMs: T0 }), update('b', { status: 'updated' })],
        T0 + 5000,
      );
      expect(p.actions).to.deep.equal([]);
    });

    it('is a pure function of the objects: the same inputs give the same plan (restart safety)', () => {
      const args = [mhc({ timeout: '2s', max: 1 }), [machine('a'), machine('b')], [update('a', { startMs: T0 })], T0 + 700] as const;
      expect(planMachineHealthCheck(...args)).to.deep.equal(planMachineHealthCheck(...args));
      expect(ConditionTypes.healthCheckSucceeded).to.equal('HealthCheckSucceeded');
    });

    it('scales linearly: 10,000 machines with 5,000 updates plan in one pass', () => {
      const ms = Array.from({ length: 10_000 }, (_, i) => machine(`m${i}`));
      const ups = Array.from({ length: 5_000 }, (_, i) => update(`m${i * 2}`, { startMs: T0 }));
      const p = planMachineHealthCheck(mhc({ timeout: '1h' }), ms, ups, T0);
      expect(p.actions).to.have.length(5_000);
      expect(p.actions[0]?.machine).to.equal('m0');
    });
  });

  describe('machineNeedsPass', () => {
    const H = mhc({ timeout: '1h' });
    /** The machine as the pass leaves it: protected (no condition is written for a machine within its timeout). */
    const settled = (): [Machine, MachineUpdate] => {
      const m = machine('a');
      const u = update('a', { startMs: T0 });
      const a = planMachineHealthCheck(H, [m], [u], T0).actions[0]!;
      expect(a.update).to.equal(undefined);
      return [{ ...m, metadata: { ...m.metadata, annotations: { ...(a.annotations as Record<string, string>) } } }, u];
    };
    const cases: Array<[string, () => [MachineHealthCheck, Machine, MachineUpdate[], number], boolean]> = [
      ['a healthy machine not in update', () => [H, machine('a'), [], T0], false],
      ['a machine whose update ended', () => [H, machine('a'), [update('a', { status: 'updated' })], T0], false],
      ['an MHC without the timeout annotation', () => [mhc(), machine('a'), [update('a', { startMs: T0 })], T0], false],
      ['a machine in update, not yet protected', () => [H, machine('a'), [update('a', { startMs: T0 })], T0], true],
      [
        'a machine in update, protected',
        () => {
          const [m, u] = settled();
          return [H, m, [u], T0 + 1000];
        },
        false,
      ],
      [
        'the same machine once its timeout expired',
        () => {
          const [m, u] = settled();
          return [H, m, [u], T0 + 3_600_000];
        },
        true,
      ],
      [
        'the same machine whose update failed',
        () => {
          const [m, u] = settled();
          return [H, m, [{ ...u, status: { ...u.status, updateStatus: 'failed' } }], T0 + 1000];
        },
        true,
      ],
      ['an unhealthy machine not in update (it moves the budget)', () => [H, machine('a', { hcFalse: true }), [], T0], true],
      ['a deleting machine', () => [H, machine('a', { deleting: true }), [], T0], true],
      ['a machine marked for remediation', () => [H, machine('a', { annotations: { [Annotations.remediateMachine]: '' } }), [], T0], true],
    ];
    for (const [name, input, want] of cases)
      it(`${want ? 'needs' : 'does not need'} a pass: ${name}`, () => expect(machineNeedsPass(...input())).to.equal(want));

    it('a pass that left a timed-out machine needs attention; one with machines within their timeout does not', () => {
      expect(planNeedsAttention(planMachineHealthCheck(H, [machine('a')], [update('a', { startMs: T0 })], T0 + 3_600_000))).to.equal(true);
      expect(planNeedsAttention(planMachineHealthCheck(H, [machine('a')], [update('a', { startMs: T0 })], T0))).to.equal(false);
    });
  });
});
