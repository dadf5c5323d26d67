// The cdk8s synthesis: snapshot of the YAML, CRDs included verbatim, Pod Security "restricted", least-privilege RBAC
// that covers what each component's code refers to and follows what is deployed (samples only with --samples), stable selectors,
// disruption budgets, spread, priority, NetworkPolicy, and the warning for an image no cluster can pull.
// (Schema validation of every object: manifests-validate.test.ts.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import * as api from '../../src/api/index.js';
import type { ResourceType } from '../../src/api/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { COMPONENTS } from '../../src/components.js';
import { isClusterScoped, runtimeRbac } from '../../src/runtime/rbac.js';
import { allowed, grantsOf, type Doc } from '../security/rbac.js';
import { App, Chart } from 'cdk8s';
import { addWorkload, callerNamespaces } from '../../cdk8s/charts.js';
import { providerGrantTable } from '../../cdk8s/docs.js';
import {
  DEFAULT_IMAGE,
  DEFAULTS,
  PROJECT_ROOT,
  SAMPLES_FILE,
  SAMPLE_GENERIC_UPDATER_NAMES,
  componentWorkloads,
  imageWarning,
  installNamespace,
  parseResourceFlags,
  sampleUpdaterWorkloads,
  synthesize,
} from '../../cdk8s/synth.js';
import { allows, normalizeRules, ruleProblems } from '../../cdk8s/rbac.js';
import { docsOf, effectiveRules, type K8sDoc } from './manifests.js';

const SNAPSHOTS = join(PROJECT_ROOT, 'test', 'cli', '__snapshots__');
/** The runtime extension as the tests deploy it: callers in Cluster API's usual namespaces. */
const EXT = { callerNamespaceSelector: callerNamespaces(['capi-system', 'capi-kubeadm-control-plane-system']) };
const files = synthesize({
  image: 'registry.example.com/inplace-capi:test',
  namespace: 'inplace-system',
  updaters: sampleUpdaterWorkloads(),
  runtimeExtension: EXT,
});
const docs = docsOf(files);
const byKind = (kind: string): K8sDoc[] => docs.filter((d) => d.kind === kind);

interface Container {
  name: string;
  args?: string[];
  command?: string[];
  securityContext?: Record<string, unknown>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  livenessProbe?: { httpGet?: { path: string; port: number } };
  readinessProbe?: { httpGet?: { path: string; port: number } };
}
interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: Record<string, unknown>[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  serviceAccountName?: string;
}
/** Source without comments (a kind named in a comment is not a call). */
const stripComments = (src: string): string => src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
/** The balanced argument list of the call whose '(' is at `open`. */
function callArgs(src: string, open: number): string {
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    if (src[i] === '(') depth++;
    else if (src[i] === ')' && --depth === 0) return src.slice(open, i + 1);
  }
  return src.slice(open);
}
const podOf = (d: K8sDoc): PodSpec => (d['spec'] as { template: { spec: PodSpec } }).template.spec;

