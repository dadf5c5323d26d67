import { expect } from 'chai';
import type { InPlaceUpdatePlan, MachineUpdate } from '../api/index.js';
import { PlanEventReasons, Reasons } from '../api/index.js';
import type { PlanDecision } from './decide.js';
import type { PlanSnapshot } from './scope.js';
import { decidePlan } from './decide.js';
import { BOOT_ID_BEFORE_ANNOTATION, OverlayMap, sameKubeletVersion, soakGate } from '../rules/gates.js';
import type { SnapOpts } from './testkit.js';
import { machine, mdMachines, mdOnly, mu, plan, snapshot, started } from './testkit.js';

type Windows = NonNullable<InPlaceUpdatePlan['spec']['maintenanceWindows']>;

// Saturday 22:00 in Berlin for 4 hours: crosses midnight into Sunday.
const SAT_NIGHT: Windows = [{ days: ['Sat'], start: '22:00', duration: '4h', timeZone: 'Europe/Berlin' }];

const cond = (d: PlanDecision, type: string) => d.status.conditions?.find((c) => c.type === type);
const ready = (d: PlanDecision) => cond(d, 'Ready');
const starts = (d: PlanDecision): string[] => d.create.map((c) => c.machine);

/** decidePlan on the snapshot `o` with the plan's windows set and the clock at `now`. */
function decideAt(now: string, windows: Windows, o: SnapOpts = {}, end?: 'Finish' | 'Abort'): PlanDecision {
  const snap = snapshot(o);
  snap.plan.spec.maintenanceWindows = windows;
  if (end) snap.plan.spec.maintenanceWindowEnd = end;
  snap.now = now;
  return decidePlan(snap);
}

