/**
 * An in-process Kubernetes API server on loopback that kubectl and @kubernetes/client-node use unchanged.
 * See README.md in this folder for what is implemented and the known limits.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { Core, type CoreStats } from './core.js';
import { Persistence } from './persist.js';
import { Handler } from './server.js';
import { activeWatches } from './watch.js';
import { servingCertificate } from './tls.js';

export type { CoreStats, ResourceStats } from './core.js';
export { storedCrdForm } from './crd.js';

/** What a running server holds in memory (stores, indexes) and its open connections. */
export interface LocalApiServerStats extends CoreStats {
  /** Open watch streams (of every server in this process). */
  watchStreams: number;
  /** Open client connections of this server. */
  connections: number;
}

/** Options of startLocalApiServer. */
export interface LocalApiServerOptions {
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  port?: number;
  /** Serve HTTPS with a self-signed certificate generated at start (default true). Plain HTTP also accepts
   * requests without credentials, because kubectl sends no token over http. */
  https?: boolean;
  /** Bearer token clients must present (random when omitted). */
  token?: string;
  /** Snapshot + append-log file; state and the resourceVersion counter survive restarts. */
  persistFile?: string;
  /** Watch events retained per resource for watches from a resourceVersion (default 10000). */
  watchCacheSize?: number;
  /** How long watch events stay replayable, beyond the last 100 per resource (ms; default 75 s, like kube-apiserver). */
  watchCacheFreshMs?: number;
  /** Events are deleted this long after their last write (ms; default 1 h, kube-apiserver's --event-ttl). */
  eventTtlMs?: number;
  /** Fault injection for reliability tests. */
  faults?: FaultConfig;
  /** Maximum request body size (default 3 MiB); larger bodies get 413. */
  maxBodyBytes?: number;
  /** Interval of BOOKMARK events on watches that allow them (default 60s, as kube-apiserver roughly does). */
  bookmarkIntervalMs?: number;
}

/** Fault injection settings. */
export interface FaultConfig {
  /** Probability (0..1) that a non-watch resource request fails. */
  errorRate?: number;
  /** Codes to fail with (default [500, 429, 409]). */
  errorCodes?: number[];
  /** Verbs subject to errors (default: get, list, create, update, patch, delete, deletecollection). */
  verbs?: string[];
  /** Latency added to every resource request. */
  latencyMs?: number;
  /** Every N ms, every open watch connection is dropped. */
  dropWatchesEveryMs?: number;
}

/** A running local API server. */
export interface LocalApiServer {
  /** Base URL, e.g. https://127.0.0.1:43123. */
  url: string;
  /** Bearer token accepted by the server. */
  token: string;
  /** Base64 PEM of the serving certificate (https only). */
  caData?: string;
  /** A kubeconfig (YAML) for kubectl and client-node. */
  kubeconfigYaml(): string;
  /** Writes the kubeconfig to `path` (mode 0600). */
  writeKubeconfig(path: string): Promise<void>;
  /** Replaces the fault injection settings (undefined disables faults). */
  setFaults(f: FaultConfig | undefined): void;
  /** Sizes of the stores and indexes, for metrics. */
  stats(): LocalApiServerStats;
  /** The last resourceVersion written: it moves on every write (a process-level sign of activity). */
  resourceVersion(): number;
  /** Ends watches, stops listening, flushes persistence. */
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1. */
export async function startLocalApiServer(opts: LocalApiServerOptions = {}): Promise<LocalApiServer> {
  const https = opts.https !== false;
  const token = opts.token ?? randomBytes(24).toString('hex');
  const core = new Core(opts.watchCacheSize ?? 10000, {
    ...(opts.watchCacheFreshMs !== undefined ? { watchFreshMs: opts.watchCacheFreshMs } : {}),
    ...(opts.eventTtlMs !== undefined ? { eventTtlMs: opts.eventTtlMs } : {}),
  });
  let persistence: Persistence | undefined;
  if (opts.persistFile) {
    persistence = new Persistence(opts.persistFile, core);
    persistence.load();
    const p = persistence;
    core.onPersist = (op) => p.append(op);
  }
  core.bootstrap();
  core.startWatchHistory();
  core.startHousekeeping();
  let hostPort = '127.0.0.1:0';
  const handler = new Handler(core, {
    token,
    maxBodyBytes: opts.maxBodyBytes ?? 3 * 1024 * 1024,
    bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60000,
    hostPort: () => hostPort,
    // client-go (kubectl) does not send bearer tokens over plain http; like the old insecure port, loopback http
    // accepts requests without credentials. A wrong token is still rejected.
    allowAnonymous: !https,
  });
  handler.setFaults(opts.faults);
  let server: Server;
  let caData: string | undefined;
  if (https) {
    const { key, cert } = await servingCertificate('inplace-local-apiserver');
    caData = Buffer.from(cert).toString('base64');
    server = createHttpsServer({ key, cert }, handler.handle);
  } else server = createHttpServer(handler.handle);
  server.keepAliveTimeout = 65000;
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  hostPort = `127.0.0.1:${port}`;
  const url = `${https ? 'https' : 'http'}://127.0.0.1:${port}`;
  const kubeconfigYaml = (): string =>
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: inplace-local',
      '  cluster:',
      `    server: ${url}`,
      // client-node refuses plain http unless TLS verification is marked off (kubectl ignores the flag for http).
      ...(caData ? [`    certificate-authority-data: ${caData}`] : ['    insecure-skip-tls-verify: true']),
      'users:',
      '- name: inplace-local',
      '  user:',
      `    token: ${token}`,
      'contexts:',
      '- name: inplace-local',
      '  context:',
      '    cluster: inplace-local',
      '    user: inplace-local',
      '    namespace: default',
      'current-context: inplace-local',
      '',
    ].join('\n');
  let closed = false;
  return {
    url,
    token,
    ...(caData ? { caData } : {}),
    kubeconfigYaml,
    writeKubeconfig: async (path: string) => {
      await writeFile(path, kubeconfigYaml(), { mode: 0o600 });
    },
    setFaults: (f) => handler.setFaults(f),
    stats: () => ({ ...core.stats(), watchStreams: activeWatches.size, connections: sockets.size }),
    resourceVersion: () => core.rv,
    close: async () => {
      if (closed) return;
      closed = true;
      core.close();
      handler.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      await persistence?.close();
    },
  };
}
