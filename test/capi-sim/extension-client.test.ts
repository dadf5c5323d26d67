// The simulator's runtime client against a small HTTPS server: URLs as upstream builds them, TLS with the caBundle,
// failurePolicy Fail / Ignore on call errors, Failure answers never ignored, the per-handler timeout, discovery checks.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  CallExtensionError,
  DiscoveryInvalidError,
  ExtensionFailureError,
  callExtension,
  discover,
  hookUrl,
  type ExtensionConfig,
  type Registration,
} from '../../tools/capi-sim/extension-client.js';
import { selfSignedCertificate } from '../../src/runtime/tls.js';

describe('capi-sim runtime extension client', function () {
  this.timeout(30_000);
  let server: Server;
  let ca = '';
  let url = '';
  const seen: { url: string; body: Record<string, unknown> }[] = [];
  let reply: (path: string) => { code: number; body?: unknown } | 'hang' = () => ({ code: 404 });

  before(async () => {
    const { key, cert } = await selfSignedCertificate('localhost');
    ca = Buffer.from(cert).toString('base64');
    server = createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown> });
        const r = reply((req.url ?? '').split('?')[0] ?? '');
        if (r === 'hang') return;
        res.writeHead(r.code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(r.body ?? {}));
      });
    });
    await new Promise<void>((r) => server.listen(0, 'localhost', r));
    url = `https://localhost:${(server.address() as AddressInfo).port}/prefix`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => (seen.length = 0));

  const reg = (failurePolicy: 'Fail' | 'Ignore', timeoutSeconds = 2): Registration => ({
    extensionConfig: 'ext',
    handler: {
      name: 'update-machine.ext',
      requestHook: { apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1', hook: 'UpdateMachine' },
      failurePolicy,
      timeoutSeconds,
    },
    clientConfig: { url, caBundle: ca },
    settings: { a: 'b' },
  });

  it('builds URLs as upstream: path appended, hook and handler lowercased, Service → https://name.ns.svc:port', () => {
    expect(hookUrl({ url: 'https://x:9443/base/' }, 'CanUpdateMachine', 'My-Handler').toString()).to.equal(
      'https://x:9443/base/hooks.runtime.cluster.x-k8s.io/v1alpha1/canupdatemachine/my-handler',
    );
    expect(hookUrl({ service: { name: 'ext', namespace: 'sys', port: 9443, path: '/p' } }, 'Discovery').toString()).to.equal(
      'https://ext.sys.svc:9443/p/hooks.runtime.cluster.x-k8s.io/v1alpha1/discovery',
    );
    expect(() => hookUrl({ url: 'http://x' }, 'Discovery')).to.throw(CallExtensionError, /expected https/);
  });

  it('POSTs the request with its kind, the settings and ?timeout=, trusting the caBundle', async () => {
    reply = () => ({ code: 200, body: { status: 'Success', retryAfterSeconds: 3 } });
    const resp = await callExtension(reg('Fail'), 'UpdateMachine', { desired: {} });
    expect(resp).to.deep.equal({ status: 'Success', retryAfterSeconds: 3 });
    expect(seen[0]?.url).to.equal('/prefix/hooks.runtime.cluster.x-k8s.io/v1alpha1/updatemachine/update-machine?timeout=2s');
    expect(seen[0]?.body).to.deep.equal({
      desired: {},
      apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1',
      kind: 'UpdateMachineRequest',
      settings: { a: 'b' },
    });
  });

  it('an untrusted certificate is a call error', async () => {
    reply = () => ({ code: 200, body: { status: 'Success' } });
    const r = reg('Fail');
    const err = await callExtension({ ...r, clientConfig: { url } }, 'UpdateMachine', {}).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(CallExtensionError);
  });

  it('failurePolicy: a non-200 answer fails under Fail and counts as Success under Ignore', async () => {
    reply = () => ({ code: 500, body: { oops: true } });
    expect(await callExtension(reg('Fail'), 'UpdateMachine', {}).catch((e: unknown) => e)).to.be.instanceOf(CallExtensionError);
    expect(await callExtension(reg('Ignore'), 'UpdateMachine', {})).to.deep.equal({ status: 'Success', message: '' });
  });

  it('a Failure answer is an error whatever the failurePolicy, carrying the extension message', async () => {
    reply = () => ({ code: 200, body: { status: 'Failure', message: 'updater broke' } });
    const err = await callExtension(reg('Ignore'), 'UpdateMachine', {}).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ExtensionFailureError);
    expect((err as ExtensionFailureError).extensionMessage).to.equal('updater broke');
  });

  it("the handler's timeout ends a call that hangs", async () => {
    reply = () => 'hang';
    const err = await callExtension(reg('Fail', 1), 'UpdateMachine', {}).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(CallExtensionError);
    expect((err as Error).message).to.match(/timeout/);
  });

  it('discovery defaults failurePolicy and timeoutSeconds, and rejects invalid handlers', async () => {
    const ec: ExtensionConfig = { metadata: { name: 'ext' }, spec: { clientConfig: { url, caBundle: ca } } };
    const hook = { apiVersion: 'hooks.runtime.cluster.x-k8s.io/v1alpha1', hook: 'UpdateMachine' };
    reply = () => ({ code: 200, body: { status: 'Success', handlers: [{ name: 'update-machine', requestHook: hook }] } });
    expect(await discover(ec)).to.deep.equal([
      { name: 'update-machine.ext', requestHook: hook, timeoutSeconds: 10, failurePolicy: 'Fail' },
    ]);
    expect(seen[0]?.url).to.equal('/prefix/hooks.runtime.cluster.x-k8s.io/v1alpha1/discovery?timeout=10s');
    reply = () => ({ code: 200, body: { status: 'Success', handlers: [{ name: 'x', requestHook: hook, timeoutSeconds: 31 }] } });
    expect(await discover(ec).catch((e: unknown) => e)).to.be.instanceOf(DiscoveryInvalidError);
  });
});
