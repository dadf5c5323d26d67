// `--write-policy FILE`: read and checked before anything connects; a policy that tries to open the never-list, or a
// component that does not enforce a policy, stops the command with a message naming the problem.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { projectRoot } from '../../src/cli/procs.js';
import { loadWritePolicy } from '../../src/cli/write-policy.js';
import { cli } from '../support/cli.js';

describe('inplace --write-policy', () => {
  let tmp = '';
  const file = (name: string, text: string): string => {
    const p = join(tmp, name);
    writeFileSync(p, text);
    return p;
  };
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'inplace-policy-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('loads a YAML policy', () => {
    expect(
      loadWritePolicy(
        file('ok.yaml', 'Machine:\n  allow: [/spec/version, /metadata/labels/example.com~1team]\nInfraMachine:\n  deny: [/spec/image]\n'),
      ),
    ).to.deep.equal({
      Machine: { allow: ['/spec/version', '/metadata/labels/example.com~1team'] },
      InfraMachine: { deny: ['/spec/image'] },
    });
    expect(loadWritePolicy(file('empty.yaml', ''))).to.deep.equal({});
  });

  it('loads examples/write-policy.yaml', () => {
    const policy = loadWritePolicy(join(projectRoot(), 'examples', 'write-policy.yaml'));
    expect(policy.Machine?.allow).to.include('/spec/version');
  });

  it('refuses a policy that opens the never-list, a missing file and bad YAML', () => {
    expect(() => loadWritePolicy(file('open.yaml', 'Machine:\n  allow: [/spec/providerID]\n'))).to.throw(
      /\/spec\/providerID cannot be allowed/,
    );
    expect(() => loadWritePolicy(join(tmp, 'missing.yaml'))).to.throw(/cannot read the write policy/);
    expect(() => loadWritePolicy(file('bad.yaml', 'Machine: [unclosed\n'))).to.throw(/not valid YAML/);
  });

  it('run: a component that does not enforce the policy is a usage error (exit 2)', async () => {
    const r = await cli('run', 'mhc-extension', '--write-policy', file('p.yaml', '{}'));
    expect(r.code).to.equal(2);
    expect(r.err).to.match(/--write-policy applies to plan-controller, machine-task-controller/);
  });

  it('run and preview stop on an invalid policy before connecting (exit 1)', async () => {
    const bad = file('bad-policy.yaml', 'Machine:\n  allow: [/status]\n');
    const run = await cli('run', 'plan-controller', '--write-policy', bad, '--kubeconfig', join(tmp, 'no-kubeconfig'));
    expect(run.code).to.equal(1);
    expect(run.err).to.match(/\/status cannot be allowed/);
    const plan = file(
      'plan.yaml',
      'apiVersion: inplace.cluster.x-k8s.io/v1alpha1\nkind: InPlaceUpdatePlan\nmetadata: {name: p}\nspec:\n  clusterName: c1\n  machineDeployments: [{name: md, sequence: 2, updaters: [{name: u, sequence: 1, responsibilities: [{selectResource: Machine, path: /spec/version, value: v1.30.1}]}]}]\n',
    );
    const preview = await cli('preview', '-f', plan, '--write-policy', bad, '--kubeconfig', join(tmp, 'no-kubeconfig'));
    expect(preview.code).to.equal(1);
    expect(preview.err).to.match(/\/status cannot be allowed/);
  });
});
