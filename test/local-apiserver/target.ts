/* eslint-disable @typescript-eslint/no-explicit-any -- raw API JSON is asserted structurally, as a client sees it */
// The target of the conformance suite: the local API server, or a real cluster when INPLACE_TEST_KUBECONFIG is set.
// Raw requests go through node:https with the kubeconfig's TLS and auth (KubeConfig.applyToHTTPSOptions), so the
// exact status codes, headers and bodies can be asserted.
import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { startLocalApiServer, type LocalApiServer, type LocalApiServerOptions } from '../../tools/local-apiserver/index.js';

/** A raw HTTP response. */
export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

/** A server under test. */
export interface Target {
  kc: KubeConfig;
  kubeconfigYaml: string;
  /** True when running against the in-process local API server. */
  local: boolean;
  server: LocalApiServer | undefined;
  /** One request; `body` objects are JSON-encoded unless a string/Buffer is given. */
  raw(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<RawResponse>;
  /** Opens a watch and collects its JSON lines until `stop()` or the server ends it. */
  watch(path: string, headers?: Record<string, string>): Promise<WatchStream>;
  close(): Promise<void>;
}

/** A running watch. */
export interface WatchStream {
  events: any[];
  status: number;
  ended: Promise<void>;
  /** Resolves once `pred` holds for the collected events (rejects after `ms`). */
  until(pred: (events: any[]) => boolean, ms?: number): Promise<any[]>;
  stop(): void;
}

function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Builds request plumbing over any kubeconfig. */
export async function targetFromKubeconfig(yaml: string, local: boolean, server?: LocalApiServer): Promise<Target> {
  const kc = new KubeConfig();
  kc.loadFromString(yaml);
  const cluster = kc.getCurrentCluster()!;
  const base = new URL(cluster.server);
  const agent = base.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  const mod = base.protocol === 'https:' ? https : http;
  const options = async (method: string, path: string, headers: Record<string, string>): Promise<https.RequestOptions> => {
    const o: https.RequestOptions = { method, hostname: base.hostname, port: base.port, path, headers: { ...headers }, agent };
    await kc.applyToHTTPSOptions(o);
    o.agent = agent;
    return o;
  };
  const raw = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<RawResponse> => {
    const data = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const h: Record<string, string> = {
      Accept: 'application/json',
      ...(data !== undefined ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(data)) } : {}),
      ...headers,
    };
    const o = await options(method, path, h);
    return new Promise((resolve, reject) => {
      const req = mod.request(o, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: parse(text) });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      if (data !== undefined) req.write(data);
      req.end();
    });
  };
  const watch = async (path: string, headers: Record<string, string> = {}): Promise<WatchStream> => {
    const o = await options('GET', path, { Accept: 'application/json', ...headers });
    o.agent = false as unknown as https.Agent;
    return new Promise((resolve, reject) => {
      const events: any[] = [];
      const waiters: Array<() => void> = [];
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => (endResolve = r));
      const req = mod.request(o, (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          buf += c;
          let i: number;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.trim()) events.push(JSON.parse(line));
          }
          for (const w of waiters.splice(0)) w();
        });
        const done = (): void => {
          endResolve();
          for (const w of waiters.splice(0)) w();
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
        let isEnded = false;
        void ended.then(() => (isEnded = true));
        resolve({
          events,
          status: res.statusCode ?? 0,
          ended,
          stop: () => req.destroy(),
          until: (pred, ms = 10_000) =>
            new Promise((res2, rej2) => {
              const deadline = setTimeout(
                () =>
                  rej2(
                    new Error(
                      `watch condition not met in ${ms}ms; events: ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name, e.object?.metadata?.resourceVersion]))}`,
                    ),
                  ),
                ms,
              );
              const check = (): void => {
                if (pred(events)) {
                  clearTimeout(deadline);
                  res2(events);
                } else if (isEnded) {
                  clearTimeout(deadline);
                  rej2(new Error(`watch ended before condition; events: ${JSON.stringify(events.map((e) => e.type))}`));
                } else waiters.push(check);
              };
              check();
            }),
        });
      });
      req.on('error', (e) => {
        endResolve();
        reject(e);
      });
      req.end();
    });
  };
  return {
    kc,
    kubeconfigYaml: yaml,
    local,
    server,
    raw,
    watch,
    close: async () => {
      agent.destroy();
      await server?.close();
    },
  };
}

/** The suite's target: INPLACE_TEST_KUBECONFIG's cluster, or a fresh local API server. */
export async function startTarget(opts: LocalApiServerOptions = {}): Promise<Target> {
  const real = process.env['INPLACE_TEST_KUBECONFIG'];
  if (real) return targetFromKubeconfig(readFileSync(real, 'utf8'), false);
  const server = await startLocalApiServer(opts);
  return targetFromKubeconfig(server.kubeconfigYaml(), true, server);
}

/** Polls until `fn` returns a truthy value. */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, ms = 10_000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** A unique lowercase suffix for names. */
export function uniq(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Waits until the CRD `name` is absent: a CRD being deleted (by this suite or by another suite sharing the cluster)
 * still answers GET while its objects are removed, and vanishes later. A suite that finds one terminating, or that
 * deleted one, waits here instead of taking it as present.
 */
export async function waitCrdGone(t: Target, name: string, ms = 120_000): Promise<void> {
  await eventually(
    async () => (await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`)).status === 404,
    ms,
    `CRD ${name} to be gone`,
  );
}

/** The CRD `name` as the server has it, or undefined when absent; one that is being deleted is waited out first. */
export async function existingCrd(t: Target, name: string): Promise<any> {
  const r = await t.raw('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET CRD ${name}: ${r.status} ${r.text}`);
  if (!r.json?.metadata?.deletionTimestamp) return r.json;
  await waitCrdGone(t, name);
  return undefined;
}
