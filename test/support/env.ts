// The shared test environment: a real cluster when INPLACE_TEST_KUBECONFIG is set (envtest's "use existing
// cluster"), else the project's local API server in-process. Every integration test goes through this.
// On a real cluster the environment touches only what it created: CRDs are created when absent and never updated
// (an existing one is used when it serves what the tests need, else the suite fails naming it), and only the
// namespaces newNamespace() created are deleted (after the platform's finalizers, which no stopped controller would
// remove, are taken off their plans).
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { CustomResourceDefinitions, Finalizers, InPlaceUpdatePlans, Namespaces, type KubeObject } from '../../src/api/index.js';
import { startLocalApiServer, type LocalApiServer, type LocalApiServerOptions } from '../../tools/local-apiserver/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../../src/runtime/client.js';
import { isAlreadyExists, isConflict, isNotFound } from '../../src/runtime/pure/errors.js';
import { crdDifferences, ExistingCrdMismatchError } from './crds.js';
import { waitFor } from './wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The label on every namespace and CRD the environment creates: scripts/test-real.ts removes what a run created by
 * it (and only what did not exist before the run).
 */
export const TEST_LABEL = 'inplace.cluster.x-k8s.io/test';

/** The project's CRD directories (the platform's kinds and the sample updaters' kinds). */
export const PROJECT_CRDS: string[] = [join(ROOT, 'crds'), join(ROOT, 'crds/samples')];

/** A running test environment. */
export interface TestEnv {
  client: RestClient;
  kc: KubeConfig;
  kubeconfigPath: string;
  isRealCluster: boolean;
  /** The in-process API server (fault injection); undefined on a real cluster. */
  server: LocalApiServer | undefined;
  /** Creates a uniquely named namespace, deleted again by `stop()`. */
  newNamespace(prefix?: string): Promise<string>;
  /**
   * Installs the CRDs in these files/directories and waits until they are Established. Local API server: create or
   * update. Real cluster: create when absent; an existing CRD is never updated: it is used when crdDifferences finds
   * nothing, else this throws ExistingCrdMismatchError naming every CRD that differs.
   */
  installCrds(paths: string[]): Promise<void>;
  /** installCrds for CRD objects a test builds (labelled as the tests' own, so that `npm run test:real` removes them). */
  installCrdObjects(crds: readonly KubeObject[]): Promise<void>;
  /**
   * After the suite's cluster-wide controllers stopped (real cluster): takes the platform's finalizer off the plans of
   * other test namespaces being deleted. Their suites released them before deleting, so the finalizer can only come
   * from this suite's controllers, which saw every namespace and stopped before the namespace controller reached them.
   */
  releaseTerminatingTestNamespaces(): Promise<void>;
  /** Deletes the namespaces it created, closes the client and (local) the API server. */
  stop(): Promise<void>;
}

/** Options of `startTestEnv`. */
export interface TestEnvOptions {
  /** CRD files/directories to install at start (e.g. PROJECT_CRDS). */
  crds?: string[];
  /** Options passed to the local API server (ignored on a real cluster). */
  local?: LocalApiServerOptions;
}

async function crdFiles(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const s = await stat(p);
    if (s.isDirectory()) {
      for (const f of (await readdir(p)).sort()) if (/\.ya?ml$/.test(f)) out.push(join(p, f));
    } else out.push(p);
  }
  return out;
}

/** Reads every CustomResourceDefinition document from files/directories of YAML. */
export async function readCrds(paths: string[]): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const f of await crdFiles(paths)) {
    for (const doc of parseAllDocuments(await readFile(f, 'utf8'))) {
      const o = doc.toJS() as KubeObject | null;
      if (o && o.kind === 'CustomResourceDefinition') out.push(o);
    }
  }
  return out;
}

/**
 * Removes the platform's finalizers from the plans of `ns` (nothing to do when the plan CRD is not installed). A
 * write still in flight from a stopped controller can move a plan's resourceVersion under us: a conflict reads the
 * plans again rather than leaving the namespace Terminating for good.
 */
async function releasePlatformFinalizers(client: RestClient, ns: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await releaseOnce(client, ns);
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 10) throw err;
    }
  }
}

