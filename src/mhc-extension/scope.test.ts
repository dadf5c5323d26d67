import { expect } from 'chai';
import { Labels } from '../api/index.js';
import { selects } from './scope.js';
import type { MachineHealthCheck } from './scope.js';

const mhc = (selector: MachineHealthCheck['spec']['selector']): MachineHealthCheck => ({
  metadata: { name: 'h', namespace: 'ns' },
  spec: { clusterName: 'c1', selector },
});
const machine = (o: { ns?: string; cluster?: string; labels?: Record<string, string> } = {}) => ({
  metadata: { name: 'm', namespace: o.ns ?? 'ns', labels: o.labels ?? { [Labels.clusterName]: 'c1', [Labels.deploymentName]: 'md' } },
  spec: { clusterName: o.cluster ?? 'c1' },
});

describe('mhc-extension scope: selects', () => {
  const cases: Array<{ name: string; mhc: MachineHealthCheck; machine: ReturnType<typeof machine>; want: boolean }> = [
    {
      name: 'selects a machine of its cluster matching matchLabels',
      mhc: mhc({ matchLabels: { [Labels.deploymentName]: 'md' } }),
      machine: machine(),
      want: true,
    },
    {
      name: 'does not select a machine of another cluster',
      mhc: mhc({ matchLabels: { [Labels.deploymentName]: 'md' } }),
      machine: machine({ cluster: 'c2' }),
      want: false,
    },
    {
      name: 'does not select a machine of another namespace',
      mhc: mhc({ matchLabels: {} }),
      machine: machine({ ns: 'other' }),
      want: false,
    },
    {
      name: 'honours matchExpressions',
      mhc: mhc({ matchExpressions: [{ key: Labels.controlPlane, operator: 'DoesNotExist' }] }),
      machine: machine(),
      want: true,
    },
    { name: 'an empty selector selects every machine of the cluster', mhc: mhc({}), machine: machine(), want: true },
    {
      name: 'an unparsable selector selects nothing instead of failing',
      mhc: mhc({ matchLabels: { 'bad key!': 'x' } }),
      machine: machine(),
      want: false,
    },
  ];
  for (const c of cases) it(c.name, () => expect(selects(c.mhc, c.machine)).to.equal(c.want));
});
