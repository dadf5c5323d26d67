// `inplace run --concurrency N`: validation (exit 2 with a clear message), the help, and that the value reaches the
// machine task controller — through the component loader, and end to end in the `controller started` log line.
import { spawn } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { expect } from 'chai';
import type { KubeObject, ResourceType } from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { COMPONENT_LOADERS, DEFAULT_RUN_HEAP_GROWING_PERCENT } from '../../src/cli/run.js';
import { DEFAULT_CONCURRENCY } from '../../src/machine-task-controller/index.js';
import { noopLogger, type Controller, type ControllerBuilder, type Informer, type Manager } from '../../src/runtime/index.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { MemoryStore } from '../../src/runtime/store.js';
import { ScopedInformer } from '../../src/runtime/scoped.js';

/** A manager that records what the component asks its controller builders for (no API server). */
function recordingManager(): { mgr: Manager; concurrency: Map<string, number> } {
  const concurrency = new Map<string, number>();
  const informer = {
    // An empty cache: the runtime's own store, so the fake follows the Store interface.
    store: new MemoryStore(),
    onChange: () => undefined,
    synced: async () => undefined,
  } as Informer;
  const mgr: Manager = {
    client: {} as Manager['client'],
    log: noopLogger,
    events: { event: () => undefined },
    namespace: undefined,
    informer: <T extends KubeObject>() => informer as unknown as Informer<T>,
    // A real scoped cache that nothing acquires here: no scope is listed.
    scopedInformer: <T extends KubeObject>(res: ResourceType, labelKey: string) =>
      new ScopedInformer<T>({} as Manager['client'], res, labelKey),
    controller<T extends KubeObject>(name: string): ControllerBuilder<T> {
      const b: ControllerBuilder<T> = {
        for: (_res: ResourceType) => b,
        owns: (_res: ResourceType) => b,
        watches: () => b,
        withConcurrency: (n: number) => (concurrency.set(name, n), b),
        withCooldown: () => b,
        reconcile: (): Controller => ({ name, watch: async () => undefined, watchScoped: () => undefined, enqueue: () => undefined }),
      };
      return b;
    },
    start: async () => undefined,
    stop: async () => undefined,
  };
  return { mgr, concurrency };
}

