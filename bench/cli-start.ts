// Benchmark (not a test): cold-start wall time of `inplace status` and `inplace preview` as a user runs them, a new
// node process per call through bin/inplace.mjs, against a local API server holding the demo cluster and plan.
// Modes: the esbuild bundle (the launcher's default for these verbs) and the TypeScript sources through tsx
// (INPLACE_FROM_SOURCE=1, what every call cost before the bundle); kubectl itself for scale when installed.
// Run: npm run bench:cli [-- RUNS]   (default 7 runs per case; prints the median, min and max)
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Namespaces } from '../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../tools/capi-sim/index.js';
import { DEMO } from '../src/cli/demo.js';
import { applyFile } from '../src/cli/install.js';
import { projectRoot } from '../src/cli/procs.js';
import { sampleUpdaters } from '../src/sample-updaters/index.js';
import { buildCli } from '../bin/lib/build-cli.mjs';
import { PROJECT_CRDS, startTestEnv } from '../test/support/env.js';

const ROOT = projectRoot();
const RUNS = Number(process.argv[2] ?? 7);

/** Wall time (ms) of one process run; throws when it fails. */
function timeRun(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env, cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err}`)),
    );
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

const sampleCrds = Object.values(sampleUpdaters).flatMap((u) => u.crds.map((p) => resolve(ROOT, p)));
const env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs(), ...sampleCrds] });
try {
  await env.client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEMO.namespace } });
  await applyInventory(
    env.client,
    buildInventory({
      namespace: DEMO.namespace,
      clusterName: DEMO.clusterName,
      version: DEMO.version,
      controlPlane: { ...DEMO.controlPlane },
      machineDeployments: DEMO.machineDeployments.map((m) => ({ ...m })),
    }),
  );
  await applyFile(env.client, join(ROOT, 'examples/plan.yaml'));
  await buildCli(ROOT);
  const kc = ['--kubeconfig', env.kubeconfigPath];
  const bin = join(ROOT, 'bin', 'inplace.mjs');
  const cases: [string, string, string[], NodeJS.ProcessEnv][] = [
    ['inplace status', 'bundle', [bin, 'status', 'cluster1-v1-30-1', ...kc], { ...process.env, INPLACE_FROM_SOURCE: '0' }],
    ['inplace status', 'tsx sources', [bin, 'status', 'cluster1-v1-30-1', ...kc], { ...process.env, INPLACE_FROM_SOURCE: '1' }],
    ['inplace preview', 'bundle', [bin, 'preview', '-f', 'examples/plan.yaml', ...kc], { ...process.env, INPLACE_FROM_SOURCE: '0' }],
    ['inplace preview', 'tsx sources', [bin, 'preview', '-f', 'examples/plan.yaml', ...kc], { ...process.env, INPLACE_FROM_SOURCE: '1' }],
  ];
  process.stdout.write(`CLI cold start, ${RUNS} runs each (median [min–max]), node ${process.version}\n`);
  for (const [what, mode, args, e] of cases) {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await timeRun(process.execPath, args, e));
    process.stdout.write(
      `  ${what.padEnd(16)} ${mode.padEnd(12)} ${s(median(times))}  [${s(Math.min(...times))}–${s(Math.max(...times))}]\n`,
    );
  }
  const kubectl = process.env['KUBECTL'] ?? 'kubectl';
  const times: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) times.push(await timeRun(kubectl, ['get', 'inplaceupdateplans', '-A', ...kc], process.env));
    process.stdout.write(
      `  ${'kubectl get'.padEnd(16)} ${'(reference)'.padEnd(12)} ${s(median(times))}  [${s(Math.min(...times))}–${s(Math.max(...times))}]\n`,
    );
  } catch (e) {
    process.stdout.write(`  kubectl get: not measured (${(e as Error).message.split('\n')[0]})\n`);
  }
} finally {
  await env.stop();
}
