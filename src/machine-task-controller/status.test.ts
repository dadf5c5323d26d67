import { expect } from 'chai';
import type { Scope } from './scope.js';
import { buildStatus } from './status.js';

describe('machine-task-controller buildStatus', () => {
  const scope = (): Scope => ({
    mu: {
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1', kind: 'MachineUpdate',
      metadata: { name: 'mu-a', namespace: 'ns', generation: 1 },
      spec: { planName: 'p1', machineRef: { name: 'a' }, target: { kind: 'MachineDeployment', name: 'md' }, updaters: [], updatePhase: 'updating' } as unknown as Scope['mu']['spec'],
    },
    machine: 'present',
    views: [],
  });

  it("bounds an updater's failure message once: status.message and both conditions carry the same cut text", () => {
    const s = buildStatus(scope(), { updateStatus: 'failed', reason: 'Failed', message: `updater x failed: ${'\u00e9'.repeat(50_000)}` }, new Date('2026-01-01T00:00:00Z'));
    expect(Buffer.byteLength(s.message!)).to.be.at.most(4096);
    expect(s.message).to.match(/^updater x failed: é+\.\.\. \(\d+ more bytes\)$/);
    expect(s.conditions!.map((c) => c.message)).to.deep.equal([s.message, s.message]);
  });

  it('keeps a short message as it is', () => {
    const s = buildStatus(scope(), { updateStatus: 'updating', reason: 'Updating', message: 'updater x (1/1) updating' }, new Date('2026-01-01T00:00:00Z'));
    expect(s.message).to.equal('updater x (1/1) updating');
  });
});
