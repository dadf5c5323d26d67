// Security of the synthesized deployment (cdk8s): least-privilege RBAC per ServiceAccount (resolved through bindings
// and ClusterRole aggregation, as the authorizer does), updaters unable to write CAPI objects, and Deployments that meet
// the Pod Security "restricted" profile. The checkers are tested against bad inputs too, so these tests can fail.
import { expect } from 'chai';
import { LEADER_ELECTION_RULES, EVENT_RULES } from '../../cdk8s/rbac.js';
import { METRICS_AUTH_RULES, isClusterScoped } from '../../src/runtime/rbac.js';
import { COMPONENTS } from '../../cdk8s/components.js';
import { callerNamespaces } from '../../cdk8s/charts.js';
import { sampleUpdaterWorkloads, synthesize } from '../../cdk8s/synth.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { rbac as dashboardRbac } from '../../src/dashboard/rbac.js';
import type { PolicyRule } from '../../src/runtime/pure/types.js';
import { restrictedViolations } from './pod-security.js';
import { ESCALATION_VERBS, WRITE_VERBS, allowed, grantsOf, parseDocs, ruleAllows, type Doc, type Grant, type Rule } from './rbac.js';

const NS = 'inplace-system';
const EXT = { callerNamespaceSelector: callerNamespaces(['capi-system']) };
const docs = parseDocs(synthesize({ updaters: sampleUpdaterWorkloads(), runtimeExtension: EXT, dashboard: true }).map((f) => f.content));
const deployments = docs.filter((d) => d.kind === 'Deployment');
const roles = docs.filter((d) => d.kind === 'Role' || d.kind === 'ClusterRole');
type PodTemplate = { metadata?: { annotations?: Record<string, string> }; spec: Record<string, unknown> };
const podTemplate = (d: Doc): PodTemplate => (d['spec'] as { template: PodTemplate }).template;
const saOf = (d: Doc): string => String(podTemplate(d).spec['serviceAccountName'] ?? 'default');