/** One pass of releasePlatformFinalizers: every plan of `ns` that still has the platform's finalizer. */
async function releaseOnce(client: RestClient, ns: string): Promise<void> {
  let plans: KubeObject[];
  try {
    plans = (await client.list(InPlaceUpdatePlans, ns)).items;
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  for (const p of plans) {
    const finalizers = p.metadata.finalizers ?? [];
    if (!finalizers.includes(Finalizers.plan)) continue;
    const metadata = { resourceVersion: p.metadata.resourceVersion, finalizers: finalizers.filter((f) => f !== Finalizers.plan) };
    try {
      await client.patch(InPlaceUpdatePlans, ns, p.metadata.name!, { metadata }, { type: 'merge' });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Starts the environment (see module comment). */
export async function startTestEnv(opts: TestEnvOptions = {}): Promise<TestEnv> {
  const realPath = process.env['INPLACE_TEST_KUBECONFIG'];
  let server: LocalApiServer | undefined;
  let kubeconfigPath: string;
  let tmp: string | undefined;
  if (realPath) {
    kubeconfigPath = realPath;
  } else {
    server = await startLocalApiServer(opts.local ?? {});
    tmp = await mkdtemp(join(tmpdir(), 'inplace-test-'));
    kubeconfigPath = join(tmp, 'kubeconfig');
    await server.writeKubeconfig(kubeconfigPath);
  }
  const kc = loadKubeConfig(kubeconfigPath);
  const client = createClient(kc, { userAgent: 'inplace-test' });
  const namespaces: string[] = [];

  const env: TestEnv = {
    client,
    kc,
    kubeconfigPath,
    isRealCluster: !!realPath,
    server,

    async newNamespace(prefix = 'test'): Promise<string> {
      const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`.toLowerCase().slice(0, 63);
      await client.create(Namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { [TEST_LABEL]: 'true' } },
      });
      namespaces.push(name);
      return name;
    },

    async installCrds(paths: string[]): Promise<void> {
      await env.installCrdObjects(await readCrds(paths));
    },

    async installCrdObjects(crds: readonly KubeObject[]): Promise<void> {
      const mismatches: { name: string; differences: string[] }[] = [];
      for (const crd of crds) {
        const name = crd.metadata.name!;
        let cur = await client.get(CustomResourceDefinitions, undefined, name);
        if (!cur) {
          try {
            const labels = { ...(crd.metadata.labels ?? {}), [TEST_LABEL]: 'true' };
            await client.create(CustomResourceDefinitions, { ...crd, metadata: { ...crd.metadata, labels } });
            continue;
          } catch (err) {
            // Another test process created it meanwhile: judge theirs like any existing CRD.
            if (!isAlreadyExists(err)) throw err;
            cur = await client.get(CustomResourceDefinitions, undefined, name);
            if (!cur) throw err;
          }
        }
        if (!realPath)
          await client.update(CustomResourceDefinitions, {
            ...crd,
            metadata: { ...crd.metadata, resourceVersion: cur.metadata.resourceVersion },
          });
        else {
          const differences = crdDifferences(cur, crd);
          if (differences.length > 0) mismatches.push({ name, differences });
        }
      }
      // Fail rather than skip: a skipped suite reports green while it tested nothing.
      if (mismatches.length > 0) throw new ExistingCrdMismatchError(mismatches);
      for (const crd of crds) {
        const name = crd.metadata.name!;
        await waitFor(
          async () => {
            const c = await client.get(CustomResourceDefinitions, undefined, name);
            const conds = (c?.['status'] as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
            return conds.some((x) => x.type === 'Established' && x.status === 'True');
          },
          { timeoutMs: 30_000, intervalMs: 50, message: `CRD ${name} to be Established` },
        );
      }
      client.invalidateDiscovery();
    },

    async releaseTerminatingTestNamespaces(): Promise<void> {
      if (!realPath) return;
      const all = (await client.list(Namespaces, undefined, { labelSelector: TEST_LABEL })).items;
      for (const n of all) {
        const name = n.metadata.name!;
        if (n.metadata.deletionTimestamp && !namespaces.includes(name)) await releasePlatformFinalizers(client, name);
      }
    },

    async stop(): Promise<void> {
      for (const ns of namespaces.splice(0)) {
        // The suite's controllers have stopped: a platform finalizer still on a plan would keep the namespace
        // Terminating for good on a real cluster (issue 24). The local server goes away with its namespaces.
        if (realPath) await releasePlatformFinalizers(client, ns);
        try {
          await client.delete(Namespaces, undefined, ns, { propagationPolicy: 'Background' });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      client.close();
      await server?.close();
      if (tmp) await rm(tmp, { recursive: true, force: true });
    },
  };
  if (opts.crds?.length) {
    try {
      await env.installCrds(opts.crds);
    } catch (err) {
      // The caller never gets the env to stop: release the client (and a local server) here.
      await env.stop();
      throw err;
    }
  }
  return env;
}
