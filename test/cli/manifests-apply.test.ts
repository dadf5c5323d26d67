// Every synthesized variant goes through an API server: a server-side dry-run apply of each object (nothing
// persists) on the embedded API server — which serves the CRDs and the core kinds it knows and checks a CRD as
// kube-apiserver does (structural schema, defaults, list types, CEL rules and their cost) — and on the real one with
// INPLACE_TEST_KUBECONFIG, the final validator of every kind. Both components files of the clusterctl release (full and
// plans-only) are applied too, substituted as clusterctl does with the test's namespace. Kinds a server does not serve are listed: the embedded one serves no apps/rbac/policy/
// networking/admissionregistration kinds (manifests-validate.test.ts checks them against their schemas), and
// cert-manager's kinds and the ExtensionConfig only exist where their CRDs are installed; any refusal fails.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/api/index.js';
import { callerNamespaces } from '../../cdk8s/charts.js';
import { CLUSTERCTL_COMPONENTS_FILE, CLUSTERCTL_PLANS_ONLY_FILE, clusterctlRelease } from '../../cdk8s/clusterctl.js';
import { guardCoversOf, inPlaceGuardObjects } from '../../cdk8s/in-place-guard.js';
import { PROJECT_ROOT, sampleUpdaterWorkloads, synthesize } from '../../cdk8s/synth.js';
import { envsubst } from './envsubst.js';
import { docsOf, type K8sDoc } from './manifests.js';
import { startTestEnv, type TestEnv } from '../support/env.js';

const IMAGE = 'registry.example.com/inplace-capi:test';
const CALLERS = { callerNamespaceSelector: callerNamespaces(['capi-system', 'capi-kubeadm-control-plane-system']) };
/** A components file of the clusterctl release, its variables substituted (defaults, INPLACE_NAMESPACE = ns). */
const clusterctlDocs = (file: string, ns: string): K8sDoc[] =>
  docsOf([
    {
      name: file,
      content: envsubst(clusterctlRelease({ version: 'v0.1.0', image: IMAGE }).find((f) => f.name === file)!.content, {
        INPLACE_NAMESPACE: ns,
      }),
    },
  ]);

/** The variants of `npm run synth`, each in the test's namespace. */
const variants: Record<string, (ns: string) => K8sDoc[]> = {
  default: (ns) => docsOf(synthesize({ image: IMAGE, namespace: ns })),
  '--samples': (ns) => docsOf(synthesize({ image: IMAGE, namespace: ns, updaters: sampleUpdaterWorkloads() })),
  '--namespace-scoped': (ns) => docsOf(synthesize({ image: IMAGE, namespace: ns, watchNamespace: ns })),
  '--runtime-extension': (ns) => docsOf(synthesize({ image: IMAGE, namespace: ns, runtimeExtension: CALLERS })),
  '--dashboard': (ns) => docsOf(synthesize({ image: IMAGE, namespace: ns, dashboard: true })),
  '--dashboard --namespace-scoped': (ns) => docsOf(synthesize({ image: IMAGE, namespace: ns, watchNamespace: ns, dashboard: true })),
  '--in-place-guard examples/hooks/updaters.yaml': (ns) =>
    inPlaceGuardObjects({
      covers: guardCoversOf(
        parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'hooks', 'updaters.yaml'), 'utf8')).map((d) => d.toJS() as unknown),
      ),
      namespace: ns,
      instance: 'inplace-capi',
    }) as K8sDoc[],
  [`--clusterctl (${CLUSTERCTL_COMPONENTS_FILE})`]: (ns) => clusterctlDocs(CLUSTERCTL_COMPONENTS_FILE, ns),
  [`--clusterctl (${CLUSTERCTL_PLANS_ONLY_FILE})`]: (ns) => clusterctlDocs(CLUSTERCTL_PLANS_ONLY_FILE, ns),
};

const OPTIONAL = /^(cert-manager\.io\/v1\/(Issuer|Certificate)|runtime\.cluster\.x-k8s\.io\/v1beta2\/ExtensionConfig)$/;
const NOT_EMBEDDED =
  /^(apps\/v1\/Deployment|rbac\.authorization\.k8s\.io\/v1\/\w+|policy\/v1\/PodDisruptionBudget|networking\.k8s\.io\/v1\/NetworkPolicy|v1\/Service|admissionregistration\.k8s\.io\/v1\/\w+)$/;

/** Applies every object with a server-side dry run; returns the refusals and the kinds the server does not serve. */
async function dryApply(env: TestEnv, docs: readonly K8sDoc[]): Promise<{ problems: string[]; unserved: string[]; applied: number }> {
  const problems: string[] = [];
  const unserved = new Set<string>();
  let applied = 0;
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
      .patch(res.version === version ? res : { ...res, version: version! }, obj.metadata.namespace, obj.metadata.name, obj as KubeObject, {
        type: 'apply',
        force: true,
        dryRun: true,
        fieldManager: 'inplace-manifests-apply-test',
      })
      .then(() => applied++)
      .catch((e: unknown) => problems.push(`${obj.kind} ${obj.metadata.name}: ${(e as Error).message}`));
  }
  return { problems, unserved: [...unserved].sort(), applied };
}

describe('every synthesized variant applies to the API server (server-side dry run)', function () {
  this.timeout(180_000);
  let env: TestEnv;
  let ns = '';
  before(async function () {
    env = await startTestEnv();
    ns = await env.newNamespace('manifests-apply');
  });
  after(async function () {
    await env?.stop();
  });

  for (const [what, docsFor] of Object.entries(variants))
    it(`${what}: every object the server serves is accepted`, async function () {
      const docs = docsFor(ns);
      const { problems, unserved, applied } = await dryApply(env, docs);
      expect(problems).to.deep.equal([]);
      expect(unserved.filter((k) => !OPTIONAL.test(k) && (env.isRealCluster || !NOT_EMBEDDED.test(k)))).to.deep.equal([]);
      // Every CRD and ServiceAccount went through the server, whichever it is.
      expect(applied).to.be.at.least(docs.filter((d) => d.kind === 'CustomResourceDefinition' || d.kind === 'ServiceAccount').length);
    });
});
