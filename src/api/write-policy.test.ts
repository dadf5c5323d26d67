import { expect } from 'chai';
import { DEFAULT_WRITE_POLICY, parseWritePolicy, writePolicyProblems, writeRefusal, type WritePolicy } from './write-policy.js';

describe('write policy', () => {
  const refused: [string, string, RegExp, WritePolicy?][] = [
    ['Machine', '', /whole object/],
    ['Machine', '/apiVersion', /apiVersion/],
    ['Machine', '/kind', /kind/],
    ['Machine', '/spec', /whole spec/],
    ['Machine', '/status', /status/],
    ['Machine', '/status/phase', /status/],
    ['Machine', '/metadata', /metadata/],
    ['Machine', '/metadata/name', /metadata/],
    ['Machine', '/metadata/ownerReferences/0', /metadata/],
    ['Machine', '/metadata/labels', /metadata/],
    ['Machine', '/metadata/labels/team', /not writable unless the write policy allows/],
    ['Machine', '/metadata/annotations/note', /not writable unless the write policy allows/],
    ['Machine', '/metadata/annotations/cluster.x-k8s.io~1remediate-machine', /reserved/, { Machine: { allow: ['/metadata/annotations'] } }],
    ['Machine', '/metadata/annotations/cluster.x-k8s.io~1paused', /reserved/, { Machine: { allow: ['/metadata/annotations'] } }],
    ['Machine', '/metadata/labels/inplace.cluster.x-k8s.io~1plan-name', /reserved/, { Machine: { allow: ['/metadata/labels'] } }],
    ['Machine', '/metadata/labels/node-role.kubernetes.io~1worker', /reserved/, { Machine: { allow: ['/metadata/labels'] } }],
    ['Machine', '/metadata/labels/k8s.io~1x', /reserved/, { Machine: { allow: ['/metadata/labels'] } }],
    ['Machine', '/spec/clusterName', /identity or wiring/],
    ['Machine', '/spec/providerID', /identity or wiring/],
    ['Machine', '/spec/infrastructureRef', /identity or wiring/],
    ['Machine', '/spec/infrastructureRef/name', /identity or wiring/],
    ['Machine', '/spec/bootstrap/configRef/name', /identity or wiring/],
    ['Machine', '/spec/bootstrap/dataSecretName', /identity or wiring/],
    ['Machine', '/spec/bootstrap', /identity or wiring/, { Machine: { allow: ['/spec/bootstrap'] } }],
    ['Machine', '/spec/failureDomain', /by name/],
    ['Machine', '/spec/failureDomain', /by name/, { Machine: { allow: ['/spec'] } }],
    ['InfraMachine', '/spec/providerID', /identity or wiring/],
    ['InfraMachine', '/spec/image', /allows only \/spec\/version/, { InfraMachine: { allow: ['/spec/version'] } }],
    ['Machine', '/spec/version', /denies \/spec\/version/, { Machine: { deny: ['/spec/version'] } }],
    ['Machine', '/spec/taints', /denies \/spec\/taints\/0/, { Machine: { deny: ['/spec/taints/0'] } }],
    ['Pod', '/spec/x', /selectResource/],
    ['Machine', 'spec/version', /JSON pointer/],
  ];
  for (const [kind, path, why, policy] of refused) {
    it(`refuses ${kind} ${JSON.stringify(path)}${policy ? ` under ${JSON.stringify(policy)}` : ''}`, () => {
      expect(writeRefusal(policy ?? DEFAULT_WRITE_POLICY, kind, path)).to.match(why);
    });
  }
  const allowed: [string, string, WritePolicy?][] = [
    ['Machine', '/spec/version'],
    ['Machine', '/spec/taints/0'],
    ['InfraMachine', '/spec/image'],
    ['BootstrapConfig', '/spec/ntp'],
    ['BootstrapConfig', '/spec/files/0/content'],
    ['Machine', '/spec/failureDomain', { Machine: { allow: ['/spec', '/spec/failureDomain'] } }],
    ['Machine', '/metadata/labels/team', { Machine: { allow: ['/metadata/labels/team'] } }],
    ['Machine', '/metadata/annotations/example.com~1note', { Machine: { allow: ['/metadata/annotations'] } }],
    ['InfraMachine', '/spec/image', { Machine: { allow: [] } }],
  ];
  for (const [kind, path, policy] of allowed) {
    it(`allows ${kind} ${path}${policy ? ` under ${JSON.stringify(policy)}` : ''}`, () => {
      expect(writeRefusal(policy ?? DEFAULT_WRITE_POLICY, kind, path)).to.equal(undefined);
    });
  }
  it('refuses a policy that tries to open the never-list, unknown kinds and keys, malformed pointers', () => {
    const problems = writePolicyProblems({
      Machine: { allow: ['/spec/providerID', '/status', '/metadata/name', 'spec'], deny: 'x', extra: [] },
      Pod: {},
    });
    expect(problems.join('\n'))
      .to.match(/\/spec\/providerID cannot be allowed/)
      .and.match(/\/status cannot be allowed/)
      .and.match(/\/metadata\/name cannot be allowed/)
      .and.match(/"spec" is not a JSON pointer/)
      .and.match(/deny: must be a list/)
      .and.match(/extra: unknown key/)
      .and.match(/Pod: not a selectResource/);
    expect(() => parseWritePolicy({ Machine: { allow: ['/status'] } })).to.throw(/invalid write policy/);
  });
  it('parses a usable policy', () => {
    expect(parseWritePolicy({ Machine: { allow: ['/spec/version', '/metadata/labels'], deny: ['/spec/taints'] } })).to.deep.equal({
      Machine: { allow: ['/spec/version', '/metadata/labels'], deny: ['/spec/taints'] },
    });
    expect(writePolicyProblems({})).to.deep.equal([]);
  });
});
