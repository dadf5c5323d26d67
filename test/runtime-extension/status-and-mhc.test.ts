// Events of UpdateMachine answers (status.ts), and that the MHC extension sees the runtime extension's MachineUpdates
// as the machine's current update (it protects and remediates these machines as for plans).
import { expect } from 'chai';
import type { KubeObject } from '../../src/api/index.js';
import { activeUpdateOf } from '../../src/mhc-extension/decide.js';
import { buildMachineUpdate } from '../../src/runtime-extension/decide.js';
import { Reasons, updateEvent } from '../../src/runtime-extension/status.js';

const machine = {
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name: 'm1', namespace: 'ns', uid: 'u1', labels: { 'cluster.x-k8s.io/deployment-name': 'md0' } },
  spec: { clusterName: 'c1' },
} as KubeObject;
const answer = (status: 'Success' | 'Failure', retryAfterSeconds: number) => ({
  apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1' as const,
  kind: 'UpdateMachineResponse',
  status,
  message: 'm',
  retryAfterSeconds,
});

describe('runtime-extension status: Events of UpdateMachine answers', () => {
  it('records the start, the end and a failure, not every in-progress poll', () => {
    const mu = buildMachineUpdate(machine, 'm1-h', 'h', []);
    expect(updateEvent({ kind: 'create', mu }, answer('Success', 5))?.reason).to.equal(Reasons.inPlaceUpdateStarted);
    expect(updateEvent({ kind: 'answer' }, answer('Success', 5))).to.equal(undefined);
    expect(updateEvent({ kind: 'wait' }, answer('Success', 5))).to.equal(undefined);
    expect(updateEvent({ kind: 'answer' }, answer('Success', 0))).to.include({ type: 'Normal', reason: Reasons.inPlaceUpdateDone });
    expect(updateEvent({ kind: 'answer' }, answer('Failure', 0))).to.include({ type: 'Warning', reason: Reasons.inPlaceUpdateFailed });
  });
});

describe('runtime-extension and the MHC extension', () => {
  const mu = (status: string) => ({
    ...(buildMachineUpdate(machine, 'm1-h', 'h', [
      { name: 'u', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.31.0' }] },
    ]) as KubeObject & ReturnType<typeof buildMachineUpdate>),
    status: { updateStatus: status as 'updating' },
  });
  it('a running or failed MachineUpdate of the runtime extension puts its machine in update; an updated one does not', () => {
    expect(activeUpdateOf(machine as never, [mu('updating')] as never)?.metadata.name).to.equal('m1-h');
    expect(activeUpdateOf(machine as never, [mu('failed')] as never)?.metadata.name).to.equal('m1-h');
    expect(activeUpdateOf(machine as never, [mu('updated')] as never)).to.equal(undefined);
  });
});
