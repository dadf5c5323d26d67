import { expect } from 'chai';
import { Annotations, Labels, type KubeObject } from '../api/index.js';
import { machineToMachineUpdates, planToRefusedMachineUpdates, tasksToMachineUpdates } from './controller.js';
import type { MachineUpdateObject } from './scope.js';

const PLAN_UID = 'plan-uid';
const mu = (name: string, machine: string, updateStatus?: 'updating' | 'updated' | 'failed', refused = false): MachineUpdateObject =>
  ({
    metadata: {
      name,
      namespace: 'ns',
      labels: { [Labels.machineName]: machine, [Labels.planName]: 'p1' },
      ownerReferences: [
        { apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1', kind: 'InPlaceUpdatePlan', name: 'p1', uid: PLAN_UID, controller: true },
      ],
    },
    spec: { planName: 'p1', machineRef: { name: machine } },
    ...(updateStatus || refused
      ? {
          status: {
            ...(updateStatus ? { updateStatus } : {}),
            ...(refused ? { conditions: [{ type: 'InPlaceUpdate', status: 'False', reason: 'NotOwnedByPlan', message: 'x' }] } : {}),
          },
        }
      : {}),
  }) as unknown as MachineUpdateObject;
const storeOf = <T extends KubeObject>(all: T[]) => ({
  byLabel: (k: string, v: string, ns?: string) => all.filter((m) => m.metadata.labels?.[k] === v && m.metadata.namespace === ns),
  peek: (ns: string | undefined, name: string) => all.find((m) => m.metadata.namespace === ns && m.metadata.name === name),
});

describe('machine-task-controller tasksToMachineUpdates: who a task event wakes', () => {
  const all = [mu('mu-old', 'm1', 'updating'), mu('mu-new', 'm1'), mu('mu-done', 'm1', 'updated'), mu('mu-other', 'm2', 'updating')];
  const store = storeOf(all);
  const task = (owner: string | undefined, machine: string | undefined, o: { rv?: string; status?: boolean } = {}): KubeObject => ({
    metadata: {
      name: 't',
      namespace: 'ns',
      resourceVersion: o.rv ?? '5',
      ...(machine ? { labels: { [Labels.machineName]: machine } } : {}),
      ...(owner
        ? {
            ownerReferences: [
              { apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1', kind: 'MachineUpdate', name: owner, uid: 'u', controller: true },
            ],
          }
        : {}),
    },
    ...(o.status === false ? {} : { status: { updateStatus: 'updating' } }),
  });
  const names = (t: KubeObject, cached?: KubeObject): string[] =>
    tasksToMachineUpdates(store, storeOf(cached ? [cached] : []))(t).map((k) => k.name);

  const cases: [string, KubeObject, KubeObject | undefined, string[]][] = [
    [
      'its owner, and the other MachineUpdate in flight for the machine (waiting for the task name)',
      task('mu-old', 'm1'),
      undefined,
      ['mu-old', 'mu-new'],
    ],
    ['never a terminal MachineUpdate of the machine, nor one of another machine', task('mu-new', 'm1'), undefined, ['mu-new', 'mu-old']],
    ['not its owner once that is finished', task('mu-done', 'm1'), undefined, ['mu-old', 'mu-new']],
    ['only its owner when it carries no machine label', task('mu-old', undefined), undefined, ['mu-old']],
    ['the machine’s MachineUpdates in flight when it has no MachineUpdate owner', task(undefined, 'm1'), undefined, ['mu-old', 'mu-new']],
    [
      'not its owner for the echo of our create (no status, the cached version)',
      task('mu-old', undefined, { status: false }),
      task('mu-old', undefined, { status: false }),
      [],
    ],
    [
      'its owner for an older version without status (the task changed since)',
      task('mu-old', undefined, { status: false, rv: '4' }),
      task('mu-old', undefined),
      ['mu-old'],
    ],
    ['its owner when a task without status went (not cached)', task('mu-old', undefined, { status: false }), undefined, ['mu-old']],
  ];
  for (const [name, t, cached, want] of cases) it(name, () => expect(names(t, cached)).to.deep.equal(want));

  it('its owner for the echo of our create when a reconcile of the owner waits for it to show', () => {
    const t = task('mu-old', undefined, { status: false });
    const waiting = { waiting: (_ns: string | undefined, name: string) => name === 'mu-old' };
    expect(tasksToMachineUpdates(store, storeOf([t]), waiting)(t).map((k) => k.name)).to.deep.equal(['mu-old']);
  });
});

describe('machine-task-controller machineToMachineUpdates: who a Machine event wakes', () => {
  const plan: KubeObject = { metadata: { name: 'p1', namespace: 'ns', uid: PLAN_UID } };
  const machine = (o: { label?: string | null; deleting?: boolean; annotations?: Record<string, string> } = {}): KubeObject => ({
    metadata: {
      name: 'm1',
      namespace: 'ns',
      ...(o.label === null ? {} : { labels: { [Labels.planName]: o.label ?? 'p1' } }),
      ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
  });
  const wakes = (mus: MachineUpdateObject[], current: KubeObject | undefined, event: KubeObject = machine()): string[] =>
    machineToMachineUpdates(storeOf(mus), storeOf(current ? [current] : []), () => plan)(event).map((k) => k.name);

  it('nothing for a change that leaves the machine present and owned (status, annotations, our commit)', () => {
    const m = machine({ annotations: { [Annotations.capiUpdateInProgress]: '' } });
    expect(wakes([mu('mu-a', 'm1', 'updating'), mu('mu-b', 'm1')], m, m)).to.deep.equal([]);
  });
  it('the MachineUpdates in flight when the machine is deleting or gone from the cache, never a finished one', () => {
    const all = [mu('mu-a', 'm1', 'updating'), mu('mu-done', 'm1', 'updated'), mu('mu-other', 'm2', 'updating')];
    expect(wakes(all, machine({ deleting: true }))).to.deep.equal(['mu-a']);
    expect(wakes(all, undefined)).to.deep.equal(['mu-a']);
  });
  it('a MachineUpdate whose ownership changes: the label gone or another plan’s, or one refused before', () => {
    expect(wakes([mu('mu-a', 'm1', 'updating')], machine({ label: null }))).to.deep.equal(['mu-a']);
    expect(wakes([mu('mu-a', 'm1', 'updating')], machine({ label: 'p2' }))).to.deep.equal(['mu-a']);
    expect(wakes([mu('mu-a', 'm1', undefined, true)], machine())).to.deep.equal(['mu-a']);
  });
});

describe('machine-task-controller planToRefusedMachineUpdates: who a plan event wakes', () => {
  it('only the refused MachineUpdates that plan controls, in its namespace', () => {
    const other = {
      ...mu('mu-c', 'm3', undefined, true),
      metadata: { ...mu('mu-c', 'm3').metadata, namespace: 'ns2' },
    } as MachineUpdateObject;
    const refused = new Map([
      ['ns/mu-a', mu('mu-a', 'm1', undefined, true)],
      ['ns2/mu-c', other],
    ]);
    const wake = (name: string, ns = 'ns'): string[] =>
      planToRefusedMachineUpdates(refused)({ metadata: { name, namespace: ns } }).map((k) => k.name);
    expect(wake('p1')).to.deep.equal(['mu-a']);
    expect(wake('p1', 'ns2')).to.deep.equal(['mu-c']);
    expect(wake('p2')).to.deep.equal([]);
  });
});
