import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import {
  KubernetesVersionUpdateTaskTemplates,
  KubernetesVersionUpdateTasks,
  OSImageUpdateTaskTemplates,
  OSImageUpdateTasks,
  UpdaterUpdateTasks,
} from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { formatReport, runConformance, type ConformanceOptions, type ConformanceReport } from '../../src/contract/conformance/index.js';
import { noopLogger } from '../../src/runtime/index.js';
import { sampleUpdaters, type SampleUpdater } from '../../src/sample-updaters/index.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { FixtureTasks, startFixtureUpdater, type Behaviour } from './fixtures/raw-updaters.js';

const FIXTURE_CRD = join(dirname(fileURLToPath(import.meta.url)), 'fixtures/fixturetasks.yaml');

const failed = (r: ConformanceReport): string[] => r.rules.filter((x) => x.result === 'fail').map((x) => x.id);
const explain = (r: ConformanceReport): string => `\n${formatReport(r)}`;

describe('conformance kit (integration)', function () {
  let env: TestEnv;
  before(async () => {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs(), FIXTURE_CRD] });
  });
  after(async () => {
    await env?.stop();
  });

  const kit = async (opts: Omit<ConformanceOptions, 'client' | 'namespace'> & { namespace: string }): Promise<ConformanceReport> =>
    runConformance({ client: env.client, settleMs: 800, timeoutMs: 15_000, ...opts });

  /** Runs a sample updater, with a restart hook for the kit. */
  async function withSample<T>(s: SampleUpdater, ns: string, fn: (restart: () => Promise<void>) => Promise<T>): Promise<T> {
    let running = await s.start({ client: env.client, namespace: ns, log: noopLogger });
    try {
      return await fn(async () => {
        await running.stop();
        running = await s.start({ client: env.client, namespace: ns, log: noopLogger });
      });
    } finally {
      await running.stop();
    }
  }

  describe('passes conformant updaters', () => {
    it('passes the reference updater on the generic kind, including a restart mid-update', async () => {
      const ns = await env.newNamespace('cf-ref');
      const r = await withSample(sampleUpdaters.reference, ns, (restart) =>
        kit({ namespace: ns, kind: UpdaterUpdateTasks, updaterName: 'conformance', restart }),
      );
      expect(r.passed, explain(r)).to.equal(true);
      expect(r.rules.filter((x) => x.result === 'pass').map((x) => x.id)).to.deep.equal(['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8']);
      expect(r.rules.find((x) => x.id === 'C9')?.result).to.equal('n/a');
      expect(r.rules.find((x) => x.id === 'C7')?.evidence.join('\n')).to.match(/resumed \(startTime .* kept\)/);
    });

    it('passes the Kubernetes version updater through its template kind', async () => {
      const ns = await env.newNamespace('cf-kv');
      const r = await withSample(sampleUpdaters['kubernetes-version'], ns, (restart) =>
        kit({
          namespace: ns,
          kind: KubernetesVersionUpdateTasks,
          template: KubernetesVersionUpdateTaskTemplates,
          taskSpec: { simulatedStepSeconds: 0.05 },
          slowSpec: { simulatedStepSeconds: 1 },
          failureSpec: { machineRef: { name: 'cf-no-such-machine' } },
          restart,
        }),
      );
      expect(r.passed, explain(r)).to.equal(true);
      expect(failed(r)).to.deep.equal([]);
      expect(r.rules.find((x) => x.id === 'C6')?.evidence.join('\n')).to.match(/Machine cf-no-such-machine not found/);
    });

    it('passes the OS image updater through its template kind', async () => {
      const ns = await env.newNamespace('cf-os');
      const r = await withSample(sampleUpdaters['os-image'], ns, (restart) =>
        kit({
          namespace: ns,
          kind: OSImageUpdateTasks,
          template: OSImageUpdateTaskTemplates,
          taskSpec: { simulatedStepSeconds: 0.05 },
          slowSpec: { simulatedStepSeconds: 1 },
          failureSpec: { machineRef: { name: 'cf-no-such-machine' } },
          restart,
        }),
      );
      expect(r.passed, explain(r)).to.equal(true);
    });

    it('passes a correct updater written without the SDK on a custom kind', async () => {
      const ns = await env.newNamespace('cf-raw');
      const u = await startFixtureUpdater(env.client, ns, FixtureTasks, 'correct');
      try {
        const r = await kit({
          namespace: ns,
          kind: FixtureTasks,
          taskSpec: { parameters: { durationSeconds: 0 } },
          slowSpec: { parameters: { durationSeconds: 3600 } },
          failureSpec: { parameters: { failWith: 'injected' } },
        });
        expect(r.passed, explain(r)).to.equal(true);
      } finally {
        await u.stop();
      }
    });
  });

  describe('fails broken updaters, naming the rule', () => {
    const cases: { behaviour: Behaviour; custom?: boolean; rule: string; evidence: RegExp }[] = [
      { behaviour: 'neverReports', rule: 'C4', evidence: /no terminal status answering generation 1 within/ },
      {
        behaviour: 'leavesTerminal',
        custom: true,
        rule: 'C4',
        evidence: /terminal status left after re-reconcile: updated .* -> updating/,
      },
      { behaviour: 'ignoresAborting', rule: 'C4', evidence: /after spec.updatePhase became aborting/ },
      { behaviour: 'writesCapi', rule: 'C8', evidence: /the updater wrote a CAPI object: Machine cf-.* annotations changed/ },
      {
        behaviour: 'wrongObservedGeneration',
        rule: 'C5',
        evidence: /observedGeneration stayed 1|observedGeneration 1 does not answer generation 2/,
      },
    ];
    for (const c of cases) {
      it(`fails an updater that ${c.behaviour.replace(/[A-Z]/g, (m) => ` ${m.toLowerCase()}`)} with ${c.rule}`, async () => {
        const ns = await env.newNamespace('cf-broken');
        const res = c.custom ? FixtureTasks : UpdaterUpdateTasks;
        const u = await startFixtureUpdater(env.client, ns, res, c.behaviour, c.custom ? undefined : 'broken');
        try {
          const r = await kit({
            namespace: ns,
            kind: res,
            updaterName: 'broken',
            timeoutMs: 2_500,
            ...(c.custom
              ? {
                  taskSpec: { parameters: { durationSeconds: 0 } },
                  slowSpec: { parameters: { durationSeconds: 3600 } },
                  failureSpec: { parameters: { failWith: 'injected' } },
                }
              : {}),
          });
          expect(r.passed, explain(r)).to.equal(false);
          expect(failed(r), explain(r)).to.include(c.rule);
          const row = r.rules.find((x) => x.id === c.rule)!;
          expect(row.evidence.join('\n'), explain(r)).to.match(c.evidence);
          expect(formatReport(r)).to.match(new RegExp(`FAILED: .*${c.rule}`));
        } finally {
          await u.stop();
        }
      });
    }
  });
});
