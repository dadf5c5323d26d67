import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import { Annotations, Finalizers, Labels } from '../../api/index.js';
import { MemoryStore } from '../../runtime/store.js';
import { labelValue } from '../decide/names.js';
import { OWNERS_ALIGNED, OwnerReasons } from '../../rules/owners.js';
import { CLUSTER, NS, machine, md, plan } from '../testkit.js';
import type { WakeView } from './wake.js';
import { plansToWake } from './wake.js';

type P = InPlaceUpdatePlan & KubeObject;

function view(o: { plans: InPlaceUpdatePlan[]; machines?: KubeObject[]; mds?: KubeObject[] }): WakeView {
  const v: WakeView = {
    plans: new MemoryStore<P>(),
    machines: new MemoryStore(),
    machineDeployments: new MemoryStore(),
  };
  for (const p of o.plans) (v.plans as MemoryStore<P>).upsert(p as P);
  for (const m of o.machines ?? []) (v.machines as MemoryStore).upsert(m);
  for (const m of o.mds ?? []) (v.machineDeployments as MemoryStore).upsert(m);
  return v;
}

const finished = (
  name: string,
  updateStatus: 'updated' | 'failed' | 'aborted' = 'updated',
  extra: Partial<InPlaceUpdatePlan['status']> = {},
) => plan({ name, status: { updateStatus, ...extra } });
const woken = (v: WakeView): string[] =>
  plansToWake(v, NS, CLUSTER)
    .map((k) => k.name)
    .sort();

describe('plan-controller wake-up mapper (plansToWake)', () => {
  it('wakes plans in flight and not yet reported, never finished plans that hold nothing', () => {
    const v = view({
      plans: [
        plan({ name: 'new' }),
        plan({ name: 'going', status: { updateStatus: 'updating' } }),
        plan({ name: 'stopping', status: { updateStatus: 'aborting' } }),
        finished('a'),
        finished('b', 'failed'),
        finished('c', 'aborted'),
      ],
      machines: [machine('m1', { md: 'cluster1-md-0' })],
      mds: [md()],
    });
    expect(woken(v)).to.deep.equal(['going', 'new', 'stopping']);
  });

  it('ignores plans of other clusters and namespaces', () => {
    const other = plan({ name: 'other' });
    other.spec.clusterName = 'cluster2';
    const v = view({ plans: [plan({ name: 'mine' }), other] });
    expect(woken(v)).to.deep.equal(['mine']);
    expect(plansToWake(v, 'elsewhere', CLUSTER)).to.deep.equal([]);
    expect(plansToWake(v, NS, undefined)).to.deep.equal([]);
  });

  it('wakes a finished plan that still labels a machine (it unlabels it)', () => {
    const v = view({
      plans: [finished('a'), finished('b')],
      machines: [machine('m1', { labels: { [Labels.planName]: labelValue('a') } })],
    });
    expect(woken(v)).to.deep.equal(['a']);
  });

  it('wakes a finished plan being deleted while it holds its finalizer, not once released', () => {
    const holding = finished('a');
    holding.metadata!.deletionTimestamp = '2026-01-01T00:20:00Z';
    holding.metadata!.finalizers = [Finalizers.plan];
    const released = finished('b');
    released.metadata!.deletionTimestamp = '2026-01-01T00:20:00Z';
    released.metadata!.finalizers = ['someone-else'];
    expect(woken(view({ plans: [holding, released] }))).to.deep.equal(['a']);
  });

  it('wakes the finished plan whose surge is still to restore (and every plan of the cluster for a legacy surge without surge-plan)', () => {
    const surged = md('cluster1-md-0', { annotations: { [Annotations.surgeOriginalReplicas]: '3', [Annotations.surgePlan]: 'a' } });
    expect(woken(view({ plans: [finished('a'), finished('b')], mds: [surged] }))).to.deep.equal(['a']);
    const legacy = md('cluster1-md-0', { annotations: { [Annotations.surgeOriginalReplicas]: '3' } });
    expect(woken(view({ plans: [finished('a'), finished('b')], mds: [legacy] }))).to.deep.equal(['a', 'b']);
    const otherCluster = md('cluster2-md-0', { clusterName: 'cluster2', annotations: { [Annotations.surgeOriginalReplicas]: '3' } });
    expect(woken(view({ plans: [finished('a')], mds: [otherCluster] }))).to.deep.equal([]);
  });

  it('wakes a finished plan whose owner alignment failed (it is retried), not one whose owners settled', () => {
    const cond = (reason: string) => ({
      conditions: [{ type: OWNERS_ALIGNED, status: 'False' as const, reason, message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    });
    const v = view({
      plans: [finished('a', 'updated', cond(OwnerReasons.alignFailed)), finished('b', 'failed', cond(OwnerReasons.mixedMachines))],
    });
    expect(woken(v)).to.deep.equal(['a']);
  });

  it('costs nothing per kept plan: eight finished plans, one active, one event wakes one plan', () => {
    const plans = [
      ...Array.from({ length: 8 }, (_, i) => finished(`old-${i}`)),
      plan({ name: 'current', status: { updateStatus: 'updating' } }),
    ];
    const v = view({ plans, machines: [machine('m1', { labels: { [Labels.planName]: labelValue('current') } })] });
    expect(woken(v)).to.deep.equal(['current']);
  });
});
