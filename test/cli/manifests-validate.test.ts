// Every synthesized manifest validates against the real Kubernetes API schemas (built-in kinds: kubernetes-models,
// custom kinds: their CRDs; see manifest-schemas.ts for the choice), in each shape `npm run synth` can produce, and the
// validator is shown to catch the mistakes it exists for (a string containerPort, a rule without verbs, a selector
// that does not match its pods, a kind nobody knows).
import { expect } from 'chai';
import type { KubeObject } from '../../src/api/index.js';
import { callerNamespaces } from '../../cdk8s/charts.js';
import { sampleUpdaterWorkloads, synthesize, type SynthOptions } from '../../cdk8s/synth.js';
import { docsOf, type K8sDoc } from './manifests.js';
import { BUILTIN, CERT_MANAGER, manifestProblems } from './manifest-schemas.js';
import { startTestEnv } from '../support/env.js';

const IMAGE = 'registry.example.com/inplace-capi:test';
const CALLERS = { callerNamespaceSelector: callerNamespaces(['capi-system', 'capi-kubeadm-control-plane-system']) };
const variants: Record<string, SynthOptions> = {
  'the defaults with the sample updaters': { image: IMAGE, updaters: sampleUpdaterWorkloads() },
  'the defaults (no samples)': { image: IMAGE },
  '3 replicas, a write policy, API server CIDRs, another instance and priority class': {
    image: IMAGE,
    replicas: 3,
    instance: 'fleet-a',
    priorityClassName: 'platform-critical',
    apiServer: { ports: [6443], cidrs: ['10.0.0.1/32', 'fd00::1/128'] },
    writePolicy: { Machine: { allow: ['/spec/version'] } },
    updaters: sampleUpdaterWorkloads(),
  },
  'no NetworkPolicy, no priority class': { image: IMAGE, noNetworkPolicy: true, priorityClassName: '' },
  '--runtime-extension (cert-manager Certificate, ExtensionConfig)': { image: IMAGE, runtimeExtension: CALLERS },
  '--runtime-extension-secret, 2 replicas, another namespace': {
    image: IMAGE,
    runtimeExtension: { ...CALLERS, secretName: 'my-tls' },
    replicas: 2,
    namespace: 'capi-inplace',
  },
  '--dashboard, 2 replicas': { image: IMAGE, dashboard: true, replicas: 2 },
  '--dashboard --namespace-scoped': { image: IMAGE, dashboard: true, watchNamespace: 'fleet-a' },
  '--namespace-scoped with the samples and the runtime extension, an image by digest, no CPU limit': {
    image: `registry.example.com/inplace-capi@sha256:${'0f'.repeat(32)}`,
    watchNamespace: 'fleet-a',
    updaters: sampleUpdaterWorkloads(),
    runtimeExtension: CALLERS,
    resources: { cpuLimitMillis: 0, memoryLimitMiB: 1024 },
  },
};

const docsFor = (o: SynthOptions): K8sDoc[] => docsOf(synthesize(o));
const deploymentOf = (docs: readonly K8sDoc[]): K8sDoc => structuredClone(docs.find((d) => d.kind === 'Deployment')!);

