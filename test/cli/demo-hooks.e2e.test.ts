// End to end: `npm start -- --hooks` (inplace demo --hooks) run non-interactively through bin/inplace.mjs. It plays an
// operator of Cluster API >= 1.12 with the InPlaceUpdates gate: InPlaceUpdaters, the runtime extension registered by
// an ExtensionConfig, the simulator with --in-place-updates; then a KCP version and MachineDeployment template
// change. Checked here: the exit code, the summary's counts and the final state it writes with --state-out.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Labels, REQUESTED_BY_RUNTIME_EXTENSION } from '../../src/api/index.js';
import type { HooksDemoState } from '../../src/cli/demo-hooks.js';
import { HOOKS_TARGET } from '../../src/cli/demo-hooks.js';
import { projectRoot } from '../../src/cli/procs.js';

const PROJECT_ROOT = projectRoot();

describe('npm start -- --hooks (inplace demo --hooks), end to end', function () {
  this.timeout(400_000);
  const dir = mkdtempSync(join(tmpdir(), 'inplace-demo-hooks-'));
  const stateFile = join(dir, 'state.json');
  let run: { code: number | null; out: string; err: string };
  let state: HooksDemoState | undefined;

  before(async () => {
    const proc = spawn(
      process.execPath,
      [
        join(PROJECT_ROOT, 'bin', 'inplace.mjs'),
        'demo',
        '--hooks',
        '--state-out',
        stateFile,
        '--work-dir',
        join(dir, 'work'),
        '--timeout',
        '300',
      ],
      { cwd: PROJECT_ROOT, env: { ...process.env, INPLACE_FROM_SOURCE: '0', LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    run = await new Promise((resolve) => proc.on('exit', (code) => resolve({ code, out, err })));
    if (existsSync(stateFile)) state = JSON.parse(readFileSync(stateFile, 'utf8')) as HooksDemoState;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0: every machine updated in place, none replaced', () => {
    expect(run.code, `stdout:\n${run.out}\nstderr:\n${run.err}`).to.equal(0);
  });

  it('registers the runtime extension and waits for the simulator to know its handlers before the change', () => {
    expect(run.out).to.match(/✔ capi-sim +ready +http:\/\/127\.0\.0\.1:\d+\/readyz/);
    expect(run.out).to.match(/✔ runtime-extension +ready/);
    expect(run.out).not.to.contain('plan-controller (pid');
    const discovered = run.out.indexOf('✔ ExtensionConfig inplace');
    const known = run.out.indexOf("✔ capi-sim's registry knows the handlers");
    const changed = run.out.indexOf('✔ KubeadmControlPlane cluster1-cp: spec.version');
    expect(discovered).to.be.greaterThan(-1);
    expect(known).to.be.greaterThan(discovered);
    expect(changed).to.be.greaterThan(known);
  });

  it('prints when each machine starts and ends its in-place update', () => {
    for (const m of state?.machines ?? []) {
      expect(run.out).to.contain(`machine ${m.metadata.name}: in-place update started by Cluster API`);
      expect(run.out).to.contain(`machine ${m.metadata.name}: updated in place (version ${HOOKS_TARGET.version}`);
    }
  });

  it('ends with a summary: 9/9 updated in place by both updaters, 0 replaced', () => {
    expect(run.out).to.match(/updated in place: +9\/9 machines, by the updaters kubernetes-version, os-image/);
    expect(run.out).to.match(/replaced: +0 /);
    expect(state?.summary).to.include({ total: 9, updatedInPlace: 9, replaced: 0 });
  });

  it('leaves every machine at the target, without the update-in-progress annotation, with one updated MachineUpdate each', () => {
    expect(state?.machines).to.have.length(9);
    for (const m of state!.machines) {
      expect(m.spec.version, m.metadata.name).to.equal(HOOKS_TARGET.version);
      expect(m.metadata.annotations ?? {}, m.metadata.name).not.to.have.property(
        'in-place-updates.internal.cluster.x-k8s.io/update-in-progress',
      );
      const own = state!.machineUpdates.filter((u) => u.metadata.ownerReferences?.some((r) => r.uid === m.metadata.uid));
      expect(own, m.metadata.name).to.have.length(1);
      expect(own[0]!.metadata.labels?.[Labels.requestedBy]).to.equal(REQUESTED_BY_RUNTIME_EXTENSION);
      expect(own[0]!.status?.updateStatus).to.equal('updated');
      expect(own[0]!.status?.tasks?.map((t) => [t.updater, t.updateStatus])).to.deep.equal([
        ['kubernetes-version', 'updated'],
        ['os-image', 'updated'],
      ]);
    }
  });
});
