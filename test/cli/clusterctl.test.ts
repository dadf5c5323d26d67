// The clusterctl provider release (`npm run synth -- --clusterctl DIR`): metadata.yaml maps the release series to the
// contract; the components YAML, once its variables are substituted the way clusterctl does it (envsubst.ts), is
// exactly what synthesize() writes for those values, validates against the API schemas, keeps every namespaced object
// in one namespace (clusterctl's rule), and passes a server-side dry-run on the embedded API server (and on the real
// one with INPLACE_TEST_KUBECONFIG).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/api/index.js';
import { callerNamespaces } from '../../cdk8s/charts.js';
import {
  CLUSTERCTL_COMPONENTS_FILE,
  CLUSTERCTL_PLANS_ONLY_FILE,
  CLUSTERCTL_PROVIDER_LABEL,
  clusterctlRelease,
  clusterctlVariables,
  type ClusterctlOptions,
} from '../../cdk8s/clusterctl.js';
import { PROJECT_ROOT, synthesize, type SynthOptions } from '../../cdk8s/synth.js';
import { MissingVariablesError, envsubst, variableRefs } from './envsubst.js';
import { docsOf, type K8sDoc } from './manifests.js';
import { manifestProblems } from './manifest-schemas.js';
import { startTestEnv } from '../support/env.js';

const IMAGE = 'registry.example.com/inplace-capi:0.1.0';
const OPTS: ClusterctlOptions = { version: 'v0.1.0', image: IMAGE };
const components = (o: ClusterctlOptions = OPTS): string =>
  clusterctlRelease(o).find((f) => f.name === CLUSTERCTL_COMPONENTS_FILE)!.content;
