// Cluster API's runtime client, as the hook tests need it: a JSON POST over HTTPS, the server verified against the
// extension's caBundle.
import { request } from 'node:https';
import type { RuntimeExtensionComponent } from '../../src/runtime-extension/index.js';

/** POSTs a raw request body to the extension; resolves with the HTTP code and the decoded answer. */
export function postRaw<A>(ext: RuntimeExtensionComponent, path: string, text: string): Promise<{ code: number; body: A }> {
  return new Promise((resolve, reject) => {
    const u = new URL(ext.url + path);
    const req = request(
      {
        hostname: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        ca: ext.caBundle,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(body || '{}') as A }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** POSTs a hook request object as JSON. */
export const postHook = <A>(ext: RuntimeExtensionComponent, path: string, body: unknown): Promise<{ code: number; body: A }> =>
  postRaw<A>(ext, path, JSON.stringify(body));