describe('inplace run --concurrency', function () {
  this.timeout(120_000);

  it('is in the help with the controller default', async () => {
    const r = await cli('run', '--help');
    expect(r.code).to.equal(0);
    expect(r.out).to.match(new RegExp(`--concurrency N .*\\(default ${DEFAULT_CONCURRENCY}\\)`));
  });

  for (const bad of ['0', '-1', '1.5', 'abc', '1e3', '0x10', ' 8', '']) {
    it(`rejects ${JSON.stringify(bad)} with exit 2 before connecting`, async () => {
      const r = await cli('run', 'machine-task-controller', `--concurrency=${bad}`, '--kubeconfig', '/nonexistent');
      expect(r.code).to.equal(2);
      expect(r.err).to.contain(`--concurrency must be a positive integer (keys reconciled in parallel), got "${bad}"`);
      expect(r.err).to.contain('Usage: inplace run');
    });
  }

  it('rejects it for components that do not take it', async () => {
    const r = await cli('run', 'plan-controller', 'mhc-extension', '--concurrency', '8', '--kubeconfig', '/nonexistent');
    expect(r.code).to.equal(2);
    expect(r.err).to.contain('--concurrency applies to machine-task-controller; plan-controller, mhc-extension do not take it');
  });

  it('reaches the machine task controller through its loader (and the default without it)', async () => {
    const withFlag = recordingManager();
    await (await COMPONENT_LOADERS['machine-task-controller']!({ concurrency: 7 })).setup(withFlag.mgr);
    expect(withFlag.concurrency.get('machine-task-controller')).to.equal(7);
    const plain = recordingManager();
    await (await COMPONENT_LOADERS['machine-task-controller']!()).setup(plain.mgr);
    expect(plain.concurrency.get('machine-task-controller')).to.equal(DEFAULT_CONCURRENCY);
  });

  describe('against a cluster', () => {
    let env: TestEnv;
    let ns: string;

    before(async () => {
      env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
      ns = await env.newNamespace('run');
    });
    after(async () => env?.stop());

    it('starts the machine task controller with the given concurrency', async () => {
      const bin = join(projectRoot(), 'bin', 'inplace.mjs');
      const p = spawn(
        process.execPath,
        [bin, 'run', 'machine-task-controller', '--concurrency', '7', '--kubeconfig', env.kubeconfigPath, '-n', ns],
        {
          env: { ...process.env, INPLACE_FROM_SOURCE: '1', LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
      try {
        let started: Record<string, unknown> | undefined;
        for await (const line of createInterface({ input: p.stdout })) {
          let rec: Record<string, unknown>;
          try {
            rec = JSON.parse(line) as Record<string, unknown>;
          } catch {
            continue;
          }
          if (rec['msg'] === 'controller started' && rec['controller'] === 'machine-task-controller') {
            started = rec;
            break;
          }
        }
        // Keep draining so that later log lines never block the child on a full pipe.
        p.stdout.resume();
        expect(started, 'a "controller started" log line').to.not.equal(undefined);
        expect(started!['concurrency']).to.equal(7);
      } finally {
        p.kill('SIGTERM');
      }
      expect(await exited).to.equal(0);
    });

    it('serves probes and metrics on --bind-address only (the demo binds 127.0.0.1)', async () => {
      const bin = join(projectRoot(), 'bin', 'inplace.mjs');
      const p = spawn(
        process.execPath,
        [
          bin,
          'run',
          'plan-controller',
          '--health-port',
          '0',
          '--metrics-port',
          '0',
          '--bind-address',
          '127.0.0.1',
          '--kubeconfig',
          env.kubeconfigPath,
          '-n',
          ns,
        ],
        {
          env: { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      p.stderr.resume();
      const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
      try {
        let ports: { health?: number; metrics?: number } | undefined;
        for await (const line of createInterface({ input: p.stdout })) {
          try {
            const rec = JSON.parse(line) as Record<string, unknown>;
            if (rec['msg'] === 'started') {
              ports = rec['ports'] as typeof ports;
              break;
            }
          } catch {
            continue;
          }
        }
        p.stdout.resume();
        expect(ports?.health, 'the ports in the "started" log line').to.be.a('number');
        await waitFor(async () => (await fetch(`http://127.0.0.1:${ports!.health}/readyz`)).status === 200, {
          timeoutMs: 60_000,
          message: '/readyz on 127.0.0.1',
        });
        expect((await fetch(`http://127.0.0.1:${ports!.metrics}/metrics`)).status).to.equal(200);
        // Not reachable through any other address of this host.
        const other = Object.values(networkInterfaces())
          .flat()
          .find((a) => a && a.family === 'IPv4' && !a.internal);
        if (other) {
          const r = await fetch(`http://${other.address}:${ports!.health}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
            () => 'answered',
            () => 'refused',
          );
          expect(r, `port ${ports!.health} on ${other.address}`).to.equal('refused');
        }
      } finally {
        p.kill('SIGTERM');
      }
      expect(await exited).to.equal(0);
    });
  });
});

describe('inplace run --unreported-task-timeout', () => {
  it('is in the help with its default', async () => {
    const r = await cli('run', '--help');
    expect(r.out).to.match(/--unreported-task-timeout DURATION\s+machine-task-controller: how long a task may go without a first status/);
    expect(r.out).to.contain('(default 2m)');
  });

  for (const bad of ['0', '500ms', '-1m', 'abc', '25h', '']) {
    it(`rejects ${JSON.stringify(bad)} with exit 2 before connecting`, async () => {
      const r = await cli('run', 'machine-task-controller', `--unreported-task-timeout=${bad}`, '--kubeconfig', '/nonexistent');
      expect(r.code, r.err).to.equal(2);
      expect(r.err).to.contain(`--unreported-task-timeout must be a duration between 1s and 24h such as 90s or 5m, got "${bad}"`);
    });
  }

  it('rejects it for components that do not take it', async () => {
    const r = await cli('run', 'plan-controller', '--unreported-task-timeout', '5m', '--kubeconfig', '/nonexistent');
    expect(r.code).to.equal(2);
    expect(r.err).to.contain('--unreported-task-timeout applies to machine-task-controller; plan-controller does not take it');
  });
});

describe('inplace run --abort-grace-period', () => {
  it('is in the help with its default', async () => {
    const r = await cli('run', '--help');
    expect(r.out).to.match(
      /--abort-grace-period DURATION\s+machine-task-controller: how long an updater has to end a task it was asked to abort/,
    );
    expect(r.out).to.contain('(default 5m, 1s..24h)');
  });

  for (const bad of ['0', '-1m', 'abc', '25h']) {
    it(`rejects ${JSON.stringify(bad)} with exit 2 before connecting`, async () => {
      const r = await cli('run', 'machine-task-controller', `--abort-grace-period=${bad}`, '--kubeconfig', '/nonexistent');
      expect(r.code, r.err).to.equal(2);
      expect(r.err).to.contain(`--abort-grace-period must be a duration between 1s and 24h such as 90s or 5m, got "${bad}"`);
    });
  }

  it('rejects it for components that do not take it', async () => {
    const r = await cli('run', 'plan-controller', '--abort-grace-period', '5m', '--kubeconfig', '/nonexistent');
    expect(r.code).to.equal(2);
    expect(r.err).to.contain('--abort-grace-period applies to machine-task-controller; plan-controller does not take it');
  });
});

describe('inplace run --heap-growing-percent', () => {
  it('is in the help with its default', async () => {
    const r = await cli('run', '--help');
    expect(r.out).to.match(/--heap-growing-percent N\s+let V8's heap grow N % beyond the live data after a full collection/);
    expect(r.out.replace(/\s+/g, ' ')).to.contain(`(default ${DEFAULT_RUN_HEAP_GROWING_PERCENT} = V8's own factor`);
  });

  // Rejected before the flag reaches V8 and before connecting (a bad value must not half-apply).
  for (const bad of ['', '-1', '1.5', '1001', 'x', '20%', ' 20']) {
    it(`rejects ${JSON.stringify(bad)} with exit 2 before connecting`, async () => {
      const r = await cli('run', 'plan-controller', `--heap-growing-percent=${bad}`, '--kubeconfig', '/nonexistent');
      expect(r.code, r.err).to.equal(2);
      expect(r.err).to.contain(`--heap-growing-percent must be an integer from 0 to 1000, got "${bad}"`);
    });
  }
});