const docsOfText = (text: string): K8sDoc[] => docsOf([{ name: 'x.yaml', content: text }]);
/** What synthesize() writes for these values, the runtime extension included (the release always carries it). */
const direct = (o: SynthOptions & { callers: string[] }): K8sDoc[] => {
  const { callers, ...rest } = o;
  return docsOf(synthesize({ ...rest, runtimeExtension: { callerNamespaceSelector: callerNamespaces(callers) } }));
};
const CLUSTER_SCOPED = new Set(['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'ExtensionConfig']);

describe('clusterctl packaging (npm run synth -- --clusterctl)', () => {
  describe('envsubst (clusterctl substitution)', () => {
    it('substitutes $NAME, ${NAME} and the default forms as drone/envsubst does', () => {
      const text = 'a=${A} b=$B c=${C:=dc} d=${D:-dd} e=${E=de} f=${F-df} g=${G:=dg}';
      expect(envsubst(text, { A: '1', B: '2', C: '', D: '', E: '', F: '', G: 'x' })).to.equal('a=1 b=2 c=dc d=dd e= f= g=x');
      expect(envsubst('${E=de} ${F-df}', {})).to.equal('de df');
    });

    it('leaves a $ that starts no name (CRD patterns end in $)', () => {
      expect(envsubst("pattern: ^[a-z]+$\nother: '$'", {})).to.equal("pattern: ^[a-z]+$\nother: '$'");
    });

    it('refuses variables without value or default, naming every one, and substitutes nothing', () => {
      expect(() => envsubst('${Z} ${A} ${A} ${B:=b}', {}))
        .to.throw(MissingVariablesError)
        .with.property('message')
        .that.matches(/value for variables \[A, Z\] is not set/);
    });
  });

  it('metadata.yaml maps the release series to the v1beta2 contract; a version that is not vX.Y.Z is refused', () => {
    const meta = parse(clusterctlRelease({ ...OPTS, version: 'v1.4.2' }).find((f) => f.name === 'metadata.yaml')!.content) as unknown;
    expect(meta).to.deep.equal({
      apiVersion: 'clusterctl.cluster.x-k8s.io/v1alpha3',
      kind: 'Metadata',
      releaseSeries: [{ major: 1, minor: 4, contract: 'v1beta2' }],
    });
    for (const bad of ['0.1.0', 'v1.2', 'v01.2.3', 'latest'])
      expect(() => clusterctlRelease({ ...OPTS, version: bad })).to.throw(/semantic version with a leading v/);
  });

  it('metadata.yaml names every earlier series too, newest first, once each (clusterctl reads old versions from the newest release)', () => {
    const meta = parse(
      clusterctlRelease({ ...OPTS, version: 'v1.4.2', previousVersions: ['v0.1.0', 'v1.3.0', 'v1.3.1', 'v1.4.0'] }).find(
        (f) => f.name === 'metadata.yaml',
      )!.content,
    ) as { releaseSeries: unknown[] };
    expect(meta.releaseSeries).to.deep.equal([
      { major: 1, minor: 4, contract: 'v1beta2' },
      { major: 1, minor: 3, contract: 'v1beta2' },
      { major: 0, minor: 1, contract: 'v1beta2' },
    ]);
    expect(() => clusterctlRelease({ ...OPTS, previousVersions: ['1.0'] })).to.throw(/semantic version with a leading v.*, got "1.0"/);
  });

  it('the plans-only components are the synthesized platform without the runtime extension: no cert-manager object, no ExtensionConfig', () => {
    const text = clusterctlRelease(OPTS).find((f) => f.name === CLUSTERCTL_PLANS_ONLY_FILE)!.content;
    expect([...new Set(variableRefs(text).map((r) => r.name))].sort()).to.deep.equal([
      'INPLACE_IMAGE',
      'INPLACE_NAMESPACE',
      'INPLACE_PRIORITY_CLASS',
    ]);
    const docs = docsOfText(envsubst(text, { INPLACE_NAMESPACE: 'plans-a' }));
    expect(docs).to.deep.equal(docsOf(synthesize({ image: IMAGE, namespace: 'plans-a' })));
    const kinds = new Set(docs.map((d) => d.kind));
    for (const absent of ['Issuer', 'Certificate', 'ExtensionConfig']) expect(kinds.has(absent), absent).to.equal(false);
    expect(docs.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name)).not.to.include('inplace-runtime-extension');
    expect(manifestProblems(docs as KubeObject[])).to.deep.equal([]);
    const namespaces = new Set(docs.filter((d) => !CLUSTER_SCOPED.has(d.kind)).map((d) => d.metadata.namespace));
    expect([...namespaces]).to.deep.equal(['plans-a']);
  });

  it('the components reference exactly the documented variables, each with its default (no required variable)', () => {
    const refs = variableRefs(components());
    const names = [...new Set(refs.map((r) => r.name))].sort();
    expect(names).to.deep.equal(
      clusterctlVariables()
        .map((v) => v.name)
        .sort(),
    );
    const defaults = Object.fromEntries(clusterctlVariables({ image: IMAGE }).map((v) => [v.name, v.default]));
    for (const r of refs) expect(r.default, r.name).to.equal(defaults[r.name]);
    expect(defaults['INPLACE_IMAGE']).to.equal(IMAGE);
    // No `$$` (drone/envsubst's escape) and no other form clusterctl would read as a variable.
    expect(components()).not.to.include('$$');
  });

  it('substituted with the defaults, the components are exactly the synthesized platform with the runtime extension, and validate', () => {
    const docs = docsOfText(envsubst(components(), {}));
    const expected = direct({ image: IMAGE, callers: ['capi-system', 'capi-kubeadm-control-plane-system'] });
    expect(docs).to.deep.equal(expected);
    expect(docs.map((d) => d.kind)).to.include.members([
      'CustomResourceDefinition',
      'Deployment',
      'Issuer',
      'Certificate',
      'ExtensionConfig',
    ]);
    expect(manifestProblems(docs as KubeObject[])).to.deep.equal([]);
  });

  it('substituted with other values, every reference follows: one namespace for every namespaced object, the ExtensionConfig, the certificate', () => {
    const values = {
      INPLACE_IMAGE: 'mirror.example.com/inplace@sha256:' + 'ab'.repeat(32),
      INPLACE_NAMESPACE: 'platform-a',
      INPLACE_PRIORITY_CLASS: 'fleet-critical',
      INPLACE_CAPI_NAMESPACE: 'capi',
      INPLACE_KCP_NAMESPACE: 'kcp',
    };
    const docs = docsOfText(envsubst(components(), values));
    expect(docs).to.deep.equal(
      direct({
        image: values.INPLACE_IMAGE,
        namespace: 'platform-a',
        priorityClassName: 'fleet-critical',
        callers: ['capi', 'kcp'],
      }),
    );
    expect(manifestProblems(docs as KubeObject[])).to.deep.equal([]);
    const namespaces = new Set(docs.filter((d) => !CLUSTER_SCOPED.has(d.kind)).map((d) => d.metadata.namespace));
    expect([...namespaces]).to.deep.equal(['platform-a']);
    const ec = docs.find((d) => d.kind === 'ExtensionConfig')!;
    expect(ec.metadata.annotations?.['runtime.cluster.x-k8s.io/inject-ca-from-secret']).to.equal(
      'platform-a/inplace-runtime-extension-cert',
    );
    expect((ec['spec'] as { clientConfig: { service: { namespace: string } } }).clientConfig.service.namespace).to.equal('platform-a');
    const cert = docs.find((d) => d.kind === 'Certificate')!;
    expect((cert['spec'] as { dnsNames: string[] }).dnsNames).to.include('inplace-runtime-extension.platform-a.svc');
  });

  it('without a priority class the variable is left out; a default clusterctl would misread is refused', () => {
    const text = components({ ...OPTS, priorityClassName: '' });
    expect(variableRefs(text).map((r) => r.name)).not.to.include('INPLACE_PRIORITY_CLASS');
    expect(docsOfText(envsubst(text, {}))).to.deep.equal(
      direct({ image: IMAGE, priorityClassName: '', callers: ['capi-system', 'capi-kubeadm-control-plane-system'] }),
    );
    expect(() => clusterctlRelease({ ...OPTS, namespace: 'bad}' })).to.throw(/INPLACE_NAMESPACE must not contain/);
  });

  it('npm run synth -- --clusterctl DIR writes the local repository layout; contradicting flags exit 2 naming them', function () {
    this.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), 'inplace-clusterctl-'));
    try {
      const run = (args: string[]): ReturnType<typeof spawnSync> =>
        spawnSync(
          process.execPath,
          ['--import', 'tsx', join(PROJECT_ROOT, 'cdk8s', 'main.ts'), '--clusterctl', dir, '--image', IMAGE, ...args],
          {
            cwd: PROJECT_ROOT,
            encoding: 'utf8',
          },
        );
      const ok = run(['--clusterctl-version', 'v0.2.0', '--namespace', 'inplace-a']);
      expect(ok.status, String(ok.stderr)).to.equal(0);
      const base = join(dir, CLUSTERCTL_PROVIDER_LABEL, 'v0.2.0');
      expect(String(ok.stdout)).to.include('type: RuntimeExtensionProvider');
      expect(String(ok.stdout)).to.include(`url: file://${join(base, CLUSTERCTL_COMPONENTS_FILE)}`);
      const written = readFileSync(join(base, CLUSTERCTL_COMPONENTS_FILE), 'utf8');
      expect(written).to.equal(components({ version: 'v0.2.0', image: IMAGE, namespace: 'inplace-a' }));
      expect(existsSync(join(base, 'metadata.yaml'))).to.equal(true);
      expect(readFileSync(join(base, CLUSTERCTL_PLANS_ONLY_FILE), 'utf8')).to.equal(
        clusterctlRelease({ version: 'v0.2.0', image: IMAGE, namespace: 'inplace-a' }).find((f) => f.name === CLUSTERCTL_PLANS_ONLY_FILE)!
          .content,
      );
      expect(String(ok.stdout)).to.include(`url: file://${join(base, CLUSTERCTL_PLANS_ONLY_FILE)}`);
      const bad = run(['--samples', '--namespace-scoped', 'fleet-a']);
      expect(bad.status).to.equal(2);
      expect(String(bad.stderr)).to.match(/--clusterctl does not take --namespace-scoped, --samples/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A server-side dry-run apply of every object of the substituted components (nothing persists): on the embedded
  // API server by default — it serves the CRDs and the core kinds it knows, and validates the CRDs as kube-apiserver
  // does (structural schema, CEL rules and their cost) — and on the real one with INPLACE_TEST_KUBECONFIG, the final
  // validator of every kind. Kinds a server does not serve are listed: the embedded one serves no apps/rbac/policy/
  // networking kinds (those are schema-checked above), and cert-manager's kinds and the ExtensionConfig only exist
  // where their CRDs are installed; any other refusal fails.
  it('the API server (embedded, or the real one with INPLACE_TEST_KUBECONFIG) accepts the substituted components with a server-side dry-run apply', async function () {
    this.timeout(180_000);
    const env = await startTestEnv();
    try {
      const ns = await env.newNamespace('clusterctl');
      const problems: string[] = [];
      const unserved = new Set<string>();
      let applied = 0;
      const docs = docsOfText(envsubst(components(), { INPLACE_NAMESPACE: ns }));
      for (const obj of docs) {
        if (obj.kind === 'Namespace') continue;
        const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
        let res;
        try {
          res = await env.client.resolve(group!, obj.kind);
        } catch {
          unserved.add(`${obj.apiVersion}/${obj.kind}`);
          continue;
        }
        await env.client
          .patch(res.version === version ? res : { ...res, version: version! }, obj.metadata.namespace, obj.metadata.name, obj, {
            type: 'apply',
            force: true,
            dryRun: true,
            fieldManager: 'inplace-clusterctl-test',
          })
          .then(() => applied++)
          .catch((e: unknown) => problems.push(`${obj.kind} ${obj.metadata.name}: ${(e as Error).message}`));
      }
      expect(problems).to.deep.equal([]);
      const optional = /^(cert-manager\.io\/v1\/(Issuer|Certificate)|runtime\.cluster\.x-k8s\.io\/v1beta2\/ExtensionConfig)$/;
      const builtin =
        /^(apps\/v1\/Deployment|rbac\.authorization\.k8s\.io\/v1\/\w+|policy\/v1\/PodDisruptionBudget|networking\.k8s\.io\/v1\/NetworkPolicy|v1\/Service)$/;
      expect([...unserved].filter((k) => !optional.test(k) && (env.isRealCluster || !builtin.test(k)))).to.deep.equal([]);
      // Every CRD and ServiceAccount went through the server, whichever it is.
      expect(applied).to.be.at.least(docs.filter((d) => d.kind === 'CustomResourceDefinition' || d.kind === 'ServiceAccount').length);
    } finally {
      await env.stop();
    }
  });
});
