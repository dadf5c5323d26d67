import https from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../api/kube.js';
import { FakeClient } from '../../test/support/fake-client.js';
import { createManager, type RuntimeManager } from './manager.js';
import { kubeMetricsAuthorizer } from './metrics-auth.js';
import type { KubeClient } from './pure/types.js';

/** A client that answers TokenReviews and SubjectAccessReviews like an API server with these tokens and grants. */
function reviewer(tokens: Record<string, string>, allowed: string[], calls: string[] = []): KubeClient {
  const fake = new FakeClient();
  const create = async <T extends KubeObject>(res: ResourceType, obj: T): Promise<T> => {
    calls.push(res.plural);
    const spec = (obj as unknown as { spec: Record<string, unknown> }).spec;
    if (res.plural === 'tokenreviews') {
      const user = tokens[String(spec['token'])];
      return {
        ...obj,
        status: user
          ? { authenticated: true, user: { username: user, groups: ['system:authenticated'] } }
          : { authenticated: false, error: 'invalid bearer token' },
      };
    }
    if (res.plural === 'subjectaccessreviews') {
      const attrs = spec['nonResourceAttributes'] as { path: string; verb: string };
      return { ...obj, status: { allowed: allowed.includes(String(spec['user'])) && attrs.path === '/metrics' && attrs.verb === 'get' } };
    }
    return fake.create(res, obj);
  };
  return Object.assign(fake, { create }) as unknown as KubeClient;
}

describe('secure metrics (TokenReview + SubjectAccessReview)', () => {
  const tokens = { good: 'system:serviceaccount:monitoring:prometheus', other: 'system:serviceaccount:default:default' };

  it('answers 401 without or with an unknown token, 403 when the user may not get /metrics, allowed otherwise', async () => {
    const auth = kubeMetricsAuthorizer(reviewer(tokens, [tokens.good]));
    expect(await auth(undefined, '/metrics')).to.deep.include({ allowed: false, status: 401 });
    expect(await auth('Basic abc', '/metrics')).to.deep.include({ allowed: false, status: 401 });
    expect(await auth('Bearer nope', '/metrics')).to.deep.include({ allowed: false, status: 401 });
    const forbidden = await auth('Bearer other', '/metrics');
    expect(forbidden).to.deep.include({ allowed: false, status: 403 });
    expect(forbidden.allowed ? '' : forbidden.reason).to.include('system:serviceaccount:default:default');
    expect(await auth('Bearer good', '/metrics')).to.deep.equal({ allowed: true });
  });

  it('reuses a decision for the cache TTL, then asks again', async () => {
    const calls: string[] = [];
    let t = 0;
    const auth = kubeMetricsAuthorizer(reviewer(tokens, [tokens.good], calls), { cacheTtlMs: 60_000, now: () => t });
    await auth('Bearer good', '/metrics');
    await auth('Bearer good', '/metrics');
    expect(calls).to.deep.equal(['tokenreviews', 'subjectaccessreviews']);
    t = 60_000;
    await auth('Bearer good', '/metrics');
    expect(calls).to.have.length(4);
  });

  it('answers 500 and caches nothing when the API server fails', async () => {
    let fail = true;
    const ok = reviewer(tokens, [tokens.good]);
    const client = Object.assign(new FakeClient(), {
      create: async <T extends KubeObject>(res: ResourceType, obj: T): Promise<T> => {
        if (fail) throw new Error('connection refused');
        return ok.create(res, obj);
      },
    }) as unknown as KubeClient;
    const auth = kubeMetricsAuthorizer(client);
    expect(await auth('Bearer good', '/metrics')).to.deep.include({ allowed: false, status: 500 });
    fail = false;
    expect(await auth('Bearer good', '/metrics')).to.deep.equal({ allowed: true });
  });

  describe('a manager with secureMetrics', () => {
    let m: RuntimeManager | undefined;
    afterEach(async () => m?.stop());

    const get = (port: number, path: string, token?: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = https.request(
          { host: '127.0.0.1', port, path, rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });

    it('serves /metrics over HTTPS to an allowed token only, and the probe port serves the probes but not the metrics', async () => {
      const healthPort = await new Promise<number>((resolve) => {
        const s = createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as AddressInfo).port;
          s.close(() => resolve(p));
        });
      });
      m = createManager({ client: reviewer(tokens, [tokens.good]), name: 'secure-test', metricsPort: 0, healthPort, secureMetrics: true });
      await m.start();
      const port = m.ports.metrics!;
      expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).to.equal(200);
      expect((await fetch(`http://127.0.0.1:${healthPort}/metrics`)).status).to.equal(404);
      expect((await get(port, '/metrics')).status).to.equal(401);
      expect((await get(port, '/metrics', 'other')).status).to.equal(403);
      const ok = await get(port, '/metrics', 'good');
      expect(ok.status).to.equal(200);
      expect(ok.body).to.include('inplace_');
      await m.stop();
      m = createManager({
        client: reviewer(tokens, [tokens.good]),
        name: 'secure-test',
        metricsPort: 0,
        healthPort: 0,
        secureMetrics: true,
      });
      let error = '';
      await m.start().catch((e: unknown) => (error = (e as Error).message));
      expect(error).to.match(/secureMetrics needs a metrics port apart from the health port/);
    });
  });
});