describe('plan-controller maintenance windows (decide, injected clock)', () => {
  it('a closed window holds a fresh plan: pending, reason and message name the next opening, requeue then', () => {
    const d = decideAt('2026-11-28T20:00:00Z', SAT_NIGHT); // Sat 21:00 in Berlin
    expect(starts(d)).to.deep.equal([]);
    expect(d.status.updateStatus).to.equal('pending');
    expect(ready(d)?.reason).to.equal(Reasons.waitingForMaintenanceWindow);
    expect(ready(d)?.message).to.equal('window closed until Sat 22:00 Europe/Berlin (2026-11-28T21:00:00.000Z)');
    expect(cond(d, 'MachineDeploymentUpdate')?.reason).to.equal(Reasons.waitingForMaintenanceWindow);
    expect(d.status.maintenanceWindow).to.deep.equal({
      state: 'Closed',
      since: '2026-11-28T20:00:00Z',
      nextChange: '2026-11-28T21:00:00.000Z',
      message: 'window closed until Sat 22:00 Europe/Berlin (2026-11-28T21:00:00.000Z)',
    });
    expect(d.requeueAt).to.equal('2026-11-28T21:00:00.000Z');
    expect(d.events.map((e) => e.reason)).to.include(PlanEventReasons.windowClosed);
    // Holding the plan is not wanting to start: it neither takes the finalizer nor counts machines as done.
    expect(d.finalizer).to.equal(undefined);
  });

  it('an open window lets the plan start and requeues at its close (4h of elapsed time, across midnight)', () => {
    const d = decideAt('2026-11-28T21:30:00Z', SAT_NIGHT);
    expect(starts(d)).to.deep.equal(['cluster1-cp-0']);
    expect(ready(d)?.reason).to.equal(Reasons.updating);
    expect(d.status.maintenanceWindow?.state).to.equal('Open');
    expect(d.status.maintenanceWindow?.message).to.equal('window open until Sun 02:00 Europe/Berlin (2026-11-29T01:00:00.000Z)');
    expect(d.requeueAt).to.equal('2026-11-29T01:00:00.000Z');
  });

  it('after midnight the Saturday window is still open; at its end it is closed until next Saturday', () => {
    expect(starts(decideAt('2026-11-29T00:59:59Z', SAT_NIGHT))).to.deep.equal(['cluster1-cp-0']);
    const d = decideAt('2026-11-29T01:00:00Z', SAT_NIGHT);
    expect(starts(d)).to.deep.equal([]);
    expect(ready(d)?.message).to.equal('window closed until Sat 22:00 Europe/Berlin (2026-12-05T21:00:00.000Z)');
  });

  it('spring forward: a 02:30 opening the clocks skip opens at 03:30 local (01:30Z)', () => {
    const daily: Windows = [{ start: '02:30', duration: '1h', timeZone: 'Europe/Berlin' }];
    const d = decideAt('2026-03-29T01:00:00Z', daily); // 03:00 CEST, just after the jump
    expect(starts(d)).to.deep.equal([]);
    expect(ready(d)?.message).to.equal('window closed until Sun 03:30 Europe/Berlin (2026-03-29T01:30:00.000Z)');
    expect(starts(decideAt('2026-03-29T01:30:00Z', daily))).to.deep.equal(['cluster1-cp-0']);
  });

  it('fall back: the duration is elapsed time, so a midnight window closes at 03:00 CET (4h after 00:00 CEST)', () => {
    const daily: Windows = [{ start: '00:00', duration: '4h', timeZone: 'Europe/Berlin' }];
    const d = decideAt('2026-10-25T01:30:00Z', daily); // the repeated hour
    expect(starts(d)).to.deep.equal(['cluster1-cp-0']);
    expect(d.status.maintenanceWindow?.message).to.equal('window open until Sun 03:00 Europe/Berlin (2026-10-25T02:00:00.000Z)');
    expect(starts(decideAt('2026-10-25T02:00:00Z', daily))).to.deep.equal([]);
  });

  it('window end, default Finish: the machine in flight finishes, no new one starts, nothing is aborted', () => {
    const d = decideAt('2026-11-29T01:00:00Z', SAT_NIGHT, mdOnly({ mus: [mu('cluster1-md-0-0', 'updating')] }));
    expect(starts(d)).to.deep.equal([]);
    expect(d.abort).to.deep.equal([]);
    expect(d.status.updateStatus).to.equal('updating');
    expect(ready(d)?.reason).to.equal(Reasons.waitingForMaintenanceWindow);
    expect(ready(d)?.message).to.match(/^window closed until Sat 22:00 Europe\/Berlin .*; 3\/6 machines updated; .*cluster1-md-0-0/);
  });

  it('window end, Abort: the machine in flight is aborted and the plan ends aborted, even when the window reopens', () => {
    const at = '2026-11-29T01:00:00Z';
    const d1 = decideAt(at, SAT_NIGHT, mdOnly({ mus: [mu('cluster1-md-0-0', 'updating')] }), 'Abort');
    expect(d1.abort).to.have.length(1);
    expect(starts(d1)).to.deep.equal([]);
    expect(d1.status.updateStatus).to.equal('aborting');
    expect(ready(d1)?.reason).to.equal(Reasons.maintenanceWindowEnded);
    // Next reconcile: the update stopped; the plan's recorded reason keeps it stopping although nothing is in flight,
    // and a window that is open again does not restart it.
    const o = mdOnly({ mus: [mu('cluster1-md-0-0', 'aborted', { phase: 'aborting' })] });
    o.plan = plan({ ...started, status: { ...d1.status } });
    const d2 = decideAt('2026-12-05T21:30:00Z', SAT_NIGHT, o, 'Abort');
    expect(starts(d2)).to.deep.equal([]);
    expect(d2.status.updateStatus).to.equal('aborted');
    expect(ready(d2)?.reason).to.equal(Reasons.maintenanceWindowEnded);
    expect(ready(d2)?.message).to.match(/maintenance window closed with machines in update/);
  });

  it('window end, Abort, nothing in flight: the plan just waits for the next window', () => {
    const d = decideAt('2026-11-29T01:00:00Z', SAT_NIGHT, mdOnly({ mus: [mu('cluster1-md-0-0', 'updated')] }), 'Abort');
    expect(d.abort).to.deep.equal([]);
    expect(d.status.updateStatus).to.equal('updating');
    expect(ready(d)?.reason).to.equal(Reasons.waitingForMaintenanceWindow);
  });

  it('paused answers before the window; the window before the wait for an older plan, which it does not supersede', () => {
    const paused = decideAt('2026-11-28T20:00:00Z', SAT_NIGHT, { plan: plan({ paused: true }) });
    expect(ready(paused)?.reason).to.equal(Reasons.paused);
    const older = plan({ name: 'p0', created: '2025-12-31T00:00:00Z', status: { updateStatus: 'updating' } });
    const p = plan();
    const d = decideAt('2026-11-28T20:00:00Z', SAT_NIGHT, { plan: p, plans: [older, p] });
    expect(d.supersede).to.deep.equal([]);
    expect(ready(d)?.reason).to.equal(Reasons.waitingForMaintenanceWindow);
    expect(ready(d)?.message).to.match(/then it waits for plan p0 to finish$/);
  });

  it('Events follow the recorded state: Opened on a change, nothing while it stays', () => {
    const closed = decideAt('2026-11-28T20:00:00Z', SAT_NIGHT);
    const o: SnapOpts = { plan: plan({ status: { ...closed.status } }) };
    const still = decideAt('2026-11-28T20:30:00Z', SAT_NIGHT, o);
    expect(still.events.map((e) => e.reason)).to.not.include(PlanEventReasons.windowClosed);
    expect(still.status.maintenanceWindow?.since).to.equal('2026-11-28T20:00:00Z');
    const opened = decideAt('2026-11-28T21:00:00Z', SAT_NIGHT, o);
    const ev = opened.events.find((e) => e.reason === PlanEventReasons.windowOpened);
    expect(ev?.message).to.equal('maintenanceWindow: window open until Sun 02:00 Europe/Berlin (2026-11-29T01:00:00.000Z)');
    expect(opened.status.maintenanceWindow?.since).to.equal('2026-11-28T21:00:00Z');
  });

  it('bad windows: Valid=False lists every problem and the plan starts nothing', () => {
    const d = decideAt('2026-11-28T21:30:00Z', [
      { days: ['Sunday'], start: '25:00', duration: '4h', timeZone: 'Mars/Olympus' },
      { start: '22:00', duration: '0s', timeZone: 'UTC' },
    ]);
    expect(starts(d)).to.deep.equal([]);
    const valid = cond(d, 'Valid');
    expect(valid?.status).to.equal('False');
    for (const part of [
      'spec.maintenanceWindows[0].start',
      'spec.maintenanceWindows[0].timeZone',
      'spec.maintenanceWindows[0].days',
      'spec.maintenanceWindows[1].duration',
    ])
      expect(valid?.message).to.contain(part);
    expect(d.status.maintenanceWindow).to.equal(undefined);
  });

  it('overlapping windows are invalid', () => {
    const d = decideAt('2026-11-28T21:30:00Z', [
      { days: ['Sat'], start: '22:00', duration: '4h', timeZone: 'Europe/Berlin' },
      { days: ['Sun'], start: '01:00', duration: '1h', timeZone: 'Europe/Berlin' },
    ]);
    expect(cond(d, 'Valid')?.message).to.match(/maintenanceWindows\[0\] and spec.maintenanceWindows\[1\] overlap/);
    expect(starts(d)).to.deep.equal([]);
  });

  it('without windows nothing changes: no window status, no clock requeue', () => {
    const d = decideAt('2026-11-28T20:00:00Z', []);
    expect(starts(d)).to.deep.equal(['cluster1-cp-0']);
    expect(d.status.maintenanceWindow).to.equal(undefined);
    expect(d.requeueAt).to.equal(undefined);
  });
});

