// `inplace run runtime-extension` flags: validation (exit 2 before connecting), and that --extension-port and
// --bind-address reach the component through its loader (port 0: the bound port and the CA are exposed).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../../src/api/index.js';
import { COMPONENT_LOADERS } from '../../src/cli/run.js';
import type { RuntimeExtensionComponent } from '../../src/runtime-extension/index.js';
import { noopLogger, type Informer, type Manager } from '../../src/runtime/index.js';
import { cli } from '../support/cli.js';
import { MemoryStore } from '../../src/runtime/store.js';
import { ScopedInformer } from '../../src/runtime/scoped.js';

/** A manager with empty caches and no API server (discovery needs neither). */
function emptyManager(o: { neverSynced?: boolean } = {}): Manager {
  const informer = {
    // An empty cache: the runtime's own store, so the fake follows the Store interface.
    store: new MemoryStore(),
    onChange: () => undefined,
    synced: () => (o.neverSynced ? new Promise<void>(() => undefined) : Promise.resolve()),
  } as Informer;
  return {
    client: {} as Manager['client'],
    log: noopLogger,
    events: { event: () => undefined },
    namespace: undefined,
    informer: <T extends KubeObject>() => informer as unknown as Informer<T>,
    // A real scoped cache that nothing acquires here: no scope is listed.
    scopedInformer: <T extends KubeObject>(res: ResourceType, labelKey: string) =>
      new ScopedInformer<T>({} as Manager['client'], res, labelKey),
    controller: () => {
      throw new Error('the runtime extension registers no controller');
    },
    start: async () => undefined,
    stop: async () => undefined,
  };
}

type Body = { handlers?: { name: string }[]; status?: string; message?: string };
const post = (ext: RuntimeExtensionComponent, path = 'discovery', body = '{}'): Promise<{ code: number; body: Body }> =>
  new Promise((resolve, reject) => {
    const u = new URL(`${ext.url}/hooks.runtime.cluster.x-k8s.io/v1alpha1/${path}`);
    const req = request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', ca: ext.caBundle }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) as Body }));
    });
    req.on('error', reject);
    req.end(body);
  });

describe('inplace run runtime-extension', function () {
  this.timeout(120_000);

  it('is in the help, and --extension-port / --cert-dir are refused for components that do not take them', async () => {
    const help = await cli('run', '--help');
    expect(help.out).to.contain('--extension-port N');
    const r = await cli('run', 'mhc-extension', '--extension-port', '9443', '--kubeconfig', '/nonexistent');
    expect(r.code).to.equal(2);
    expect(r.err).to.contain('--extension-port and --cert-dir apply to runtime-extension; mhc-extension does not take them');
    const bad = await cli('run', 'runtime-extension', '--extension-port', 'x', '--kubeconfig', '/nonexistent');
    expect(bad.code).to.equal(2);
    expect(bad.err).to.contain('--extension-port must be a port number');
  });

  it('the loader passes the port and address: port 0 serves discovery over TLS trusted through caBundle', async () => {
    const ext = (await COMPONENT_LOADERS['runtime-extension']!({
      extensionPort: 0,
      bindAddress: '127.0.0.1',
    })) as RuntimeExtensionComponent;
    await ext.setup(emptyManager());
    try {
      expect(ext.port).to.be.greaterThan(0);
      expect(ext.url).to.equal(`https://127.0.0.1:${ext.port}`);
      expect(ext.caBundle).to.match(/^-----BEGIN CERTIFICATE-----/);
      const res = await post(ext, 'discovery', '{"apiVersion":"hooks.runtime.cluster.x-k8s.io/v1alpha1","kind":"DiscoveryRequest"}');
      expect(res.code).to.equal(200);
      expect(res.body.handlers?.map((h) => h.name)).to.deep.equal(['can-update-machine', 'can-update-machineset', 'update-machine']);
    } finally {
      await ext.close();
    }
  });

  it('before its caches are synced it answers Failure (never "nothing covered", which would mean a rollout)', async () => {
    const ext = (await COMPONENT_LOADERS['runtime-extension']!({
      extensionPort: 0,
      bindAddress: '127.0.0.1',
    })) as RuntimeExtensionComponent;
    await ext.setup(emptyManager({ neverSynced: true }));
    try {
      const res = await post(ext, 'canupdatemachine/can-update-machine', '{"current":{},"desired":{}}');
      expect(res.body.status).to.equal('Failure');
      expect(res.body.message).to.match(/caches are not synced/);
    } finally {
      await ext.close();
    }
  });

  it("--cert-dir serves tls.crt/tls.key from the directory (cert-manager's Secret) and exposes tls.crt as caBundle", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rtx-certs-'));
    try {
      const pems = await generate([{ name: 'commonName', value: 'test' }], {
        keyType: 'ec',
        curve: 'P-256',
        algorithm: 'sha256',
        extensions: [
          { name: 'basicConstraints', cA: true },
          { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
        ],
      });
      await writeFile(join(dir, 'tls.crt'), pems.cert);
      await writeFile(join(dir, 'tls.key'), pems.private);
      const ext = (await COMPONENT_LOADERS['runtime-extension']!({
        extensionPort: 0,
        bindAddress: '127.0.0.1',
        certDir: dir,
      })) as RuntimeExtensionComponent;
      await ext.setup(emptyManager());
      try {
        expect(ext.caBundle).to.equal(pems.cert);
        expect((await post(ext)).code).to.equal(200);
      } finally {
        await ext.close();
      }
      const missing = (await COMPONENT_LOADERS['runtime-extension']!({
        extensionPort: 0,
        certDir: join(dir, 'none'),
      })) as RuntimeExtensionComponent;
      let err: Error | undefined;
      await Promise.resolve(missing.setup(emptyManager())).catch((e: Error) => (err = e));
      expect(err?.name).to.equal('LoadCertificateError');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
