// The whole test suite against a real cluster, in one command, leaving nothing behind:
//
//   npm run test:real -- KUBECONFIG [--keep-crds] [mocha arguments, e.g. test files]
//
// 1. checks the cluster answers (GET /version) and notes the CRDs and namespaces that exist before the run;
// 2. runs mocha (every spec, or the files given) with INPLACE_TEST_KUBECONFIG=KUBECONFIG and, unless set,
//    CAPI_CRDS_DIR=../shared/reference/capi-crds when that directory exists;
// 3. waits until every namespace the run created is gone (the suites delete theirs; a real cluster's namespace
//    controller takes a while) and deletes the CRDs the run created — only those that did not exist before the run
//    and carry the tests' label (TEST_LABEL), never another CRD (--keep-crds keeps them, e.g. for a second run); a CRD
//    the run created without that label is left and reported as left behind;
// 4. prints the duration and what is left behind, and exits with mocha's code, or 3 when the tests passed but
//    something the run created is still there.
// Ctrl-C stops the tests, then the clean-up runs. Do not run two at once against one cluster: the second would
// delete CRDs the first still uses.
import { spawn } from 'node:child_process';
import { VersionApi } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomResourceDefinitions, Namespaces, type KubeObject, type ResourceType } from '../src/api/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../src/runtime/client.js';
import { TEST_LABEL } from '../test/support/env.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** How long the namespaces and CRDs the run created may take to disappear (a real namespace controller is slow). */
const CLEANUP_TIMEOUT_MS = 5 * 60_000;

const usage = `usage: npm run test:real -- KUBECONFIG [--keep-crds] [mocha arguments]
  Runs the test suite against the cluster of KUBECONFIG (a throwaway cluster: kind, envtest's binaries, ...),
  then removes what the run created. See README.md, "Tests against a real cluster".`;

async function names(client: RestClient, res: ResourceType, labelSelector?: string): Promise<Set<string>> {
  const out = new Set<string>();
  let cont: string | undefined;
  do {
    const page = await client.list<KubeObject>(res, undefined, {
      limit: 500,
      ...(cont ? { continue: cont } : {}),
      ...(labelSelector ? { labelSelector } : {}),
    });
    for (const o of page.items) out.add(o.metadata.name!);
    cont = page.continue;
  } while (cont);
  return out;
}

/** Polls until `still()` is empty or the timeout passes; returns what is left. */
async function waitGone(still: () => Promise<string[]>, timeoutMs: number): Promise<string[]> {
  const end = Date.now() + timeoutMs;
  let left = await still();
  while (left.length > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 2000));
    left = await still();
  }
  return left;
}

function runMocha(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const mocha = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
  return new Promise((res) => {
    const p = spawn(process.execPath, [mocha, ...args], { cwd: ROOT, env, stdio: 'inherit' });
    p.on('exit', (code, signal) => res(code ?? (signal ? 130 : 1)));
  });
}

async function main(argv: string[]): Promise<number> {
  const kubeconfig = argv[0] && !argv[0].startsWith('-') ? resolve(argv[0]) : process.env['INPLACE_TEST_KUBECONFIG'];
  if (!kubeconfig) {
    console.error(usage);
    return 2;
  }
  if (!existsSync(kubeconfig)) {
    console.error(`test:real: kubeconfig ${kubeconfig} does not exist\n${usage}`);
    return 2;
  }
  const rest = argv[0] && !argv[0].startsWith('-') ? argv.slice(1) : argv;
  const keepCrds = rest.includes('--keep-crds');
  const mochaArgs = rest.filter((a) => a !== '--keep-crds');

  const kc = loadKubeConfig(kubeconfig);
  const client = createClient(kc, { userAgent: 'inplace-test-real' });
  try {
    let version: { gitVersion?: string };
    try {
      version = await kc.makeApiClient(VersionApi).getCode();
    } catch (err) {
      console.error(`test:real: the cluster of ${kubeconfig} does not answer: ${(err as Error).message}`);
      return 2;
    }
    const crdsBefore = await names(client, CustomResourceDefinitions);
    const nsBefore = await names(client, Namespaces);
    const capi =
      process.env['CAPI_CRDS_DIR'] ??
      (existsSync(join(ROOT, '..', 'shared/reference/capi-crds')) ? join(ROOT, '..', 'shared/reference/capi-crds') : undefined);
    console.log(
      `test:real: ${client.server} (kube-apiserver ${version.gitVersion ?? '?'}), ${crdsBefore.size} CRDs and ${nsBefore.size} namespaces before the run; CAPI CRDs from ${capi ?? 'the project fixtures'}`,
    );

    const started = Date.now();
    // Ctrl-C stops mocha (same process group) but not the clean-up below.
    const ignore = (): void => undefined;
    process.on('SIGINT', ignore);
    const code = await runMocha(mochaArgs, {
      ...process.env,
      INPLACE_TEST_KUBECONFIG: kubeconfig,
      ...(capi ? { CAPI_CRDS_DIR: capi } : {}),
    });
    process.off('SIGINT', ignore);
    const testsSeconds = Math.round((Date.now() - started) / 1000);

    console.log(`test:real: tests done in ${testsSeconds} s (mocha exit ${code}); removing what the run created`);
    const nsLeft = await waitGone(async () => [...(await names(client, Namespaces))].filter((n) => !nsBefore.has(n)), CLEANUP_TIMEOUT_MS);
    let crdsLeft: string[] = [];
    let unlabelled: string[] = [];
    if (!keepCrds) {
      const created = [...(await names(client, CustomResourceDefinitions, `${TEST_LABEL}=true`))].filter((n) => !crdsBefore.has(n));
      for (const name of created) {
        try {
          await client.delete(CustomResourceDefinitions, undefined, name);
        } catch (err) {
          console.error(`test:real: delete CRD ${name}: ${(err as Error).message}`);
        }
      }
      crdsLeft = await waitGone(
        async () => [...(await names(client, CustomResourceDefinitions))].filter((n) => created.includes(n)),
        CLEANUP_TIMEOUT_MS,
      );
      // A CRD the run created without the tests' label is not deleted here: said, or the next run finds it in its way.
      unlabelled = [...(await names(client, CustomResourceDefinitions))].filter((n) => !crdsBefore.has(n) && !created.includes(n));
    }
    const left = [
      ...nsLeft.map((n) => `namespace ${n}`),
      ...crdsLeft.map((n) => `CRD ${n}`),
      ...unlabelled.map((n) => `CRD ${n} (created without the ${TEST_LABEL} label)`),
    ];
    const total = Math.round((Date.now() - started) / 1000);
    console.log(
      `test:real: ${total} s in all; left behind: ${left.length ? left.join(', ') : keepCrds ? 'the CRDs the run created (--keep-crds), nothing else' : 'nothing'}`,
    );
    if (code !== 0) return code;
    return left.length ? 3 : 0;
  } finally {
    client.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