describe('synthesized manifests validate against the Kubernetes API schemas', () => {
  for (const [what, opts] of Object.entries(variants)) {
    it(`${what}: every object validates`, () => {
      const docs = docsFor(opts);
      expect(docs.length).to.be.greaterThan(10);
      expect(manifestProblems(docs as KubeObject[])).to.deep.equal([]);
    });
  }

  it('has a schema for every kind it synthesizes (none is skipped)', () => {
    const kinds = new Set(
      docsFor(variants['3 replicas, a write policy, API server CIDRs, another instance and priority class']!).map(
        (d) => `${d.apiVersion}/${d.kind}`,
      ),
    );
    expect([...kinds].filter((k) => !BUILTIN[k])).to.deep.equal([]);
    // With the runtime extension: cert-manager's kinds are shape-checked, the ExtensionConfig validates against its CRD.
    const ext = new Set(docsFor({ image: IMAGE, runtimeExtension: CALLERS }).map((d) => `${d.apiVersion}/${d.kind}`));
    expect([...ext].filter((k) => !BUILTIN[k] && !CERT_MANAGER[k])).to.deep.equal(['runtime.cluster.x-k8s.io/v1beta2/ExtensionConfig']);
    for (const k of [
      'apps/v1/Deployment',
      'policy/v1/PodDisruptionBudget',
      'networking.k8s.io/v1/NetworkPolicy',
      'rbac.authorization.k8s.io/v1/Role',
    ])
      expect(kinds).to.include(k);
  });

  describe('the validator catches broken objects', () => {
    const docs = docsFor({ image: IMAGE });

    it('a Deployment whose containerPort is a string', () => {
      const d = deploymentOf(docs);
      const ctr = (d['spec'] as { template: { spec: { containers: { ports: { containerPort: unknown }[] }[] } } }).template.spec
        .containers[0]!;
      ctr.ports[0]!.containerPort = '8080';
      expect(manifestProblems([d as KubeObject]).join('\n')).to.match(
        /Deployment inplace-plan-controller: .*containerPort must be integer/,
      );
    });

    it('a Role rule without verbs', () => {
      const role = structuredClone(docs.find((d) => d.kind === 'Role')!);
      delete (role['rules'] as Record<string, unknown>[])[0]!['verbs'];
      expect(manifestProblems([role as KubeObject]).join('\n')).to.match(/Role .*rules\/0 must have required property '?verbs'?/);
    });

    it('a Deployment whose selector does not match its pod labels, and a bad label value', () => {
      const d = deploymentOf(docs);
      (d['spec'] as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels['app.kubernetes.io/name'] =
        'something-else';
      d.metadata.labels = { ...d.metadata.labels, 'app.kubernetes.io/version': 'not valid!' };
      const problems = manifestProblems([d as KubeObject]).join('\n');
      expect(problems).to.match(/selector does not match template labels/);
      expect(problems).to.match(/invalid value for label app.kubernetes.io\/version/);
    });

    it('a PodDisruptionBudget whose maxUnavailable is neither int nor string, and a NetworkPolicy port that is a list', () => {
      const pdb = structuredClone(docsFor({ image: IMAGE, replicas: 2 }).find((d) => d.kind === 'PodDisruptionBudget')!);
      (pdb['spec'] as Record<string, unknown>)['maxUnavailable'] = { value: 1 };
      expect(manifestProblems([pdb as KubeObject]).join('\n')).to.match(/PodDisruptionBudget .*maxUnavailable/);
      const np = structuredClone(docs.find((d) => d.kind === 'NetworkPolicy')!);
      (np['spec'] as { ingress: { ports: Record<string, unknown>[] }[] }).ingress[0]!.ports[0]!['port'] = [8080];
      expect(manifestProblems([np as KubeObject]).join('\n')).to.match(/NetworkPolicy .*port/);
    });

    it('a kind without a schema, and a custom object its CRD rejects', () => {
      expect(manifestProblems([{ apiVersion: 'v1', kind: 'Widget', metadata: { name: 'w' } }]).join('\n')).to.match(
        /no schema for v1 Widget/,
      );
      const plan = {
        apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
        kind: 'InPlaceUpdatePlan',
        metadata: { name: 'p', namespace: 'ns' },
        spec: { clusterName: 42 },
      };
      expect(manifestProblems([plan as unknown as KubeObject]).join('\n')).to.match(
        /InPlaceUpdatePlan p: \/spec\/clusterName must be string/,
      );
    });

    it('an ExtensionConfig whose service port is a string, and a Certificate without DNS names or issuer', () => {
      const ext = docsFor({ image: IMAGE, runtimeExtension: CALLERS });
      const ec = structuredClone(ext.find((d) => d.kind === 'ExtensionConfig')!);
      (ec['spec'] as { clientConfig: { service: Record<string, unknown> } }).clientConfig.service['port'] = '443';
      expect(manifestProblems([ec as KubeObject]).join('\n')).to.match(/ExtensionConfig inplace: .*port must be integer/);
      const cert = structuredClone(ext.find((d) => d.kind === 'Certificate')!);
      cert['spec'] = { secretName: 'x', dnsNames: [], issuerRef: { name: 'i', kind: 'Secret' } };
      const problems = manifestProblems([cert as KubeObject]).join('\n');
      expect(problems).to.match(/Certificate inplace-runtime-extension: spec.dnsNames/);
      expect(problems).to.match(/spec.issuerRef/);
    });
  });
  // On a real cluster the API server itself is the validator: a server-side dry-run apply of every object (the CRDs
  // and cluster-scoped RBAC included: dry-run persists nothing), into a namespace of the test's own.
  it('a real cluster (INPLACE_TEST_KUBECONFIG) accepts every object with a server-side dry-run apply', async function () {
    if (!process.env['INPLACE_TEST_KUBECONFIG']) this.skip();
    this.timeout(120_000);
    const env = await startTestEnv();
    try {
      const ns = await env.newNamespace('manifests');
      const problems: string[] = [];
      for (const obj of docsFor({ ...variants['the defaults with the sample updaters']!, namespace: ns, replicas: 2 })) {
        if (obj.kind === 'Namespace') continue;
        const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
        const res = await env.client.resolve(group!, obj.kind);
        await env.client
          .patch(res.version === version ? res : { ...res, version: version! }, obj.metadata.namespace, obj.metadata.name, obj, {
            type: 'apply',
            force: true,
            dryRun: true,
            fieldManager: 'inplace-manifests-test',
          })
          .catch((e: unknown) => problems.push(`${obj.kind} ${obj.metadata.name}: ${(e as Error).message}`));
      }
      expect(problems).to.deep.equal([]);
    } finally {
      await env.stop();
    }
  });
});
