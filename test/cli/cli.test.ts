// The `inplace` verbs against the shared test environment (local API server, or a real cluster with
// INPLACE_TEST_KUBECONFIG): output, exit codes, and the state they leave — including every kind of bad input.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { API_VERSION, Finalizers, InPlaceUpdatePlans, type InPlaceUpdatePlan, type KubeObject } from '../../src/api/index.js';
import { applyInventory, buildInventory, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { COMPONENTS } from '../../src/components.js';
import { missingKubeconfig } from '../../src/cli/kube.js';
import { demoControllerArgs } from '../../src/cli/demo-platform.js';
import { cli, runProcess } from '../support/cli.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const tmp = mkdtempSync(join(tmpdir(), 'inplace-cli-test-'));
const writeYaml = (name: string, ...docs: unknown[]): string => {
  const p = join(tmp, name);
  writeFileSync(p, docs.map((d) => stringify(d)).join('---\n'));
  return p;
};

const updater = (name: string, path: string, value: unknown, sequence = 1) => ({
  name,
  sequence,
  responsibilities: [{ selectResource: 'Machine' as const, path, value }],
});

function planDoc(ns: string, name: string, over: Partial<InPlaceUpdatePlan['spec']> = {}): InPlaceUpdatePlan & KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name, namespace: ns },
    spec: {
      clusterName: 'c1',
      controlPlane: { name: 'c1-cp', sequence: 1, updaters: [updater('version', '/spec/version', 'v1.30.1')] },
      machineDeployments: [{ name: 'c1-md-0', sequence: 2, updaters: [updater('version', '/spec/version', 'v1.30.1')] }],
      ...over,
    },
  };
}

