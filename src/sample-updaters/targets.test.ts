import { expect } from 'chai';
import type { Task } from '../contract/index.js';
import { targetVersion } from './kubernetes-version/index.js';
import { targetImage } from './os-image/index.js';
import { readParameters } from './reference/index.js';

const task = (spec: Partial<Task['spec']>): Task => ({ metadata: { name: 't' }, spec: { machineRef: { name: 'm' }, ...spec } });

describe('sample updaters: reading their tasks', () => {
  const params: [string, Record<string, unknown> | undefined, ReturnType<typeof readParameters>][] = [
    ['defaults to a 1 s update', undefined, { durationSeconds: 1 }],
    ['accepts 0 s', { durationSeconds: 0 }, { durationSeconds: 0 }],
    ['reads failWith', { durationSeconds: 2, failWith: 'boom' }, { durationSeconds: 2, failWith: 'boom' }],
    ['accepts a fractional duration and ignores unknown keys', { durationSeconds: 1.5, other: true }, { durationSeconds: 1.5 }],
    ['accepts the one-year bound', { durationSeconds: 31536000 }, { durationSeconds: 31536000 }],
    ['rejects a negative duration', { durationSeconds: -1 }, 'parameters.durationSeconds must be a number between 0 and 31536000, got -1'],
    ['rejects a string duration', { durationSeconds: '5' }, 'parameters.durationSeconds must be a number between 0 and 31536000, got "5"'],
    [
      'rejects a duration beyond any date (1e300)',
      { durationSeconds: 1e300 },
      'parameters.durationSeconds must be a number between 0 and 31536000, got 1e+300',
    ],
    [
      'rejects a duration just over a year',
      { durationSeconds: 31536001 },
      'parameters.durationSeconds must be a number between 0 and 31536000, got 31536001',
    ],
    ['rejects a non-string failWith', { failWith: 3 }, 'parameters.failWith must be a string, got 3'],
  ];
  for (const [name, p, want] of params) {
    it(`reference: ${name}`, () => expect(readParameters(task(p ? { parameters: p } : {}))).to.deep.equal(want));
  }

  it('kubernetes-version: targets the Machine /spec/version responsibility only', () => {
    expect(targetVersion(task({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.31.0' }] }))).to.equal(
      'v1.31.0',
    );
    expect(
      targetVersion(task({ responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/version', value: 'v1.31.0' }] })),
    ).to.equal(undefined);
    expect(targetVersion(task({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 131 }] }))).to.equal(
      undefined,
    );
  });

  it('os-image: qualifies a bare image name with the repository and keeps a qualified one', () => {
    const r = (value: string) => [{ selectResource: 'InfraMachine' as const, path: '/spec/backend/docker/customImage', value }];
    expect(targetImage(task({ responsibilities: r('ubuntu-24.04'), imageRepository: 'reg/os' }) as never)).to.equal('reg/os/ubuntu-24.04');
    expect(targetImage(task({ responsibilities: r('other.io/img:1') }) as never)).to.equal('other.io/img:1');
    expect(targetImage(task({ responsibilities: [] }) as never)).to.equal(undefined);
  });
});
