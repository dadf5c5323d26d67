import { expect } from 'chai';
import {
  componentRbac,
  DEFAULT_PROVIDERS,
  EVENT_RULES,
  LEADER_ELECTION_RULES,
  isClusterScoped,
  parseProvider,
  providerProblems,
  providerRules,
  runtimeRbac,
  templateResourceOf,
  withTemplateKinds,
  type ProviderResource,
} from './rbac.js';

describe('runtime RBAC', () => {
  it('asks for events always and leases only with leader election: exactly the verbs events.ts and leader.ts call', () => {
    expect(runtimeRbac({ leaderElection: false })).to.deep.equal([
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
    expect(runtimeRbac()).to.deep.equal([
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);
  });

  it("appends the runtime rules to a component's own, as copies the component cannot change the shared rules through", () => {
    const own = [{ apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get'] }];
    const rules = componentRbac(own);
    expect(rules).to.deep.equal([...own, ...EVENT_RULES, ...LEADER_ELECTION_RULES]);
    rules[1]!.verbs.push('delete');
    expect(EVENT_RULES[0]!.verbs).to.deep.equal(['create', 'patch']);
    expect(componentRbac(own, { leaderElection: false })).to.deep.equal([...own, ...EVENT_RULES]);
  });

  it('refuses a component that declares Events or Leases itself (they have one home)', () => {
    expect(() => componentRbac([{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] }])).to.throw(
      /come from runtimeRbac/,
    );
    expect(() => componentRbac([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'patch'] }])).to.throw(
      /come from runtimeRbac/,
    );
  });
});

describe('provider rules', () => {
  const metal3: ProviderResource[] = [
    { role: 'InfraMachine', apiGroup: 'infrastructure.cluster.x-k8s.io', resource: 'metal3machines' },
    { role: 'InfraMachineTemplate', apiGroup: 'infrastructure.cluster.x-k8s.io', resource: 'metal3machinetemplates' },
  ];
  const cases: {
    name: string;
    providers: readonly ProviderResource[];
    verbs: Parameters<typeof providerRules>[1];
    want: ReturnType<typeof providerRules>;
  }[] = [
    { name: 'no verbs: no rules', providers: DEFAULT_PROVIDERS, verbs: {}, want: [] },
    {
      name: 'only the roles given verbs, one rule per role and group',
      providers: [...DEFAULT_PROVIDERS, ...metal3],
      verbs: { InfraMachine: ['get', 'patch'], ControlPlane: ['get', 'list', 'watch'] },
      want: [
        { apiGroups: ['infrastructure.cluster.x-k8s.io'], resources: ['devmachines', 'metal3machines'], verbs: ['get', 'patch'] },
        { apiGroups: ['controlplane.cluster.x-k8s.io'], resources: ['kubeadmcontrolplanes'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      name: 'resources of several groups stay apart and duplicates collapse',
      providers: [
        { role: 'BootstrapConfig', apiGroup: 'bootstrap.cluster.x-k8s.io', resource: 'kubeadmconfigs' },
        { role: 'BootstrapConfig', apiGroup: 'bootstrap.cluster.x-k8s.io', resource: 'kubeadmconfigs' },
        { role: 'BootstrapConfig', apiGroup: 'bootstrap.example.dev', resource: 'talosconfigs' },
      ],
      verbs: { BootstrapConfig: ['get'] },
      want: [
        { apiGroups: ['bootstrap.cluster.x-k8s.io'], resources: ['kubeadmconfigs'], verbs: ['get'] },
        { apiGroups: ['bootstrap.example.dev'], resources: ['talosconfigs'], verbs: ['get'] },
      ],
    },
    { name: 'a role without providers: no rule', providers: metal3, verbs: { ControlPlane: ['get'] }, want: [] },
  ];
  for (const c of cases) it(c.name, () => expect(providerRules(c.providers, c.verbs)).to.deep.equal(c.want));

  it('accepts the defaults and rejects wildcards, the core group, subresources and unknown roles', () => {
    expect(providerProblems(DEFAULT_PROVIDERS)).to.deep.equal([]);
    const bad = providerProblems([
      { role: 'InfraMachine', apiGroup: '*', resource: 'x' },
      { role: 'InfraMachine', apiGroup: '', resource: 'pods' },
      { role: 'InfraMachine', apiGroup: 'a.b', resource: 'machines/status' },
      { role: 'Machine' as never, apiGroup: 'a.b', resource: 'x' },
    ]);
    expect(bad).to.have.length(4);
    expect(bad.join('\n')).to.match(/DNS subdomain[\s\S]*DNS subdomain[\s\S]*lowercase plural[\s\S]*not one of/);
  });

  it('parses ROLE=plural.group and says what it expects otherwise', () => {
    expect(parseProvider('InfraMachine=metal3machines.infrastructure.cluster.x-k8s.io')).to.deep.equal(metal3[0]);
    expect(() => parseProvider('Machine=machines.cluster.x-k8s.io')).to.throw(/ROLE=plural.group/);
    expect(() => parseProvider('InfraMachine=metal3machines')).to.throw(/ROLE=plural.group/);
  });

  it('grants the template kind of a machine kind by construction (Cluster API naming), unless one is listed for that group', () => {
    expect(templateResourceOf('metal3machines')).to.equal('metal3machinetemplates');
    expect(templateResourceOf('kubeadmconfigs')).to.equal('kubeadmconfigtemplates');
    expect(templateResourceOf('fleet')).to.equal(undefined);
    expect(withTemplateKinds([metal3[0]!])).to.deep.equal(metal3);
    expect(withTemplateKinds(metal3)).to.deep.equal(metal3);
    expect(withTemplateKinds(DEFAULT_PROVIDERS)).to.deep.equal([...DEFAULT_PROVIDERS]);
    const rules = providerRules([metal3[0]!], { InfraMachineTemplate: ['get', 'create'] });
    expect(rules).to.deep.equal([
      { apiGroups: ['infrastructure.cluster.x-k8s.io'], resources: ['metal3machinetemplates'], verbs: ['get', 'create'] },
    ]);
    const bad = [{ role: 'BootstrapConfig', apiGroup: 'bootstrap.example.dev', resource: 'fleet' }] as const;
    expect(() => withTemplateKinds(bad)).to.throw(/BootstrapConfigTemplate=<plural>\.bootstrap\.example\.dev/);
    expect(providerProblems(bad).join('')).to.match(/cannot be derived/);
  });

  it('knows which kinds are cluster-scoped (a namespace-scoped deployment grants them with a ClusterRole)', () => {
    expect(isClusterScoped('apiextensions.k8s.io', 'customresourcedefinitions')).to.equal(true);
    expect(isClusterScoped('authorization.k8s.io', 'subjectaccessreviews')).to.equal(true);
    expect(isClusterScoped('', 'nodes/status')).to.equal(true);
    expect(isClusterScoped('cluster.x-k8s.io', 'machines')).to.equal(false);
    expect(isClusterScoped('infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(false);
    expect(isClusterScoped('', 'events')).to.equal(false);
  });
});
