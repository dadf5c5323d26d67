import { expect } from 'chai';
import type { InPlaceUpdater } from '../api/index.js';
import { coverageAffectsAvailability, coverObject } from './decide.js';
import { callerReadsAffectsAvailability, machineSetSubject, requestProblems, serves, type ScopeSubject } from './validate.js';

const updater = (name: string, spec: Partial<InPlaceUpdater['spec']> = {}): InPlaceUpdater => ({
  apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
  kind: 'InPlaceUpdater',
  metadata: { name },
  spec: { sequence: 1, covers: [{ selectResource: 'Machine', path: '/spec/version' }], ...spec },
});
const subject = (s: Partial<ScopeSubject> = {}): ScopeSubject => ({
  clusterLabels: { env: 'prod' },
  infrastructureKind: 'DockerMachine',
  bootstrapKind: 'KubeadmConfig',
  ...s,
});

describe('runtime-extension validate: callers, scope, request shape', () => {
  it('reads affectsAvailability only for a caller declaring Cluster API v1.15 or later in its settings', () => {
    const reads = (v?: string) => callerReadsAffectsAvailability(v === undefined ? undefined : { clusterAPIVersion: v });
    expect([reads('v1.15.0'), reads('1.15'), reads('v1.16.0-beta.0'), reads('v2.0.0')]).to.deep.equal([true, true, true, true]);
    expect([reads(), reads('v1.14.9'), reads('v1.12.0'), reads('latest'), reads('')]).to.deep.equal([false, false, false, false, false]);
  });

  it('an unset scope serves everything; each part of a scope that is set must match', () => {
    expect(serves(updater('a'), subject({ clusterLabels: undefined }))).to.equal(true);
    const u = updater('a', {
      scope: {
        clusterSelector: { matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'legacy', operator: 'DoesNotExist' }] },
        infrastructureKinds: ['DockerMachine', 'AWSMachine'],
        bootstrapKinds: ['KubeadmConfig'],
      },
    });
    expect(serves(u, subject())).to.equal(true);
    expect(serves(u, subject({ clusterLabels: { env: 'dev' } }))).to.equal(false);
    expect(serves(u, subject({ clusterLabels: { env: 'prod', legacy: '' } }))).to.equal(false);
    expect(serves(u, subject({ clusterLabels: undefined })), 'Cluster not readable').to.equal(false);
    expect(serves(u, subject({ infrastructureKind: 'VSphereMachine' }))).to.equal(false);
    expect(serves(u, subject({ bootstrapKind: undefined })), 'no BootstrapConfig, bootstrapKinds set').to.equal(false);
  });

  it('template kinds are matched without their Template suffix, falling back to the MachineSet references', () => {
    expect(
      machineSetSubject({
        infrastructureMachineTemplate: { kind: 'DockerMachineTemplate' },
        machineSet: { spec: { template: { spec: { bootstrap: { configRef: { kind: 'KubeadmConfigTemplate' } } } } } },
      }),
    ).to.deep.equal({ infrastructureKind: 'DockerMachine', bootstrapKind: 'KubeadmConfig' });
  });

  it('affectsAvailability is false only when every updater covering a change declares false', () => {
    const ups = [
      updater('k8s', { affectsAvailability: false }),
      updater('ntp', { affectsAvailability: false, covers: [{ selectResource: 'Machine', path: '/spec/ntp' }] }),
      updater('os', { covers: [{ selectResource: 'Machine', path: '/spec/image' }] }),
    ];
    const cov = (cur: object, des: object) => [coverObject({ spec: cur }, { spec: des }, 'Machine', '/spec', ups)];
    expect(coverageAffectsAvailability(cov({ version: 'a', ntp: 'x' }, { version: 'b', ntp: 'y' }), ups)).to.equal(false);
    expect(coverageAffectsAvailability(cov({ version: 'a', image: 'x' }, { version: 'b', image: 'y' }), ups)).to.equal(true);
    expect(coverageAffectsAvailability(cov({ other: 1 }, { other: 2 }), ups), 'nothing covered').to.equal(undefined);
  });

  it('request problems: v1beta1 objects of Cluster API groups, wrong types, non-objects; bounded', () => {
    expect(requestProblems('UpdateMachine', [])).to.deep.equal(['the request body is not a JSON object']);
    expect(
      requestProblems('UpdateMachine', { desired: { machine: { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Machine' } } }),
    ).to.deep.equal(['desired.machine is cluster.x-k8s.io/v1beta1 (Machine); the extension reads cluster.x-k8s.io/v1beta2 objects']);
    expect(
      requestProblems('UpdateMachine', { desired: { infrastructureMachine: { apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1' } } }),
    ).to.deep.equal([]);
    expect(requestProblems('Discovery', { kind: 'DiscoveryRequest' })).to.deep.equal([]);
    const many = Object.fromEntries(['machine', 'infrastructureMachine', 'bootstrapConfig'].map((k) => [k, 1]));
    expect(requestProblems('CanUpdateMachine', { apiVersion: 'x', kind: 'y', current: many, desired: many }).length).to.equal(8);
  });
});
