// `inplace updater`: a sample serves only the names it is given, and node-simulating samples refuse an API server
// that is not the embedded one (issue 30). Misuse exits 2 with the reason, before anything runs.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { runCli } from '../../src/cli/cli.js';
import type { Io } from '../../src/cli/verb.js';
import { EMBEDDED_SERVER_VERSION_SUFFIX, isEmbeddedServer, serverGitVersion, simulationProblem } from '../../src/sample-updaters/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { cli, runProcess } from '../support/cli.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

describe('inplace updater: served names and simulated nodes', function () {
  this.timeout(60_000);
  const tmp = mkdtempSync(join(tmpdir(), 'inplace-updater-guards-'));

  describe('served names (reference)', () => {
    const cases: [string, string[], string][] = [
      ['no --names and no --catch-all', ['updater', 'reference'], 'updater reference: name the updater names to serve with --names a,b'],
      ['an empty --names', ['updater', 'reference', '--names', ' , '], 'name the updater names to serve with --names a,b'],
      [
        'both --names and --catch-all',
        ['updater', 'reference', '--names', 'motd', '--catch-all'],
        'pass either --names or --catch-all, not both',
      ],
      [
        '--names on a sample with its own task kind',
        ['updater', 'os-image', '--names', 'motd'],
        'updater os-image serves its own task kind: --names and --catch-all apply to the reference updater only',
      ],
      [
        '--allow-real-cluster on a sample that simulates no node',
        ['updater', 'reference', '--names', 'motd', '--allow-real-cluster'],
        '--allow-real-cluster applies to kubernetes-version and os-image',
      ],
    ];
    for (const [name, argv, message] of cases) {
      it(`exits 2 on ${name}`, async () => {
        const r = await cli(...argv, '--kubeconfig', '/dev/null');
        expect(r.code, r.err).to.equal(2);
        expect(r.err).to.contain(message);
      });
    }

    it('documents --names as required and --catch-all as the demo-only catch-all', async () => {
      const r = await cli('updater', '--help');
      expect(r.out).to.match(/--names a,b +reference: the generic updater names to serve \(required unless --catch-all\)/);
      expect(r.out).to.match(/--catch-all +reference: serve every updater name \(the demo only/);
      expect(r.out).to.contain('--allow-real-cluster');
    });
  });

  describe('node-simulating samples and the API server they talk to', () => {
    let env: TestEnv;
    let fake: Server;
    let fakeKubeconfig: string;
    before(async () => {
      env = await startTestEnv({ crds: PROJECT_CRDS });
      // Stands in for a real kube-apiserver: /version of a release; anything else would be an error.
      fake = createServer((req, res) => {
        res.writeHead(req.url === '/version' ? 200 : 404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(req.url === '/version' ? { major: '1', minor: '31', gitVersion: 'v1.31.4', platform: 'linux/amd64' } : {}));
      });
      await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()));
      fakeKubeconfig = join(tmp, 'real.kubeconfig');
      writeFileSync(
        fakeKubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: real, cluster: {server: "http://127.0.0.1:' +
            String((fake.address() as AddressInfo).port) +
            '", insecure-skip-tls-verify: true}}]',
          'users: [{name: u, user: {token: t}}]',
          'contexts: [{name: real, context: {cluster: real, user: u}}]',
          'current-context: real',
        ].join('\n'),
      );
    });
    after(async () => {
      await env?.stop();
      await new Promise((r) => fake?.close(r));
    });

    it('the embedded API server carries the marker the samples look for (and a release never does)', async () => {
      const v = await serverGitVersion(env.kubeconfigPath);
      expect(v.endsWith(EMBEDDED_SERVER_VERSION_SUFFIX), v).to.equal(!env.isRealCluster);
      expect(['v1.31.4', 'v1.30.2-eks-1552ad0', 'v1.29.5+k3s1', 'v1.32.0-gke.1200'].map(isEmbeddedServer)).to.deep.equal([
        false,
        false,
        false,
        false,
      ]);
      expect(simulationProblem('kubernetes-version', 'v1.31.4', true)).to.equal(undefined);
    });

    for (const sample of ['kubernetes-version', 'os-image']) {
      it(`${sample} refuses another API server with exit 2 and says why`, async () => {
        const r = await cli('updater', sample, '--kubeconfig', fakeKubeconfig);
        expect(r.code, r.err).to.equal(2);
        expect(r.err).to.contain(`the ${sample} sample updater SIMULATES the node`);
        expect(r.err).to.contain('this API server (v1.31.4) is not the embedded one');
        expect(r.err).to.contain('pass --allow-real-cluster if you really mean it');
      });
    }

    it("the samples' own entry points (main.ts) refuse the same misuse with exit 2", async () => {
      const main = (sample: string, ...args: string[]) =>
        runProcess(process.execPath, ['--import', 'tsx', join(projectRoot(), 'src', 'sample-updaters', sample, 'main.ts'), ...args], {
          timeoutMs: 60_000,
        });
      const ref = await main('reference', '--kubeconfig', fakeKubeconfig);
      expect(ref.status, ref.stderr).to.equal(2);
      expect(ref.stderr).to.contain('error: name the updater names to serve with --names a,b');
      const kv = await main('kubernetes-version', '--kubeconfig', fakeKubeconfig);
      expect(kv.status, kv.stderr).to.equal(2);
      expect(kv.stderr).to.contain('the kubernetes-version sample updater SIMULATES the node');
    });

    it('kubernetes-version runs on the embedded server and says its nodes are simulated', async function () {
      if (env.isRealCluster) this.skip();
      const ns = await env.newNamespace('guards');
      let err = '';
      const stop = new AbortController();
      const io: Io = { out: () => undefined, err: (s) => void (err += s), isTTY: false, columns: 120, signal: stop.signal };
      const level = process.env['LOG_LEVEL'];
      process.env['LOG_LEVEL'] = 'warn';
      const done = runCli(['updater', 'kubernetes-version', '--kubeconfig', env.kubeconfigPath, '-n', ns], io);
      try {
        await waitFor(() => err.includes('running') || undefined, { timeoutMs: 30_000, message: 'the updater to run' });
        expect(err).to.contain('sample updater kubernetes-version running on SIMULATED nodes');
      } finally {
        stop.abort();
        expect(await done).to.equal(0);
        if (level === undefined) delete process.env['LOG_LEVEL'];
        else process.env['LOG_LEVEL'] = level;
      }
    });
  });
});
