// HTTP endpoints of a manager: /metrics (Prometheus), /healthz (liveness), /readyz (informers synced).
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { MetricsAuthorizer } from './metrics-auth.js';

/** Options of the health/metrics server. */
export interface HealthServerOptions {
  /** Port to listen on (0 = any free port). */
  port: number;
  /** Address to bind (default all interfaces, as probes come from the kubelet). */
  host?: string;
  /** Serve /metrics from this registry. */
  registry?: Registry;
  /** /readyz answers 200 only while this returns (or resolves to) true; async for checks that must ask the API server. */
  isReady?: () => boolean | Promise<boolean>;
  /** The body of a 503 /readyz (default: informers not synced). */
  notReadyMessage?: string;
  /** /healthz answers 200 only while this returns true (default always). */
  isHealthy?: () => boolean;
  /** Serve HTTPS with this key and certificate (PEM) instead of HTTP. */
  tls?: { key: string; cert: string };
  /** Who may read /metrics (default anyone); the probes stay open, as the kubelet sends no credentials. */
  authorizeMetrics?: MetricsAuthorizer;
}

/** A running health/metrics server. */
export interface HealthServer {
  /** The port actually bound. */
  readonly port: number;
  close(): Promise<void>;
}

/** Starts the server and resolves once it listens. */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(String(err));
    });
  };
  const server = opts.tls ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert }, listener) : http.createServer(listener);
  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const text = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'Content-Type': type });
      res.end(body);
    };
    if (path === '/healthz' || path === '/livez') {
      const ok = opts.isHealthy?.() ?? true;
      return text(ok ? 200 : 503, ok ? 'ok' : 'unhealthy');
    }
    if (path === '/readyz') {
      const ok = (await opts.isReady?.()) ?? true;
      return text(ok ? 200 : 503, ok ? 'ok' : `not ready: ${opts.notReadyMessage ?? 'informers not synced'}`);
    }
    if (path === '/metrics' && opts.registry) {
      const decision = opts.authorizeMetrics ? await opts.authorizeMetrics(req.headers.authorization, path) : ({ allowed: true } as const);
      if (!decision.allowed) return text(decision.status, decision.reason);
      return text(200, await opts.registry.metrics(), opts.registry.contentType);
    }
    text(404, 'not found');
  }
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
