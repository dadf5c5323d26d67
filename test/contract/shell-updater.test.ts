import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { UpdaterUpdateTasks } from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { formatReport, runConformance } from '../../src/contract/conformance/index.js';
import { cli } from '../support/cli.js';
import { documentedCommands, withoutOption } from '../support/documented-commands.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '../../examples/updaters/shell-updater.sh');
const README = join(dirname(fileURLToPath(import.meta.url)), '../../examples/updaters/README.md');
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => existsSync(p));

describe('shell updater example (kubectl, no SDK)', function () {
  let env: TestEnv;
  let proc: ChildProcess | undefined;
  let ns: string;

  const start = (name = 'shell-conformance'): void => {
    proc = spawn('bash', [SCRIPT, '--name', name, '--namespace', ns, '--kubeconfig', env.kubeconfigPath, '--interval', '0.2'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    proc.stderr?.resume();
  };
  const stop = async (): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    await exited;
  };

  before(async function () {
    if (!KUBECTL) {
      console.warn('SKIP shell updater example: kubectl is not installed (/usr/bin/kubectl), and the example needs it');
      this.skip();
    }
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    ns = await env.newNamespace('cf-shell');
  });
  afterEach(stop);
  after(async () => {
    await env?.stop();
  });

  it('passes the conformance kit, including a restart mid-update, an abort mid-way and bad input failed', async () => {
    start();
    const r = await runConformance({
      client: env.client,
      namespace: ns,
      kind: UpdaterUpdateTasks,
      updaterName: 'shell-conformance',
      settleMs: 1_000,
      timeoutMs: 20_000,
      // What its user knows of it: a duration it must refuse, and one long enough to abort or restart mid-way.
      failingTaskSpec: { parameters: { durationSeconds: -1 } },
      slowTaskSpec: { parameters: { durationSeconds: 3 } },
      restart: async () => {
        await stop();
        start();
      },
    });
    expect(r.passed, `\n${formatReport(r)}`).to.equal(true);
    expect(r.rules.filter((x) => x.result === 'fail')).to.deep.equal([]);
    expect(r.scenarios.map((x) => x.result)).to.deep.equal(['run', 'run', 'run', 'run']);
    expect(r.rules.find((x) => x.id === 'C6')?.evidence.join('\n')).to.contain(
      'failure: Ready message says why: "parameters.durationSeconds must be a number of seconds from 0 to 31536000, got -1"',
    );
  });

  it('passes with the command of examples/updaters/README.md (exit 0)', async () => {
    const commands = documentedCommands(README, 'conformance', '--updater-name ntp-updater');
    expect(commands, 'examples/updaters/README.md shows the shell example conformance command').to.have.length(1);
    start('ntp-updater');
    const r = await cli(...withoutOption(commands[0]!, '--kubeconfig'), '--kubeconfig', env.kubeconfigPath, '-n', ns, '--timeout', '20');
    expect(r.code, `${commands[0]!.join(' ')}\n${r.out}\n${r.err}`).to.equal(0);
    expect(r.out).to.match(/\nfailure +run\n/);
    expect(r.out).to.contain('PASSED');
  });
});
