// End to end: `npm start`'s job run non-interactively (non-TTY) as a user would, through bin/inplace.mjs. It starts
// the local API server, every component as its own process and applies examples/plan.yaml; the final state it
// writes with --state-out is checked here: plan updated, every change committed on every machine, nothing labelled.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import { Annotations, Labels, type InPlaceUpdatePlan, type KubeObject, type PlanTarget } from '../../src/api/index.js';
import { getPointer } from '../../src/runtime/jsonpointer.js';
import type { DemoState } from '../../src/cli/demo.js';
import { projectRoot } from '../../src/cli/procs.js';

const PROJECT_ROOT = projectRoot();

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function runDemo(args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(PROJECT_ROOT, 'bin', 'inplace.mjs'), 'demo', ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, INPLACE_FROM_SOURCE: '1', LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGINT');
      reject(new Error(`demo did not finish within ${timeoutMs / 1000}s; output so far:\n${out}\n${err}`));
    }, timeoutMs);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe('npm start (inplace demo), end to end', function () {
  this.timeout(300_000);
  const dir = mkdtempSync(join(tmpdir(), 'inplace-demo-e2e-'));
  const stateFile = join(dir, 'state.json');
  let run: Run;
  let state: DemoState;

  before(async () => {
    run = await runDemo(['--state-out', stateFile, '--work-dir', join(dir, 'work'), '--timeout', '240'], 280_000);
    if (existsSync(stateFile)) state = JSON.parse(readFileSync(stateFile, 'utf8')) as DemoState;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0', () => {
    expect(run.code, `stdout:\n${run.out}\nstderr:\n${run.err}`).to.equal(0);
  });

  it('prints the kubeconfig path and the kubectl watch command', () => {
    expect(run.out).to.contain(`kubeconfig:       ${join(dir, 'work', 'kubeconfig')}`);
    expect(run.out).to.match(/kubectl --kubeconfig \S+ get inplaceupdateplans,machineupdates -A -w/);
  });

  it('degrades to plain progress lines without terminal control codes when not a TTY', () => {
    expect(run.out).to.not.contain('\x1b[');
    expect(run.out).to.match(/\] {2}machine \S+: updating \(updater \S+\)/);
    expect(run.out).to.match(/\] {2}machine \S+: updated/);
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
    const plan = parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'plan.yaml'), 'utf8'))
      .map((d) => d.toJSON() as KubeObject)
      .find((d) => d?.kind === 'InPlaceUpdatePlan') as unknown as InPlaceUpdatePlan;
    const targetOf = (m: KubeObject): PlanTarget | undefined =>
      m.metadata.labels?.[Labels.controlPlaneName] ? plan.spec.controlPlane : plan.spec.machineDeployments?.find((t) => t.name === m.metadata.labels?.[Labels.deploymentName]);
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