describe('inplace CLI', function () {
  this.timeout(120_000);

  describe('without a cluster', () => {
    it('prints the command help and exits 2 when called without a command', async () => {
      const r = await cli();
      expect(r.code).to.equal(2);
      expect(r.err).to.contain('Usage: inplace <command>');
      for (const v of ['demo', 'run', 'updater', 'preview', 'status', 'abort', 'pause', 'resume', 'conformance', 'local-apiserver'])
        expect(r.err).to.contain(`  ${v}`);
      expect(r.err).to.not.contain('capi-sim');
    });

    it('exits 0 with the help for --help', async () => {
      const r = await cli('--help');
      expect(r.code).to.equal(0);
      expect(r.out).to.contain('Exit codes: 0 success, 1 failure');
    });

    it('names every component in the help of the command and in the usage of run', async () => {
      const top = (await cli('--help')).out.split('\n').find((l) => l.startsWith('  run '))!;
      const run = (await cli('run', '--help')).out.split('\n')[0]!;
      for (const c of COMPONENTS) {
        expect(top, c.name).to.contain(c.name);
        expect(run, c.name).to.contain(c.name);
      }
    });

    it('rejects an unknown command with exit 2 and a suggestion', async () => {
      const r = await cli('stauts', 'x');
      expect(r.code).to.equal(2);
      expect(r.err).to.contain('unknown command "stauts"');
      expect(r.err).to.contain('did you mean status');
    });

    for (const verb of [
      'demo',
      'run',
      'updater',
      'preview',
      'status',
      'abort',
      'pause',
      'resume',
      'conformance',
      'local-apiserver',
      'capi-sim',
    ]) {
      it(`shows the usage of ${verb} for --help and exits 0`, async () => {
        const r = await cli(verb, '--help');
        expect(r.code).to.equal(0);
        expect(r.out).to.match(new RegExp(`Usage: inplace ${verb}`));
      });
    }

    it('documents demo --hooks and capi-sim --health-port, and rejects --hooks with --plan or --bind-address alone with exit 2', async () => {
      expect((await cli('demo', '--help')).out).to.match(/--hooks +Cluster API's in-place update hooks/);
      expect((await cli('capi-sim', '--help')).out).to.match(/--health-port N +serve \/healthz and \/readyz/);
      const a = await cli('demo', '--hooks', '--plan', 'examples/plan.yaml');
      expect(a.code).to.equal(2);
      expect(a.err).to.contain('--hooks applies no plan');
      const b = await cli('capi-sim', '--bind-address', '127.0.0.1', '--kubeconfig', '/nonexistent');
      expect(b.code).to.equal(2);
      expect(b.err).to.contain('--bind-address needs --health-port');
    });

    it('demo --write-policy: documented, checked before anything starts, passed to the components that enforce it', async () => {
      expect((await cli('demo', '--help')).out).to.match(
        /--write-policy FILE the write policy of the plan-controller and machine-task-controller/,
      );
      const missing = await cli('demo', '--write-policy', join(tmp, 'no-policy.yaml'));
      expect(missing.code).to.equal(1);
      expect(missing.err).to.contain('cannot read the write policy');
      expect(missing.out).not.to.contain('local API server');
      expect((await cli('demo', '--hooks', '--write-policy', 'examples/write-policy.yaml')).code).to.equal(2);
      expect(demoControllerArgs('plan-controller', '/p.yaml')).to.deep.equal(['--write-policy', '/p.yaml']);
      expect(demoControllerArgs('machine-task-controller', '/p.yaml')).to.deep.equal(['--write-policy', '/p.yaml']);
      expect(demoControllerArgs('mhc-extension', '/p.yaml')).to.deep.equal([]);
      expect(demoControllerArgs('plan-controller', undefined)).to.deep.equal([]);
    });

    it('rejects an unknown flag with exit 2 and the usage of the verb', async () => {
      const r = await cli('status', 'p', '--bogus');
      expect(r.code).to.equal(2);
      expect(r.err).to.contain("Unknown option '--bogus'");
      expect(r.err).to.contain('Usage: inplace status');
    });

    it('rejects a missing argument with exit 2', async () => {
      const r = await cli('abort');
      expect(r.code).to.equal(2);
      expect(r.err).to.contain('missing <plan>');
    });

    it('rejects an unknown component or updater with exit 2', async () => {
      const a = await cli('run', 'plan-controler', '--kubeconfig', '/nonexistent');
      expect(a.code).to.equal(2);
      expect(a.err).to.contain('unknown component "plan-controler"');
      const b = await cli('updater', 'nope');
      expect(b.code).to.equal(2);
      expect(b.err).to.contain('unknown updater "nope"');
    });

    it('rejects an updater --concurrency that is not a positive integer with exit 2, and documents it', async () => {
      const r = await cli('updater', 'reference', '--concurrency', '0');
      expect(r.code).to.equal(2);
      expect(r.err).to.contain('--concurrency must be a positive integer (keys reconciled in parallel), got "0"');
      expect((await cli('updater', '--help')).out).to.match(/--concurrency N +tasks reconciled in parallel \(default 4/);
    });

    it('fails with exit 2 and says what to do when the kubeconfig does not exist', async () => {
      const r = await cli('status', 'p', '--kubeconfig', join(tmp, 'missing-kubeconfig'));
      expect(r.code).to.equal(2);
      expect(r.err).to.contain('does not exist');
      expect(r.err).to.contain('inplace local-apiserver');
    });

    it('without any kubeconfig (no flag, no $KUBECONFIG, no ~/.kube/config, not a pod) says so and exits 2, never localhost:8080', () => {
      const home = mkdtempSync(join(tmpdir(), 'inplace-no-home-'));
      expect(missingKubeconfig(undefined, { HOME: home }, home)).to.match(/^no kubeconfig: .*\.kube\/config does not exist/);
      expect(missingKubeconfig(undefined, { HOME: home, KUBECONFIG: '/some/file' }, home)).to.equal(undefined);
      expect(missingKubeconfig('/some/file', { HOME: home }, home)).to.equal(undefined);
      if (existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) return; // in a pod the chain finds one
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, INPLACE_FROM_SOURCE: '1' };
      delete env.KUBECONFIG;
      const bin = join(projectRoot(), 'bin', 'inplace.mjs');
      const r = spawnSync(process.execPath, [bin, 'status', 'p'], { env, encoding: 'utf8' });
      expect(r.status, r.stderr).to.equal(2);
      expect(r.stderr).to.contain('no kubeconfig');
      expect(r.stderr).not.to.match(/localhost:8080|check that the cluster/);
      // Preview still lists what it finds without the cluster, and the plan is not OK: exit 1.
      const p = spawnSync(process.execPath, [bin, 'preview', '-f', join(projectRoot(), 'examples', 'invalid-plan.yaml')], {
        env,
        encoding: 'utf8',
      });
      expect(p.status, p.stderr).to.equal(1);
      expect(p.stderr).to.contain('Machine /status/phase is not writable');
      expect(p.stderr).to.contain('the cluster was not read: no kubeconfig');
    });

    it('with an unreachable API server, preview lists the problems it finds without the cluster, then why the cluster was not read', async () => {
      const kubeconfig = join(tmp, 'unreachable.kubeconfig');
      writeFileSync(
        kubeconfig,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
          clusters: [{ name: 'c', cluster: { server: 'http://127.0.0.1:9', 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'u', user: { token: 't' } }],
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'x',
        }),
      );
      const r = await cli('preview', '-f', join(projectRoot(), 'examples', 'invalid-plan.yaml'), '--kubeconfig', kubeconfig);
      expect(r.code, r.err).to.equal(1);
      expect(r.err).to.contain('found without the cluster');
      expect(r.err).to.contain('Machine /status/phase is not writable');
      expect(r.err).to.contain('overlaps /spec/ntp/servers');
      expect(r.err).to.match(/the cluster was not read: cannot reach the API server at http:\/\/127\.0\.0\.1:9/);
      // A plan without such problems: the connection error, and that nothing was found offline.
      const ok = await cli('preview', '-f', join(projectRoot(), 'examples', 'plan.yaml'), '--kubeconfig', kubeconfig);
      expect(ok.code).to.equal(1);
      expect(ok.err).to.contain('cannot reach the API server');
      expect(ok.err).to.contain('without the cluster no problem was found');
    });

    it('fails with exit 1 when preview is given a missing file', async () => {
      const r = await cli('preview', '-f', join(tmp, 'no-such-plan.yaml'), '--kubeconfig', join(tmp, 'missing'));
      expect(r.code).to.equal(1);
      expect(r.err).to.match(/file ".*no-such-plan\.yaml" does not exist/);
    });

    it('fails with exit 1 when preview is given a file that is not a valid plan', async () => {
      const bad = writeYaml('bad-plan.yaml', {
        apiVersion: API_VERSION,
        kind: 'InPlaceUpdatePlan',
        metadata: { name: 'bad' },
        spec: { controlPlane: { name: 'cp', sequence: 0, updaters: [] } },
      });
      const r = await cli('preview', '-f', bad);
      expect(r.code).to.equal(1);
      expect(r.err).to.contain('is not a valid InPlaceUpdatePlan');
      expect(r.err).to.contain('spec.clusterName');
      expect(r.err).to.contain('spec.controlPlane.sequence');
    });

    it('fails with exit 1 when the YAML does not parse', async () => {
      const p = join(tmp, 'broken.yaml');
      writeFileSync(p, 'kind: InPlaceUpdatePlan\nspec: [unclosed\n');
      const r = await cli('preview', '-f', p);
      expect(r.code).to.equal(1);
      expect(r.err).to.contain('is not valid YAML');
    });

    it('rejects a --version that is not a Kubernetes version (vX.Y.Z) with exit 2, before reading the cluster', async () => {
      for (const v of ['banana', '1.30.1', 'v1.30', 'v1.30.1.2']) {
        const r = await cli('preview', 'kcp/cluster1-cp', '--version', v, '--kubeconfig', join(tmp, 'missing'));
        expect(r.code, `${v}: ${r.err}`).to.equal(2);
        expect(r.err).to.contain(`--version "${v}" is not a Kubernetes version`);
      }
    });

    it('rejects preview without -f with exit 2', async () => {
      const r = await cli('preview');
      expect(r.code).to.equal(2);
      expect(r.err).to.contain('missing -f plan.yaml');
    });
  });

  describe('as a process', () => {
    const bin = join(projectRoot(), 'bin', 'inplace.mjs');
    const env = { ...process.env, INPLACE_FROM_SOURCE: '1' };

    it("exits with the verb's code through bin/inplace.mjs", () => {
      const unknown = spawnSync(process.execPath, [bin, 'frobnicate'], { env, encoding: 'utf8' });
      expect(unknown.status).to.equal(2);
      expect(unknown.stderr).to.contain('unknown command "frobnicate"');
      const missing = spawnSync(process.execPath, [bin, 'status', 'p', '--kubeconfig', join(tmp, 'nope')], { env, encoding: 'utf8' });
      expect(missing.status).to.equal(2);
      expect(missing.stderr).to.contain('does not exist');
    });

    it('an empty or invalid kubeconfig (KUBECONFIG=/dev/null) is a clear error with exit 2, never a TypeError', () => {
      const empty = join(tmp, 'empty.kubeconfig');
      writeFileSync(empty, '');
      const list = join(tmp, 'list.kubeconfig');
      writeFileSync(list, '- a\n- b\n');
      const broken = join(tmp, 'broken.kubeconfig');
      writeFileSync(broken, 'clusters: [\n');
      const cases: [Record<string, string>, string[], RegExp][] = [
        [{ KUBECONFIG: '/dev/null' }, ['status', 'p'], /kubeconfig "\/dev\/null" is empty/],
        [{ KUBECONFIG: empty }, ['status'], /is empty/],
        [{}, ['abort', 'p', '--kubeconfig', list], /is not a kubeconfig \(a YAML mapping/],
        [{}, ['status', 'p', '--kubeconfig', broken], /is not valid YAML/],
      ];
      for (const [extra, argv, want] of cases) {
        const r = spawnSync(process.execPath, [bin, ...argv], { env: { ...env, ...extra }, encoding: 'utf8' });
        expect(r.status, r.stderr).to.equal(2);
        expect(r.stderr).to.match(want);
        expect(r.stderr).to.not.match(/Cannot read properties|TypeError/);
      }
    });

    it('starts the local API server alone, prints the kubeconfig path and stops on SIGTERM', async () => {
      const out = join(tmp, 'local.kubeconfig');
      const p = spawn(process.execPath, [bin, 'local-apiserver', '--kubeconfig-out', out], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
      try {
        await waitFor(() => stdout.includes('\n'), { timeoutMs: 60_000, message: 'the kubeconfig path on stdout' });
        expect(stdout.trim()).to.equal(out);
        // The server is empty: no CRDs yet, and the CLI says so.
        const r = await cli('status', 'p', '--kubeconfig', out);
        expect(r.code).to.equal(1);
        expect(r.err).to.contain('install the CRDs first');
      } finally {
        p.kill('SIGTERM');
      }
      expect(await exited).to.equal(0);
    });
  });

  describe('against a cluster', () => {
    let env: TestEnv;
    let ns: string;
    let kc: string[];

    before(async () => {
      env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
      ns = await env.newNamespace('cli');
      kc = ['--kubeconfig', env.kubeconfigPath];
      await applyInventory(
        env.client,
        buildInventory({
          namespace: ns,
          clusterName: 'c1',
          version: 'v1.29.5',
          controlPlane: { name: 'c1-cp', replicas: 3 },
          machineDeployments: [{ name: 'c1-md-0', replicas: 2, maxUnavailable: 1 }],
        }),
      );
    });
    after(async function () {
      this.timeout(120_000);
      if (env && ns) {
        // A plan controller process below put the plan finalizer on this namespace's plans and has stopped since: no
        // one would remove it, and the namespace would stay Terminating (issue 24). Remove it, then delete the plans
        // and wait until they are gone, so a finalizer still held fails here instead of leaking a namespace.
        for (const p of (await env.client.list<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns)).items) {
          const fins = p.metadata.finalizers ?? [];
          if (fins.includes(Finalizers.plan)) {
            const finalizers = fins.filter((f) => f !== Finalizers.plan);
            const meta = { resourceVersion: p.metadata.resourceVersion, finalizers };
            await env.client.patch(InPlaceUpdatePlans, ns, p.metadata.name!, { metadata: meta }, { type: 'merge' });
          }
          await env.client.delete(InPlaceUpdatePlans, ns, p.metadata.name!);
        }
        await waitFor(async () => (await env.client.list(InPlaceUpdatePlans, ns)).items.length === 0, {
          timeoutMs: 60_000,
          message: `the plans of ${ns} to be gone`,
        });
      }
      await env?.stop();
    });

    it('reports an unknown plan with exit 1 and where plans are', async () => {
      const r = await cli('status', 'no-such-plan', '-n', ns, ...kc);
      expect(r.code).to.equal(1);
      expect(r.err).to.contain(`InPlaceUpdatePlan "no-such-plan" not found in namespace "${ns}"`);
      const all = await cli('abort', 'no-such-plan', ...kc);
      expect(all.code).to.equal(1);
      expect(all.err).to.contain('not found in any namespace');
    });

    it('prints a plan as a tree, found without -n', async () => {
      await env.client.create(InPlaceUpdatePlans, planDoc(ns, 'tree-plan'));
      const r = await cli('status', 'tree-plan', ...kc);
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.contain(`Namespace: ${ns}`);
      expect(r.out).to.match(/^InPlaceUpdatePlan\/tree-plan\s/m);
      expect(r.out).to.match(/^├─ControlPlane\/c1-cp\s+\S+\s+sequence 1/m);
      expect(r.out).to.match(/^└─MachineDeployment\/c1-md-0\s+\S+\s+sequence 2/m);
    });

    it('status without a plan name lists the plans of the namespace, or of every namespace with -A', async () => {
      await env.client.create(InPlaceUpdatePlans, planDoc(ns, 'list-plan'));
      const r = await cli('status', '-n', ns, ...kc);
      expect(r.code, r.err).to.equal(0);
      expect(r.out).to.match(/^NAME\s+CLUSTER\s+STATUS\s+PROGRESS\s+REASON\s+AGE\s+MESSAGE$/m);
      expect(r.out).to.match(/^list-plan\s+c1\s+/m);
      const all = await cli('status', '-A', ...kc);
      expect(all.code, all.err).to.equal(0);
      expect(all.out).to.match(new RegExp(`^${ns}\\s+list-plan\\s+c1\\s+`, 'm'));
      const none = await cli('status', '-n', 'no-plans-here', ...kc);
      expect(none.out).to.contain('No InPlaceUpdatePlans found in namespace no-plans-here');
      // ...and where plans are instead (after npm start, the kubeconfig's namespace is `default`, the plans are elsewhere).
      expect(none.out).to.match(/\d+ plans? in namespaces? .*: inplace status -A lists them all, inplace status -n \S+ that namespace's\./);
      expect((await cli('status', '-w', ...kc)).code).to.equal(2);
      expect((await cli('status', '-A', '-n', ns, ...kc)).code).to.equal(2);
    });

    it('status -w ends with exit 1 and the problems when the plan ended invalid (Failed=True reason Invalid)', async () => {
      await env.client.create(InPlaceUpdatePlans, planDoc(ns, 'watch-invalid'));
      const gen = (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, 'watch-invalid'))!.metadata.generation;
      const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      await env.client.patch(
        InPlaceUpdatePlans,
        ns,
        'watch-invalid',
        {
          status: {
            updateStatus: 'pending',
            conditions: [
              {
                type: 'Valid',
                status: 'False',
                reason: 'Invalid',
                message: 'MachineDeployment x not found; /spec/providerID is not writable',
                lastTransitionTime: t,
                observedGeneration: gen,
              },
              {
                type: 'Failed',
                status: 'True',
                reason: 'Invalid',
                message: 'the plan ended invalid',
                lastTransitionTime: t,
                observedGeneration: gen,
              },
            ],
          },
        },
        { type: 'merge', subresource: 'status' },
      );
      const r = await cli('status', 'watch-invalid', '-n', ns, '-w', ...kc);
      expect(r.code, r.err).to.equal(1);
      expect(r.err).to.contain('ended invalid');
      expect(r.out).to.contain('  - MachineDeployment x not found\n  - /spec/providerID is not writable\n');
    });

    it('status -w returns once the plan is terminal: 0 when updated, 1 when failed', async () => {
      for (const [name, st, code] of [
        ['watch-ok', 'updated', 0],
        ['watch-failed', 'failed', 1],
      ] as const) {
        await env.client.create(InPlaceUpdatePlans, planDoc(ns, name));
        await env.client.patch(InPlaceUpdatePlans, ns, name, { status: { updateStatus: st } }, { type: 'merge', subresource: 'status' });
        const r = await cli('status', name, '-n', ns, '-w', ...kc);
        expect(r.code, r.err).to.equal(code);
        expect(r.out).to.match(new RegExp(`^InPlaceUpdatePlan/${name}\\s+${st}`, 'm'));
      }
    });

    it('pauses, resumes and aborts a plan through its spec', async () => {
      await env.client.create(InPlaceUpdatePlans, planDoc(ns, 'ctl-plan'));
      const spec = async (): Promise<InPlaceUpdatePlan['spec']> =>
        (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, 'ctl-plan'))!.spec;

      const p = await cli('pause', 'ctl-plan', '-n', ns, ...kc);
      expect(p.code, p.err).to.equal(0);
      expect(p.out).to.contain('paused');
      expect((await spec()).paused).to.equal(true);

      const again = await cli('pause', 'ctl-plan', '-n', ns, ...kc);
      expect(again.code).to.equal(0);
      expect(again.out).to.contain('already paused');

      const r = await cli('resume', 'ctl-plan', '-n', ns, ...kc);
      expect(r.code, r.err).to.equal(0);
      expect((await spec()).paused).to.equal(false);

      const a = await cli('abort', 'ctl-plan', '-n', ns, ...kc);
      expect(a.code, a.err).to.equal(0);
      expect(a.out).to.contain('abort requested');
      expect((await spec()).updatePhase).to.equal('aborting');

      const a2 = await cli('abort', 'ctl-plan', '-n', ns, ...kc);
      expect(a2.code).to.equal(0);
      expect(a2.out).to.contain('already aborting');
    });

    it('is a kubectl plugin: listed by `kubectl plugin list` with bin/ on the PATH, `kubectl inplace status` works from any directory', async function () {
      if (spawnSync(KUBECTL, ['version', '--client'], { stdio: 'ignore' }).status !== 0) {
        process.stderr.write(`      (skipped: ${KUBECTL} is not installed, the kubectl plugin is not tested)\n`);
        this.skip();
      }
      await env.client.create(InPlaceUpdatePlans, planDoc(ns, 'plugin-plan'));
      // Not INPLACE_FROM_SOURCE: this runs the launcher as installed (bundle built on demand).
      const pluginEnv: NodeJS.ProcessEnv = {
        ...process.env,
        PATH: `${join(projectRoot(), 'bin')}:${process.env.PATH ?? ''}`,
        KUBECONFIG: env.kubeconfigPath,
      };
      delete pluginEnv.INPLACE_FROM_SOURCE;
      const cwd = mkdtempSync(join(tmpdir(), 'inplace-plugin-cwd-'));
      // Asynchronously: the local API server answers from this process.
      const list = await runProcess(KUBECTL, ['plugin', 'list'], { env: pluginEnv, cwd });
      expect(list.stdout, list.stderr).to.contain(join(projectRoot(), 'bin', 'kubectl-inplace'));
      expect(list.stderr).not.to.contain('kubectl-inplace is not executable');
      const r = await runProcess(KUBECTL, ['inplace', 'status', 'plugin-plan', '--kubeconfig', env.kubeconfigPath], {
        env: pluginEnv,
        cwd,
      });
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stdout).to.contain(`Namespace: ${ns}`);
      expect(r.stdout).to.match(/^InPlaceUpdatePlan\/plugin-plan\s/m);
    });

    it('refuses to resume, pause or abort a finished plan: exit 1 (abort of an aborted one: 0), a message that says why, the spec untouched', async () => {
      for (const st of ['aborted', 'updated'] as const) {
        const name = `done-${st}`;
        await env.client.create(
          InPlaceUpdatePlans,
          planDoc(ns, name, { paused: true, ...(st === 'aborted' ? { updatePhase: 'aborting' as const } : {}) }),
        );
        await env.client.patch(InPlaceUpdatePlans, ns, name, { status: { updateStatus: st } }, { type: 'merge', subresource: 'status' });
        const before = (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, name))!;
        const r = await cli('resume', name, '-n', ns, ...kc);
        expect(r.code).to.equal(1);
        expect(r.out).not.to.contain('resumed');
        expect(r.err).to.contain(`cannot resume: the plan is ${st}`);
        const p = await cli('pause', name, '-n', ns, ...kc);
        expect(p.code).to.equal(1);
        expect(p.err).to.contain(`cannot pause: the plan is ${st}`);
        // Abort: an aborted plan is already what it asks (exit 0); an updated one cannot be aborted any more (exit 1).
        const a = await cli('abort', name, '-n', ns, ...kc);
        expect(a.code, a.err).to.equal(st === 'aborted' ? 0 : 1);
        if (st === 'updated') expect(a.err).to.contain('cannot abort: the plan is updated');
        const after = (await env.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, name))!;
        expect(after.metadata.resourceVersion).to.equal(before.metadata.resourceVersion);
        expect(after.spec.paused).to.equal(true);
      }
    });

    it('previews a valid plan without writing anything', async () => {
      const file = writeYaml('good-plan.yaml', planDoc(ns, 'preview-plan'));
      const before = await env.client.list(InPlaceUpdatePlans, ns);
      const r = await cli('preview', '-f', file, ...kc);
      expect(r.code, r.out + r.err).to.equal(0);
      expect(r.out).to.contain('Validation: OK');
      expect(r.out).to.match(/Sequence 1:\n {2}ControlPlane c1-cp: 3 machines, at most 1 at once/);
      expect(r.out).to.match(/Sequence 2:\n {2}MachineDeployment c1-md-0: 2 machines, at most 1 at once/);
      expect(r.out).to.contain('c1-cp: Machine /spec/version = v1.30.1  <- version');
      expect(r.out).to.contain('Uncovered changes: none');
      expect(r.out).to.contain('nothing was changed');
      const after = await env.client.list(InPlaceUpdatePlans, ns);
      expect(after.items.map((x) => x.metadata.name)).to.deep.equal(before.items.map((x) => x.metadata.name));
    });

    it('previews an invalid plan with every problem and exit 1', async () => {
      const file = writeYaml(
        'invalid-plan.yaml',
        planDoc(ns, 'invalid-plan', {
          machineDeployments: [{ name: 'no-such-md', sequence: 1, updaters: [updater('version', '/spec/version', 'v1.30.1')] }],
        }),
      );
      const r = await cli('preview', '-f', file, ...kc);
      expect(r.code).to.equal(1);
      expect(r.out).to.contain('Validation: INVALID');
      expect(r.out).to.contain('no-such-md');
      expect(r.out).to.contain('Result: NOT OK');
    });

    it('runs the conformance kit against a running updater and reports each rule', async () => {
      // The sample updater logs through the environment's level; keep the test output quiet.
      const level = process.env.LOG_LEVEL;
      process.env.LOG_LEVEL = 'warn';
      const running = await sampleUpdaters.reference.start({ client: env.client, namespace: ns, names: ['conformance'] });
      if (level === undefined) delete process.env.LOG_LEVEL;
      else process.env.LOG_LEVEL = level;
      try {
        const r = await cli('conformance', '--kind', 'UpdaterUpdateTask', '-n', ns, '-o', 'json', ...kc);
        expect(r.code, r.out + r.err).to.equal(0);
        const report = JSON.parse(r.out) as { passed: boolean; rules: { id: string; result: string }[] };
        expect(report.passed).to.equal(true);
        expect(report.rules.map((x) => x.id)).to.deep.equal(['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8', 'C9', 'C10']);
        expect(report.rules.find((x) => x.id === 'C4')?.result).to.equal('pass');
      } finally {
        await running.stop();
      }
    });

    it('runs a controller and an updater as processes that serve /readyz and stop cleanly on SIGTERM', async () => {
      const bin = join(projectRoot(), 'bin', 'inplace.mjs');
      const port = async (): Promise<number> => {
        const { createServer } = await import('node:net');
        return new Promise((r) => {
          const srv = createServer().listen(0, '127.0.0.1', () => {
            const p = (srv.address() as { port: number }).port;
            srv.close(() => r(p));
          });
        });
      };
      const procs = await Promise.all(
        [
          ['run', 'plan-controller', '--leader-elect', '--lease-namespace', ns],
          ['updater', 'reference', '--catch-all'],
        ].map(async (args) => {
          const health = await port();
          const p = spawn(process.execPath, [bin, ...args, ...kc, '-n', ns, '--health-port', String(health)], {
            env: { ...process.env, INPLACE_FROM_SOURCE: '1', LOG_LEVEL: 'warn' },
            stdio: 'ignore',
          });
          return { args, health, p, exited: new Promise<number | null>((r) => p.on('exit', (code) => r(code))) };
        }),
      );
      try {
        for (const x of procs) {
          await waitFor(async () => (await fetch(`http://127.0.0.1:${x.health}/readyz`).catch(() => undefined))?.status === 200, {
            timeoutMs: 60_000,
            intervalMs: 200,
            message: `${x.args.join(' ')} to be ready`,
          });
          expect((await fetch(`http://127.0.0.1:${x.health}/healthz`)).status).to.equal(200);
        }
      } finally {
        for (const x of procs) x.p.kill('SIGTERM');
      }
      for (const x of procs) expect(await x.exited, x.args.join(' ')).to.equal(0);
    });

    it('rejects conformance for a kind no CRD defines with exit 1', async () => {
      const r = await cli('conformance', '--kind', 'NoSuchTask', '-n', ns, ...kc);
      expect(r.code).to.equal(1);
      expect(r.err).to.contain('no CRD defines kind NoSuchTask');
    });

    it('flags a change no updater covers and exits 1 (Valid=False), unless the plan accepts uncovered changes', async () => {
      // The owners want v1.30.1; the plan's only updater changes something else.
      const { MachineDeployments, KubeadmControlPlanes } = await import('../../src/api/index.js');
      await env.client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { version: 'v1.30.1' } }, { type: 'merge' });
      await env.client.patch(
        MachineDeployments,
        ns,
        'c1-md-0',
        { spec: { template: { spec: { version: 'v1.30.1' } } } },
        { type: 'merge' },
      );
      try {
        const spec = {
          // readinessGates: a Machine field both owners' machine templates carry (no owner problem), not the version.
          controlPlane: { name: 'c1-cp', sequence: 1, updaters: [updater('ready', '/spec/readinessGates', [{ conditionType: 'Ready' }])] },
          machineDeployments: [
            { name: 'c1-md-0', sequence: 2, updaters: [updater('ready', '/spec/readinessGates', [{ conditionType: 'Ready' }])] },
          ],
        };
        const r = await cli('preview', '-f', writeYaml('uncovered-plan.yaml', planDoc(ns, 'uncovered-plan', spec)), '-o', 'json', ...kc);
        expect(r.code, r.out + r.err).to.equal(1);
        const res = JSON.parse(r.out) as { valid: boolean; problems: string[]; uncovered: { path: string; desired: unknown }[] };
        expect(res.valid).to.equal(false);
        expect(res.problems.join('\n'))
          .to.match(/c1-cp: Machine \/spec\/version is uncovered on 3 machine\(s\)/)
          .and.match(/c1-md-0: Machine \/spec\/version is uncovered on 2 machine\(s\)/);
        expect(res.uncovered.length).to.equal(5);
        expect(res.uncovered.every((u) => u.path === '/spec/version' && u.desired === 'v1.30.1')).to.equal(true);
        const accepted = await cli(
          'preview',
          '-f',
          writeYaml('accepted-plan.yaml', planDoc(ns, 'accepted-plan', { ...spec, acceptUncoveredChanges: true })),
          '-o',
          'json',
          ...kc,
        );
        expect(accepted.code, accepted.out + accepted.err).to.equal(0);
        expect(JSON.parse(accepted.out) as { valid: boolean; uncovered: unknown[] })
          .to.deep.include({ valid: true })
          .and.have.property('uncovered')
          .with.length(5);
      } finally {
        await env.client.patch(KubeadmControlPlanes, ns, 'c1-cp', { spec: { version: 'v1.29.5' } }, { type: 'merge' });
        await env.client.patch(
          MachineDeployments,
          ns,
          'c1-md-0',
          { spec: { template: { spec: { version: 'v1.29.5' } } } },
          { type: 'merge' },
        );
      }
    });
  });
});
