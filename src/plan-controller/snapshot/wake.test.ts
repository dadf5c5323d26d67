import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject } from '../../api/index.js';
import { Annotations, Finalizers, Labels } from '../../api/index.js';
import { MemoryStore } from '../../runtime/store.js';
import { labelValue } from '../decide/names.js';
import { OWNERS_ALIGNED, OwnerReasons } from '../../rules/owners.js';
import { CLUSTER, NS, machine, md, plan } from '../testkit.js';
import type { WakeView } from './wake.js';
import { plansOfCluster, plansOfControlPlane, plansToWake } from './wake.js';

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

  it('finds plans by cluster and by control plane through the store index, as the plans change and go', () => {
    const store = new MemoryStore<P>();
    const mk = (name: string, ns: string, cluster: string, cp?: string): P => {
      const p = plan({ name }) as P;
      p.metadata.namespace = ns;
      p.spec.clusterName = cluster;
      if (cp) p.spec.controlPlane = { ...p.spec.controlPlane!, name: cp };
      else delete p.spec.controlPlane;
      return p;
    };
    store.upsert(mk('p1', NS, 'c1', 'c1-cp'));
    expect(plansOfCluster(store, NS, 'c1').map((p) => p.metadata.name)).to.deep.equal(['p1']);
    store.upsert(mk('p2', NS, 'c1'));
    store.upsert(mk('p3', 'elsewhere', 'c1', 'c1-cp'));
    store.upsert(mk('p4', NS, 'c2', 'c2-cp'));
    const names = (ps: P[]): string[] => ps.map((p) => p.metadata.name!).sort();
    expect(names(plansOfCluster(store, NS, 'c1'))).to.deep.equal(['p1', 'p2']);
    expect(names(plansOfCluster(store, 'elsewhere', 'c1'))).to.deep.equal(['p3']);
    expect(names(plansOfControlPlane(store, NS, 'c1-cp'))).to.deep.equal(['p1']);
    expect(names(plansOfControlPlane(store, NS, 'c2-cp'))).to.deep.equal(['p4']);
    // A plan's spec changes (a new version in the cache) and plans go: the answers follow.
    store.upsert(mk('p1', NS, 'c2', 'c2-cp'));
    store.remove(NS, 'p4');
    expect(names(plansOfCluster(store, NS, 'c1'))).to.deep.equal(['p2']);
    expect(names(plansOfCluster(store, NS, 'c2'))).to.deep.equal(['p1']);
    expect(names(plansOfControlPlane(store, NS, 'c1-cp'))).to.deep.equal([]);
    expect(names(plansOfControlPlane(store, NS, 'c2-cp'))).to.deep.equal(['p1']);
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
      plans: [
        finished('a', 'updated', cond(OwnerReasons.alignFailed)),
        finished('b', 'failed', cond(OwnerReasons.mixedMachines)),
        // A conflict on the alignment's last try: not finished, so it goes on.
        finished('c', 'updated', cond(OwnerReasons.aligning)),
        finished('d', 'updated', cond(OwnerReasons.aligned)),
      ],
    });
    expect(woken(v)).to.deep.equal(['a', 'c']);
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
