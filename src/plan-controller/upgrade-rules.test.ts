import { expect } from 'chai';
import type { KubeObject } from '../api/index.js';
import { kcp, machines, plan, snapshot, target, versionUpdater } from './testkit.js';
import { validatePlan } from '../rules/validate.js';

const v = (value: unknown): ReturnType<typeof versionUpdater> =>
  versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value }] });
const fleet = (cp: string, md: string, md1?: string): KubeObject[] => [
  ...machines('cluster1-cp', 3, { cp: 'cluster1-cp', version: cp }),
  ...machines('cluster1-md-0', 3, { md: 'cluster1-md-0', version: md }),
  ...(md1 ? machines('cluster1-md-1', 2, { md: 'cluster1-md-1', version: md1 }) : []),
];

describe('plan-controller validatePlan: upgrade rules and write policy', () => {
  const cases: { name: string; cp?: unknown; md?: unknown; machines: KubeObject[]; kcpVersion?: string; problem: RegExp | null }[] = [
    { name: 'a patch upgrade of both', cp: 'v1.30.1', md: 'v1.30.1', machines: fleet('v1.30.0', 'v1.30.0'), problem: null },
    { name: 'one minor up, control plane first', cp: 'v1.31.0', md: 'v1.31.0', machines: fleet('v1.30.0', 'v1.30.0'), problem: null },
    { name: 'a pre-release version', cp: 'v1.31.0-rc.1', md: 'v1.30.1', machines: fleet('v1.30.0', 'v1.30.0'), problem: null },
    {
      name: 'a number',
      cp: 1.3,
      machines: fleet('v1.30.0', 'v1.30.0'),
      problem: /controlPlane cluster1-cp updater version: Machine \/spec\/version 1.3 breaks upgrade rule semver/,
    },
    { name: 'an empty string', cp: '', machines: fleet('v1.30.0', 'v1.30.0'), problem: /"" breaks upgrade rule semver/ },
    { name: 'null', cp: null, machines: fleet('v1.30.0', 'v1.30.0'), problem: /null breaks upgrade rule semver/ },
    { name: 'an object', cp: { major: 1 }, machines: fleet('v1.30.0', 'v1.30.0'), problem: /breaks upgrade rule semver/ },
    { name: 'no leading v', cp: '1.30.1', machines: fleet('v1.30.0', 'v1.30.0'), problem: /breaks upgrade rule semver/ },
    {
      name: 'a huge string (shown truncated)',
      cp: 'v'.repeat(100_000),
      machines: fleet('v1.30.0', 'v1.30.0'),
      problem: /"v{64}…" breaks upgrade rule semver/,
    },
    {
      name: 'a downgrade of the control plane',
      cp: 'v1.28.0',
      machines: fleet('v1.30.2', 'v1.30.2'),
      problem: /v1\.28\.0 breaks upgrade rule no-downgrade: 3 machine\(s\) run a newer version \(cluster1-cp-0 runs v1\.30\.2\)/,
    },
    {
      name: 'a patch downgrade of workers',
      md: 'v1.30.1',
      machines: fleet('v1.30.2', 'v1.30.2'),
      problem: /machineDeployment cluster1-md-0 updater version: .*no-downgrade/,
    },
    {
      name: 'a skipped minor',
      cp: 'v1.32.0',
      machines: fleet('v1.30.0', 'v1.30.0'),
      problem: /v1\.32\.0 breaks upgrade rule no-skipped-minor: the oldest machine runs v1\.30/,
    },
    {
      name: 'a skipped minor from the oldest machine of a mixed target',
      cp: 'v1.31.0',
      machines: [
        ...machines('cluster1-cp', 1, { cp: 'cluster1-cp', version: 'v1.29.0' }),
        ...machines('cluster1-cpx', 2, { cp: 'cluster1-cp', version: 'v1.30.0' }),
      ],
      problem: /no-skipped-minor: the oldest machine runs v1\.29/,
    },
    { name: 'a major jump', cp: 'v2.0.0', machines: fleet('v1.30.0', 'v1.30.0'), problem: /no-skipped-minor/ },
    {
      name: 'workers a minor ahead of the control plane (plan value)',
      cp: 'v1.30.1',
      md: 'v1.31.0',
      machines: fleet('v1.30.0', 'v1.30.0'),
      problem:
        /machineDeployment cluster1-md-0: Machine \/spec\/version v1\.31\.0 breaks upgrade rule workers-not-ahead-of-control-plane: the control plane runs v1\.30\.1/,
    },
    {
      name: 'workers a patch release ahead of the control plane (same minor)',
      cp: 'v1.30.1',
      md: 'v1.30.2',
      machines: fleet('v1.30.0', 'v1.30.0'),
      problem: null,
    },
    { name: "a workers-only patch release above the control plane's", md: 'v1.30.1', machines: fleet('v1.30.0', 'v1.30.0'), problem: null },
    {
      name: 'workers ahead of the control plane (KCP spec.version)',
      md: 'v1.31.0',
      machines: fleet('v1.30.0', 'v1.30.0'),
      problem: /workers-not-ahead-of-control-plane: the control plane runs v1\.30\.0/,
    },
    {
      name: 'workers left more than 3 minors behind',
      cp: 'v1.31.0',
      machines: fleet('v1.30.0', 'v1.30.0', 'v1.27.5'),
      kcpVersion: 'v1.30.0',
      problem: /version-skew: MachineDeployment cluster1-md-1 stays at v1\.27\.5, more than 3 minors behind/,
    },
    { name: 'workers exactly 3 minors behind', cp: 'v1.31.0', machines: fleet('v1.30.0', 'v1.30.0', 'v1.28.0'), problem: null },
  ];
  for (const c of cases) {
    it(`${c.problem ? 'refuses' : 'accepts'} ${c.name}`, () => {
      const p = plan({
        cp: c.cp === undefined ? null : target('cluster1-cp', 1, [v(c.cp)]),
        mds: [
          target(
            'cluster1-md-0',
            2,
            c.md === undefined
              ? [versionUpdater({ responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'img' }] })]
              : [v(c.md)],
          ),
        ],
      });
      const problems = validatePlan(snapshot({ plan: p, machines: c.machines, kcp: kcp('cluster1-cp', 3, c.kcpVersion ?? 'v1.30.0') }));
      if (c.problem) expect(problems.join('\n')).to.match(c.problem);
      else expect(problems).to.deep.equal([]);
    });
  }

  const paths: [string, string, RegExp][] = [
    ['Machine', '/spec/providerID', /Machine \/spec\/providerID is not writable: Machine \/spec\/providerID is identity or wiring/],
    ['Machine', '/spec/clusterName', /identity or wiring/],
    ['Machine', '/spec/infrastructureRef/name', /identity or wiring/],
    ['Machine', '/spec/bootstrap/configRef/name', /identity or wiring/],
    ['Machine', '/spec/bootstrap/dataSecretName', /identity or wiring/],
    ['Machine', '/spec', /whole spec/],
    ['Machine', '/status/phase', /status is written by/],
    ['InfraMachine', '/metadata/name', /metadata is never writable/],
    ['Machine', '/metadata/labels/team', /labels are not writable unless the write policy allows the key/],
    ['Machine', '/metadata/annotations/cluster.x-k8s.io~1remediate-machine', /reserved prefix/],
  ];
  for (const [sel, path, problem] of paths) {
    it(`refuses ${sel} ${path} under the default write policy`, () => {
      const p = plan({
        cp: target('cluster1-cp', 1, [versionUpdater({ responsibilities: [{ selectResource: sel as 'Machine', path, value: 'x' }] })]),
        mds: [],
      });
      expect(validatePlan(snapshot({ plan: p })).join('\n')).to.match(problem);
    });
  }
  it('accepts a label the configured write policy allows, and refuses what it denies', () => {
    const p = plan({
      cp: target('cluster1-cp', 1, [
        versionUpdater({
          responsibilities: [
            { selectResource: 'Machine', path: '/metadata/labels/team', value: 'a' },
            { selectResource: 'InfraMachine', path: '/spec/image', value: 'i' },
          ],
        }),
      ]),
      mds: [],
    });
    expect(validatePlan({ ...snapshot({ plan: p }), writePolicy: { Machine: { allow: ['/metadata/labels/team'] } } })).to.deep.equal([]);
    expect(
      validatePlan({
        ...snapshot({ plan: p }),
        writePolicy: { Machine: { allow: ['/metadata/labels/team'] }, InfraMachine: { deny: ['/spec/image'] } },
      }).join('\n'),
    ).to.match(/InfraMachine \/spec\/image is not writable: the write policy denies \/spec\/image/);
  });
  it('refuses a value larger than 64 KiB (MAX_PLAN_VALUE_BYTES)', () => {
    const p = plan({
      cp: target('cluster1-cp', 1, [
        versionUpdater({ responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'x'.repeat(300 * 1024) }] }),
      ]),
      mds: [],
    });
    expect(validatePlan(snapshot({ plan: p })).join('\n')).to.match(/301 KiB value, more than the 64 KiB a plan value may have/);
  });
  it("lists the pre-start check's problems; uncovered changes only without the opt-in", () => {
    const prestart = { generation: 1, schemaProblems: ['dry-run: pruned'], uncovered: ['uncovered: drift'] };
    const p = plan();
    expect(validatePlan({ ...snapshot({ plan: p }), prestart })).to.deep.equal(['dry-run: pruned', 'uncovered: drift']);
    p.spec.acceptUncoveredChanges = true;
    expect(validatePlan({ ...snapshot({ plan: p }), prestart })).to.deep.equal(['dry-run: pruned']);
  });
});
