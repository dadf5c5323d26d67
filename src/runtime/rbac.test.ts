import { expect } from 'chai';
import { runtimeRbac } from './rbac.js';

describe('runtime RBAC', () => {
  it('asks for events always and leases only with leader election', () => {
    expect(runtimeRbac({ leaderElection: false })).to.deep.equal([{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }]);
    expect(runtimeRbac().map((r) => r.resources[0])).to.deep.equal(['events', 'leases']);
  });
});