describe('plan-controller soak (decide, injected clock)', () => {
  /** md-0-0's update completed at 00:00; decide at `now` with spec.soak `soak` and the plan's recorded status. */
  function decideSoak(now: string, soak: string, o: { ready?: boolean; status?: InPlaceUpdatePlan['status'] } = {}): PlanDecision {
    const done = mu('cluster1-md-0-0', 'updated');
    done.status!.completionTime = '2026-01-01T00:00:00Z';
    // The node runs the new kubelet (verification passes): the soak is what is tested.
    const m0 = machine('cluster1-md-0-0', { md: 'cluster1-md-0', ready: o.ready ?? true });
    (m0['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.1' };
    const snapOpts = mdOnly({ mus: [done], machines: [m0, ...mdMachines(3).slice(1)] });
    snapOpts.plan = plan({ ...started, ...(o.status ? { status: o.status } : {}) });
    const snap = snapshot(snapOpts);
    snap.plan.spec.soak = soak;
    snap.now = now;
    return decidePlan(snap);
  }
  const md0 = (d: PlanDecision) => d.status.targets?.find((t) => t.name === 'cluster1-md-0');

  it('an updated machine keeps its slot while it soaks, says so, and the plan wakes when the soak ends', () => {
    const d = decideSoak('2026-01-01T00:03:00Z', '10m');
    expect(starts(d)).to.deep.equal([]);
    expect(md0(d)?.message).to.contain('machine cluster1-md-0-0 soaking 3m/10m');
    expect(ready(d)?.message).to.contain('soaking 3m/10m');
    expect(md0(d)?.updated).to.equal(0);
    expect(d.requeueAt).to.equal('2026-01-01T00:10:00.000Z');
  });

  it('once the soak is over the machine counts as updated and the next one starts', () => {
    const d = decideSoak('2026-01-01T00:10:00Z', '10m');
    expect(starts(d)).to.deep.equal(['cluster1-md-0-1']);
    expect(md0(d)?.updated).to.equal(1);
  });

  it('a machine that turns unhealthy during its soak fails under Halt, and the failure is recorded', () => {
    const d = decideSoak('2026-01-01T00:04:00Z', '10m', { ready: false });
    expect(starts(d)).to.deep.equal([]);
    expect(md0(d)?.failed).to.equal(1);
    expect(md0(d)?.updateStatus).to.equal('failed');
    expect(md0(d)?.message).to.match(
      /machine cluster1-md-0-0 turned unhealthy during its soak \(4m of 10m after its update\): Ready=False/,
    );
    expect(d.status.gateFailures?.map((f) => f.machine)).to.deep.equal(['cluster1-md-0-0']);
    // Level-based: healthy again and past the soak, the recorded failure still counts.
    const later = decideSoak('2026-01-01T00:30:00Z', '10m', { status: { ...d.status, updateStatus: 'updating' } });
    expect(md0(later)?.failed).to.equal(1);
    expect(starts(later)).to.deep.equal([]);
  });

  it('a bad soak is a validation problem', () => {
    const d = decideSoak('2026-01-01T00:03:00Z', 'ten minutes');
    expect(cond(d, 'Valid')?.message).to.contain('spec.soak');
    expect(starts(d)).to.deep.equal([]);
  });
});

describe('plan-controller verification (decide, injected clock)', () => {
  /** md-0-0's update to v1.30.1 completed at 00:00; its Machine mirrors kubelet `kubelet` from the Node. */
  function decideVerify(now: string, kubelet: string | undefined): PlanDecision {
    const done = mu('cluster1-md-0-0', 'updated');
    done.status!.completionTime = '2026-01-01T00:00:00Z';
    const m = machine('cluster1-md-0-0', { md: 'cluster1-md-0' });
    if (kubelet) (m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: kubelet };
    const snapOpts = mdOnly({ mus: [done], machines: [m, ...mdMachines(3).slice(1)] });
    const snap = snapshot(snapOpts);
    snap.plan.spec.verification = { timeout: '5m' };
    snap.now = now;
    return decidePlan(snap);
  }
  const md0 = (d: PlanDecision) => d.status.targets?.find((t) => t.name === 'cluster1-md-0');

  it('holds the machine until the node reports the new kubelet, then it counts as updated', () => {
    const waiting = decideVerify('2026-01-01T00:01:00Z', 'v1.30.0');
    expect(starts(waiting)).to.deep.equal([]);
    expect(md0(waiting)?.message).to.contain('machine cluster1-md-0-0 verifying: kubelet v1.30.0, want v1.30.1 (1m/5m)');
    expect(waiting.requeueAt).to.equal('2026-01-01T00:05:00.000Z');
    const ok = decideVerify('2026-01-01T00:01:00Z', 'v1.30.1');
    expect(md0(ok)?.updated).to.equal(1);
    expect(starts(ok)).to.deep.equal(['cluster1-md-0-1']);
  });

  it('is the default for a Kubernetes version change (10m timeout); mode Disabled trusts the updater', () => {
    const snapFor = (verification?: { mode: 'Disabled' }) => {
      const done = mu('cluster1-md-0-0', 'updated');
      done.status!.completionTime = '2026-01-01T00:00:00Z';
      const m = machine('cluster1-md-0-0', { md: 'cluster1-md-0' });
      (m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.0' };
      const snap = snapshot(mdOnly({ mus: [done], machines: [m, ...mdMachines(3).slice(1)] }));
      if (verification) snap.plan.spec.verification = verification;
      snap.now = '2026-01-01T00:01:00Z';
      return decidePlan(snap);
    };
    const byDefault = snapFor();
    expect(md0(byDefault)?.message).to.contain('machine cluster1-md-0-0 verifying: kubelet v1.30.0, want v1.30.1 (1m/10m)');
    expect(starts(byDefault)).to.deep.equal([]);
    const disabled = snapFor({ mode: 'Disabled' });
    expect(md0(disabled)?.updated).to.equal(1);
    expect(starts(disabled)).to.deep.equal(['cluster1-md-0-1']);
  });

  it('a node still on the old kubelet at the timeout fails the machine, naming the mismatch', () => {
    const d = decideVerify('2026-01-01T00:05:00Z', 'v1.30.0');
    expect(md0(d)?.failed).to.equal(1);
    expect(md0(d)?.message).to.contain(
      'machine cluster1-md-0-0 failed verification: Machine.status.nodeInfo.kubeletVersion is v1.30.0, not v1.30.1, 5m after its update',
    );
    expect(d.status.gateFailures?.map((f) => f.machine)).to.deep.equal(['cluster1-md-0-0']);
    expect(starts(d)).to.deep.equal([]);
  });
});

describe('plan-controller verification of what an updater declares (verify: osImage, kernelVersion, reboot)', () => {
  type NodeInfo = { osImage?: string; kernelVersion?: string; bootID?: string; kubeletVersion?: string };
  /**
   * md-0-0's update completed at 00:00 with an updater declaring `verify`; its Machine mirrors `info` from the Node; the
   * MachineUpdate recorded bootID `boot-1` when it started (unless `recorded` is false).
   */
  function decideDeclared(now: string, verify: Record<string, unknown>, info: NodeInfo, o: { recorded?: boolean; mode?: 'Disabled' } = {}) {
    const done = mu('cluster1-md-0-0', 'updated');
    done.status!.completionTime = '2026-01-01T00:00:00Z';
    done.spec.updaters = done.spec.updaters.map((u) => ({ ...u, verify }));
    if (o.recorded !== false) done.metadata = { ...done.metadata, annotations: { [BOOT_ID_BEFORE_ANNOTATION]: 'boot-1' } };
    const m = machine('cluster1-md-0-0', { md: 'cluster1-md-0' });
    (m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.1', ...info };
    const snap = snapshot(mdOnly({ mus: [done], machines: [m, ...mdMachines(3).slice(1)] }));
    snap.plan.spec.verification = { timeout: '5m', ...(o.mode ? { mode: o.mode } : {}) };
    snap.now = now;
    return decidePlan(snap);
  }
  const md0 = (d: PlanDecision) => d.status.targets?.find((t) => t.name === 'cluster1-md-0');
  const later = '2026-01-01T00:05:00Z';

  it('a lying updater is caught for each check, with a message naming the mismatch', () => {
    const cases: [Record<string, unknown>, NodeInfo, string][] = [
      [
        { osImage: 'Ubuntu 24.04.1 LTS' },
        { osImage: 'Ubuntu 22.04.4 LTS' },
        'Machine.status.nodeInfo.osImage is Ubuntu 22.04.4 LTS, not Ubuntu 24.04.1 LTS',
      ],
      [
        { kernelVersion: '6.11.0-9-generic' },
        { kernelVersion: '6.8.0-45-generic' },
        'Machine.status.nodeInfo.kernelVersion is 6.8.0-45-generic, not 6.11.0-9-generic',
      ],
      [{ reboot: true }, { bootID: 'boot-1' }, 'Machine.status.nodeInfo.bootID is still boot-1 (the node did not reboot)'],
    ];
    for (const [verify, info, mismatch] of cases) {
      const d = decideDeclared(later, verify, info);
      expect(md0(d)?.failed, mismatch).to.equal(1);
      expect(md0(d)?.message).to.contain(
        `machine cluster1-md-0-0 failed verification: ${mismatch}, 5m after its update (the updater reported updated, the node does not show it)`,
      );
      expect(d.status.gateFailures?.map((f) => f.machine)).to.deep.equal(['cluster1-md-0-0']);
      expect(starts(d)).to.deep.equal([]);
    }
  });

  it('holds the machine while the node does not show it yet, naming every difference', () => {
    const d = decideDeclared(
      '2026-01-01T00:02:00Z',
      { osImage: 'img-b', kernelVersion: '6.11.0', reboot: true },
      { osImage: 'img-a', kernelVersion: '6.8.0', bootID: 'boot-1' },
    );
    expect(md0(d)?.message).to.contain(
      'machine cluster1-md-0-0 verifying: osImage img-a, want img-b, kernel 6.8.0, want 6.11.0, bootID boot-1 unchanged (no reboot seen) (2m/5m)',
    );
    expect(starts(d)).to.deep.equal([]);
  });

  it('an honest updater passes: the node shows the image, the kernel and a new boot', () => {
    const d = decideDeclared(
      later,
      { osImage: 'img-b', kernelVersion: '6.11.0', reboot: true },
      { osImage: 'img-b', kernelVersion: '6.11.0', bootID: 'boot-2' },
    );
    expect(md0(d)?.updated).to.equal(1);
    expect(d.status.gateFailures).to.equal(undefined);
    expect(starts(d)).to.deep.equal(['cluster1-md-0-1']);
  });

  it('a reboot whose boot before the update was not recorded cannot be verified, and says so', () => {
    const d = decideDeclared(later, { reboot: true }, { bootID: 'boot-2' }, { recorded: false });
    expect(md0(d)?.message).to.contain(`the bootID before the update is unknown (no ${BOOT_ID_BEFORE_ANNOTATION} annotation)`);
  });

  it('mode Disabled trusts the updater', () => {
    const d = decideDeclared(later, { osImage: 'img-b' }, { osImage: 'img-a' }, { mode: 'Disabled' });
    expect(md0(d)?.updated).to.equal(1);
  });

  it('a bad timeout is a validation problem', () => {
    const snap = snapshot(mdOnly());
    snap.plan.spec.verification = { timeout: 'soon' };
    expect(cond(decidePlan(snap), 'Valid')?.message).to.contain('spec.verification.timeout');
  });
});

describe('plan-controller alert gate (decide, injected clock and endpoint answer)', () => {
  const firing = (alertname: string, severity: string) => ({ labels: { alertname, severity, cluster: 'cluster1' }, state: 'firing' });
  function decideAlerts(
    now: string,
    alerts: PlanSnapshot['alerts'],
    o: {
      status?: InPlaceUpdatePlan['status'];
      matchers?: string[];
      policy?: PlanSnapshot['alertGatePolicy'] | null;
      url?: string;
      holdTimeout?: string;
    } = {},
  ) {
    const snap = snapshot({ plan: plan(o.status ? { status: o.status } : {}) });
    snap.plan.spec.alertGate = {
      url: o.url ?? 'http://prometheus:9090',
      matchers: o.matchers ?? ['severity="critical"'],
      holdTimeout: o.holdTimeout ?? '10m',
    };
    if (o.policy !== null) snap.alertGatePolicy = o.policy ?? { endpoints: [{ url: 'http://prometheus:9090' }] };
    if (alerts) snap.alerts = alerts;
    snap.now = now;
    return decidePlan(snap);
  }

  it('a matching firing alert holds new starts and is named; others do not', () => {
    const d = decideAlerts('2026-01-01T00:10:00Z', { ok: true, alerts: [firing('NodeDown', 'critical'), firing('DiskSlow', 'warning')] });
    expect(starts(d)).to.deep.equal([]);
    expect(ready(d)?.reason).to.equal(Reasons.waitingForAlerts);
    expect(ready(d)?.message).to.equal('alert NodeDown firing (severity="critical")');
    expect(d.status.alertGate).to.include({ state: 'Firing', since: '2026-01-01T00:10:00.000Z' });
    expect(d.events.map((e) => e.reason)).to.include(PlanEventReasons.alertGateHolding);
    const clear = decideAlerts('2026-01-01T00:10:00Z', { ok: true, alerts: [firing('DiskSlow', 'warning')] });
    expect(starts(clear)).to.deep.equal(['cluster1-cp-0']);
    expect(clear.status.alertGate?.state).to.equal('Clear');
    expect(clear.requeueAt).to.equal('2026-01-01T00:10:05.000Z');
  });

  it('holdTimeout may be up to 168h, as the CRD and the docs say; longer is refused naming that bound', () => {
    const clear = { ok: true as const, alerts: [] };
    expect(ready(decideAlerts('2026-01-01T00:10:00Z', clear, { holdTimeout: '168h' }))?.reason).to.not.equal(Reasons.invalid);
    const over = decideAlerts('2026-01-01T00:10:00Z', clear, { holdTimeout: '169h' });
    expect(over.status.conditions?.find((c) => c.type === 'Valid')?.message).to.contain(
      'spec.alertGate.holdTimeout: 169h is outside 1s..168h',
    );
  });

  it('an endpoint that cannot be read holds the plan (fail closed), with the error', () => {
    const d = decideAlerts('2026-01-01T00:10:00Z', { ok: false, error: 'GET http://prometheus:9090/api/v1/alerts failed: ECONNREFUSED' });
    expect(starts(d)).to.deep.equal([]);
    expect(ready(d)?.message).to.match(/^alert endpoint unreadable, holding the plan \(fail closed\): .*ECONNREFUSED/);
    expect(d.status.alertGate?.state).to.equal('Unreachable');
  });

  it('held for holdTimeout since the hold began, the plan halts and ends failed naming the alerts', () => {
    const alerts = { ok: true as const, alerts: [firing('NodeDown', 'critical')] };
    const first = decideAlerts('2026-01-01T00:10:00Z', alerts);
    const still = decideAlerts('2026-01-01T00:19:59Z', alerts, { status: first.status });
    expect(still.status.updateStatus).to.equal('pending');
    expect(still.status.alertGate?.since).to.equal('2026-01-01T00:10:00.000Z');
    const halted = decideAlerts('2026-01-01T00:20:00Z', alerts, { status: still.status });
    expect(halted.status.updateStatus).to.equal('failed');
    expect(halted.status.alertGate?.state).to.equal('Halted');
    expect(ready(halted)?.message).to.contain('halted: held longer than holdTimeout 10m: alert NodeDown firing');
    expect(halted.events.map((e) => e.reason)).to.include(PlanEventReasons.alertGateHalted);
  });

  it('Clear on every reconcile keeps the status as it was: since moves only when the state changes', () => {
    const clear = { ok: true as const, alerts: [] };
    const first = decideAlerts('2026-01-01T00:10:00Z', clear);
    expect(first.status.alertGate).to.include({ state: 'Clear', since: '2026-01-01T00:10:00.000Z' });
    const later = decideAlerts('2026-01-01T00:15:00Z', clear, { status: first.status });
    expect(later.status.alertGate).to.deep.equal(first.status.alertGate);
    const firingNow = decideAlerts(
      '2026-01-01T00:16:00Z',
      { ok: true, alerts: [firing('NodeDown', 'critical')] },
      { status: later.status },
    );
    expect(firingNow.status.alertGate).to.include({ state: 'Firing', since: '2026-01-01T00:16:00.000Z' });
  });

  it('the next query is due one interval after the last read, not after this reconcile', () => {
    const d = decideAlerts('2026-01-01T00:10:03Z', { ok: true, alerts: [], at: '2026-01-01T00:10:00.000Z' });
    expect(d.requeueAt).to.equal('2026-01-01T00:10:05.000Z');
  });

  it("a gate the operator's policy does not allow (or no policy at all) is Valid=False naming the rule; nothing starts", () => {
    const none = decideAlerts('2026-01-01T00:10:00Z', undefined, { policy: null });
    expect(cond(none, 'Valid')?.status).to.equal('False');
    expect(cond(none, 'Valid')?.message).to.contain(
      'spec.alertGate.url: "http://prometheus:9090" refused: the operator allows no alert endpoint',
    );
    expect(starts(none)).to.deep.equal([]);
    const other = decideAlerts('2026-01-01T00:10:00Z', undefined, { url: 'http://prometheus:9091' });
    expect(cond(other, 'Valid')?.message).to.contain(
      'spec.alertGate.url: "http://prometheus:9091" refused by the alert-gate policy: no allowed endpoint has its scheme, host, port and path (allowed: http://prometheus:9090)',
    );
    expect(starts(other)).to.deep.equal([]);
    // A refusal the effect found (a Secret without the opt-in label) is listed the same way.
    const label =
      'spec.alertGate.secretRef: Secret default/c refused: it lacks the label inplace.cluster.x-k8s.io/alert-gate-credentials: "true"';
    const unlabelled = decideAlerts('2026-01-01T00:10:00Z', { ok: false, error: label, refused: [label] });
    expect(cond(unlabelled, 'Valid')?.message).to.contain(label);
    expect(starts(unlabelled)).to.deep.equal([]);
  });

  it('malformed matchers and URLs are validation problems', () => {
    const d = decideAlerts('2026-01-01T00:10:00Z', { ok: true, alerts: [] }, { matchers: ['severity=critical', 'cluster="c1"'] });
    expect(cond(d, 'Valid')?.message).to.contain('spec.alertGate.matchers[0]');
    expect(cond(d, 'Valid')?.message).to.not.contain('matchers[1]');
    expect(starts(d)).to.deep.equal([]);
  });
});

describe('plan-controller verification: the kubelet version', () => {
  it('matches up to a leading v and build metadata only one side carries; never a different version', () => {
    expect(sameKubeletVersion('v1.30.1', 'v1.30.1')).to.equal(true);
    expect(sameKubeletVersion('1.30.1', 'v1.30.1')).to.equal(true);
    expect(sameKubeletVersion('v1.30.1+rke2r1', 'v1.30.1')).to.equal(true);
    expect(sameKubeletVersion('v1.30.1+rke2r1', 'v1.30.1+rke2r1')).to.equal(true);
    expect(sameKubeletVersion('v1.30.1+rke2r1', 'v1.30.1+rke2r2')).to.equal(false);
    expect(sameKubeletVersion('v1.29.5', 'v1.30.1')).to.equal(false);
    expect(sameKubeletVersion('v1.30.10', 'v1.30.1')).to.equal(false);
    expect(sameKubeletVersion('v1.30.1-rc.1', 'v1.30.1')).to.equal(false);
    expect(sameKubeletVersion(undefined, 'v1.30.1')).to.equal(false);
  });
});

describe('plan-controller soak gate view (OverlayMap)', () => {
  it('reads as a copy of the update map with the held and failed updates replaced, and leaves the plan map as it was', () => {
    const p = plan(started);
    p.spec.soak = '10m';
    p.spec.verification = { mode: 'Disabled' } as NonNullable<InPlaceUpdatePlan['spec']['verification']>;
    const names = ['m-a', 'm-b', 'm-c', 'm-d'];
    const list = [mu('m-a', 'updated'), mu('m-b', 'updating'), mu('m-c', 'updated'), mu('m-d', 'updated')];
    // m-a completed a minute ago (soaking: held), m-c an hour ago (passed), m-d a minute ago on an unhealthy machine.
    const done = ['2026-01-01T00:09:00Z', undefined, '2026-01-01T00:00:00Z', '2026-01-01T00:09:00Z'];
    list.forEach((u, i) => {
      if (done[i]) u.status = { ...u.status, completionTime: done[i] } as MachineUpdate['status'];
    });
    const ms = names.map((n) => machine(n, { md: 'cluster1-md-0' }));
    (ms[3]!['status'] as Record<string, unknown>) = { conditions: [{ type: 'Ready', status: 'False', reason: 'Down' }] };
    const mus = new Map(list.map((u) => [u.spec.machineRef.name, u]));
    const view = soakGate(p, mus, ms, new Date('2026-01-01T00:10:00Z'));
    expect(view.mus).to.be.instanceOf(OverlayMap);
    expect((view.mus as OverlayMap<string, MachineUpdate>).overrides.size).to.equal(2);
    // What the copy (new Map(mus) with the two set) held: same keys, order, size and values.
    const copy = new Map(mus);
    copy.set('m-a', view.mus.get('m-a')!);
    copy.set('m-d', view.mus.get('m-d')!);
    expect([...view.mus]).to.deep.equal([...copy]);
    expect([...view.mus.keys()]).to.deep.equal(names);
    expect([...view.mus.values()]).to.deep.equal([...copy.values()]);
    expect(view.mus.size).to.equal(4);
    const seen: string[] = [];
    view.mus.forEach((v, k) => seen.push(`${k}=${v.status?.updateStatus}`));
    expect(seen).to.deep.equal(['m-a=updating', 'm-b=updating', 'm-c=updated', 'm-d=failed']);
    expect(view.mus.get('m-c')).to.equal(mus.get('m-c'));
    expect(view.mus.has('m-x')).to.equal(false);
    expect(view.mus.get('m-x')).to.equal(undefined);
    // The plan's own map is not changed (the aborts and labels read it as the records say).
    expect(mus.get('m-a')!.status?.updateStatus).to.equal('updated');
    expect(mus.get('m-d')!.status?.updateStatus).to.equal('updated');
    expect(() => (view.mus as OverlayMap<string, MachineUpdate>).override('m-x', list[0]!)).to.throw(/only keys/);
  });

  it('is the plan map itself when nothing is held or failed', () => {
    const p = plan(started);
    const mus = new Map([['m-b', mu('m-b', 'updating')]]);
    expect(soakGate(p, mus, [machine('m-b', { md: 'cluster1-md-0' })], new Date('2026-01-01T00:10:00Z')).mus).to.equal(mus);
  });
});