/** API groups of Cluster API and its providers (the CAPI objects updaters must never write). */
const isCapiGroup = (g: string): boolean => /(^|\.)cluster\.x-k8s\.io$/.test(g) && !/(^|\.)inplace\.cluster\.x-k8s\.io$/.test(g);
/** Calls no component of this platform needs (privilege escalation, credentials, code execution, cluster config). */
const DANGEROUS: { group: string; resource: string; verbs: string[] }[] = [
  { group: '', resource: 'secrets', verbs: ['get', 'list', 'watch', ...WRITE_VERBS] },
  { group: '', resource: 'pods/exec', verbs: ['create', 'get'] },
  { group: '', resource: 'pods/attach', verbs: ['create', 'get'] },
  { group: '', resource: 'pods/portforward', verbs: ['create', 'get'] },
  { group: '', resource: 'serviceaccounts/token', verbs: ['create'] },
  { group: '', resource: 'nodes/proxy', verbs: ['get', 'create'] },
  { group: '', resource: 'namespaces', verbs: WRITE_VERBS },
  { group: '', resource: 'serviceaccounts', verbs: WRITE_VERBS },
  { group: '', resource: 'pods', verbs: WRITE_VERBS },
  { group: 'apps', resource: 'deployments', verbs: WRITE_VERBS },
  { group: 'rbac.authorization.k8s.io', resource: 'roles', verbs: ['get', ...WRITE_VERBS, ...ESCALATION_VERBS] },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verbs: ['get', ...WRITE_VERBS, ...ESCALATION_VERBS] },
  { group: 'rbac.authorization.k8s.io', resource: 'rolebindings', verbs: WRITE_VERBS },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verbs: WRITE_VERBS },
  { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', verbs: WRITE_VERBS },
  { group: 'admissionregistration.k8s.io', resource: 'validatingwebhookconfigurations', verbs: WRITE_VERBS },
  { group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations', verbs: WRITE_VERBS },
  { group: 'certificates.k8s.io', resource: 'certificatesigningrequests', verbs: WRITE_VERBS },
  { group: 'authentication.k8s.io', resource: 'tokenreviews', verbs: ['create'] },
  { group: '', resource: 'users', verbs: ['impersonate'] },
  { group: '', resource: 'serviceaccounts', verbs: ['impersonate'] },
];

/** Problems of one rule that make any role over-broad, whoever holds it. */
function ruleProblems(r: Rule): string[] {
  const p: string[] = [];
  for (const [field, list] of Object.entries({
    apiGroups: r.apiGroups,
    resources: r.resources,
    verbs: r.verbs,
    resourceNames: r.resourceNames,
  })) {
    if ((list ?? []).some((x) => x.includes('*'))) p.push(`${field} contains a wildcard (${(list ?? []).join(', ')})`);
  }
  if (r.nonResourceURLs?.length) p.push(`nonResourceURLs ${r.nonResourceURLs.join(', ')}`);
  for (const v of r.verbs) if (ESCALATION_VERBS.includes(v)) p.push(`verb ${v}`);
  for (const d of DANGEROUS)
    for (const v of d.verbs) if (ruleAllows(r, v, d.group, d.resource)) p.push(`allows ${v} ${d.resource}${d.group ? `.${d.group}` : ''}`);
  return [...new Set(p)];
}

/** Grants flattened to `verb group/resource @scope` strings. */
const flat = (grants: readonly Grant[]): string[] =>
  [
    ...new Set(
      grants.flatMap((g) =>
        (g.rule.apiGroups ?? []).flatMap((grp) =>
          (g.rule.resources ?? []).flatMap((res) => g.rule.verbs.map((v) => `${v} ${grp}/${res} @${g.namespace ?? 'cluster'}`)),
        ),
      ),
    ),
  ].sort();

describe('security: synthesized manifests', () => {
  describe('the checkers themselves', () => {
    const good = {
      containers: [
        {
          name: 'c',
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            runAsNonRoot: true,
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ],
    };
    const bad: [string, (s: { containers: Record<string, unknown>[] } & Record<string, unknown>) => void, RegExp][] = [
      ['hostNetwork', (s) => (s['hostNetwork'] = true), /hostNetwork/],
      ['hostPID', (s) => (s['hostPID'] = true), /hostPID/],
      ['a hostPath volume', (s) => (s['volumes'] = [{ name: 'h', hostPath: { path: '/' } }]), /hostPath/],
      ['privileged', (s) => ((s.containers[0]!['securityContext'] as Record<string, unknown>)['privileged'] = true), /privileged/],
      [
        'privilege escalation allowed',
        (s) => delete (s.containers[0]!['securityContext'] as Record<string, unknown>)['allowPrivilegeEscalation'],
        /allowPrivilegeEscalation/,
      ],
      [
        'capabilities not dropped',
        (s) => ((s.containers[0]!['securityContext'] as Record<string, unknown>)['capabilities'] = { drop: ['NET_RAW'] }),
        /drop/,
      ],
      [
        'an added capability',
        (s) => ((s.containers[0]!['securityContext'] as Record<string, unknown>)['capabilities'] = { drop: ['ALL'], add: ['SYS_ADMIN'] }),
        /SYS_ADMIN/,
      ],
      [
        'runAsNonRoot missing',
        (s) => delete (s.containers[0]!['securityContext'] as Record<string, unknown>)['runAsNonRoot'],
        /runAsNonRoot/,
      ],
      ['runAsUser 0', (s) => ((s.containers[0]!['securityContext'] as Record<string, unknown>)['runAsUser'] = 0), /runAsUser/],
      [
        'seccomp Unconfined',
        (s) => ((s.containers[0]!['securityContext'] as Record<string, unknown>)['seccompProfile'] = { type: 'Unconfined' }),
        /seccomp/,
      ],
      ['no seccomp profile', (s) => delete (s.containers[0]!['securityContext'] as Record<string, unknown>)['seccompProfile'], /seccomp/],
      ['a hostPort', (s) => (s.containers[0]!['ports'] = [{ containerPort: 80, hostPort: 80 }]), /hostPort/],
      ['an unsafe sysctl', (s) => (s['securityContext'] = { sysctls: [{ name: 'kernel.msgmax', value: '1' }] }), /sysctl/],
      [
        'an init container running as root',
        (s) => (s['initContainers'] = [{ name: 'i', securityContext: { ...good.containers[0]!.securityContext, runAsNonRoot: false } }]),
        /initContainers/,
      ],
    ];
    it('accepts a compliant pod', () => expect(restrictedViolations(structuredClone(good))).to.deep.equal([]));
    for (const [what, mutate, mention] of bad) {
      it(`flags ${what}`, () => {
        const s = structuredClone(good) as Parameters<typeof mutate>[0];
        mutate(s);
        const v = restrictedViolations(s);
        expect(v.join('; ')).to.match(mention);
      });
    }
    it('flags wildcard, escalation and Secret rules', () => {
      expect(ruleProblems({ apiGroups: ['*'], resources: ['machines'], verbs: ['get'] })).to.have.length.greaterThan(0);
      expect(ruleProblems({ apiGroups: [''], resources: ['secrets'], verbs: ['list'] })).to.deep.equal(['allows list secrets']);
      expect(ruleProblems({ apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'] })).to.include(
        'verb bind',
      );
      expect(ruleProblems({ apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get', 'list'] })).to.deep.equal([]);
    });
    it('resolves aggregated ClusterRoles and namespaced Roles with their scope', () => {
      const g = grantsOf(docs, NS, 'inplace-machine-task-controller');
      expect(allowed(g, 'create', 'samples.inplace.cluster.x-k8s.io', 'osimageupdatetasks', 'ns1')).to.equal(true);
      expect(allowed(g, 'create', 'coordination.k8s.io', 'leases', NS)).to.equal(true);
      expect(allowed(g, 'delete', 'cluster.x-k8s.io', 'machines', 'ns1')).to.equal(false);
    });
  });

  it('has a Deployment for every component and sample updater, each with its own ServiceAccount', () => {
    const names = deployments.map((d) => d.metadata.name).sort();
    expect(names).to.deep.equal(
      [
        ...COMPONENTS.map((c) => `inplace-${c.name}`),
        ...Object.keys(sampleUpdaters).map((u) => `inplace-updater-${u}`),
        'inplace-dashboard',
      ].sort(),
    );
    const sas = deployments.map(saOf);
    expect(new Set(sas).size, `ServiceAccounts ${sas.join(', ')}`).to.equal(deployments.length);
    expect(sas).to.not.include('default');
  });

  describe('Pod Security "restricted"', () => {
    for (const d of deployments) {
      it(`${d.metadata.name} meets the restricted profile`, () => {
        const t = podTemplate(d);
        expect(restrictedViolations(t.spec, t.metadata?.annotations ?? {})).to.deep.equal([]);
      });
      it(`${d.metadata.name} runs with a read-only root filesystem and no host access`, () => {
        const t = podTemplate(d);
        for (const c of t.spec['containers'] as { name: string; securityContext?: { readOnlyRootFilesystem?: boolean } }[]) {
          expect(c.securityContext?.readOnlyRootFilesystem, `container ${c.name}`).to.equal(true);
        }
        expect(t.spec['hostNetwork'] ?? false).to.equal(false);
      });
    }
    it('the namespace enforces the restricted profile', () => {
      const ns = docs.find((d) => d.kind === 'Namespace' && d.metadata.name === NS);
      expect(ns?.metadata.labels?.['pod-security.kubernetes.io/enforce']).to.equal('restricted');
    });
  });

  describe('RBAC least privilege', () => {
    for (const r of roles) {
      it(`${r.kind} ${r.metadata.name}: no wildcards, no escalation, no Secrets, no dangerous calls`, () => {
        // The sanctioned exceptions: secure /metrics (--metrics-secure) creates TokenReviews/SubjectAccessReviews
        // (exactly the runtime's METRICS_AUTH_RULES), and scrapers are granted get /metrics by inplace-metrics-reader.
        const same = (a: readonly string[] | undefined, b: readonly string[] | undefined): boolean =>
          JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
        const sanctioned = (x: Rule): boolean =>
          METRICS_AUTH_RULES.some((m) => same(m.apiGroups, x.apiGroups) && same(m.resources, x.resources) && same(m.verbs, x.verbs)) ||
          (r.metadata.name === 'inplace-metrics-reader' &&
            same(x.nonResourceURLs, ['/metrics']) &&
            same(x.verbs, ['get']) &&
            !x.resources?.length) ||
          // The plan controller gets (never lists or watches) the Secrets the operator's alert-gate policy names, by
          // name, through one Role per namespace (none in these default manifests, see the policy test below).
          (r.kind === 'Role' &&
            r.metadata.name === 'inplace-plan-controller-alert-gate-credentials' &&
            same(x.apiGroups, ['']) &&
            same(x.resources, ['secrets']) &&
            same(x.verbs, ['get']) &&
            (x.resourceNames?.length ?? 0) > 0);
        const problems = ((r['rules'] as Rule[] | null) ?? []).filter((x) => !sanctioned(x)).flatMap(ruleProblems);
        expect(problems).to.deep.equal([]);
      });
    }

    for (const c of COMPONENTS) {
      describe(`controller ${c.name}`, () => {
        const grants = grantsOf(docs, NS, `inplace-${c.name}`);
        it('is granted nothing beyond what its folder declares, its leader-election Lease and Events (plus the sample kinds it handles)', () => {
          const declared: PolicyRule[] = [...c.rbac, ...LEADER_ELECTION_RULES, ...EVENT_RULES, ...METRICS_AUTH_RULES];
          const extra = grants.filter((g) => {
            const groups = g.rule.apiGroups ?? [];
            if (groups.every((grp) => grp === 'samples.inplace.cluster.x-k8s.io')) return false; // aggregated from the samples chart
            return (g.rule.resources ?? []).some((res) =>
              groups.some((grp) => g.rule.verbs.some((v) => !declared.some((d) => ruleAllows(d, v, grp, res)))),
            );
          });
          expect(flat(extra)).to.deep.equal([]);
        });
        it('can write Leases only in its own namespace (leader election), not cluster-wide', () => {
          const wide = grants.filter(
            (g) => g.namespace === undefined && WRITE_VERBS.some((v) => ruleAllows(g.rule, v, 'coordination.k8s.io', 'leases')),
          );
          expect(wide.map((g) => `${g.role}: ${g.rule.verbs.join(',')} leases cluster-wide`)).to.deep.equal([]);
        });
        it('cannot delete or create CAPI objects, and writes only Machines and MachineDeployments / provider objects it commits to (the plan controller also aligns control planes)', () => {
          for (const [grp, res] of [
            ['cluster.x-k8s.io', 'machines'],
            ['cluster.x-k8s.io', 'machinedeployments'],
            ['cluster.x-k8s.io', 'clusters'],
            ['controlplane.cluster.x-k8s.io', 'kubeadmcontrolplanes'],
            ['cluster.x-k8s.io', 'machinehealthchecks'],
          ] as const) {
            expect(allowed(grants, 'delete', grp, res, 'ns1'), `delete ${res}`).to.equal(false);
            expect(allowed(grants, 'create', grp, res, 'ns1'), `create ${res}`).to.equal(false);
          }
          expect(allowed(grants, 'patch', 'cluster.x-k8s.io', 'clusters', 'ns1'), 'patch clusters').to.equal(false);
          // Owner alignment (docs/design.md §11): only the plan controller pauses and aligns the control plane.
          expect(allowed(grants, 'patch', 'controlplane.cluster.x-k8s.io', 'kubeadmcontrolplanes', 'ns1'), 'patch control planes').to.equal(
            c.name === 'plan-controller',
          );
        });
      });
    }

    for (const [name, u] of Object.entries(sampleUpdaters)) {
      describe(`updater ${name}`, () => {
        const grants = grantsOf(docs, NS, `inplace-updater-${name}`);
        it('cannot write any CAPI object (Cluster API or provider groups), in any namespace (contract C8)', () => {
          const capiWrites = grants.filter(
            (g) =>
              (g.rule.apiGroups ?? []).some((grp) => isCapiGroup(grp) || grp === '*') &&
              g.rule.verbs.some((v) => WRITE_VERBS.includes(v) || v === '*'),
          );
          expect(flat(capiWrites)).to.deep.equal([]);
          expect(allowed(grants, 'patch', 'cluster.x-k8s.io', 'machines', 'ns1')).to.equal(false);
          expect(allowed(grants, 'patch', 'infrastructure.cluster.x-k8s.io', 'devmachines', 'ns1')).to.equal(false);
          expect(allowed(grants, 'patch', 'bootstrap.cluster.x-k8s.io', 'kubeadmconfigs', 'ns1')).to.equal(false);
        });
        it('can write Leases only in its own namespace (leader election), not cluster-wide', () => {
          const wide = grants.filter(
            (g) => g.namespace === undefined && WRITE_VERBS.some((v) => ruleAllows(g.rule, v, 'coordination.k8s.io', 'leases')),
          );
          expect(wide.map((g) => `${g.role}: ${g.rule.verbs.join(',')} leases cluster-wide`)).to.deep.equal([]);
        });
        it("cannot write plans, MachineUpdates or any task's spec (only the status of the task kind it serves)", () => {
          for (const res of ['inplaceupdateplans', 'machineupdates', 'machineupdates/status', 'updaterupdatetasks']) {
            for (const v of WRITE_VERBS) expect(allowed(grants, v, 'inplace.cluster.x-k8s.io', res, 'ns1'), `${v} ${res}`).to.equal(false);
          }
          for (const res of ['osimageupdatetasks', 'kubernetesversionupdatetasks']) {
            for (const v of WRITE_VERBS)
              expect(allowed(grants, v, 'samples.inplace.cluster.x-k8s.io', res, 'ns1'), `${v} ${res}`).to.equal(false);
          }
          const statusWrites = flat(
            grants.filter(
              (g) => (g.rule.resources ?? []).some((r) => r.endsWith('/status')) && g.rule.verbs.some((v) => WRITE_VERBS.includes(v)),
            ),
          ).filter((s) => !s.startsWith('get'));
          expect(
            statusWrites.every((s) => /tasks\/status|nodes\/status/.test(s)),
            statusWrites.join('\n'),
          ).to.equal(true);
        });
        it('is granted nothing beyond what it declares, its Lease and Events', () => {
          const declared = u.rbac;
          const extra = grants.filter((g) =>
            (g.rule.resources ?? []).some((res) =>
              (g.rule.apiGroups ?? []).some((grp) =>
                g.rule.verbs.some(
                  (v) =>
                    !declared.some((d) => ruleAllows(d, v, grp, res)) &&
                    ![...LEADER_ELECTION_RULES, ...EVENT_RULES].some((d) => ruleAllows(d, v, grp, res)),
                ),
              ),
            ),
          );
          expect(flat(extra)).to.deep.equal([]);
        });
      });
    }
  });

  describe('the dashboard (--dashboard): read-only', () => {
    const grants = grantsOf(docs, NS, 'inplace-dashboard');
    it('is granted exactly what src/dashboard/rbac.ts declares: no Lease, no Events', () => {
      expect(grants.length).to.be.greaterThan(0);
      const extra = grants.filter((g) =>
        (g.rule.resources ?? []).some((res) =>
          (g.rule.apiGroups ?? []).some((grp) => g.rule.verbs.some((v) => !dashboardRbac.some((d) => ruleAllows(d, v, grp, res)))),
        ),
      );
      expect(flat(extra)).to.deep.equal([]);
      for (const d of dashboardRbac)
        for (const grp of d.apiGroups)
          for (const res of d.resources)
            for (const v of d.verbs) expect(allowed(grants, v, grp, res, 'ns1'), `${v} ${res}.${grp}`).to.equal(true);
    });
    it('has no write verb but create on TokenReviews and SubjectAccessReviews (questions, never stored), and no Secret access', () => {
      const writes = flat(grants.filter((g) => g.rule.verbs.some((v) => WRITE_VERBS.includes(v) || v === '*')));
      expect(writes).to.deep.equal([
        'create authentication.k8s.io/tokenreviews @cluster',
        'create authorization.k8s.io/subjectaccessreviews @cluster',
      ]);
      for (const res of ['inplaceupdatecampaigns', 'inplaceupdateplans', 'machineupdates', 'machineupdates/status'])
        for (const v of [...WRITE_VERBS, 'get'])
          expect(allowed(grants, v, 'inplace.cluster.x-k8s.io', res, 'ns1'), `${v} ${res}`).to.equal(false);
      for (const v of ['get', 'list', 'watch']) expect(allowed(grants, v, '', 'secrets', 'ns1'), `${v} secrets`).to.equal(false);
    });
  });

  describe('namespace-scoped mode (--namespace-scoped fleet-a)', () => {
    // The controllers run in the install namespace of fleet-a (a namespace of its own per watched namespace).
    const INSTALL = 'inplace-fleet-a';
    const scoped = parseDocs(
      synthesize({ watchNamespace: 'fleet-a', updaters: sampleUpdaterWorkloads(), runtimeExtension: EXT, dashboard: true }).map(
        (f) => f.content,
      ),
    );
    const accounts = scoped.filter((d) => d.kind === 'Deployment').map(saOf);

    it('grants no ServiceAccount a namespaced kind cluster-wide: only CRDs, TokenReviews, SubjectAccessReviews (and the nodes a node-simulating sample patches)', () => {
      expect(accounts.length).to.equal(COMPONENTS.length + Object.keys(sampleUpdaters).length + 1);
      for (const sa of accounts) {
        const wide = grantsOf(scoped, INSTALL, sa).filter((g) => g.namespace === undefined);
        const namespaced = wide.flatMap((g) =>
          (g.rule.resources ?? []).flatMap((res) =>
            (g.rule.apiGroups ?? []).filter((grp) => !isClusterScoped(grp, res)).map((grp) => `${g.role}: ${res}.${grp}`),
          ),
        );
        expect(namespaced, sa).to.deep.equal([]);
      }
    });

    it('grants the namespaced kinds in fleet-a (and the Lease in the install namespace) only', () => {
      for (const sa of accounts) {
        const scopes = new Set(grantsOf(scoped, INSTALL, sa).map((g) => g.namespace));
        scopes.delete(undefined);
        // The dashboard elects no leader: no Lease, so nothing in the install namespace.
        expect([...scopes].sort(), sa).to.deep.equal(sa === 'inplace-dashboard' ? ['fleet-a'] : ['fleet-a', INSTALL].sort());
      }
      const mtc = grantsOf(scoped, INSTALL, 'inplace-machine-task-controller');
      expect(allowed(mtc, 'patch', 'infrastructure.cluster.x-k8s.io', 'devmachines', 'fleet-a')).to.equal(true);
      expect(allowed(mtc, 'patch', 'infrastructure.cluster.x-k8s.io', 'devmachines', 'fleet-b')).to.equal(false);
      expect(allowed(mtc, 'get', 'apiextensions.k8s.io', 'customresourcedefinitions')).to.equal(true);
    });
  });
});
