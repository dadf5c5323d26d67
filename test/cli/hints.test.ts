// Every command the README tour and `npm start` suggest, run as a user would (kubectl and the CLI as processes,
// KUBECONFIG / PATH as the tour sets them) against the test environment holding the demo cluster and its plan.
// The plan is marked finished first, so `kubectl wait` and `inplace status -w` return; a kubectl watch (-w) runs
// until it printed its table header, then is stopped (what it must not do is exit with an error).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { API_VERSION, InPlaceUpdatePlans, Labels, MachineUpdates, Namespaces } from '../../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { DEMO, watchHints } from '../../src/cli/demo.js';
import { applyFile } from '../../src/cli/install.js';
import { projectRoot } from '../../src/cli/procs.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { isAlreadyExists } from '../../src/runtime/pure/errors.js';
import { runProcess } from '../support/cli.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const ROOT = projectRoot();
const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const PLAN = 'cluster1-v1-30-1';
const DEMO_KUBECONFIG = '.inplace/demo/kubeconfig';

/** The commands of the README's tour (sections 1 and 2): the `npm start` sample output's hints and the sh blocks. */
export function readmeTourCommands(readme: string): string[] {
  const tour = readme.slice(readme.indexOf('## A 5-minute tour'), readme.indexOf('**3. Look at a plan as a tree.**'));
  const out: string[] = [];
  for (const [, lang, body] of tour.matchAll(/```(\w+)\n([\s\S]*?)```/g)) {
    for (const raw of body!.split('\n')) {
      const line = raw.replace(/\s+#.*$/, '').trim();
      if (lang === 'sh' && line && !line.startsWith('export ')) out.push(line);
      if (lang === 'text' && /^(kubectl|npx inplace) /.test(line)) out.push(line);
    }
  }
  return out;
}

describe('hints: every command the README tour and npm start print works', function () {
  let env: TestEnv;
  let createdNs = false;
  let procEnv: NodeJS.ProcessEnv;

  before(async function () {
    this.timeout(180_000);
    const sampleCrds = Object.values(sampleUpdaters).flatMap((u) => u.crds.map((p) => resolve(ROOT, p)));
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs(), ...sampleCrds] });
    try {
      await env.client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEMO.namespace } });
      createdNs = true;
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
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
    await applyFile(env.client, join(ROOT, 'examples/plan.yaml'), DEMO.namespace);
    // No controllers run here: the plan is marked as the demo leaves it, finished.
    const now = new Date().toISOString();
    await env.client.patch(
      InPlaceUpdatePlans,
      DEMO.namespace,
      PLAN,
      {
        status: {
          updateStatus: 'updated',
          progress: '9/9',
          conditions: [{ type: 'Ready', status: 'True', reason: 'Updated', message: '9/9', lastTransitionTime: now }],
        },
      },
      { type: 'merge', subresource: 'status' },
    );
    // Two MachineUpdates of the plan: one finished, one with its os-image task running.
    for (const [machine, st, current] of [
      ['cluster1-md-0-m1', 'updated', undefined],
      ['cluster1-md-0-m2', 'updating', 'os-image'],
    ] as const) {
      const name = `${PLAN}-${machine}`;
      await env.client.create(MachineUpdates, {
        apiVersion: API_VERSION,
        kind: 'MachineUpdate',
        metadata: { name, namespace: DEMO.namespace, labels: { [Labels.planName]: PLAN } },
        spec: {
          planName: PLAN,
          clusterName: DEMO.clusterName,
          target: { kind: 'MachineDeployment', name: 'cluster1-md-0' },
          machineRef: { name: machine },
          updatePhase: 'updating',
          updaters: [
            { name: 'os-image', sequence: 1, responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] },
          ],
        },
      });
      await env.client.patch(
        MachineUpdates,
        DEMO.namespace,
        name,
        { status: { updateStatus: st, ...(current ? { currentUpdater: current } : {}) } },
        { type: 'merge', subresource: 'status' },
      );
    }
    // The tour sets KUBECONFIG and puts bin/ on the PATH; the kubectl plugin runs from the launcher as installed.
    procEnv = { ...process.env, KUBECONFIG: env.kubeconfigPath, PATH: `${join(ROOT, 'bin')}:${process.env.PATH ?? ''}` };
    delete procEnv['INPLACE_FROM_SOURCE'];
  });
  after(async () => {
    if (createdNs && env?.isRealCluster) await env.client.delete(Namespaces, undefined, DEMO.namespace).catch(() => undefined);
    await env?.stop();
  });

  // kubectl version --client talks to no server, so spawnSync cannot block the in-process API server here.
  const hasKubectl = (): boolean => spawnSync(KUBECTL, ['version', '--client'], { stdio: 'ignore' }).status === 0;

  /** Runs one suggested command; a watch is stopped once it printed its first table. */
  async function runHint(line: string): Promise<void> {
    const words = line.replaceAll(DEMO_KUBECONFIG, env.kubeconfigPath).split(/\s+/);
    let [cmd, ...args] = words as [string, ...string[]];
    if (cmd === 'npx' && args[0] === 'inplace') [cmd, ...args] = [process.execPath, join(ROOT, 'bin', 'inplace.mjs'), ...args.slice(1)];
    else if (cmd === 'kubectl') cmd = KUBECTL;
    const isKubectlWatch = cmd === KUBECTL && (args.includes('-w') || args.includes('--watch'));
    if (!isKubectlWatch) {
      const r = await runProcess(cmd, args, { env: procEnv, cwd: ROOT });
      expect(r.status, `${line}\n${r.stderr}${r.stdout}`).to.equal(0);
      return;
    }
    const p = spawn(cmd, args, { env: procEnv, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => p.on('close', (code) => r(code)));
    let code: number | null | undefined;
    void exited.then((c) => (code = c));
    await waitFor(() => code !== undefined || /^NAME/m.test(out), { timeoutMs: 60_000, message: `${line}: a table or an exit` });
    const exitedOnItsOwn = code !== undefined;
    p.kill('SIGTERM');
    await exited;
    if (exitedOnItsOwn) expect.fail(`${line} exited ${code} instead of watching:\n${err}${out}`);
    expect(err, line).to.equal('');
  }

  it('the README tour', async function () {
    this.timeout(300_000);
    if (!hasKubectl()) this.skip();
    const cmds = readmeTourCommands(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(cmds.length).to.be.greaterThan(5);
    expect(cmds.some((c) => c.startsWith('kubectl inplace '))).to.equal(true);
    for (const c of cmds) {
      const t0 = Date.now();
      await runHint(c);
      if (process.env['HINTS_DEBUG']) process.stderr.write(`${Date.now() - t0} ms ${c}\n`);
    }
  });

  it("npm start's watch hints", async function () {
    this.timeout(300_000);
    if (!hasKubectl()) this.skip();
    for (const c of watchHints(DEMO_KUBECONFIG, PLAN, DEMO.namespace)) await runHint(c);
  });

  it('shows plans with columns that do not contradict each other', async function () {
    if (!hasKubectl()) this.skip();
    const r = await runProcess(KUBECTL, ['get', 'inplaceupdateplans', '-n', DEMO.namespace], { env: procEnv });
    expect(r.status, r.stderr).to.equal(0);
    const [header, row] = r.stdout.split('\n');
    // Other columns may join (e.g. machines skipped at target); these stay, in this order, and PHASE is gone.
    const cols = header!.split(/\s+/);
    expect(cols.filter((c) => ['NAME', 'CLUSTER', 'STATUS', 'PROGRESS', 'REASON', 'AGE'].includes(c))).to.deep.equal([
      'NAME',
      'CLUSTER',
      'STATUS',
      'PROGRESS',
      'REASON',
      'AGE',
    ]);
    expect(cols).not.to.include('PHASE');
    expect(row).to.match(new RegExp(`^${PLAN}\\s+cluster1\\s+updated\\s+9/9\\s.*\\bUpdated\\s.*\\S+$`));
    const mus = await runProcess(KUBECTL, ['get', 'machineupdates', '-n', DEMO.namespace], { env: procEnv });
    const [muHeader, ...muRows] = mus.stdout.trim().split('\n');
    expect(muHeader!.split(/\s+/)).to.deep.equal(['NAME', 'PLAN', 'MACHINE', 'STATUS', 'UPDATING', 'AGE']);
    // A finished MachineUpdate names no updater; a running one names the updater at work.
    expect(muRows.find((l) => l.includes('-m1 ')))
      .to.match(/\supdated\s+\S+$/)
      .and.not.to.contain('os-image');
    expect(muRows.find((l) => l.includes('-m2 '))).to.match(/\supdating\s+os-image\s+\S+$/);
    const wide = await runProcess(KUBECTL, ['get', 'inplaceupdateplans', '-n', DEMO.namespace, '-o', 'wide'], { env: procEnv });
    expect(wide.stdout.split('\n')[0]).to.match(/\bREQUESTED\b/);
    expect(wide.stdout).not.to.match(/\bPHASE\b/);
  });
});
