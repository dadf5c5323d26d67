// End to end: `npm start`'s job run non-interactively (non-TTY) as a user would, through bin/inplace.mjs. It starts
// the local API server, every component as its own process and applies examples/plan.yaml; the final state it
// writes with --state-out is checked here: plan updated, every change committed on every machine, nothing labelled.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import { Annotations, Labels, type InPlaceUpdatePlan, type KubeObject, type PlanTarget } from '../../src/api/index.js';
import { getPointer } from '../../src/runtime/pure/jsonpointer.js';
import type { DemoState } from '../../src/cli/demo.js';
import { waitFor } from '../support/wait.js';
import { projectRoot } from '../../src/cli/procs.js';

const PROJECT_ROOT = projectRoot();
const kubectlAvailable = (): boolean => spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** A running demo: its output so far, and a promise of how it ended. */
interface Demo {
  proc: ChildProcess;
  output(): { out: string; err: string };
  ended: Promise<Run>;
}

function startDemo(args: string[]): Demo {
  const proc = spawn(process.execPath, [join(PROJECT_ROOT, 'bin', 'inplace.mjs'), 'demo', ...args], {
    cwd: PROJECT_ROOT,
    // As `npm start` runs it: through the launcher's bundle (rebuilt first when src/ changed).
    env: { ...process.env, INPLACE_FROM_SOURCE: '0', LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const ended = new Promise<Run>((resolve) => proc.on('exit', (code) => resolve({ code, out, err })));
  return { proc, output: () => ({ out, err }), ended };
}

/** The plan of examples/plan.yaml (what `npm start` applies). */
const examplePlan = (): InPlaceUpdatePlan & KubeObject =>
  parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'plan.yaml'), 'utf8'))
    .map((d) => d.toJSON() as KubeObject)
    .find((d) => d?.kind === 'InPlaceUpdatePlan') as unknown as InPlaceUpdatePlan & KubeObject;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start (inplace demo), end to end', function () {
  this.timeout(300_000);
  const dir = mkdtempSync(join(tmpdir(), 'inplace-demo-e2e-'));
  const stateFile = join(dir, 'state.json');
  let run: Run;
  let state: DemoState;
  let childPids: number[] = [];
  let kubectlOut = '';
  let statusOut = '';

  before(async () => {
    // --keep-running: the kubeconfig it printed is used while it runs (as from a second terminal), then Ctrl-C.
    const demo = startDemo(['--keep-running', '--state-out', stateFile, '--work-dir', join(dir, 'work'), '--timeout', '240']);
    const kept = await waitFor(() => demo.output().out.includes('still running (--keep-running)') || demo.proc.exitCode !== null, {
      timeoutMs: 280_000,
      intervalMs: 200,
      message: 'the demo to finish its plan',
    }).catch((e: Error) => e);
    const { out } = demo.output();
    childPids = [...out.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
    if (kept === true && demo.proc.exitCode === null) {
      const kubeconfig = join(dir, 'work', 'kubeconfig');
      if (kubectlAvailable())
        kubectlOut = execFileSync('kubectl', ['--kubeconfig', kubeconfig, 'get', 'inplaceupdateplans,machineupdates', '-A'], {
          encoding: 'utf8',
        });
      statusOut = execFileSync(
        process.execPath,
        [join(PROJECT_ROOT, 'bin', 'inplace.mjs'), 'status', examplePlan().metadata.name!, '--kubeconfig', kubeconfig],
        {
          encoding: 'utf8',
          env: { ...process.env, INPLACE_FROM_SOURCE: '1' },
        },
      );
    }
    demo.proc.kill('SIGINT');
    run = await demo.ended;
    if (existsSync(stateFile)) state = JSON.parse(readFileSync(stateFile, 'utf8')) as DemoState;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 after Ctrl-C once the plan ended updated', () => {
    expect(run.code, `stdout:\n${run.out}\nstderr:\n${run.err}`).to.equal(0);
  });

  it('started every component as its own process and stopped them all on Ctrl-C', () => {
    expect(childPids).to.have.length(7);
    expect(childPids.filter(alive)).to.deep.equal([]);
  });

  it('serves kubectl through the printed kubeconfig while it runs', function () {
    if (!kubectlAvailable()) this.skip(); // kubectl is not installed here; the inplace status check below still runs
    expect(kubectlOut).to.match(
      new RegExp(`inplaceupdateplan\\.inplace\\.cluster\\.x-k8s\\.io/${examplePlan().metadata.name}\\s+cluster1\\s+updated\\s+9/9\\s`),
    );
    expect(kubectlOut.match(/machineupdate\.inplace\.cluster\.x-k8s\.io\//g)).to.have.length(9);
  });

  it('answers inplace status with the finished tree while it runs', () => {
    expect(statusOut).to.match(new RegExp(`^InPlaceUpdatePlan/${examplePlan().metadata.name}\\s+updated`, 'm'));
    expect(statusOut.match(/Machine\/\S+\s+updated/g)).to.have.length(9);
  });

  it('prints the kubeconfig path and the kubectl watch command', () => {
    expect(run.out).to.contain(`kubeconfig:       ${join(dir, 'work', 'kubeconfig')}`);
    expect(run.out).to.match(/kubectl --kubeconfig \S+ get inplaceupdateplans -A -w/);
    expect(run.out).not.to.match(/get \S+,\S+ .*-w/); // kubectl >= 1.32 watches one kind per command
  });

  it('reports each component as it gets ready, with its loopback probe/metrics port', () => {
    for (const c of [
      'plan-controller',
      'machine-task-controller',
      'mhc-extension',
      'updater-reference',
      'updater-kubernetes-version',
      'updater-os-image',
    ]) {
      expect(run.out).to.match(new RegExp(`✔ ${c} +ready +http://127\\.0\\.0\\.1:\\d+/metrics`));
    }
    expect(run.out).to.match(/✔ capi-sim +running/);
    expect(run.out).to.match(/✔ all 7 components ready after/);
  });

  it('degrades to plain progress lines without terminal control codes when not a TTY', () => {
    expect(run.out).to.not.contain('\x1b[');
    expect(run.out).to.match(/\] +machine \S+: updating \(updater \S+\)/);
    expect(run.out).to.match(/\] +machine \S+: updated/);
  });

  it('ends with a summary of the run', () => {
    expect(run.out).to.match(/Summary: InPlaceUpdatePlan fleet-a\/\S+ ended updated/);
    expect(run.out).to.match(/machines: +9\/9 updated, 0 failed, 0 aborted/);
    expect(run.out).to.match(/per updater \(task start -> completion\):/);
  });

  it('ends with the plan updated', () => {
    expect(state.plan.status?.updateStatus).to.equal('updated');
    expect(state.plan.status?.targets?.every((t) => t.updateStatus === 'updated')).to.equal(true);
  });

  it('updated every machine of the cluster: one updated MachineUpdate each', () => {
    expect(state.machines).to.have.length(9);
    const updated = new Set(state.machineUpdates.filter((m) => m.status?.updateStatus === 'updated').map((m) => m.spec.machineRef.name));
    expect([...updated].sort()).to.deep.equal(state.machines.map((m) => m.metadata.name).sort());
  });

  it('committed the new values to every machine (the new Kubernetes version included)', () => {
    const plan = examplePlan();
    const targetOf = (m: KubeObject): PlanTarget | undefined =>
      m.metadata.labels?.[Labels.controlPlaneName]
        ? plan.spec.controlPlane
        : plan.spec.machineDeployments?.find((t) => t.name === m.metadata.labels?.[Labels.deploymentName]);
    let versionChecks = 0;
    for (const m of state.machines) {
      const t = targetOf(m);
      expect(t, `machine ${m.metadata.name} belongs to no target`).to.not.equal(undefined);
      for (const r of t!.updaters.flatMap((u) => u.responsibilities).filter((x) => x.selectResource === 'Machine')) {
        expect(getPointer(m, r.path), `${m.metadata.name} ${r.path}`).to.deep.equal(r.value);
        if (r.path === '/spec/version') versionChecks++;
      }
    }
    expect(versionChecks, 'the example plan changes the Kubernetes version of every machine').to.equal(9);
    expect(state.committed.wrong).to.deep.equal([]);
    expect(state.committed.ok).to.equal(state.committed.total);
  });

  it('leaves no machine labelled or annotated as in update', () => {
    for (const m of state.machines) {
      expect(m.metadata.labels ?? {}, m.metadata.name).to.not.have.property(Labels.planName);
      expect(m.metadata.annotations ?? {}, m.metadata.name).to.not.have.property(Annotations.updateStartedAt);
    }
    expect(state.stillLabelled).to.deep.equal([]);
  });
});

describe('npm start with an invalid plan (inplace demo --plan examples/invalid-plan.yaml)', function () {
  this.timeout(300_000);
  const dir = mkdtempSync(join(tmpdir(), 'inplace-demo-invalid-'));
  let run: Run;

  before(async () => {
    run = await startDemo([
      '--plan',
      join(PROJECT_ROOT, 'examples', 'invalid-plan.yaml'),
      '--work-dir',
      join(dir, 'work'),
      '--timeout',
      '240',
    ]).ended;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('stops as soon as the plan is marked invalid, with exit 1 and every problem', () => {
    expect(run.code, run.out + run.err).to.equal(1);
    expect(run.err).to.contain('error: the plan is invalid and will not start:');
    expect(run.err).to.contain('MachineDeployment fleet-a/cluster1-md-9 not found');
    expect(run.err).to.contain('inplace preview -f');
  });

  it('touched no machine', () => {
    expect(run.out).to.match(/machines: +0\/\d+ updated/);
    expect(run.out).to.contain('machines still labelled with the plan: none');
  });
});
