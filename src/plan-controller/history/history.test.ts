// What the history reconciler deletes among a cluster's plans (pure decision, history.ts): by default only the records
// (MachineUpdates, tasks) of old finished plans; plans only by their TTL, plan pruning, or their campaign.
import { expect } from 'chai';
import type { InPlaceUpdatePlan } from '../../api/index.js';
import { CAMPAIGN_KIND, createdByCampaign, decideHistory, prunedMessage, recordsPrunedMessage } from './history.js';

interface Extra {
  deleting?: boolean;
  /** Never touched a machine (invalid, superseded before it started): no startTime. */
  unstarted?: boolean;
  ttl?: number;
  /** Seconds after t that it completed (default 10). */
  ranFor?: number;
  campaign?: boolean;
  /** Ended invalid (pending, Failed=True reason Invalid) instead of a terminal status. */
  endedInvalid?: boolean;
}

const at = (t: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, t)).toISOString().replace('.000', '');

/** A plan created at second `t` with `status` (undefined: not reported yet). */
const plan = (name: string, t: number, status?: string, x: Extra = {}): InPlaceUpdatePlan =>
  ({
    apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
    kind: 'InPlaceUpdatePlan',
    metadata: {
      name,
      uid: `uid-${name}`,
      generation: 1,
      creationTimestamp: at(t),
      ...(x.deleting ? { deletionTimestamp: '2026-01-02T00:00:00Z' } : {}),
      ...(x.campaign
        ? {
            ownerReferences: [
              { apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1', kind: CAMPAIGN_KIND, name: 'c', uid: 'u', controller: true },
            ],
          }
        : {}),
    },
    spec: { clusterName: 'c1', ...(x.ttl !== undefined ? { ttlSecondsAfterFinished: x.ttl } : {}) },
    ...(x.endedInvalid
      ? {
          status: {
            updateStatus: 'pending',
            conditions: [
              { type: 'Failed', status: 'True', reason: 'Invalid', observedGeneration: 1, lastTransitionTime: at(t + (x.ranFor ?? 10)) },
            ],
          },
        }
      : status
        ? {
            status: {
              updateStatus: status,
              ...(x.unstarted ? {} : { startTime: at(t + 1) }),
              ...(['updated', 'failed', 'aborted'].includes(status) ? { completionTime: at(t + (x.ranFor ?? 10)) } : {}),
            },
          }
        : {}),
  }) as InPlaceUpdatePlan;

const NOW = at(3600);
const opts = (limit: number, prunePlans = false, now = NOW) => ({ limit, prunePlans, now });
const decided = (plans: InPlaceUpdatePlan[], limit: number, o: { prunePlans?: boolean; pinned?: string[]; now?: string } = {}) => {
  const d = decideHistory(plans, opts(limit, o.prunePlans ?? false, o.now ?? NOW), new Set(o.pinned ?? []));
  return { plans: d.prune.map((p) => `${p.name}:${p.why}`), records: d.pruneRecords, requeueAfterMs: d.requeueAfterMs };
};

describe('plan history (pure)', () => {
  describe('by default: only the records of old finished plans go, never a user-applied plan', () => {
    it('beyond the limit the oldest plans lose their MachineUpdates, oldest first, and stay', () => {
      const plans = [plan('d', 4, 'updated'), plan('a', 1, 'updated'), plan('c', 3, 'aborted'), plan('b', 2, 'failed')];
      expect(decided(plans, 2)).to.deep.equal({ plans: [], records: ['a', 'b'], requeueAfterMs: undefined });
    });

    it('three invalid plans and a retry keep the successful and the aborted plan (the case of issue 30)', () => {
      const plans = [
        plan('success', 1, 'updated'),
        plan('aborted', 2, 'aborted'),
        plan('invalid-1', 3, 'aborted', { unstarted: true }), // superseded by the next one before it started
        plan('invalid-2', 4, 'aborted', { unstarted: true }),
        plan('invalid-3', 5, undefined, { endedInvalid: true }),
        plan('retry', 6, 'updated'),
      ];
      // Default limit 3: nothing at all goes (the invalid plans do not count).
      expect(decided(plans, 3)).to.deep.include({ plans: [], records: [] });
      // Even with plan pruning enabled, the invalid ones go and the three real ones stay.
      expect(decided(plans, 3, { prunePlans: true }).plans).to.deep.equal(['invalid-1:limit', 'invalid-2:limit', 'invalid-3:limit']);
      // A tighter limit takes records, never a plan, by default.
      expect(decided(plans, 1)).to.deep.include({ plans: [], records: ['success', 'aborted'] });
    });

    it('plans in flight are never touched and do not count', () => {
      const plans = [
        plan('a', 1, 'updated'),
        plan('b', 2, 'updated'),
        plan('c', 3, 'updating'),
        plan('d', 4, 'aborting'),
        plan('e', 5, 'pending'),
        plan('f', 6),
      ];
      expect(decided(plans, 1)).to.deep.include({ plans: [], records: ['a'] });
      expect(decided(plans, 1, { prunePlans: true })).to.deep.include({ plans: ['a:limit'], records: [] });
    });

    it('limit 0 keeps the records of the newest finished plan', () => {
      expect(decided([plan('a', 1, 'updated'), plan('b', 2, 'failed'), plan('c', 3, 'updating')], 0).records).to.deep.equal(['a']);
    });

    it('a plan being deleted neither counts nor goes again', () => {
      const plans = [plan('a', 1, 'updated', { deleting: true }), plan('b', 2, 'updated'), plan('c', 3, 'updated')];
      expect(decided(plans, 1, { prunePlans: true }).plans).to.deep.equal(['b:limit']);
    });

    it('same second and same finish: the name orders (the supersede order)', () => {
      expect(decided([plan('y', 1, 'updated'), plan('x', 1, 'updated'), plan('z', 1, 'updated')], 2).records).to.deep.equal(['x']);
    });

    it('applied in the same second: the plan that finished last is the newest, whatever its name', () => {
      // "success" sorts after "retry" by name, but the retry finished later: the success loses its records.
      const plans = [plan('success', 1, 'updated', { ranFor: 1 }), plan('retry', 1, 'updated', { ranFor: 2 })];
      expect(decided(plans, 1).records).to.deep.equal(['success']);
    });

    it('a plan an owner holds paused keeps its records, is never deleted and does not count', () => {
      const plans = [plan('a', 1, 'failed', { ttl: 0 }), plan('b', 2, 'updated'), plan('c', 3, 'updated'), plan('d', 4, 'updated')];
      expect(decided(plans, 2, { pinned: ['a'] })).to.deep.include({ plans: [], records: ['b'] });
      expect(decided(plans, 2, { pinned: ['a'], prunePlans: true })).to.deep.include({ plans: ['b:limit'] });
    });
  });

  describe('a plan goes when it opted in (TTL), when the operator allowed it, or when a campaign created it', () => {
    it('spec.ttlSecondsAfterFinished deletes a plan that long after it finished, and says when to look again', () => {
      const plans = [plan('a', 1, 'updated', { ttl: 60 }), plan('b', 2, 'failed', { ttl: 3600 }), plan('c', 3, 'updating', { ttl: 0 })];
      // a finished at second 11: due at 71. b finished at 12: due at 3612.
      expect(decided(plans, 3, { now: at(70) })).to.deep.equal({ plans: [], records: [], requeueAfterMs: 1000 });
      expect(decided(plans, 3, { now: at(71) })).to.deep.equal({ plans: ['a:ttl'], records: [], requeueAfterMs: 3541_000 });
    });

    it('the TTL covers the newest plan and a plan that ended invalid', () => {
      const plans = [plan('a', 1, 'updated'), plan('b', 2, undefined, { endedInvalid: true, ttl: 5 })];
      expect(decided(plans, 3, { now: at(17) }).plans).to.deep.equal(['b:ttl']);
      expect(decideHistory(plans, opts(3, false, at(17))).prune[0]).to.include({ name: 'b', updateStatus: 'invalid' });
      expect(decided([plan('only', 1, 'updated', { ttl: 0 })], 3).plans).to.deep.equal(['only:ttl']);
    });

    it('plans a campaign created are pruned beyond the limit by default; user-applied ones only lose records', () => {
      const plans = [
        plan('camp-1', 1, 'updated', { campaign: true }),
        plan('user-1', 2, 'updated'),
        plan('camp-2', 3, 'aborted', { campaign: true, unstarted: true }),
        plan('camp-3', 4, 'updated', { campaign: true }),
        plan('user-2', 5, 'updated'),
      ];
      expect(decided(plans, 2)).to.deep.include({ plans: ['camp-1:campaign', 'camp-2:campaign'], records: ['user-1'] });
    });

    it('recognises a campaign by its controller ownerReference of this group only', () => {
      expect(createdByCampaign(plan('x', 1, 'updated', { campaign: true }))).to.equal(true);
      const other = plan('y', 1, 'updated', { campaign: true });
      other.metadata!.ownerReferences![0]!.apiVersion = 'example.com/v1';
      expect(createdByCampaign(other)).to.equal(false);
      const notController = plan('z', 1, 'updated', { campaign: true });
      notController.metadata!.ownerReferences![0]!.controller = false;
      expect(createdByCampaign(notController)).to.equal(false);
    });
  });

  it('names the newest finished plan (where the Event goes) and the uid precondition of each deletion', () => {
    const d = decideHistory([plan('a', 1, 'updated'), plan('b', 2, 'failed'), plan('c', 3, 'updating')], opts(1, true));
    expect(d.newestFinished).to.equal('b');
    expect(d.prune).to.deep.equal([{ name: 'a', uid: 'uid-a', updateStatus: 'updated', why: 'limit' }]);
    expect(decideHistory([plan('c', 3, 'updating')], opts(1))).to.deep.equal({ prune: [], pruneRecords: [] });
  });

  it('says what went, why, and the limit', () => {
    expect(prunedMessage([{ name: 'a', uid: 'u', updateStatus: 'failed', why: 'ttl' }], 1)).to.equal(
      'deleted 1 finished plan of the cluster and their MachineUpdates: a (failed; spec.ttlSecondsAfterFinished); the newest 1 finished plan per cluster keep their records (--finished-plans-per-cluster)',
    );
    expect(recordsPrunedMessage(2, 3)).to.match(
      /deleted the 2 MachineUpdates .*\(--finished-plans-per-cluster 3\); the plan and its status stay/,
    );
  });
});
