import { expect } from 'chai';
import { Labels, type KubeObject } from '../api/index.js';
import { tasksToMachineUpdates } from './controller.js';
import type { MachineUpdateObject } from './scope.js';

describe('machine-task-controller tasksToMachineUpdates: who a task event wakes', () => {
  const mu = (name: string, machine: string, updateStatus?: 'updating' | 'updated' | 'failed'): MachineUpdateObject =>
    ({
      metadata: { name, namespace: 'ns', labels: { [Labels.machineName]: machine } },
      spec: {},
      ...(updateStatus ? { status: { updateStatus } } : {}),
    }) as unknown as MachineUpdateObject;
  const all = [mu('mu-old', 'm1', 'updating'), mu('mu-new', 'm1'), mu('mu-done', 'm1', 'updated'), mu('mu-other', 'm2', 'updating')];
  const store = {
    byLabel: (k: string, v: string, ns?: string) => all.filter((m) => m.metadata.labels?.[k] === v && m.metadata.namespace === ns),
  };
  const task = (owner: string | undefined, machine: string | undefined): KubeObject => ({
    metadata: {
      name: 't',
      namespace: 'ns',
      ...(machine ? { labels: { [Labels.machineName]: machine } } : {}),
      ...(owner
        ? {
            ownerReferences: [
              { apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1', kind: 'MachineUpdate', name: owner, uid: 'u', controller: true },
            ],
          }
        : {}),
    },
  });
  const names = (t: KubeObject): string[] => tasksToMachineUpdates(store)(t).map((k) => k.name);

  const cases: [string, KubeObject, string[]][] = [
    [
      'its owner, and the other MachineUpdate in flight for the machine (waiting for the task name)',
      task('mu-old', 'm1'),
      ['mu-old', 'mu-new'],
    ],
    ['never a terminal MachineUpdate of the machine, nor one of another machine', task('mu-new', 'm1'), ['mu-new', 'mu-old']],
    ['only its owner when it carries no machine label', task('mu-old', undefined), ['mu-old']],
    ['the machine’s MachineUpdates in flight when it has no MachineUpdate owner', task(undefined, 'm1'), ['mu-old', 'mu-new']],
  ];
  for (const [name, t, want] of cases) it(name, () => expect(names(t)).to.deep.equal(want));
});
