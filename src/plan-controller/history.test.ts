// Which finished plans of a cluster the history limit deletes (pure decision, history.ts).
import { expect } from 'chai';
import type { InPlaceUpdatePlan } from '../api/index.js';
import { pruneFinishedPlans, prunedMessage } from './history.js';

/** A plan created at second `t` with `status` (undefined: not reported yet). */
const plan = (name: string, t: number, status?: string, extra: { deleting?: boolean } = {}): InPlaceUpdatePlan =>
  ({
    apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
    kind: 'InPlaceUpdatePlan',
    metadata: {
      name,
      uid: `uid-${name}`,
      creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, t)).toISOString().replace('.000', ''),
      ...(extra.deleting ? { deletionTimestamp: '2026-01-02T00:00:00Z' } : {}),
    },
    spec: { clusterName: 'c1' },
    ...(status ? { status: { updateStatus: status } } : {}),
  }) as InPlaceUpdatePlan;

const pruned = (plans: InPlaceUpdatePlan[], limit: number, pinned: string[] = []): string[] =>
  pruneFinishedPlans(plans, limit, new Set(pinned)).prune.map((p) => p.name);

describe('plan history limit (pure)', () => {
  const cases: { name: string; plans: InPlaceUpdatePlan[]; limit: number; pinned?: string[]; want: string[] }[] = [
    { name: 'nothing finished: nothing goes', plans: [plan('a', 1, 'updating'), plan('b', 2)], limit: 0, want: [] },
    { name: 'within the limit: nothing goes', plans: [plan('a', 1, 'updated'), plan('b', 2, 'failed')], limit: 2, want: [] },
    {
      name: 'beyond the limit: the oldest go, oldest first',
      plans: [plan('d', 4, 'updated'), plan('a', 1, 'updated'), plan('c', 3, 'aborted'), plan('b', 2, 'failed')],
      limit: 2,
      want: ['a', 'b'],
    },
    {
      name: 'plans in flight never go and do not count',
      plans: [
        plan('a', 1, 'updated'),
        plan('b', 2, 'updated'),
        plan('c', 3, 'updating'),
        plan('d', 4, 'aborting'),
        plan('e', 5, 'pending'),
        plan('f', 6),
      ],
      limit: 1,
      want: ['a'],
    },
    {
      name: 'limit 0 keeps the newest finished plan',
      plans: [plan('a', 1, 'updated'), plan('b', 2, 'failed'), plan('c', 3, 'updating')],
      limit: 0,
      want: ['a'],
    },
    {
      name: 'a plan being deleted neither counts nor goes again',
      plans: [plan('a', 1, 'updated', { deleting: true }), plan('b', 2, 'updated'), plan('c', 3, 'updated')],
      limit: 1,
      want: ['b'],
    },
    {
      name: 'same second: the name orders (the supersede order)',
      plans: [plan('y', 1, 'updated'), plan('x', 1, 'updated'), plan('z', 1, 'updated')],
      limit: 2,
      want: ['x'],
    },
    {
      name: 'a plan an owner holds paused stays and does not count',
      plans: [plan('a', 1, 'failed'), plan('b', 2, 'updated'), plan('c', 3, 'updated'), plan('d', 4, 'updated')],
      limit: 2,
      pinned: ['a'],
      want: ['b'],
    },
    {
      name: 'a pinned newest plan does not use up the limit',
      plans: [plan('a', 1, 'failed'), plan('b', 2, 'updated'), plan('c', 3, 'updated', { deleting: true })],
      limit: 1,
      pinned: ['b'],
      want: [],
    },
  ];
  for (const c of cases) it(c.name, () => expect(pruned(c.plans, c.limit, c.pinned)).to.deep.equal(c.want));

  it('names the newest finished plan (where the Event goes) and the uid precondition of each deletion', () => {
    const d = pruneFinishedPlans([plan('a', 1, 'updated'), plan('b', 2, 'failed'), plan('c', 3, 'updating')], 1);
    expect(d.newestFinished).to.equal('b');
    expect(d.prune).to.deep.equal([{ name: 'a', uid: 'uid-a', updateStatus: 'updated' }]);
    expect(pruneFinishedPlans([plan('c', 3, 'updating')], 1)).to.deep.equal({ prune: [] });
  });

  it('says what went and the limit', () => {
    expect(prunedMessage([{ name: 'a', uid: 'u', updateStatus: 'failed' }], 1)).to.equal(
      'deleted 1 older finished plan of the cluster and their MachineUpdates: a (failed); the plan controller keeps 1 finished plan per cluster (--finished-plans-per-cluster)',
    );
  });
});
