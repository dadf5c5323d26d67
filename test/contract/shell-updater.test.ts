import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { UpdaterUpdateTasks } from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { formatReport, runConformance } from '../../src/contract/conformance/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '../../examples/updaters/shell-updater.sh');
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => existsSync(p));

describe('shell updater example (kubectl, no SDK)', function () {
  let env: TestEnv;
  let proc: ChildProcess | undefined;
  let ns: string;

  const start = (): void => {
    proc = spawn(
      'bash',
      [SCRIPT, '--name', 'shell-conformance', '--namespace', ns, '--kubeconfig', env.kubeconfigPath, '--interval', '0.2'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
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
  after(async () => {
    await stop();
    await env?.stop();
  });

  it('passes the conformance kit, including a restart mid-update', async () => {
    start();
    const r = await runConformance({
      client: env.client,
      namespace: ns,
      kind: UpdaterUpdateTasks,
      updaterName: 'shell-conformance',
      settleMs: 1_000,
      timeoutMs: 20_000,
      restart: async () => {
        await stop();
        start();
      },
    });
    expect(r.passed, `\n${formatReport(r)}`).to.equal(true);
    expect(r.rules.filter((x) => x.result === 'fail')).to.deep.equal([]);
  });
});
