import { expect } from 'chai';
import { MAX_JSON_DEPTH } from './depth.js';
import { startLocalApiServer, type LocalApiServer } from './index.js';

describe('local-apiserver request body depth', function () {
  this.timeout(30_000);
  let server: LocalApiServer;
  before(async () => {
    server = await startLocalApiServer({ https: false, token: 'tok' });
  });
  after(async () => {
    await server.close();
  });

  const post = async (body: string): Promise<{ status: number; message: string }> => {
    const r = await fetch(`${server.url}/api/v1/namespaces/default/configmaps`, {
      method: 'POST',
      headers: { Authorization: 'Bearer tok', 'Content-Type': 'application/json' },
      body,
    });
    return { status: r.status, message: String(((await r.json()) as { message?: string }).message) };
  };
  const cm = (name: string, data: string): string => `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":${data}}`;
  const nested = (open: string, close: string, n: number): string => `{"k":${open.repeat(n)}1${close.repeat(n)}}`;

  it('refuses a small body nested too deep with the character that went past the limit, parsed first or scanned first', async () => {
    for (const [open, close] of [
      ['[', ']'],
      ['{"a":', '}'],
    ] as const) {
      const r = await post(cm('deep', nested(open, close, MAX_JSON_DEPTH)));
      expect(r.status).to.equal(400);
      expect(r.message).to.equal(`couldn't get version/kind; json parse error: invalid character '${open[0]}' exceeded max depth`);
    }
    // Larger than what is parsed first: scanned before parsing, same answer.
    const big = cm('deep', `{"pad":"${'x'.repeat(70_000)}","k":${nested('[', ']', MAX_JSON_DEPTH)}}`);
    const r = await post(big);
    expect(r.status).to.equal(400);
    expect(r.message).to.equal(`couldn't get version/kind; json parse error: invalid character '[' exceeded max depth`);
  });

  it('refuses a body both too deep and malformed for its depth, and a malformed one for its syntax', async () => {
    const deepBroken = cm('deep', `{"k":${'['.repeat(MAX_JSON_DEPTH + 5)}1,,`);
    expect(await post(deepBroken)).to.deep.equal({
      status: 400,
      message: `couldn't get version/kind; json parse error: invalid character '[' exceeded max depth`,
    });
    const broken = await post(cm('x', '{"k":1,,}'));
    expect(broken.status).to.equal(400);
    expect(broken.message).to.match(/^couldn't get version\/kind; json parse error: /);
    expect(broken.message).to.not.match(/max depth/);
    // Nested, within the limit: accepted (an unknown field, dropped with a warning).
    const ok = await post(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"},"extra":${nested('{"a":', '}', 50)}}`);
    expect(ok.status, ok.message).to.equal(201);
  });
});
