// A real Prometheus for tests (Debian's `prometheus` package; .ci/run installs it): started on a free loopback port,
// scraping a tiny HTTP server of the test that exposes one gauge, with an alert rule on that gauge evaluated every
// second. The test flips the gauge to make the alert fire or resolve.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor } from './wait.js';

/** The Prometheus binary, if installed. */
export function prometheusBinary(): string | undefined {
  for (const p of [process.env['PROMETHEUS_BIN'], '/usr/bin/prometheus', '/usr/local/bin/prometheus']) if (p && existsSync(p)) return p;
  return undefined;
}

/** A running Prometheus with one on-demand alert. */
export interface TestPrometheus {
  /** Base URL, e.g. http://127.0.0.1:41234. */
  url: string;
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

/**
 * Starts Prometheus with alert `alertname` (labels `labels`) firing while the gauge `inplace_test_gate` is above 0.
 */
export async function startPrometheus(bin: string, alertname: string, labels: Record<string, string>): Promise<TestPrometheus> {
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
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(
    bin,
    [
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
    await waitFor(async () => (await fetch(`${url}/-/ready`)).ok, { timeoutMs: 60_000, intervalMs: 200, message: 'Prometheus ready' });
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}; prometheus stderr: ${stderr}`);
  }
  return {
    url,
    set(v) {
      value = v;
    },
    async waitAlert(firing) {
      await waitFor(
        async () => {
          const body = (await (await fetch(`${url}/api/v1/alerts`)).json()) as {
            data: { alerts: { labels: Record<string, string>; state: string }[] };
          };
          const on = body.data.alerts.some((a) => a.labels['alertname'] === alertname && a.state === 'firing');
          return on === firing;
        },
        { timeoutMs: 60_000, intervalMs: 200, message: `alert ${alertname} ${firing ? 'firing' : 'resolved'} in Prometheus` },
      );
    },
    stop,
  };
}
