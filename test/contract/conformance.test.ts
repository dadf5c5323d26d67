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
import {
  formatReport,
  runConformance,
  statusManagers,
  type ConformanceOptions,
  type ConformanceReport,
} from '../../src/contract/conformance/index.js';
import { noopLogger, type KubeClient } from '../../src/runtime/index.js';
import { sampleUpdaters, type SampleUpdater } from '../../src/sample-updaters/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { cli } from '../support/cli.js';
import { documentedCommands, withoutOption } from '../support/documented-commands.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { FixtureTasks, startFixtureUpdater, type Behaviour } from './fixtures/raw-updaters.js';

const FIXTURE_CRD = join(dirname(fileURLToPath(import.meta.url)), 'fixtures/fixturetasks.yaml');

const failed = (r: ConformanceReport): string[] => r.rules.filter((x) => x.result === 'fail').map((x) => x.id);
const explain = (r: ConformanceReport): string => `\n${formatReport(r)}`;
const expectRejected = async (p: Promise<unknown>, re: RegExp): Promise<void> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.message ?? 'resolved', 'runConformance rejects').to.match(re);
};

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
    let running = await s.start({ client: env.client, namespace: ns, log: noopLogger, ...(s.generic ? { names: ['conformance'] } : {}) });
    try {
      return await fn(async () => {
        await running.stop();
        running = await s.start({ client: env.client, namespace: ns, log: noopLogger, ...(s.generic ? { names: ['conformance'] } : {}) });
      });
    } finally {
      await running.stop();
    }
  }

  describe('passes conformant updaters', () => {
    it('passes the reference updater on the generic kind, including a restart mid-update and bad input failed', async () => {
      const ns = await env.newNamespace('cf-ref');
      const r = await withSample(sampleUpdaters.reference, ns, (restart) =>
        kit({
          namespace: ns,
          kind: UpdaterUpdateTasks,
          updaterName: 'conformance',
          restart,
          // Its own parameters, given by its user: a duration out of its bounds is bad input it must fail.
          failingTaskSpec: { parameters: { durationSeconds: -1 } },
          slowTaskSpec: { parameters: { durationSeconds: 2 } },
        }),
      );
      expect(r.passed, explain(r)).to.equal(true);
      expect(r.scenarios.map((x) => x.result)).to.deep.equal(['run', 'run', 'run', 'run']);
      expect(r.rules.find((x) => x.id === 'C6')?.evidence.join('\n')).to.match(
        /failure: Ready message says why: "parameters.durationSeconds must be/,
      );
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
          slowTaskSpec: { simulatedStepSeconds: 1 },
          failingTaskSpec: { machineRef: { name: 'cf-no-such-machine' } },
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
          slowTaskSpec: { parameters: { durationSeconds: 3600 } },
          failingTaskSpec: { parameters: { failWith: 'injected' } },
        });
        expect(r.passed, explain(r)).to.equal(true);
      } finally {
        await u.stop();
      }
    });

    it('sends only what the contract and the user say: no parameters by default, the failure scenario not exercised (not failed)', async () => {
      const ns = await env.newNamespace('cf-plain');
      const specs: Record<string, unknown>[] = [];
      const recording: KubeClient = Object.create(env.client) as KubeClient;
      recording.create = (res, obj) => {
        if (res.kind === UpdaterUpdateTasks.kind) specs.push(structuredClone((obj as unknown as { spec: Record<string, unknown> }).spec));
        return env.client.create(res, obj);
      };
      const r = await withSample(sampleUpdaters.reference, ns, () =>
        runConformance({ client: recording, namespace: ns, kind: UpdaterUpdateTasks, settleMs: 800, timeoutMs: 15_000 }),
      );
      expect(r.passed, explain(r)).to.equal(true);
      expect(specs.length).to.be.greaterThan(2);
      for (const spec of specs)
        expect(Object.keys(spec).sort(), JSON.stringify(spec)).to.deep.equal([
          'machineRef',
          'responsibilities',
          'updatePhase',
          'updaterName',
        ]);
      expect(r.scenarios.find((x) => x.name === 'failure')).to.deep.include({ result: 'not exercised' });
      expect(formatReport(r)).to.match(
        /\nfailure +cannot be exercised for this updater \(the contract defines no task every updater must fail .*--failing-task-spec FILE/,
      );
      expect(r.rules.find((x) => x.id === 'C6')?.result).to.equal('pass');
    });

    it('passes an updater that finishes before it sees the abort (C4 allows updated after aborting)', async () => {
      const ns = await env.newNamespace('cf-fast');
      // Ignores aborting, but every task of it ends at once: by the contract that is conforming.
      const u = await startFixtureUpdater(env.client, ns, UpdaterUpdateTasks, 'ignoresAborting', 'fast');
      try {
        const r = await kit({ namespace: ns, kind: UpdaterUpdateTasks, updaterName: 'fast' });
        expect(r.passed, explain(r)).to.equal(true);
        const note = r.scenarios.find((x) => x.name === 'abort')?.note ?? '';
        expect(note, explain(r)).to.match(
          /^the update (ended|finished) updated before (the abort was sent|it saw the abort).*--slow-task-spec FILE/,
        );
      } finally {
        await u.stop();
      }
    });

    it('takes responsibilities and spec from the user, and refuses what only the platform sets', async () => {
      const ns = await env.newNamespace('cf-input');
      await expectRejected(
        kit({ namespace: ns, kind: UpdaterUpdateTasks, taskSpec: { updatePhase: 'aborting' } }),
        /taskSpec: spec.updatePhase is the platform's to set \(C2\)/,
      );
      await expectRejected(
        kit({ namespace: ns, kind: UpdaterUpdateTasks, failingTaskSpec: { updaterName: 'other' } }),
        /failingTaskSpec: spec.updaterName routes a generic task/,
      );
      await expectRejected(
        kit({
          namespace: ns,
          kind: UpdaterUpdateTasks,
          responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }],
          taskSpec: { responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.30.1' }] },
        }),
        /responsibilities are given twice/,
      );
      // Nothing was created for a refused run.
      expect((await env.client.list(UpdaterUpdateTasks, ns)).items).to.deep.equal([]);
    });
  });

  it("runs the README's conformance command against the OS image sample updater (exit 0)", async () => {
    const commands = documentedCommands(join(projectRoot(), 'README.md'), 'conformance', 'OSImageUpdateTask');
    expect(commands, 'README.md shows a conformance command of the OS image updater').to.have.length(1);
    const ns = await env.newNamespace('cf-readme');
    const res = await withSample(sampleUpdaters['os-image'], ns, () =>
      cli(...withoutOption(commands[0]!, '--kubeconfig'), '--kubeconfig', env.kubeconfigPath, '-n', ns),
    );
    expect(res.code, `${commands[0]!.join(' ')}\n${res.out}\n${res.err}`).to.equal(0);
    expect(res.out).to.contain('PASSED: every mandatory rule holds.');
    expect(res.out).to.match(/\nfailure +run\n/);
  });

  describe('fails broken updaters, naming the rule', () => {
    it('fails an updater that completes a task it was expected to fail (bad input) with C4', async () => {
      const ns = await env.newNamespace('cf-lax');
      const u = await startFixtureUpdater(env.client, ns, UpdaterUpdateTasks, 'correct', 'lax');
      try {
        // The fixture takes any duration (it validates nothing), so a duration that is no number ends updated.
        const r = await kit({
          namespace: ns,
          kind: UpdaterUpdateTasks,
          updaterName: 'lax',
          failingTaskSpec: { parameters: { durationSeconds: 'soon' } },
        });
        expect(r.passed, explain(r)).to.equal(false);
        expect(failed(r)).to.deep.equal(['C4']);
        expect(r.rules.find((x) => x.id === 'C4')?.evidence.join('\n')).to.match(/failure: ended updated for the failing task spec/);
      } finally {
        await u.stop();
      }
    });

    const cases: { behaviour: Behaviour; custom?: boolean; rule: string; evidence: RegExp }[] = [
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
            // What the fixture's user knows: a task it must fail, and one slow enough to abort mid-way.
            taskSpec: { parameters: { durationSeconds: 0 } },
            slowTaskSpec: { parameters: { durationSeconds: 3600 } },
            failingTaskSpec: { parameters: { failWith: 'injected' } },
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

  describe('refuses to pass when nothing under test answers, or someone else does', () => {
    it('FAILS with the updater under test stopped: no updater reconciled the task', async () => {
      const ns = await env.newNamespace('cf-none');
      const r = await kit({ namespace: ns, kind: UpdaterUpdateTasks, updaterName: 'motd', timeoutMs: 2_000 });
      expect(r.passed, explain(r)).to.equal(false);
      expect(r.refusals.join('\n'), explain(r)).to.match(
        /^no updater reconciled UpdaterUpdateTask cf-none-\S+\/cf-\w+-normal within 2s \(no status at all\): is the updater under test running/,
      );
      expect(r.refusals.join('\n')).to.contain('an updater serving the generic updater name `motd`');
      expect(formatReport(r)).to.match(/\nFAILED: no updater reconciled/);
      expect(formatReport(r)).to.not.contain('PASSED');
    });

    it('FAILS an updater that never reports, for the same reason', async () => {
      const ns = await env.newNamespace('cf-silent');
      const u = await startFixtureUpdater(env.client, ns, UpdaterUpdateTasks, 'neverReports', 'broken');
      try {
        const r = await kit({ namespace: ns, kind: UpdaterUpdateTasks, updaterName: 'broken', timeoutMs: 2_000 });
        expect(r.passed, explain(r)).to.equal(false);
        expect(r.refusals.join('\n'), explain(r)).to.match(/^no updater reconciled/);
      } finally {
        await u.stop();
      }
    });

    it('FAILS when a catch-all updater answers for the stopped updater under test, every rule passing notwithstanding', async () => {
      const ns = await env.newNamespace('cf-catchall');
      const all = await sampleUpdaters.reference.start({ client: env.client, namespace: ns, catchAll: true, log: noopLogger });
      try {
        const r = await kit({ namespace: ns, kind: UpdaterUpdateTasks, updaterName: 'motd' });
        expect(failed(r), explain(r)).to.deep.equal([]);
        expect(r.passed, explain(r)).to.equal(false);
        expect(r.refusals.join('\n'), explain(r)).to.match(
          /task cf-\w+-decoy of updater name `inplace-conformance-unserved-\w+`, which no updater may serve, got a status.*catch-all/,
        );
        expect(formatReport(r)).to.not.contain('PASSED');
      } finally {
        await all.stop();
      }
    });

    it('FAILS when the status was written by another field manager than --field-manager (managedFields), not with the right one', async () => {
      const ns = await env.newNamespace('cf-manager');
      // The fixture's status patches (merge patches, as the SDK writes them) carry another field manager than the one
      // the kit is told: the API server records it in managedFields (an Update entry of the status subresource).
      const applying: KubeClient = Object.create(env.client) as KubeClient;
      applying.patch = (res, namespace, name, body, opts) =>
        env.client.patch(res, namespace, name, body, opts.subresource === 'status' ? { ...opts, fieldManager: 'fixture-writer' } : opts);
      const u = await startFixtureUpdater(applying, ns, FixtureTasks, 'correct');
      const spec = {
        timeoutMs: 3_000,
        taskSpec: { parameters: { durationSeconds: 0 } },
        slowTaskSpec: { parameters: { durationSeconds: 3600 } },
        failingTaskSpec: { parameters: { failWith: 'injected' } },
      };
      try {
        const wrong = await kit({ namespace: ns, kind: FixtureTasks, fieldManager: 'motd-updater', ...spec });
        expect(wrong.passed, explain(wrong)).to.equal(false);
        expect(wrong.refusals.join('\n')).to.contain(
          "the status of the kit's tasks was written by fixture-writer, not only by motd-updater (the field manager of the updater under test)",
        );
        expect(formatReport(wrong)).to.match(/Task status written by \(field managers, from managedFields\): fixture-writer \(\d+ tasks\)/);
        const right = await kit({ namespace: ns, kind: FixtureTasks, fieldManager: 'fixture-writer', ...spec });
        expect(right.refusals, explain(right)).to.deep.equal([]);
        expect(Object.keys(right.statusWriters)).to.deep.equal(['fixture-writer']);
      } finally {
        await u.stop();
      }
    });

    it('hints at --updater-name when a custom-kind updater filters on the updater-name label', async () => {
      const ns = await env.newNamespace('cf-label');
      const u = await startFixtureUpdater(env.client, ns, FixtureTasks, 'correct', 'motd');
      try {
        const r = await kit({ namespace: ns, kind: FixtureTasks, timeoutMs: 2_000, taskSpec: { parameters: { durationSeconds: 0 } } });
        expect(r.passed, explain(r)).to.equal(false);
        expect(r.refusals.join('\n'), explain(r)).to.contain(
          "if it only takes tasks whose label inplace.cluster.x-k8s.io/updater-name names it, pass that name with --updater-name (the kit's tasks carry inplace.cluster.x-k8s.io/updater-name=conformance)",
        );
        // With the name it serves, the same updater passes.
        const ok = await kit({
          namespace: ns,
          kind: FixtureTasks,
          updaterName: 'motd',
          taskSpec: { parameters: { durationSeconds: 0 } },
          slowTaskSpec: { parameters: { durationSeconds: 3600 } },
          failingTaskSpec: { parameters: { failWith: 'injected' } },
        });
        expect(ok.passed, explain(ok)).to.equal(true);
      } finally {
        await u.stop();
      }
    });
  });
});

describe('conformance kit: who wrote a task status (managedFields)', () => {
  it('names the managers of the status subresource or of f:status, not of spec or metadata', () => {
    const t = {
      metadata: {
        name: 't',
        managedFields: [
          { manager: 'inplace-conformance', operation: 'Update', fieldsV1: { 'f:spec': {} } },
          { manager: 'motd', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } },
          { manager: 'reference', operation: 'Apply', fieldsV1: { 'f:status': { 'f:updateStatus': {} } } },
          { manager: 'labeller', operation: 'Update', fieldsV1: { 'f:metadata': {} } },
        ],
      },
    };
    expect(statusManagers(t)).to.deep.equal(['motd', 'reference']);
    expect(statusManagers({ metadata: { name: 'none' } })).to.deep.equal([]);
  });
});