describe('cdk8s synthesis', () => {
  describe('snapshot', () => {
    // The CRD chart is checked against crds/ directly below; snapshotting it would duplicate the CRDs.
    for (const f of files.filter((x) => !x.name.includes('crds'))) {
      it(`${f.name} matches test/cli/__snapshots__/${f.name} (UPDATE_SNAPSHOTS=1 rewrites it)`, () => {
        const p = join(SNAPSHOTS, f.name);
        if (process.env.UPDATE_SNAPSHOTS === '1') {
          mkdirSync(dirname(p), { recursive: true });
          writeFileSync(p, f.content);
        }
        expect(existsSync(p), `no snapshot ${p}; run UPDATE_SNAPSHOTS=1 npx mocha test/cli/synth.test.ts and review the diff`).to.equal(
          true,
        );
        expect(
          f.content,
          `synthesized ${f.name} differs from its snapshot; if intended, rerun with UPDATE_SNAPSHOTS=1 and review the diff`,
        ).to.equal(readFileSync(p, 'utf8'));
      });
    }
    it('has no stale snapshot files', () => {
      const names = new Set(files.map((f) => f.name));
      expect(
        readdirSync(SNAPSHOTS, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.yaml') && !names.has(n)),
      ).to.deep.equal([]);
    });
  });

  it('writes the files in apply order: CRDs, platform, and the opt-in samples in a directory of their own', () => {
    expect(files.map((f) => f.name)).to.deep.equal(['00-crds.yaml', '10-platform.yaml', 'samples/20-sample-updaters.yaml']);
    expect(SAMPLES_FILE).to.equal('samples/20-sample-updaters.yaml');
  });

  it('includes every CRD of crds/ verbatim', () => {
    const want = readdirSync(join(PROJECT_ROOT, 'crds'))
      .filter((n) => n.endsWith('.yaml'))
      .sort()
      .flatMap((n) => parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'crds', n), 'utf8')).map((d) => d.toJSON() as unknown));
    expect(docsOf(files.filter((f) => f.name === '00-crds.yaml'))).to.deep.equal(want);
  });

  it('puts the sample updaters CRDs in the optional chart', () => {
    const names = docsOf(files.filter((f) => f.name === SAMPLES_FILE))
      .filter((d) => d.kind === 'CustomResourceDefinition')
      .map((d) => d.metadata.name);
    expect(names).to.include.members([
      'osimageupdatetasks.samples.inplace.cluster.x-k8s.io',
      'kubernetesversionupdatetasks.samples.inplace.cluster.x-k8s.io',
    ]);
  });

  it('leaves the samples chart out when no updaters are given', () => {
    expect(synthesize({}).map((f) => f.name)).to.deep.equal(['00-crds.yaml', '10-platform.yaml']);
  });

  describe('Deployments', () => {
    const deployments = byKind('Deployment');
    const expected = [...COMPONENTS.map((c) => `inplace-${c.name}`), ...Object.keys(sampleUpdaters).map((u) => `inplace-updater-${u}`)];

    it('has one Deployment per component and per sample updater', () => {
      expect(deployments.map((d) => d.metadata.name).sort()).to.deep.equal([...expected].sort());
    });

    for (const c of COMPONENTS) {
      it(`runs ${c.name} with leader election and the metrics/health ports`, () => {
        const d = deployments.find((x) => x.metadata.name === `inplace-${c.name}`)!;
        const ctr = podOf(d).containers[0]!;
        expect(ctr.command).to.deep.equal(['node', 'dist/src/cli/main.js']);
        expect(ctr.args).to.deep.equal([
          'run',
          c.name,
          ...(c.name === 'runtime-extension' ? ['--extension-port', '9443', '--cert-dir', '/tmp/k8s-webhook-server/serving-certs'] : []),
          '--leader-elect',
          '--metrics-port',
          '8080',
          '--metrics-secure',
          '--health-port',
          '8081',
        ]);
        expect(podOf(d).serviceAccountName).to.equal(`inplace-${c.name}`);
      });
    }

    for (const name of expected) {
      describe(name, () => {
        const pod = (): PodSpec => podOf(deployments.find((x) => x.metadata.name === name)!);
        it('meets Pod Security "restricted"', () => {
          const p = pod();
          expect(p.hostNetwork ?? false).to.equal(false);
          expect(p.hostPID ?? false).to.equal(false);
          expect(p.hostIPC ?? false).to.equal(false);
          for (const v of p.volumes ?? [])
            expect(Object.keys(v).filter((k) => k !== 'name')).to.satisfy((ks: string[]) =>
              ks.every((k) =>
                ['emptyDir', 'configMap', 'secret', 'projected', 'downwardAPI', 'persistentVolumeClaim', 'ephemeral', 'csi'].includes(k),
              ),
            );
          expect((p.securityContext?.['seccompProfile'] as { type: string } | undefined)?.type).to.equal('RuntimeDefault');
          expect(p.securityContext?.['runAsNonRoot']).to.equal(true);
          for (const c of p.containers) {
            const sc = c.securityContext ?? {};
            expect(sc['runAsNonRoot'], c.name).to.equal(true);
            expect(sc['runAsUser'], c.name).to.not.equal(0);
            expect(sc['privileged'] ?? false, c.name).to.equal(false);
            expect(sc['allowPrivilegeEscalation'], c.name).to.equal(false);
            expect(sc['readOnlyRootFilesystem'], c.name).to.equal(true);
            expect((sc['capabilities'] as { drop?: string[]; add?: string[] } | undefined)?.drop, c.name).to.deep.equal(['ALL']);
            expect((sc['capabilities'] as { add?: string[] } | undefined)?.add ?? [], c.name).to.deep.equal([]);
            expect((sc['seccompProfile'] as { type: string } | undefined)?.type, c.name).to.equal('RuntimeDefault');
          }
        });
        it('sets resource requests and limits and HTTP probes on the health port', () => {
          for (const c of pod().containers) {
            expect(c.resources?.requests).to.have.keys('cpu', 'memory');
            expect(c.resources?.limits).to.have.keys('cpu', 'memory');
            expect(c.livenessProbe?.httpGet).to.deep.include({ path: '/healthz', port: 8081 });
            expect(c.readinessProbe?.httpGet).to.deep.include({ path: '/readyz', port: 8081 });
          }
        });
      });
    }
  });

  it('mounts the write policy (a ConfigMap) into the plan-controller and machine-task-controller and passes --write-policy', () => {
    const withPolicy = docsOf(
      synthesize({
        namespace: 'inplace-system',
        writePolicy: { Machine: { allow: ['/spec/version', '/metadata/labels/example.com~1team'] } },
      }),
    );
    const cm = withPolicy.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'inplace-write-policy')!;
    expect((cm['data'] as Record<string, string>)['write-policy.yaml']).to.match(/\/spec\/version/);
    const args = (name: string): string[] =>
      podOf(withPolicy.find((d) => d.kind === 'Deployment' && d.metadata.name === `inplace-${name}`)!).containers[0]!.args ?? [];
    expect(args('plan-controller').join(' ')).to.include('--write-policy /etc/inplace/write-policy.yaml');
    expect(args('machine-task-controller').join(' ')).to.include('--write-policy /etc/inplace/write-policy.yaml');
    expect(args('mhc-extension').join(' ')).to.not.include('--write-policy');
    expect(() => synthesize({ writePolicy: { Machine: { allow: ['/spec/providerID'] } } })).to.throw(/cannot be allowed/);
    expect(byKind('ConfigMap').map((d) => d.metadata.name)).to.not.include('inplace-write-policy');
  });

  it('the alert-gate policy: a ConfigMap for the plan and campaign controllers, and get on exactly its Secrets by name, per namespace', () => {
    const policy = {
      endpoints: [
        { url: 'https://prometheus.monitoring:9090', secrets: ['fleet-a/prom-creds', 'fleet-b/prom-creds'] },
        { url: 'http://alertmanager.monitoring:9093', secrets: ['fleet-a/am-creds'] },
      ],
    };
    const withPolicy = docsOf(synthesize({ namespace: 'inplace-system', alertGatePolicy: policy }));
    const cm = withPolicy.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'inplace-alert-gate-policy')!;
    expect((cm['data'] as Record<string, string>)['alert-gate-policy.yaml']).to.include('https://prometheus.monitoring:9090');
    const args = (name: string): string =>
      (podOf(withPolicy.find((d) => d.kind === 'Deployment' && d.metadata.name === `inplace-${name}`)!).containers[0]!.args ?? []).join(
        ' ',
      );
    expect(args('plan-controller')).to.include('--alert-gate-policy /etc/inplace-alert-gate/alert-gate-policy.yaml');
    expect(args('campaign-controller')).to.include('--alert-gate-policy /etc/inplace-alert-gate/alert-gate-policy.yaml');
    expect(args('machine-task-controller')).to.not.include('--alert-gate-policy');
    // One Role per namespace, get only, by name; bound to the plan controller alone.
    const secretRules = withPolicy
      .filter((d) => d.kind === 'Role' || d.kind === 'ClusterRole')
      .flatMap((d) =>
        ((d['rules'] as { resources?: string[]; verbs: string[]; resourceNames?: string[] }[] | undefined) ?? [])
          .filter((r) => r.resources?.includes('secrets'))
          .map((r) => ({ kind: d.kind, name: d.metadata.name, namespace: d.metadata.namespace, verbs: r.verbs, names: r.resourceNames })),
      );
    expect(secretRules).to.deep.equal([
      {
        kind: 'Role',
        name: 'inplace-plan-controller-alert-gate-credentials',
        namespace: 'fleet-a',
        verbs: ['get'],
        names: ['am-creds', 'prom-creds'],
      },
      { kind: 'Role', name: 'inplace-plan-controller-alert-gate-credentials', namespace: 'fleet-b', verbs: ['get'], names: ['prom-creds'] },
    ]);
    const bindings = withPolicy.filter(
      (d) => d.kind === 'RoleBinding' && d.metadata.name === 'inplace-plan-controller-alert-gate-credentials',
    );
    expect(bindings.map((b) => b['subjects'])).to.deep.equal([
      [{ kind: 'ServiceAccount', name: 'inplace-plan-controller', namespace: 'inplace-system' }],
      [{ kind: 'ServiceAccount', name: 'inplace-plan-controller', namespace: 'inplace-system' }],
    ]);
    // Without a policy: no ConfigMap, no Secret access at all (checked for every role in 'RBAC' below).
    expect(byKind('ConfigMap').map((d) => d.metadata.name)).to.not.include('inplace-alert-gate-policy');
    expect(() => synthesize({ alertGatePolicy: { endpoints: [{ url: 'http://user@evil:1' }] } })).to.throw(/user info/);
    expect(() => synthesize({ watchNamespace: 'fleet-a', alertGatePolicy: policy })).to.throw(/outside the watched namespace fleet-a/);
  });

  it('has a metrics Service selecting the controller pods', () => {
    const svc = byKind('Service').find((s) => s.metadata.name === 'inplace-controller-metrics')!;
    const sel = (svc['spec'] as { selector: Record<string, string> }).selector;
    const pods = byKind('Deployment').filter((d) =>
      Object.entries(sel).every(
        ([k, v]) => (d['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels[k] === v,
      ),
    );
    expect(pods.map((d) => d.metadata.name).sort()).to.deep.equal(COMPONENTS.map((c) => `inplace-${c.name}`).sort());
  });

  it('enforces Pod Security "restricted" on the namespace', () => {
    const ns = byKind('Namespace').find((n) => n.metadata.name === 'inplace-system')!;
    expect(ns.metadata.labels?.['pod-security.kubernetes.io/enforce']).to.equal('restricted');
  });

  describe('RBAC', () => {
    for (const r of byKind('ClusterRole')
      .concat(byKind('Role'))
      .filter((x) => x.metadata.name !== 'inplace-metrics-reader')) {
      // No role reads Secrets by default: only an alert-gate policy adds Roles with get on the Secrets it names.
      const secretVerbs: string[] = [];
      it(`${r.kind} ${r.metadata.name} has no wildcards and ${secretVerbs.length ? 'only get on Secrets' : 'no Secret access'}`, () => {
        const rules =
          (r['rules'] as api.KubeObject[] | undefined as unknown as { apiGroups: string[]; resources: string[]; verbs: string[] }[]) ?? [];
        expect(ruleProblems(rules)).to.deep.equal([]);
        expect(rules.filter((x) => x.resources.includes('secrets')).flatMap((x) => x.verbs)).to.deep.equal(secretVerbs);
      });
    }

    const resourceConstants = Object.entries(api).filter(
      (e): e is [string, ResourceType] =>
        typeof e[1] === 'object' && e[1] !== null && 'plural' in e[1] && 'namespaced' in e[1] && 'group' in e[1],
    );

    for (const c of COMPONENTS) {
      describe(c.name, () => {
        const rules = effectiveRules(docs, c.name);
        const source = readdirSync(join(PROJECT_ROOT, c.folder), { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.includes('testkit'))
          .map((f) => stripComments(readFileSync(join(PROJECT_ROOT, c.folder, f), 'utf8')))
          .join('\n');

        it('declares least-privilege rules in its own folder (rbac.ts)', () => {
          expect(c.rbac.length).to.be.greaterThan(0);
          expect(ruleProblems(c.rbac)).to.deep.equal([]);
        });

        it('synthesizes the same rules the component itself declares (index.ts)', async () => {
          const component = await c.load();
          expect(component.name).to.equal(c.name);
          expect(component.rbac).to.deep.equal(c.rbac);
        });

        it('is granted every rule it declares', () => {
          for (const r of c.rbac)
            for (const g of r.apiGroups)
              for (const res of r.resources)
                for (const v of r.verbs) {
                  expect(allows(rules, v, g, res), `${v} ${res}.${g}`).to.equal(true);
                }
        });

        it('can read every resource kind its code refers to', () => {
          const used = resourceConstants.filter(([name]) => new RegExp(`\\b${name}\\b`).test(source));
          expect(used.length, 'no resource constants found in the source').to.be.greaterThan(0);
          for (const [name, res] of used) {
            // Secrets: granted only by the alert-gate policy's Roles, by name (the alert-gate policy test above).
            if (c.name === 'plan-controller' && name === 'Secrets') continue;
            const readable = ['get', 'list', 'watch'].some((v) => allows(rules, v, res.group, res.plural));
            const writable = ['create', 'patch', 'update'].some((v) => allows(rules, v, res.group, res.plural));
            expect(readable || writable, `${c.name} uses ${name} (${res.plural}.${res.group}) but no rule grants it`).to.equal(true);
          }
        });

        it('has a rule for every client call on a named resource in its code', () => {
          // client.<verb>(Resource, ...) and informers/watches of Resource, as written in the component's code.
          const calls: [string, string, boolean][] = [];
          for (const m of source.matchAll(/\.(get|list|create|update|patch|delete|watch)\s*(?:<[^>()]*>)?\(\s*([A-Z][A-Za-z]+)\b/g)) {
            calls.push([m[1]!, m[2]!, /subresource:\s*'status'/.test(callArgs(source, m.index + m[0].lastIndexOf('(')))]);
          }
          for (const m of source.matchAll(/\.(informer|for|owns|watches)\s*(?:<[^>()]*>)?\(\s*([A-Z][A-Za-z]+)\b/g))
            calls.push(['list', m[2]!, false], ['watch', m[2]!, false]);
          const known = new Map(resourceConstants);
          let checked = 0;
          for (const [verb, name, status] of calls) {
            const res = known.get(name);
            if (!res || (c.name === 'plan-controller' && name === 'Secrets')) continue;
            const resource = status ? `${res.plural}/status` : res.plural;
            expect(
              allows(rules, verb, res.group, resource),
              `${c.name} calls ${verb} on ${name} (${resource}.${res.group}) without a rule`,
            ).to.equal(true);
            checked++;
          }
          expect(checked, 'no client calls found: the scan is broken').to.be.greaterThan(0);
        });

        it('lists status subresources separately from the main resource', () => {
          const writesStatus = /subresource:\s*'status'|snapshot\(/.test(source);
          const statusRules = rules.filter((r) => r.resources.some((x) => x.endsWith('/status')));
          if (writesStatus) expect(statusRules.length, `${c.name} writes status but has no */status rule`).to.be.greaterThan(0);
          for (const r of statusRules) expect(r.resources.every((x) => x.endsWith('/status'))).to.equal(true);
        });

        it("has exactly the runtime's Events and Lease rules (src/runtime/rbac.ts), like every component", () => {
          const runtimeKinds = (r: { resources: string[] }): boolean => r.resources.some((x) => x === 'events' || x === 'leases');
          expect(c.rbac.filter(runtimeKinds)).to.deep.equal(runtimeRbac());
          expect(c.baseRbac.filter(runtimeKinds)).to.deep.equal(runtimeRbac());
        });

        it('may take the leader-election Lease and write events.k8s.io/v1 Events (and not core/v1 ones it never writes)', () => {
          expect(allows(rules, 'create', 'coordination.k8s.io', 'leases')).to.equal(true);
          expect(allows(rules, 'update', 'coordination.k8s.io', 'leases')).to.equal(true);
          expect(allows(rules, 'create', 'events.k8s.io', 'events')).to.equal(true);
          expect(allows(rules, 'patch', 'events.k8s.io', 'events')).to.equal(true);
          expect(allows(rules, 'create', '', 'events')).to.equal(false);
        });
      });
    }

    it("grants Leases only in the controllers' own namespace, never cluster-wide", () => {
      for (const r of byKind('ClusterRole')) {
        const rules = (r['rules'] as { resources: string[] }[] | undefined) ?? [];
        expect(
          rules.flatMap((x) => x.resources),
          r.metadata.name,
        ).to.not.include('leases');
      }
      for (const r of byKind('Role').filter((x) => x.metadata.name.endsWith('-leader-election')))
        expect(r.metadata.namespace).to.equal('inplace-system');
    });

    describe('provider kinds are configuration', () => {
      const metal3 = [
        { role: 'InfraMachine', apiGroup: 'infrastructure.cluster.x-k8s.io', resource: 'metal3machines' },
        { role: 'BootstrapConfig', apiGroup: 'bootstrap.cluster.x-k8s.io', resource: 'kubeadmconfigs' },
        { role: 'ControlPlane', apiGroup: 'controlplane.cluster.x-k8s.io', resource: 'kubeadmcontrolplanes' },
      ] as const;
      const custom = docsOf(synthesize({ providers: metal3 }));

      it('grants the listed kinds (and only those) to the components that use them, in a <component>-providers ClusterRole', () => {
        const mtc = effectiveRules(custom, 'machine-task-controller');
        expect(allows(mtc, 'patch', 'infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(true);
        expect(allows(mtc, 'get', 'bootstrap.cluster.x-k8s.io', 'kubeadmconfigs')).to.equal(true);
        expect(allows(mtc, 'get', 'infrastructure.cluster.x-k8s.io', 'devmachines')).to.equal(false);
        expect(
          allows(effectiveRules(custom, 'plan-controller'), 'watch', 'controlplane.cluster.x-k8s.io', 'kubeadmcontrolplanes'),
        ).to.equal(true);
        // The plan controller's pre-start check dry-runs the commit patch on one InfraMachine per target.
        expect(allows(effectiveRules(custom, 'plan-controller'), 'patch', 'infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(
          true,
        );
        expect(allows(effectiveRules(custom, 'plan-controller'), 'get', 'infrastructure.cluster.x-k8s.io', 'devmachines')).to.equal(false);
        expect(allows(effectiveRules(custom, 'mhc-extension'), 'get', 'infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(false);
        const role = custom.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'inplace-machine-task-controller-providers')!;
        expect(role.metadata.labels?.['inplace.cluster.x-k8s.io/aggregate-to-machine-task-controller']).to.equal('true');
      });

      it('grants no control-plane kind when none is listed', () => {
        const none = docsOf(synthesize({ providers: [metal3[0]] }));
        expect(allows(effectiveRules(none, 'plan-controller'), 'list', 'controlplane.cluster.x-k8s.io', 'kubeadmcontrolplanes')).to.equal(
          false,
        );
        expect(allows(effectiveRules(none, 'plan-controller'), 'list', 'infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(true);
      });

      it('rejects a provider list with wildcards or unknown roles', () => {
        expect(() => synthesize({ providers: [{ role: 'InfraMachine', apiGroup: '*', resource: 'metal3machines' }] })).to.throw(
          /invalid provider list/,
        );
        expect(() => synthesize({ providers: [{ role: 'Node' as never, apiGroup: 'a.b', resource: 'x' }] })).to.throw(/not one of/);
      });

      it('npm run synth -- --provider ROLE=plural.group adds a kind; a malformed one exits 2 with the expected form', function () {
        this.timeout(60_000);
        const out = mkdtempSync(join(tmpdir(), 'inplace-synth-'));
        try {
          const run = (args: string[]) =>
            spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'cdk8s', 'main.ts'), '--outdir', out, ...args], {
              encoding: 'utf8',
            });
          const ok = run(['--no-default-providers', '--provider', 'InfraMachine=metal3machines.infrastructure.cluster.x-k8s.io']);
          expect(ok.status, ok.stderr).to.equal(0);
          const synthesized = docsOf([{ name: '10-platform.yaml', content: readFileSync(join(out, '10-platform.yaml'), 'utf8') }]);
          const mtc = effectiveRules(synthesized, 'machine-task-controller');
          expect(allows(mtc, 'patch', 'infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(true);
          expect(allows(mtc, 'patch', 'infrastructure.cluster.x-k8s.io', 'devmachines')).to.equal(false);
          const bad = run(['--provider', 'metal3machines']);
          expect(bad.status).to.equal(2);
          expect(bad.stderr).to.match(/ROLE=plural\.group/);
        } finally {
          rmSync(out, { recursive: true, force: true });
        }
      });

      it('each component ClusterRole aggregates by the documented label', () => {
        for (const c of COMPONENTS) {
          const role = byKind('ClusterRole').find((r) => r.metadata.name === `inplace-${c.name}`)!;
          const agg = role['aggregationRule'] as { clusterRoleSelectors: { matchLabels: Record<string, string> }[] };
          expect(agg.clusterRoleSelectors).to.deep.equal([
            { matchLabels: { [`inplace.cluster.x-k8s.io/aggregate-to-${c.name}`]: 'true' } },
          ]);
        }
      });
    });

    it('grants the machine task controller the sample task kinds through aggregation', () => {
      const rules = effectiveRules(docs, 'machine-task-controller');
      expect(allows(rules, 'create', 'samples.inplace.cluster.x-k8s.io', 'osimageupdatetasks')).to.equal(true);
      expect(allows(rules, 'get', 'samples.inplace.cluster.x-k8s.io', 'osimageupdatetasktemplates')).to.equal(true);
    });
  });
  describe('RBAC follows what is deployed', () => {
    const samplesGroup = 'samples.inplace.cluster.x-k8s.io';
    const mentionsSamples = (d: K8sDoc): boolean =>
      ((d['rules'] as { apiGroups?: string[] }[] | undefined) ?? []).some((r) => r.apiGroups?.includes(samplesGroup));

    it("without samples no rule on the sample updaters' kinds is granted, to any component", () => {
      const noSamples = docsOf(synthesize({ image: 'registry.example.com/inplace-capi:test' }));
      expect(noSamples.filter(mentionsSamples).map((d) => d.metadata.name)).to.deep.equal([]);
      for (const c of COMPONENTS)
        expect(
          effectiveRules(noSamples, c.name).filter((r) => r.apiGroups.includes(samplesGroup)),
          c.name,
        ).to.deep.equal([]);
    });

    it("with the samples, their kinds are granted only by the samples chart (aggregated ClusterRoles), not by the components' own roles", () => {
      const samplesFile = docsOf(files.filter((f) => f.name === SAMPLES_FILE));
      const platformFile = docsOf(files.filter((f) => f.name === '10-platform.yaml'));
      expect(platformFile.filter(mentionsSamples).map((d) => d.metadata.name)).to.deep.equal([]);
      expect(samplesFile.filter(mentionsSamples).length).to.be.greaterThan(0);
      for (const c of COMPONENTS)
        expect(
          c.rbac.flatMap((r) => r.apiGroups),
          c.name,
        ).to.not.include(samplesGroup);
    });

    it('`npm run synth` writes no samples and no rule on their kinds; `--samples` writes them apart, and the apply hint leaves them out', function () {
      this.timeout(120_000);
      const out = mkdtempSync(join(tmpdir(), 'inplace-synth-'));
      try {
        const run = (args: string[]): ReturnType<typeof spawnSync> =>
          spawnSync(
            process.execPath,
            [
              '--import',
              'tsx',
              join(PROJECT_ROOT, 'cdk8s', 'main.ts'),
              '--outdir',
              out,
              '--image',
              'ghcr.io/example/inplace-capi:0.1.0',
              ...args,
            ],
            { encoding: 'utf8' },
          );
        // A samples file an earlier version wrote next to the platform would be applied by `kubectl apply -f DIR/`.
        writeFileSync(join(out, '20-sample-updaters.yaml'), 'stale');
        const plain = run([]);
        expect(plain.status, String(plain.stderr)).to.equal(0);
        expect(readdirSync(out).sort()).to.deep.equal(['00-crds.yaml', '10-platform.yaml']);
        expect(readFileSync(join(out, '10-platform.yaml'), 'utf8')).to.not.include(samplesGroup);
        expect(String(plain.stdout)).to.match(/removed .*20-sample-updaters\.yaml/);

        const withSamples = run(['--samples']);
        expect(withSamples.status, String(withSamples.stderr)).to.equal(0);
        expect(readdirSync(out).sort()).to.deep.equal(['00-crds.yaml', '10-platform.yaml', 'samples']);
        expect(readdirSync(join(out, 'samples'))).to.deep.equal(['20-sample-updaters.yaml']);
        const hint = String(withSamples.stdout);
        // The platform's apply line (not recursive) does not reach samples/; the samples line says what they are.
        const applyLine = hint.split('\n').find((l) => l.startsWith('apply with:'))!;
        expect(applyLine.endsWith(`${basename(out)}/`), applyLine).to.equal(true);
        expect(hint).to.match(/samples \(not for production.*\): kubectl apply --server-side -f .*\/samples\//);
        const samples = docsOf([{ name: 's', content: readFileSync(join(out, SAMPLES_FILE), 'utf8') }]);
        expect(samples.filter(mentionsSamples).length).to.be.greaterThan(0);

        // Synthesizing again without --samples removes the samples file it wrote before.
        expect(run([]).status).to.equal(0);
        expect(existsSync(join(out, SAMPLES_FILE))).to.equal(false);
        expect(run(['--samples', '--no-samples']).status).to.equal(2);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });

    it('runs the generic sample updater with --names, exactly the generic updaters of examples/plan.yaml (never a catch-all)', () => {
      const plan = parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'plan.yaml'), 'utf8'))
        .map(
          (d) =>
            d.toJSON() as {
              kind?: string;
              spec?: { controlPlane?: { updaters?: { name: string; updaterUpdateTemplateRef?: unknown }[] } };
            },
        )
        .find((d) => d?.kind === 'InPlaceUpdatePlan')!;
      const generic = (plan.spec?.controlPlane?.updaters ?? []).filter((u) => !u.updaterUpdateTemplateRef).map((u) => u.name);
      expect(generic.length).to.be.greaterThan(0);
      expect([...SAMPLE_GENERIC_UPDATER_NAMES]).to.deep.equal(generic);
      for (const d of byKind('Deployment').filter((x) => x.metadata.name.startsWith('inplace-updater-'))) {
        const args = podOf(d).containers[0]!.args ?? [];
        if (d.metadata.name === 'inplace-updater-reference')
          expect(args.slice(0, 4)).to.deep.equal(['updater', 'reference', '--names', generic.join(',')]);
        else expect(args, d.metadata.name).to.not.include('--names');
        expect(args, d.metadata.name).to.not.include('--catch-all');
        expect(args, d.metadata.name).to.not.include('--allow-real-cluster');
      }
    });
  });

  describe('image', () => {
    it('warns about the default image, an image without a registry host and one without a tag; not about a full reference', () => {
      expect(imageWarning(DEFAULT_IMAGE)).to.match(/cannot be pulled.*--image/);
      expect(imageWarning('inplace-capi:0.2.0')).to.match(/names no registry host/);
      expect(imageWarning('example/inplace-capi:0.2.0')).to.match(/names no registry host/);
      expect(imageWarning('ghcr.io/example/inplace-capi')).to.match(/no tag or digest/);
      for (const ok of [
        'ghcr.io/example/inplace-capi:0.1.0',
        'localhost:5000/inplace-capi:dev',
        'registry.example.com:5000/team/inplace-capi@sha256:' + '0'.repeat(64),
      ]) {
        expect(imageWarning(ok), ok).to.equal(undefined);
      }
    });

    it('`npm run synth` without --image prints the warning on stderr (and still writes the manifests); with --image it is quiet', function () {
      this.timeout(60_000);
      const out = mkdtempSync(join(tmpdir(), 'inplace-synth-'));
      try {
        const env = { ...process.env };
        delete env['INPLACE_IMAGE'];
        const run = (args: string[]) =>
          spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'cdk8s', 'main.ts'), '--outdir', out, ...args], {
            encoding: 'utf8',
            env,
          });
        const dflt = run([]);
        expect(dflt.status, dflt.stderr).to.equal(0);
        expect(dflt.stderr).to.match(
          /^warning: no --image given: the manifests use inplace-capi:0\.1\.0, which names no registry and cannot be pulled/m,
        );
        expect(readFileSync(join(out, '10-platform.yaml'), 'utf8')).to.include(`image: ${DEFAULT_IMAGE}`);
        const given = run(['--image', 'ghcr.io/example/inplace-capi:0.1.0']);
        expect(given.status, given.stderr).to.equal(0);
        expect(given.stderr).to.not.match(/warning/);
        expect(readFileSync(join(out, '10-platform.yaml'), 'utf8')).to.include('image: ghcr.io/example/inplace-capi:0.1.0');
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  });

  describe('a platform team applies it as-is', () => {
    const replicated = docsOf(
      synthesize({
        image: 'registry.example.com/inplace-capi:test',
        replicas: 2,
        instance: 'fleet-a',
        updaters: sampleUpdaterWorkloads(),
      }),
    );
    const deploymentsOf = (ds: readonly K8sDoc[]): K8sDoc[] => ds.filter((d) => d.kind === 'Deployment');
    const specOf = (
      d: K8sDoc,
    ): {
      selector: { matchLabels: Record<string, string> };
      template: { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
    } => d['spec'] as never;

    it('selects pods by the hand-written app.kubernetes.io/* labels only (a construct path never reaches a selector or a pod)', () => {
      for (const d of [...deploymentsOf(docs), ...deploymentsOf(replicated)]) {
        const sel = specOf(d).selector.matchLabels;
        expect(Object.keys(sel).sort(), d.metadata.name).to.deep.equal([
          'app.kubernetes.io/component',
          'app.kubernetes.io/instance',
          'app.kubernetes.io/name',
          'app.kubernetes.io/part-of',
        ]);
        expect(sel['app.kubernetes.io/name']).to.equal(d.metadata.name.replace(/^inplace-/, ''));
        expect(sel['app.kubernetes.io/component']).to.equal(d.metadata.name.startsWith('inplace-updater-') ? 'updater' : 'controller');
      }
      for (const f of [...files, ...synthesize({ image: 'x.io/y:z', replicas: 2 })])
        expect(f.content, f.name).to.not.include('cdk8s.io/metadata.addr');
      expect(specOf(deploymentsOf(replicated)[0]!).selector.matchLabels['app.kubernetes.io/instance']).to.equal('fleet-a');
    });

    it('keeps the selectors when the construct tree changes (they are immutable on a live Deployment)', () => {
      // The same workload added under another chart and construct path selects exactly the same pods.
      const app = new App();
      const chart = new Chart(app, 'renamed-chart');
      const spec = componentWorkloads().find((w) => w.name === 'plan-controller')!;
      const o = {
        image: 'x.io/y:z',
        namespace: 'inplace-system',
        replicas: 1,
        instance: 'inplace-capi',
        priorityClassName: '',
        apiServer: { ports: [6443], cidrs: [] },
        resources: DEFAULTS.resources,
        root: PROJECT_ROOT,
      };
      addWorkload(chart, { workload: spec, role: 'controller', deployment: o });
      const moved = chart.toJson().find((d: K8sDoc) => d.kind === 'Deployment') as K8sDoc;
      const original = byKind('Deployment').find((d) => d.metadata.name === 'inplace-plan-controller')!;
      expect(specOf(moved).selector).to.deep.equal(specOf(original).selector);
    });

    it('has a PodDisruptionBudget (maxUnavailable 1) per replicated workload, selecting its pods, and none for a single replica', () => {
      expect(byKind('PodDisruptionBudget')).to.deep.equal([]);
      const pdbs = replicated.filter((d) => d.kind === 'PodDisruptionBudget');
      expect(pdbs.map((p) => p.metadata.name).sort()).to.deep.equal(
        deploymentsOf(replicated)
          .map((d) => d.metadata.name)
          .sort(),
      );
      for (const p of pdbs) {
        const d = deploymentsOf(replicated).find((x) => x.metadata.name === p.metadata.name)!;
        expect(p['spec']).to.deep.equal({ maxUnavailable: 1, selector: specOf(d).selector });
      }
    });

    it('spreads replicas over nodes and zones, and sets the priority class (default system-cluster-critical, "" for none)', () => {
      for (const d of deploymentsOf(replicated)) {
        const spread = specOf(d).template.spec['topologySpreadConstraints'] as {
          topologyKey: string;
          labelSelector: { matchLabels: Record<string, string> };
          whenUnsatisfiable: string;
        }[];
        expect(spread.map((t) => t.topologyKey)).to.deep.equal(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
        for (const t of spread) {
          expect(t.labelSelector.matchLabels).to.deep.equal(specOf(d).selector.matchLabels);
          expect(t.whenUnsatisfiable).to.equal('ScheduleAnyway');
        }
        expect(specOf(d).template.spec['priorityClassName']).to.equal('system-cluster-critical');
      }
      const none = docsOf(synthesize({ priorityClassName: '' }));
      for (const d of deploymentsOf(none)) expect(specOf(d).template.spec).to.not.have.property('priorityClassName');
    });

    it('serves controller metrics behind TokenReview/SubjectAccessReview: the flag, the RBAC it needs, a metrics-reader ClusterRole; updaters serve none', () => {
      const reader = byKind('ClusterRole').find((r) => r.metadata.name === 'inplace-metrics-reader')!;
      expect(reader['rules']).to.deep.equal([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
      for (const c of COMPONENTS) {
        const rules = effectiveRules(docs, c.name);
        expect(allows(rules, 'create', 'authentication.k8s.io', 'tokenreviews'), c.name).to.equal(true);
        expect(allows(rules, 'create', 'authorization.k8s.io', 'subjectaccessreviews'), c.name).to.equal(true);
        expect(allows(rules, 'get', 'authentication.k8s.io', 'tokenreviews'), c.name).to.equal(false);
      }
      for (const d of byKind('Deployment').filter((x) => x.metadata.name.startsWith('inplace-updater-'))) {
        const ctr = specOf(d).template.spec['containers'] as { args: string[]; ports: { name: string }[] }[];
        expect(ctr[0]!.args, d.metadata.name).to.not.include('--metrics-port');
        expect(
          ctr[0]!.ports.map((p) => p.name),
          d.metadata.name,
        ).to.deep.equal(['health']);
        const rules = effectiveRules(docs, d.metadata.name.replace(/^inplace-/, ''));
        expect(allows(rules, 'create', 'authentication.k8s.io', 'tokenreviews'), d.metadata.name).to.equal(false);
      }
    });

    it('gives every leader-electing pod POD_NAMESPACE, where both inplace run and the updater SDK take their Lease (the Role covers only that namespace)', () => {
      for (const d of byKind('Deployment')) {
        const ctr = (
          specOf(d).template.spec['containers'] as {
            args: string[];
            env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
          }[]
        )[0]!;
        expect(ctr.args, d.metadata.name).to.include('--leader-elect');
        expect(ctr.env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, d.metadata.name).to.equal(
          'metadata.namespace',
        );
      }
    });

    it('has a NetworkPolicy over every platform pod: ingress only to the metrics and health ports, egress only to the API server', () => {
      // (The runtime extension's own policy, opening 9443 to its pods only, is tested with the extension.)
      const nps = byKind('NetworkPolicy').filter((n) => n.metadata.name === 'inplace-capi');
      expect(nps).to.have.length(1);
      const spec = nps[0]!['spec'] as {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: unknown[];
        egress: unknown[];
      };
      expect(spec.policyTypes).to.deep.equal(['Ingress', 'Egress']);
      expect(spec.ingress).to.deep.equal([
        {
          ports: [
            { protocol: 'TCP', port: 8080 },
            { protocol: 'TCP', port: 8081 },
          ],
        },
      ]);
      expect(spec.egress).to.deep.equal([
        {
          ports: [
            { protocol: 'TCP', port: 443 },
            { protocol: 'TCP', port: 6443 },
          ],
        },
      ]);
      for (const d of byKind('Deployment')) {
        const labels = specOf(d).template.metadata.labels;
        expect(
          Object.entries(spec.podSelector.matchLabels).every(([k, v]) => labels[k] === v),
          d.metadata.name,
        ).to.equal(true);
      }
      const pinned = docsOf(synthesize({ apiServer: { ports: [6443], cidrs: ['10.0.0.1/32'] } })).find((d) => d.kind === 'NetworkPolicy')!;
      expect((pinned['spec'] as { egress: unknown[] }).egress).to.deep.equal([
        { ports: [{ protocol: 'TCP', port: 6443 }], to: [{ ipBlock: { cidr: '10.0.0.1/32' } }] },
      ]);
      expect(docsOf(synthesize({ noNetworkPolicy: true })).filter((d) => d.kind === 'NetworkPolicy')).to.deep.equal([]);
    });
  });
  describe('the runtime extension (opt-in: --runtime-extension)', () => {
    const NS = 'inplace-system';
    const named = (kind: string, name: string): K8sDoc | undefined => docs.find((d) => d.kind === kind && d.metadata.name === name);
    const ext = 'inplace-runtime-extension';
    const labels = {
      'app.kubernetes.io/name': 'runtime-extension',
      'app.kubernetes.io/component': 'controller',
      'app.kubernetes.io/part-of': 'inplace-capi',
      'app.kubernetes.io/instance': 'inplace-capi',
    };

    it('is left out by default: no Deployment, Service, Certificate or ExtensionConfig', () => {
      const plain = docsOf(synthesize({ image: 'registry.example.com/inplace-capi:test' }));
      expect(plain.filter((d) => d.metadata.name.startsWith(ext)).map((d) => `${d.kind} ${d.metadata.name}`)).to.deep.equal([]);
      expect(plain.filter((d) => ['ExtensionConfig', 'Certificate', 'Issuer'].includes(d.kind))).to.deep.equal([]);
      expect(plain.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name)).to.not.include(ext);
    });

    it('serves on 9443 with the certificate Secret mounted at --cert-dir', () => {
      const pod = podOf(named('Deployment', ext)!);
      const ctr = pod.containers[0]! as Container & {
        ports?: { containerPort: number }[];
        volumeMounts?: { name: string; mountPath: string }[];
      };
      expect(ctr.args?.slice(2, 6)).to.deep.equal(['--extension-port', '9443', '--cert-dir', '/tmp/k8s-webhook-server/serving-certs']);
      expect(ctr.ports?.map((p) => p.containerPort)).to.include(9443);
      const mount = ctr.volumeMounts?.find((m) => m.mountPath === '/tmp/k8s-webhook-server/serving-certs');
      expect(pod.volumes?.find((v) => v['name'] === mount?.name)?.['secret']).to.deep.equal({
        secretName: 'inplace-runtime-extension-cert',
      });
    });

    it('has a Service 443 → 9443 selecting exactly its pods', () => {
      const spec = named('Service', ext)!['spec'] as { ports: { port: number; targetPort: number }[]; selector: Record<string, string> };
      expect(spec.ports.map((p) => [p.port, p.targetPort])).to.deep.equal([[443, 9443]]);
      expect(spec.selector).to.deep.equal(labels);
    });

    it('has a self-signed cert-manager Issuer and a Certificate for the Service DNS name, writing the mounted Secret', () => {
      const issuer = named('Issuer', `${ext}-selfsigned`)!;
      expect(issuer.apiVersion).to.equal('cert-manager.io/v1');
      expect(issuer['spec']).to.deep.equal({ selfSigned: {} });
      const cert = named('Certificate', ext)!['spec'] as {
        secretName: string;
        dnsNames: string[];
        issuerRef: { kind: string; name: string };
      };
      expect(cert.secretName).to.equal('inplace-runtime-extension-cert');
      expect(cert.dnsNames).to.include(`${ext}.${NS}.svc`);
      expect(cert.issuerRef).to.deep.equal({ kind: 'Issuer', name: `${ext}-selfsigned` });
    });

    it('registers with an ExtensionConfig naming the Service and the Secret CAPI injects the caBundle from', () => {
      const ec = docs.find((d) => d.kind === 'ExtensionConfig')!;
      expect(ec.apiVersion).to.equal('runtime.cluster.x-k8s.io/v1beta2');
      expect(ec.metadata.annotations).to.deep.equal({
        'runtime.cluster.x-k8s.io/inject-ca-from-secret': `${NS}/inplace-runtime-extension-cert`,
      });
      expect((ec['spec'] as { clientConfig: unknown }).clientConfig).to.deep.equal({ service: { name: ext, namespace: NS, port: 443 } });
    });

    it("lets only the callers' namespaces reach 9443, through a NetworkPolicy over its pods only (none with --no-network-policy)", () => {
      const spec = named('NetworkPolicy', ext)!['spec'] as { podSelector: unknown; ingress: { ports: unknown[] }[]; policyTypes: string[] };
      expect(spec.podSelector).to.deep.equal({ matchLabels: labels });
      expect(spec.policyTypes).to.deep.equal(['Ingress']);
      expect(spec.ingress).to.deep.equal([
        { from: [{ namespaceSelector: EXT.callerNamespaceSelector }], ports: [{ protocol: 'TCP', port: 9443 }] },
      ]);
      // Never open to every namespace by default: without the callers' namespaces synthesis refuses, naming the flag.
      expect(() => synthesize({ runtimeExtension: {} })).to.throw(/--runtime-extension-caller-namespace/);
      expect(() => synthesize({ runtimeExtension: { secretName: 'my-tls' } })).to.throw(/callerNamespaceSelector/);
      const none = docsOf(synthesize({ image: 'registry.example.com/inplace-capi:test', runtimeExtension: {}, noNetworkPolicy: true }));
      expect(none.filter((d) => d.kind === 'NetworkPolicy')).to.deep.equal([]);
    });

    it('with a Secret of your own: no cert-manager objects, that Secret mounted and named in the annotation', () => {
      const own = docsOf(
        synthesize({ image: 'registry.example.com/inplace-capi:test', runtimeExtension: { ...EXT, secretName: 'my-tls' } }),
      );
      expect(own.filter((d) => ['Certificate', 'Issuer'].includes(d.kind))).to.deep.equal([]);
      const pod = podOf(own.find((d) => d.kind === 'Deployment' && d.metadata.name === ext)!);
      expect(pod.volumes?.map((v) => v['secret']).filter(Boolean)).to.deep.equal([{ secretName: 'my-tls' }]);
      expect(own.find((d) => d.kind === 'ExtensionConfig')!.metadata.annotations).to.deep.equal({
        'runtime.cluster.x-k8s.io/inject-ca-from-secret': `${NS}/my-tls`,
      });
    });

    it('is granted the rules of its rbac.ts but no Secret access (the kubelet mounts the certificate)', () => {
      const rules = effectiveRules(docs, 'runtime-extension');
      expect(allows(rules, 'create', 'inplace.cluster.x-k8s.io', 'machineupdates')).to.equal(true);
      for (const v of ['get', 'list', 'watch']) expect(allows(rules, v, '', 'secrets'), `${v} secrets`).to.equal(false);
    });

    it('`npm run synth -- --runtime-extension --runtime-extension-caller-namespace NS` writes it; without the callers it refuses', function () {
      this.timeout(120_000);
      const out = mkdtempSync(join(tmpdir(), 'synth-ext-'));
      try {
        const run = (args: string[]): ReturnType<typeof spawnSync> =>
          spawnSync(
            process.execPath,
            ['--import', 'tsx', 'cdk8s/main.ts', '--image', 'registry.example.com/x:1', '--outdir', out, ...args],
            {
              cwd: PROJECT_ROOT,
              encoding: 'utf8',
            },
          );
        const ok = run(['--runtime-extension', '--runtime-extension-caller-namespace', 'capi-system']);
        expect(ok.status, String(ok.stderr)).to.equal(0);
        const platform = docsOf([{ name: 'p', content: readFileSync(join(out, '10-platform.yaml'), 'utf8') }]);
        expect(platform.map((d) => d.kind)).to.include('ExtensionConfig');
        const np = platform.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name === ext)!;
        expect((np['spec'] as { ingress: { from: unknown }[] }).ingress[0]!.from).to.deep.equal([
          { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['capi-system'] }] } },
        ]);
        const refused = run(['--runtime-extension']);
        expect(refused.status).to.equal(2);
        expect(String(refused.stderr))
          .to.match(/--runtime-extension-caller-namespace/)
          .and.match(/--no-network-policy/);
        expect(run(['--runtime-extension', '--no-network-policy']).status).to.equal(0);
        expect(readFileSync(join(out, '10-platform.yaml'), 'utf8')).to.include('kind: ExtensionConfig');
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  });

  describe('the dashboard (opt-in: --dashboard)', () => {
    const IMAGE = 'registry.example.com/inplace-capi:test';
    const dash = 'inplace-dashboard';
    const labels = {
      'app.kubernetes.io/name': 'dashboard',
      'app.kubernetes.io/component': 'dashboard',
      'app.kubernetes.io/part-of': 'inplace-capi',
      'app.kubernetes.io/instance': 'inplace-capi',
    };
    const withDash = docsOf(synthesize({ image: IMAGE, dashboard: true }));
    const named = (ds: K8sDoc[], kind: string, name: string): K8sDoc | undefined =>
      ds.find((d) => d.kind === kind && d.metadata.name === name);
    const containerOf = (ds: K8sDoc[]): Record<string, unknown> =>
      (podOf(named(ds, 'Deployment', dash)!) as unknown as { containers: Record<string, unknown>[] }).containers[0]!;
    const READ = ['inplaceupdatecampaigns', 'inplaceupdateplans', 'machineupdates'];

    it('is left out by default', () => {
      const plain = docsOf(synthesize({ image: IMAGE }));
      expect(plain.filter((d) => d.metadata.name.startsWith(dash)).map((d) => `${d.kind} ${d.metadata.name}`)).to.deep.equal([]);
    });

    it('runs `inplace dashboard --auth kube` on HTTPS 8443 on every pod address, probed on /healthz and /readyz there, without leader election', () => {
      const c = containerOf(withDash);
      expect(c['args']).to.deep.equal(['dashboard', '--auth', 'kube', '--address', '0.0.0.0', '--port', '8443', '--self-signed']);
      expect(c['ports']).to.deep.equal([{ containerPort: 8443, name: 'https' }]);
      expect((c['livenessProbe'] as { httpGet: unknown }).httpGet).to.deep.equal({ path: '/healthz', port: 8443, scheme: 'HTTPS' });
      expect((c['readinessProbe'] as { httpGet: unknown }).httpGet).to.deep.equal({ path: '/readyz', port: 8443, scheme: 'HTTPS' });
      expect(podOf(named(withDash, 'Deployment', dash)!).serviceAccountName).to.equal(dash);
      // No Lease: nothing to elect, so no Role in the install namespace either.
      expect(withDash.filter((d) => d.kind === 'Role' && d.metadata.name.startsWith(dash))).to.deep.equal([]);
    });

    it('has a Service 443 → 8443 selecting exactly its pods, and a NetworkPolicy opening 8443 to them (none with --no-network-policy)', () => {
      const svc = named(withDash, 'Service', dash)!['spec'] as { ports: unknown[]; selector: Record<string, string> };
      expect(svc.ports).to.deep.equal([{ name: 'https', port: 443, targetPort: 8443 }]);
      expect(svc.selector).to.deep.equal(labels);
      const np = named(withDash, 'NetworkPolicy', dash)!['spec'];
      expect(np).to.deep.equal({
        podSelector: { matchLabels: labels },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ protocol: 'TCP', port: 8443 }] }],
      });
      const none = docsOf(synthesize({ image: IMAGE, dashboard: true, noNetworkPolicy: true }));
      expect(none.filter((d) => d.kind === 'NetworkPolicy')).to.deep.equal([]);
    });

    it('may list and watch campaigns, plans and MachineUpdates and create TokenReviews and SubjectAccessReviews: nothing else', () => {
      const granted = normalizeRules(effectiveRules(withDash, 'dashboard')).map(
        (r) => `${r.verbs.join(',')} ${r.resource}.${r.apiGroup}${r.resourceName ? `/${r.resourceName}` : ''}`,
      );
      expect(granted).to.deep.equal([
        'create tokenreviews.authentication.k8s.io',
        'create subjectaccessreviews.authorization.k8s.io',
        ...READ.map((r) => `list,watch ${r}.inplace.cluster.x-k8s.io`),
      ]);
    });

    it('namespace-scoped: runs with --namespace NS, lists and watches in NS only; only the reviews are cluster-wide', () => {
      const scoped = docsOf(synthesize({ image: IMAGE, dashboard: true, watchNamespace: 'fleet-a' }));
      const args = containerOf(scoped)['args'] as string[];
      expect(args.slice(args.indexOf('--namespace'), args.indexOf('--namespace') + 2)).to.deep.equal(['--namespace', 'fleet-a']);
      const grants = grantsOf(scoped as Doc[], 'inplace-fleet-a', dash);
      for (const r of READ)
        for (const v of ['list', 'watch']) {
          expect(allowed(grants, v, 'inplace.cluster.x-k8s.io', r, 'fleet-a'), `${v} ${r} in fleet-a`).to.equal(true);
          expect(allowed(grants, v, 'inplace.cluster.x-k8s.io', r, 'fleet-b'), `${v} ${r} in fleet-b`).to.equal(false);
        }
      const wide = grants.filter((g) => g.namespace === undefined).flatMap((g) => g.rule.resources ?? []);
      expect(wide.sort()).to.deep.equal(['subjectaccessreviews', 'tokenreviews']);
    });

    it('`npm run synth -- --dashboard` writes it; --clusterctl refuses the flag', function () {
      this.timeout(120_000);
      const out = mkdtempSync(join(tmpdir(), 'synth-dash-'));
      try {
        const run = (args: string[]): ReturnType<typeof spawnSync> =>
          spawnSync(process.execPath, ['--import', 'tsx', 'cdk8s/main.ts', '--image', IMAGE, ...args], {
            cwd: PROJECT_ROOT,
            encoding: 'utf8',
          });
        const ok = run(['--outdir', out, '--dashboard']);
        expect(ok.status, String(ok.stderr)).to.equal(0);
        const platform = docsOf([{ name: 'p', content: readFileSync(join(out, '10-platform.yaml'), 'utf8') }]);
        expect(platform.filter((d) => d.metadata.name === dash).map((d) => d.kind)).to.include.members([
          'ServiceAccount',
          'Deployment',
          'Service',
          'NetworkPolicy',
        ]);
        const refused = run(['--clusterctl', join(out, 'repo'), '--dashboard']);
        expect(refused.status).to.equal(2);
        expect(String(refused.stderr)).to.match(/--clusterctl does not take --dashboard/);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  });

  describe('provider template kinds come with the machine kinds', () => {
    it('a Metal3-style provider synth grants the template kind the plan controller clones (and deletes once unreferenced)', () => {
      const metal3 = docsOf(
        synthesize({
          providers: [{ role: 'InfraMachine', apiGroup: 'infrastructure.cluster.x-k8s.io', resource: 'metal3machines' }],
        }),
      );
      const plan = effectiveRules(metal3, 'plan-controller');
      for (const verb of ['get', 'list', 'create', 'delete'])
        expect(allows(plan, verb, 'infrastructure.cluster.x-k8s.io', 'metal3machinetemplates'), verb).to.equal(true);
      expect(allows(plan, 'patch', 'infrastructure.cluster.x-k8s.io', 'metal3machines')).to.equal(true);
      // The machine task controller commits to the machine kind only; templates are the plan controller's.
      expect(
        allows(effectiveRules(metal3, 'machine-task-controller'), 'get', 'infrastructure.cluster.x-k8s.io', 'metal3machinetemplates'),
      ).to.equal(false);
    });

    it('keeps a template kind named explicitly, and refuses a machine kind whose template cannot be derived, naming the entry to add', () => {
      const named = docsOf(
        synthesize({
          providers: [
            { role: 'BootstrapConfig', apiGroup: 'bootstrap.example.io', resource: 'talosconfigs' },
            { role: 'BootstrapConfigTemplate', apiGroup: 'bootstrap.example.io', resource: 'taloscfgtemplates' },
          ],
        }),
      );
      const plan = effectiveRules(named, 'plan-controller');
      expect(allows(plan, 'create', 'bootstrap.example.io', 'taloscfgtemplates')).to.equal(true);
      expect(allows(plan, 'create', 'bootstrap.example.io', 'talosconfigtemplates')).to.equal(false);
      expect(() =>
        synthesize({ providers: [{ role: 'InfraMachine', apiGroup: 'infrastructure.example.io', resource: 'fleet' }] }),
      ).to.throw(/InfraMachineTemplate=<plural>\.infrastructure\.example\.io/);
    });
  });

  it("docs/operations.md's provider grant table is providerGrantTable() (generated from each component's PROVIDER_VERBS)", () => {
    const path = join(PROJECT_ROOT, 'docs', 'operations.md');
    const doc = readFileSync(path, 'utf8');
    const m = /(<!-- provider-grants:[^\n]*-->\n)([\s\S]*?)\n(<!-- \/provider-grants -->)/.exec(doc);
    expect(m, 'the provider-grants markers are missing from docs/operations.md').to.not.equal(null);
    const want = providerGrantTable();
    if (process.env.UPDATE_DOCS === '1') writeFileSync(path, doc.replace(m![0], `${m![1]}${want}\n${m![3]}`));
    else expect(m![2], 'stale provider grant table; rerun with UPDATE_DOCS=1').to.equal(want);
    expect(want).to.not.include('(none)');
  });

  describe('resources fit single-threaded Node processes', () => {
    const containers = (d: K8sDoc[]): (Container & { env?: { name: string; value?: string }[] })[] =>
      d.filter((x) => x.kind === 'Deployment').flatMap((x) => podOf(x).containers);

    it('by default: no CPU limit below one core, a modest request, and a V8 heap at 75 % of the memory limit', () => {
      const all = containers(docs);
      expect(all.length).to.be.greaterThan(0);
      for (const c of all) {
        expect(c.resources?.limits?.['cpu']).to.equal('1000m');
        expect(c.resources?.requests).to.deep.equal({ cpu: '100m', memory: '256Mi' });
        expect(c.resources?.limits?.['memory']).to.equal('512Mi');
        expect(c.env?.find((e) => e.name === 'NODE_OPTIONS')?.value).to.equal('--max-old-space-size=384');
      }
    });

    it('takes other values, sizes the heap from the limit, and refuses inconsistent ones', () => {
      const tuned = containers(
        docsOf(synthesize({ resources: { cpuLimitMillis: 0, cpuRequestMillis: 250, memoryLimitMiB: 1024, memoryRequestMiB: 512 } })),
      );
      for (const c of tuned) {
        expect(c.resources?.limits).to.deep.equal({ memory: '1024Mi' });
        expect(c.resources?.requests).to.deep.equal({ cpu: '250m', memory: '512Mi' });
        expect(c.env?.find((e) => e.name === 'NODE_OPTIONS')?.value).to.equal('--max-old-space-size=768');
      }
      expect(() => synthesize({ resources: { cpuRequestMillis: 2000 } })).to.throw(/CPU limit \(1000m\) is below the request/);
      expect(() => synthesize({ resources: { memoryLimitMiB: 64 } })).to.throw(/at least 128Mi/);
      expect(() => synthesize({ resources: { memoryRequestMiB: 1024 } })).to.throw(/between 1Mi and the limit/);
    });
  });

  it('reads the resources flags as Kubernetes quantities and names the flag of a bad one', () => {
    expect(
      parseResourceFlags({ 'cpu-request': '250m', 'cpu-limit': '1.5', 'memory-request': '512Mi', 'memory-limit': '2Gi' }),
    ).to.deep.equal({
      cpuRequestMillis: 250,
      cpuLimitMillis: 1500,
      memoryRequestMiB: 512,
      memoryLimitMiB: 2048,
    });
    expect(parseResourceFlags({ 'cpu-limit': 'none' })).to.deep.equal({ cpuLimitMillis: 0 });
    expect(parseResourceFlags({})).to.deep.equal({});
    expect(() => parseResourceFlags({ 'cpu-request': 'none' })).to.throw(/--cpu-request must be a CPU quantity/);
    expect(() => parseResourceFlags({ 'memory-limit': '512M' })).to.throw(/--memory-limit must be a memory quantity such as 512Mi/);
    expect(() => parseResourceFlags({ 'cpu-limit': '0m' })).to.throw(/--cpu-limit/);
  });

  it('`npm run synth -- --namespace-scoped NS --cpu-limit none --memory-limit 1Gi --image repo@sha256:…` writes those manifests; bad values exit 2', function () {
    this.timeout(120_000);
    const out = mkdtempSync(join(tmpdir(), 'inplace-synth-'));
    const image = `ghcr.io/example/inplace-capi@sha256:${'b2'.repeat(32)}`;
    try {
      const run = (args: string[]): ReturnType<typeof spawnSync> =>
        spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'cdk8s', 'main.ts'), '--outdir', out, ...args], {
          encoding: 'utf8',
        });
      const ok = run(['--image', image, '--namespace-scoped', 'fleet-a', '--cpu-limit', 'none', '--memory-limit', '1Gi']);
      expect(ok.status, String(ok.stderr)).to.equal(0);
      expect(String(ok.stderr)).to.equal('');
      const platform = docsOf([{ name: 'p', content: readFileSync(join(out, '10-platform.yaml'), 'utf8') }]);
      const plan = platform.find((d) => d.kind === 'Deployment' && d.metadata.name === 'inplace-plan-controller')!;
      const ctr = podOf(plan).containers[0]! as Container & { image: string; env: { name: string; value?: string }[] };
      expect(ctr.image).to.equal(image);
      expect(ctr.args).to.include.members(['--namespace', 'fleet-a']);
      expect(ctr.resources?.limits).to.deep.equal({ memory: '1024Mi' });
      expect(ctr.env.find((e) => e.name === 'NODE_OPTIONS')?.value).to.equal('--max-old-space-size=768');
      expect(platform.filter((d) => d.kind === 'Role' && d.metadata.namespace === 'fleet-a').length).to.be.greaterThan(0);
      for (const [args, message] of [
        [['--namespace-scoped', 'Fleet_A'], /--namespace-scoped must be a namespace name/],
        [['--image', 'ghcr.io/x/y@sha256:123'], /64 lowercase hex digits/],
        [['--memory-limit', '64Mi'], /at least 128Mi/],
      ] as const) {
        const bad = run([...args]);
        expect(bad.status, args.join(' ')).to.equal(2);
        expect(String(bad.stderr)).to.match(message);
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  describe('images by digest', () => {
    const digest = `ghcr.io/example/inplace-capi@sha256:${'a1'.repeat(32)}`;
    it('runs every container from the digest as given, without a warning; refuses a malformed digest', () => {
      const d = docsOf(synthesize({ image: digest, updaters: sampleUpdaterWorkloads() }));
      const images = d.filter((x) => x.kind === 'Deployment').map((x) => (podOf(x).containers[0] as { image?: string }).image);
      expect(new Set(images)).to.deep.equal(new Set([digest]));
      expect(imageWarning(digest)).to.equal(undefined);
      expect(imageWarning(`ghcr.io/example/inplace-capi:0.1.0@sha256:${'0'.repeat(64)}`)).to.equal(undefined);
      expect(() => synthesize({ image: 'ghcr.io/example/inplace-capi@sha256:abc' })).to.throw(/64 lowercase hex digits/);
      expect(() => synthesize({ image: 'ghcr.io/example/inplace-capi@md5:' + '0'.repeat(32) })).to.throw(/sha256/);
    });
  });

  describe('namespace-scoped mode (--namespace-scoped NS)', () => {
    const NS = 'fleet-a';
    /** Where the controllers of the install for NS run by default: a namespace of its own per watched namespace. */
    const INSTALL = 'inplace-fleet-a';
    const scoped = docsOf(
      synthesize({ watchNamespace: NS, updaters: sampleUpdaterWorkloads(), runtimeExtension: EXT, image: 'x.io/inplace-capi:1' }),
    );
    const rulesOf = (d: K8sDoc): { apiGroups: string[]; resources: string[] }[] =>
      (d['rules'] as { apiGroups: string[]; resources: string[] }[] | undefined) ?? [];

    it('runs every component and updater with --namespace NS (their informers list and watch that namespace only)', () => {
      for (const d of scoped.filter((x) => x.kind === 'Deployment')) {
        const args = podOf(d).containers[0]!.args ?? [];
        expect(args[args.indexOf('--namespace') + 1], d.metadata.name).to.equal(NS);
      }
    });

    it('grants namespaced kinds with Roles in NS only; ClusterRoles hold cluster-scoped kinds alone and aggregate nothing', () => {
      const clusterRoles = scoped.filter((d) => d.kind === 'ClusterRole');
      for (const r of clusterRoles) {
        expect(r['aggregationRule'], r.metadata.name).to.equal(undefined);
        for (const rule of rulesOf(r))
          for (const res of rule.resources ?? [])
            expect(
              isClusterScoped(rule.apiGroups[0]!, res) || r.metadata.name === `inplace-metrics-reader-${INSTALL}`,
              `${r.metadata.name}: ${res}`,
            ).to.equal(true);
      }
      const roles = scoped.filter((d) => d.kind === 'Role' && !d.metadata.name.endsWith('-leader-election'));
      expect(roles.map((r) => r.metadata.namespace)).to.satisfy((ns: string[]) => ns.length > 0 && ns.every((n) => n === NS));
      for (const b of scoped.filter((d) => d.kind === 'ClusterRoleBinding')) {
        const ref = b['roleRef'] as { name: string };
        expect(clusterRoles.some((r) => r.metadata.name === ref.name)).to.equal(true);
      }
    });

    it("gives each component in NS what it has cluster-wide in the default mode, and the sample kinds to the platform's controllers", () => {
      for (const c of COMPONENTS) {
        const grants = grantsOf(scoped as Doc[], INSTALL, `inplace-${c.name}`);
        for (const r of c.rbac)
          for (const g of r.apiGroups)
            for (const res of r.resources)
              for (const v of r.verbs) {
                const where = isClusterScoped(g, res) ? undefined : res === 'leases' ? INSTALL : NS;
                expect(allowed(grants, v, g, res, where), `${c.name}: ${v} ${res}.${g} in ${where ?? 'the cluster'}`).to.equal(true);
                if (where === NS) expect(allowed(grants, v, g, res, 'fleet-b'), `${c.name}: ${v} ${res}.${g} in fleet-b`).to.equal(false);
              }
      }
      const mtc = grantsOf(scoped as Doc[], INSTALL, 'inplace-machine-task-controller');
      expect(allowed(mtc, 'create', 'samples.inplace.cluster.x-k8s.io', 'osimageupdatetasks', NS)).to.equal(true);
      expect(allowed(mtc, 'create', 'samples.inplace.cluster.x-k8s.io', 'osimageupdatetasks', 'fleet-b')).to.equal(false);
    });

    it('two installs for two namespaces share no object but the CRDs (applying one never retargets the other)', () => {
      const ext = { runtimeExtension: EXT, updaters: sampleUpdaterWorkloads(), image: 'x.io/inplace-capi:1' };
      const identities = (watchNamespace: string): string[] =>
        docsOf(synthesize({ ...ext, watchNamespace })).map((d) => `${d.kind} ${d.metadata.namespace ?? ''}/${d.metadata.name}`);
      const a = identities('fleet-a');
      const b = new Set(identities('fleet-b'));
      const shared = a.filter((x) => b.has(x));
      // CRDs are cluster-wide definitions of the kinds, the same for every install (docs/operations.md, Deploying).
      expect(shared.filter((x) => !x.startsWith('CustomResourceDefinition '))).to.deep.equal([]);
      expect(shared.length).to.be.greaterThan(0);
      expect(a.length).to.be.greaterThan(shared.length + 20);
      // The defaults: the controllers of fleet-a run in inplace-fleet-a; an explicit --namespace still wins.
      expect(a).to.include('Deployment inplace-fleet-a/inplace-plan-controller');
      expect(a).to.include('Namespace /inplace-fleet-a');
      expect(a).to.include('ClusterRole /inplace-metrics-reader-inplace-fleet-a');
      expect(installNamespace({ watchNamespace: 'fleet-a' })).to.equal('inplace-fleet-a');
      expect(installNamespace({ namespace: 'team-a-system', watchNamespace: 'fleet-a' })).to.equal('team-a-system');
      expect(installNamespace({})).to.equal('inplace-system');
      expect(() => synthesize({ watchNamespace: 'x'.repeat(60) })).to.throw(/longer than 63 characters: name one with namespace/);
    });

    it('refuses a namespace that is not a DNS label', () => {
      expect(() => synthesize({ watchNamespace: 'Fleet_A' })).to.throw(/watchNamespace must be a namespace name/);
      expect(() => synthesize({ namespace: 'inplace system' })).to.throw(/namespace must be a namespace name/);
    });

    it('registers the runtime extension for NS only, under a name of its own (another installation watches another namespace)', () => {
      const ec = scoped.find((d) => d.kind === 'ExtensionConfig')!;
      expect(ec.metadata.name).to.equal(`inplace-${NS}`);
      expect(byKind('ExtensionConfig')[0]!.metadata.name).to.equal('inplace');
      expect((ec['spec'] as { namespaceSelector: unknown }).namespaceSelector).to.deep.equal({
        matchLabels: { 'kubernetes.io/metadata.name': NS },
      });
    });

    it('leaves the default (cluster-scoped) manifests without --namespace and with the runtime extension for every namespace', () => {
      for (const d of byKind('Deployment')) expect(podOf(d).containers[0]!.args, d.metadata.name).to.not.include('--namespace');
      expect((byKind('ExtensionConfig')[0]!['spec'] as { namespaceSelector: unknown }).namespaceSelector).to.deep.equal({});
    });
  });

  describe('one component list', () => {
    it('inplace run knows exactly the components the manifests deploy, with the options each takes', async () => {
      const run = await import('../../src/cli/run.js');
      expect(Object.keys(run.COMPONENT_LOADERS)).to.deep.equal(COMPONENTS.map((c) => c.name));
      expect(run.WRITE_POLICY_COMPONENTS).to.deep.equal(COMPONENTS.filter((c) => c.takes.includes('writePolicy')).map((c) => c.name));
      expect(run.ALERT_GATE_POLICY_COMPONENTS).to.deep.equal(['plan-controller', 'campaign-controller']);
      expect(run.CONCURRENCY_COMPONENTS).to.deep.equal(COMPONENTS.filter((c) => c.takes.includes('concurrency')).map((c) => c.name));
      expect(
        byKind('Deployment')
          .filter((d) => !d.metadata.name.startsWith('inplace-updater-'))
          .map((d) => d.metadata.name),
      ).to.deep.equal(COMPONENTS.map((c) => `inplace-${c.name}`));
    });

    it("cdk8s/ imports nothing from src/cli (the CLI is a consumer of the manifests' sources, not a source)", () => {
      const dir = join(PROJECT_ROOT, 'cdk8s');
      const offenders = readdirSync(dir)
        .filter((f) => f.endsWith('.ts'))
        .filter((f) => /from\s+'[^']*src\/cli\//.test(readFileSync(join(dir, f), 'utf8')));
      expect(offenders).to.deep.equal([]);
    });
  });
});
