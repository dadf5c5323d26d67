import { expect } from 'chai';
import { Leases } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { delay, waitFor } from '../../test/support/wait.js';
import { LeaderElector, toMicroTime, type Lease } from './leader.js';

const timing = { leaseDurationMs: 300, renewDeadlineMs: 200, retryPeriodMs: 20 };

describe('leader election', () => {
  let client: FakeClient;
  const electors: LeaderElector[] = [];
  beforeEach(() => {
    client = new FakeClient();
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
  });
  const candidate = (identity: string, log: string[]): LeaderElector => {
    const e = new LeaderElector(client, {
      leaseName: 'ctrl',
      leaseNamespace: 'sys',
      identity,
      ...timing,
      onStartedLeading: () => void log.push(`${identity} started`),
      onStoppedLeading: () => void log.push(`${identity} stopped`),
    });
    electors.push(e);
    return e;
  };

  it('formats MicroTime with microseconds', () => {
    expect(toMicroTime(new Date('2026-01-02T03:04:05.678Z'))).to.equal('2026-01-02T03:04:05.678000Z');
  });

  it('creates the lease and leads when nobody holds it', async () => {
    const log: string[] = [];
    const a = candidate('a', log);
    a.start();
    await waitFor(() => a.isLeader);
    const lease = client.peek(Leases, 'sys', 'ctrl') as Lease;
    expect(lease.spec).to.deep.include({ holderIdentity: 'a', leaseDurationSeconds: 1, leaseTransitions: 0 });
    expect(lease.spec!.renewTime).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(log).to.deep.equal(['a started']);
  });

  it('lets only one of two candidates lead, and hands over when the leader stops', async () => {
    const log: string[] = [];
    const a = candidate('a', log);
    const b = candidate('b', log);
    a.start();
    await waitFor(() => a.isLeader);
    b.start();
    await delay(100);
    expect(b.isLeader).to.equal(false);
    expect(b.currentLeader).to.equal('a');
    await a.stop();
    await waitFor(() => b.isLeader, { message: 'b to take over after a released the lease' });
    expect(log).to.deep.equal(['a started', 'a stopped', 'b started']);
    const lease = client.peek(Leases, 'sys', 'ctrl') as Lease;
    expect(lease.spec).to.deep.include({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('takes over a lease whose holder stopped renewing once it expires', async () => {
    client.seed(Leases, {
      metadata: { name: 'ctrl', namespace: 'sys' },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 1, renewTime: toMicroTime(new Date()), leaseTransitions: 3 },
    });
    const log: string[] = [];
    const b = candidate('b', log);
    b.start();
    await delay(300);
    expect(b.isLeader).to.equal(false);
    await waitFor(() => b.isLeader, { message: 'b to acquire the expired lease' });
    expect((client.peek(Leases, 'sys', 'ctrl') as Lease).spec).to.deep.include({ holderIdentity: 'b', leaseTransitions: 4 });
  });

  it('steps down when it cannot renew within the renew deadline', async () => {
    const log: string[] = [];
    const a = candidate('a', log);
    a.start();
    await waitFor(() => a.isLeader);
    // Someone else grabs the lease: every renew now conflicts with a live holder.
    const cur = client.peek(Leases, 'sys', 'ctrl') as Lease;
    const stolen = structuredClone(cur);
    stolen.spec = { ...cur.spec, holderIdentity: 'thief', leaseDurationSeconds: 60, renewTime: toMicroTime(new Date()) };
    await client.update(Leases, stolen);
    await waitFor(() => !a.isLeader, { message: 'a to step down' });
    expect(log).to.deep.equal(['a started', 'a stopped']);
  });
});
