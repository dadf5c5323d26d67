// A real Prometheus for tests (Debian's `prometheus` package; .ci/run installs it): started on a free loopback port,
// scraping a tiny HTTP server of the test that exposes one gauge, with an alert rule on that gauge evaluated every
// second. The test flips the gauge to make the alert fire or resolve.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { queryAlerts, type AlertsAccess } from '../../src/plan-controller/snapshot/alerts.js';
import { waitFor } from './wait.js';

/** The Prometheus binary, if installed. */
export function prometheusBinary(): string | undefined {
  for (const p of [process.env['PROMETHEUS_BIN'], '/usr/bin/prometheus', '/usr/local/bin/prometheus']) if (p && existsSync(p)) return p;
  return undefined;
}

/** A running Prometheus with one on-demand alert. */
export interface TestPrometheus {
  /** Base URL, e.g. http://127.0.0.1:41234 (https with `web.tls`). */
  url: string;
  /** What reaches it: the basic-auth user of `web` and the CA of its certificate. */
  access: AlertsAccess;
  /** Sets the gauge the alert rule watches (1 fires it, 0 resolves it). */
  set(value: number): void;
  /** Waits until Prometheus reports the alert firing (true) or gone (false). */
  waitAlert(firing: boolean): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Prometheus's --web.config.file: basic auth (a bcrypt hash, as Prometheus requires) and TLS. */
export interface PrometheusWeb {
  /** One basic-auth user: its name, password (for the client) and the password's bcrypt hash (for Prometheus). */
  basicAuth?: { username: string; password: string; bcrypt: string };
  /** The server certificate (PEM; self-signed, so it is its own CA) and key. */
  tls?: { cert: string; key: string };
}

/**
 * Starts Prometheus with alert `alertname` (labels `labels`) firing while the gauge `inplace_test_gate` is above 0;
 * with `web`, behind basic auth and/or TLS (--web.config.file).
 */
export async function startPrometheus(
  bin: string,
  alertname: string,
  labels: Record<string, string>,
  web: PrometheusWeb = {},
): Promise<TestPrometheus> {
  let value = 0;
  const exporter: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/plain; version=0.0.4');
    res.end(`# TYPE inplace_test_gate gauge\ninplace_test_gate ${value}\n`);
  });
  await new Promise<void>((r) => exporter.listen(0, '127.0.0.1', r));
  const exporterAddr = `127.0.0.1:${(exporter.address() as AddressInfo).port}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'inplace-prom-'));
  const labelLines = Object.entries(labels)
    .map(([k, v]) => `          ${k}: ${JSON.stringify(v)}`)
    .join('\n');
  writeFileSync(
    path.join(dir, 'rules.yml'),
    `groups:\n  - name: inplace-test\n    interval: 1s\n    rules:\n      - alert: ${alertname}\n        expr: inplace_test_gate > 0\n        labels:\n${labelLines}\n`,
  );
  writeFileSync(
    path.join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [${JSON.stringify(path.join(dir, 'rules.yml'))}]\nscrape_configs:\n  - job_name: gate\n    static_configs:\n      - targets: [${JSON.stringify(exporterAddr)}]\n`,
  );
  const webLines: string[] = [];
  if (web.tls) {
    writeFileSync(path.join(dir, 'tls.crt'), web.tls.cert);
    writeFileSync(path.join(dir, 'tls.key'), web.tls.key);
    webLines.push(
      'tls_server_config:',
      `  cert_file: ${JSON.stringify(path.join(dir, 'tls.crt'))}`,
      `  key_file: ${JSON.stringify(path.join(dir, 'tls.key'))}`,
    );
  }
  if (web.basicAuth) webLines.push('basic_auth_users:', `  ${web.basicAuth.username}: ${JSON.stringify(web.basicAuth.bcrypt)}`);
  const webArgs: string[] = [];
  if (webLines.length > 0) {
    writeFileSync(path.join(dir, 'web.yml'), `${webLines.join('\n')}\n`);
    webArgs.push(`--web.config.file=${path.join(dir, 'web.yml')}`);
  }
  const access: AlertsAccess = {};
  if (web.basicAuth)
    access.authorization = `Basic ${Buffer.from(`${web.basicAuth.username}:${web.basicAuth.password}`).toString('base64')}`;
  if (web.tls) access.ca = web.tls.cert;
  const port = await freePort();
  const url = `${web.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(
    bin,
    [
      ...webArgs,
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null) {
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      await exited;
    }
    await new Promise<void>((r) => exporter.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Ready once the alerts API answers (through the same auth and TLS as the plan controller).
    await waitFor(async () => (await queryAlerts(url, 5_000, access)).ok, {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: 'Prometheus ready',
    });
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}; prometheus stderr: ${stderr}`);
  }
  return {
    url,
    access,
    set(v) {
      value = v;
    },
    async waitAlert(firing) {
      await waitFor(
        async () => {
          const r = await queryAlerts(url, 5_000, access);
          if (!r.ok) return false;
          const on = r.alerts.some((a) => a.labels['alertname'] === alertname && a.state === 'firing');
          return on === firing;
        },
        { timeoutMs: 60_000, intervalMs: 200, message: `alert ${alertname} ${firing ? 'firing' : 'resolved'} in Prometheus` },
      );
    },
    stop,
  };
}
