// scripts/test-real.ts (npm run test:real): runs a suite against a "real" cluster — played by an embedded API server
// that already holds a CRD of its own — and must leave nothing behind but what was there before.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { CustomResourceDefinitions, Namespaces, type KubeObject } from '../../src/api/index.js';
import { startLocalApiServer, type LocalApiServer } from '../../tools/local-apiserver/index.js';
import { createClient, loadKubeConfig, type RestClient } from '../../src/runtime/client.js';
import { readCrds, TEST_LABEL } from './env.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURE = join(ROOT, 'test', 'providers', 'fixtures', 'example-provider.yaml');
const SPEC = join(ROOT, 'test', 'support', 'fixtures', 'test-real-run.spec.ts');
const LEAK = join(ROOT, 'test', 'support', 'fixtures', 'test-real-leak.spec.ts');

function script(args: string[]): Promise<{ code: number | null; out: string }> {
  const env = { ...process.env };
  delete env['INPLACE_TEST_KUBECONFIG'];
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'test-real.ts'), ...args], { cwd: ROOT, env });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.stderr.on('data', (c: Buffer) => (out += c.toString()));
    p.on('exit', (code) => resolve({ code, out }));
  });
}

describe('npm run test:real (scripts/test-real.ts)', function () {
  this.timeout(180_000);
  let server: LocalApiServer | undefined;
  let admin: RestClient | undefined;
  let dir = '';

  before(async function () {
    if (process.env['INPLACE_TEST_KUBECONFIG']) {
      console.log('    (skipped on INPLACE_TEST_KUBECONFIG: plays a real cluster with its own embedded API server)');
      this.skip();
    }
    server = await startLocalApiServer({});
    dir = await mkdtemp(join(tmpdir(), 'inplace-test-real-'));
    await server.writeKubeconfig(join(dir, 'kubeconfig'));
    admin = createClient(loadKubeConfig(join(dir, 'kubeconfig')), { userAgent: 'test-real-test' });
  });
  after(async () => {
    admin?.close();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses to run without a kubeconfig, with its usage (exit 2)', async () => {
    const r = await script([]);
    expect(r.code).to.equal(2);
    expect(r.out).to.contain('usage: npm run test:real -- KUBECONFIG');
    const missing = await script([join(dir, 'no-such-kubeconfig')]);
    expect(missing.code).to.equal(2);
    expect(missing.out).to.contain('does not exist');
  });

  it('runs the suite, then removes the namespaces and CRDs it created and keeps what was there before', async () => {
    const [machines, ...created] = await readCrds([FIXTURE]);
    // Someone else's CRD, even with the tests' label: it existed before the run, so the run must not delete it.
    const theirs = { ...machines!, metadata: { ...machines!.metadata, labels: { [TEST_LABEL]: 'true' } } };
    await admin!.create(CustomResourceDefinitions, theirs);
    const r = await script([join(dir, 'kubeconfig'), SPEC]);
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(/1 passing/);
    expect(r.out).to.contain('left behind: nothing');
    expect(await admin!.get(CustomResourceDefinitions, undefined, machines!.metadata.name!), 'a CRD that was there before').to.not.equal(
      undefined,
    );
    for (const c of created)
      expect(await admin!.get(CustomResourceDefinitions, undefined, c.metadata.name!), c.metadata.name).to.equal(undefined);
    const namespaces = (await admin!.list<KubeObject>(Namespaces, undefined)).items.map((n) => n.metadata.name);
    expect(namespaces.filter((n) => n?.startsWith('test-real-'))).to.deep.equal([]);
  });

  it('says a CRD the run created without the tests\' label is left behind (exit 3), never "nothing"', async () => {
    const r = await script([join(dir, 'kubeconfig'), LEAK]);
    expect(r.code, r.out).to.equal(3);
    expect(r.out).to.match(/1 passing/);
    expect(r.out).to.contain(`left behind: CRD leaktasks.leak.inplace-test.example.com (created without the ${TEST_LABEL} label)`);
    await admin!.delete(CustomResourceDefinitions, undefined, 'leaktasks.leak.inplace-test.example.com');
  });
});
