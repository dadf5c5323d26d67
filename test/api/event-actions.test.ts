import { expect } from 'chai';
import { CampaignEventReasons, MhcEventReasons, PlanEventReasons, Reasons } from '../../src/api/constants.js';
import { EventActions, eventAction } from '../../src/api/event-actions.js';
import { OwnerEventReasons } from '../../src/rules/owners.js';

describe('event actions', () => {
  it('gives every reason the platform records an events.k8s.io/v1 action (CamelCase, at most 128 bytes)', () => {
    const reasons = [Reasons, PlanEventReasons, CampaignEventReasons, MhcEventReasons, OwnerEventReasons].flatMap((g) => Object.values(g));
    const missing = reasons.filter((r) => !(r in EventActions));
    expect(missing, 'reasons without an action').to.deep.equal([]);
    for (const a of Object.values(EventActions)) expect(a).to.match(/^[A-Z][A-Za-z]{1,127}$/);
  });

  it('reports Reconcile for a reason outside the table (a third-party updater)', () => {
    expect(eventAction('SomeUpdaterReason')).to.equal('Reconcile');
    expect(eventAction(Reasons.commitRolledBack)).to.equal('Commit');
  });
});
