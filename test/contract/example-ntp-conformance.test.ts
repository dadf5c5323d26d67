// examples/updaters/ntp-updater.ts, a correct updater written from docs/contract.md, run as its own process against
// the embedded API server and checked by the conformance kit with the commands examples/updaters/README.md shows:
// the kit judges by the contract alone (issue 42, item 4), so an updater that validates its input and knows no
// sample's parameters passes once the kit is told what it is responsible for.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { UpdaterUpdateTasks } from '../../src/api/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { formatReport, runConformance } from '../../src/contract/conformance/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { cli } from '../support/cli.js';
import { documentedCommands, withoutOption } from '../support/documented-commands.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

const EXAMPLES = join(projectRoot(), 'examples', 'updaters');
const NTP = { servers: ['time.example.com'] };

describe('examples/updaters/ntp-updater.ts passes the conformance kit (process, embedded API server)', function () {
  this.timeout(240_000);
  let env: TestEnv;
  let proc: ChildProcess | undefined;
  let stderr = '';

  const start = async (): Promise<void> => {
    const before = stderr.length;
    proc = spawn(process.execPath, ['--import', 'tsx', join(EXAMPLES, 'ntp-updater.ts')], {
      env: { ...process.env, KUBECONFIG: env.kubeconfigPath, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    // Its tasks must not be created before it watches, or the kit's first wait would also time the process start.
    await waitFor(async () => stderr.slice(before).includes('example-ntp-updater running'), {
      timeoutMs: 120_000,
      intervalMs: 100,
      message: `the example ntp updater to start (its stderr: ${stderr})`,
    });
  };
  const stop = async (): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    await exited;
  };

  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
  });
  afterEach(stop);
  after(async () => {
    await env?.stop();
  });

  it('passes through the programmatic API: every scenario, the failure one by a task it must fail, a restart mid-update', async () => {
    const ns = await env.newNamespace('cf-ntp');
    await start();
    const r = await runConformance({
      client: env.client,
      namespace: ns,
      kind: UpdaterUpdateTasks,
      updaterName: 'ntp-config',
      fieldManager: 'example-ntp-updater',
      responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: NTP }],
      // Bad input by the contract's rule: a task it cannot do ends failed, saying why (C4, C6).
      failingTaskSpec: { responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { servers: [] } }] },
      settleMs: 1_000,
      timeoutMs: 60_000,
      restart: async () => {
        await stop();
        await start();
      },
    });
    expect(r.passed, `\n${formatReport(r)}\n${stderr}`).to.equal(true);
    expect(r.rules.filter((x) => x.result === 'fail')).to.deep.equal([]);
    expect(
      r.scenarios.map((s) => [s.name, s.result]),
      formatReport(r),
    ).to.deep.equal([
      ['normal update', 'run'],
      ['failure', 'run'],
      ['abort', 'run'],
      ['restart', 'run'],
    ]);
    expect(r.rules.find((x) => x.id === 'C6')?.evidence.join('\n')).to.match(/failure: Ready message says why: ".*nothing to configure"/);
    // Nothing of the reference updater's conventions was sent.
    expect(JSON.stringify(r)).to.not.match(/failWith|durationSeconds/);
  });

  it('passes with the commands of examples/updaters/README.md and docs/contract.md (exit 0), and the failure scenario is "not exercised" without a failing spec', async () => {
    const ns = await env.newNamespace('cf-ntp-cli');
    await start();
    const commands = ['examples/updaters/README.md', 'docs/contract.md'].flatMap((doc) => {
      const found = documentedCommands(join(projectRoot(), doc), 'conformance', '--updater-name ntp-config');
      expect(found, `${doc} shows the ntp conformance command`).to.have.length(1);
      return found;
    });
    const kc = ['--kubeconfig', env.kubeconfigPath, '-n', ns];
    for (const argv of commands) {
      const res = await cli(...withoutOption(argv, '--kubeconfig'), ...kc, '--timeout', '60', '-o', 'json');
      expect(res.code, `${argv.join(' ')}\n${res.out}\n${res.err}\n${stderr}`).to.equal(0);
      const report = JSON.parse(res.out) as { passed: boolean; scenarios: { name: string; result: string }[] };
      expect(report.passed).to.equal(true);
      expect(report.scenarios.find((s) => s.name === 'failure')?.result).to.equal('run');
    }
    // Without a failing task spec the failure scenario is not failed: the contract gives no way to force a failure.
    const plain = await cli(
      'conformance',
      '--kind',
      'UpdaterUpdateTask',
      '--updater-name',
      'ntp-config',
      '--responsibility',
      `BootstrapConfig /spec/ntp=${JSON.stringify(NTP)}`,
      ...kc,
      '--timeout',
      '60',
    );
    expect(plain.code, plain.out + plain.err).to.equal(0);
    expect(plain.out).to.match(/failure +cannot be exercised for this updater \(.*--failing-task-spec/);
    expect(plain.out).to.contain('PASSED');
  });

  it('tells the user what to pass when the updater fails the kit’s default task, without calling a rule violated', async () => {
    const ns = await env.newNamespace('cf-ntp-default');
    await start();
    const res = await cli(
      'conformance',
      '--kind',
      'UpdaterUpdateTask',
      '--updater-name',
      'ntp-config',
      '--kubeconfig',
      env.kubeconfigPath,
      '-n',
      ns,
      '--timeout',
      '60',
    );
    expect(res.code, res.out + res.err).to.equal(1);
    expect(res.out).to.match(
      /FAILED: the updater failed the normal update's task \(.*no BootstrapConfig \/spec\/ntp responsibility.*\).*--responsibility/,
    );
    expect(res.out).to.not.match(/FAILED: C\d/);
  });

  it('reads --task-spec and --failing-task-spec from files, for the generic kind too', async () => {
    const ns = await env.newNamespace('cf-ntp-files');
    await start();
    const tmp = join(env.kubeconfigPath, '..');
    const spec = join(tmp, 'ntp-task-spec.yaml');
    const failing = join(tmp, 'ntp-failing.json');
    writeFileSync(
      spec,
      `responsibilities:\n  - selectResource: BootstrapConfig\n    path: /spec/ntp\n    value: {servers: [time.example.com]}\n`,
    );
    writeFileSync(failing, JSON.stringify({ responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: {} }] }));
    const res = await cli(
      'conformance',
      '--kind',
      'UpdaterUpdateTask',
      '--updater-name',
      'ntp-config',
      '--task-spec',
      spec,
      '--failing-task-spec',
      failing,
      '--kubeconfig',
      env.kubeconfigPath,
      '-n',
      ns,
      '--timeout',
      '60',
      '-o',
      'json',
    );
    expect(res.code, res.out + res.err).to.equal(0);
    const report = JSON.parse(res.out) as { scenarios: { name: string; result: string }[]; rules: { id: string; evidence: string[] }[] };
    expect(report.scenarios.find((s) => s.name === 'failure')?.result).to.equal('run');
    expect(report.rules.find((x) => x.id === 'C6')?.evidence.join('\n')).to.contain('nothing to configure');
  });
});
