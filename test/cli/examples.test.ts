// Every file of examples/ previews as its comments say (OK, or NOT OK for its documented reason) against the demo's
// inventory, and runs in the demo — by the end-to-end test named in the table below, by one here, or the table says
// why it cannot (issue 42: "every example runs"). A new file in examples/ without an entry fails here.
// The examples name the demo's namespaces (fleet-a, fleet-edge); they are previewed from copies in namespaces of the
// test's own, so the test runs on a shared real cluster too.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject } from '../../src/api/index.js';
import { projectRoot } from '../../src/cli/procs.js';
import { DEMO } from '../../src/cli/demo-platform.js';
import { FLEET } from '../../src/cli/demo-fleet.js';
import { applyInventory, buildFleetInventory, buildInventory, capiCrdDirs, fleetOf } from '../../tools/capi-sim/index.js';
import { readYamlDocs, applyFile } from '../../src/cli/install.js';
import { cli, type CliRun } from '../support/cli.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';

const ROOT = projectRoot();
const EXAMPLES = join(ROOT, 'examples');

/** Where an example runs in the demo: the end-to-end test that runs it, or why it is not run there. */
type DemoRun = { test: string; shows: string } | { here: string } | { notRun: string };

/** How an example previews: OK, NOT OK with its documented problems, or not a preview input (and why). */
type Preview =
  | { ok: true; args?: string[] }
  | { notOk: RegExp[]; args?: string[] }
  | { via: string; expectCode: number; out: RegExp }
  | { none: string };

const TABLE: Record<string, { preview: Preview; demo: DemoRun }> = {
  'plan.yaml': {
    preview: { ok: true },
    demo: { test: 'test/cli/demo.e2e.test.ts', shows: 'examples/plan.yaml' },
  },
  'invalid-plan.yaml': {
    // Its comment's "Expected problems".
    preview: {
      notOk: [
        /MachineDeployment \S+\/cluster1-md-9 not found/,
        /template OSImageUpdateTaskTemplate \S+\/no-such-template not found/,
        /Machine \/status\/phase is not writable/,
        /BootstrapConfig \/spec\/ntp \(updater ntp-a\) overlaps \/spec\/ntp\/servers \(updater ntp-b\)/,
      ],
    },
    demo: { test: 'test/cli/demo.e2e.test.ts', shows: 'examples/invalid-plan.yaml' },
  },
  'staged-plan.yaml': {
    // Its templates are those of plan.yaml, applied first here as after `npm start`.
    preview: { ok: true },
    demo: {
      notRun:
        'created paused: it waits for `inplace resume` by design; its updaters and templates are those of plan.yaml, which the demo runs',
    },
  },
  'workers-only-plan.yaml': {
    preview: { ok: true },
    demo: {
      notRun:
        "the README's own-updater path (npm start -- --no-reference-updater --plan examples/workers-only-plan.yaml, then the ntp updater): test/contract/example-ntp-updater.test.ts runs it with a plan of the same shape (ntp-config on the workers) without a second demo start",
    },
  },
  'gated-plan.yaml': {
    preview: { ok: true, args: ['--write-policy', join(EXAMPLES, 'write-policy.yaml')] },
    demo: { here: 'npm start -- --write-policy examples/write-policy.yaml --plan examples/gated-plan.yaml' },
  },
  'write-policy.yaml': {
    preview: { none: 'a write policy, not a plan: gated-plan.yaml is previewed with it (--write-policy)' },
    demo: { here: 'the --write-policy of the gated-plan.yaml demo run' },
  },
  'alert-gate-policy.yaml': {
    preview: { none: "the operator's alert-gate policy, not a plan: campaign-windows.yaml is previewed with it (--alert-gate-policy)" },
    demo: {
      notRun:
        'the demos run no alert gate; test/e2e/alerts.test.ts runs the plan controller with a policy against a real Prometheus, test/security/alert-gate.test.ts against hostile endpoints',
    },
  },
  'campaign.yaml': {
    preview: { ok: true },
    demo: { test: 'test/campaign-controller/demo-fleet.e2e.test.ts', shows: '--fleet' },
  },
  'campaign-windows.yaml': {
    // Its alert gate calls an endpoint: only one the operator's alert-gate policy allows (docs/design.md §13).
    preview: { ok: true, args: ['--alert-gate-policy', join(EXAMPLES, 'alert-gate-policy.yaml')] },
    demo: {
      notRun:
        "it starts clusters only in the stores' night (Europe/Berlin): a demo run would wait for the window; src/campaign-controller/decide.test.ts checks when it starts",
    },
  },
  'ocm/fleet.yaml': {
    preview: {
      none: 'the input of npm run synth -- --ocm (Open Cluster Management hub objects), not an object: test/ocm/ocm-apply.test.ts applies what it writes, and the campaign it carries, to a server with the OCM CRDs',
    },
    demo: { test: 'test/ocm/ocm-apply.test.ts', shows: 'examples/ocm/fleet.yaml' },
  },
  'hooks/updaters.yaml': {
    // InPlaceUpdaters: what Cluster API would do with the --hooks demo's change of the control plane (maxSurge 0, a new
    // version), per machine: every machine in place, by the kubernetes-version updater.
    preview: {
      via: 'preview kcp/cluster1-cp --version v1.30.1 --set spec.rollout.strategy.rollingUpdate.maxSurge=0',
      expectCode: 0,
      out: /3 machines — 3 in place, 0 replaced[\s\S]*kubernetes-version/,
    },
    demo: { test: 'test/cli/demo-hooks.e2e.test.ts', shows: '--hooks' },
  },
  'updaters/ntp-updater.ts': {
    preview: { none: 'an updater (TypeScript), not an object to preview' },
    demo: { test: 'test/contract/example-ntp-updater.test.ts', shows: 'examples/updaters/ntp-updater.ts' },
  },
  'updaters/shell-updater.sh': {
    preview: { none: 'an updater (shell), not an object to preview' },
    demo: {
      notRun:
        'needs kubectl and jq; it is the shell twin of ntp-updater.ts (same name, same task), whose demo run test/contract/example-ntp-updater.test.ts checks',
    },
  },
  'updaters/README.md': {
    preview: { none: 'documentation' },
    demo: { notRun: 'documentation' },
  },
};

/** Every file under examples/, relative to it. */
const exampleFiles = (): string[] =>
  readdirSync(EXAMPLES, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(EXAMPLES.length + 1))
    .sort();

describe('every file of examples/ previews as documented and runs in the demo (or says why not)', function () {
  this.timeout(180_000);
  let env: TestEnv;
  let nsA: string;
  let nsEdge: string;
  let kc: string[];
  const tmp = mkdtempSync(join(tmpdir(), 'inplace-examples-'));
  /** A copy of an example in the test's namespaces. */
  const copy = (file: string): string => {
    const p = join(tmp, file.replace(/\//g, '_'));
    writeFileSync(
      p,
      readFileSync(join(EXAMPLES, file), 'utf8')
        .replace(new RegExp(`namespace: ${DEMO.namespace}\\b`, 'g'), `namespace: ${nsA}`)
        .replace(new RegExp(`namespace: ${FLEET.namespace}\\b`, 'g'), `namespace: ${nsEdge}`),
    );
    return p;
  };

  before(async function () {
    env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
    kc = ['--kubeconfig', env.kubeconfigPath];
    nsA = await env.newNamespace('examples-a');
    nsEdge = await env.newNamespace('examples-edge');
    // The single-plan demo's inventory (npm start) and the templates of plan.yaml, which npm start applies with it.
    await applyInventory(
      env.client,
      buildInventory({
        namespace: nsA,
        clusterName: DEMO.clusterName,
        version: DEMO.version,
        controlPlane: { ...DEMO.controlPlane },
        machineDeployments: DEMO.machineDeployments.map((m) => ({ ...m })),
      }),
    );
    const templates = readYamlDocs(copy('plan.yaml')).filter((d) => d.kind !== 'InPlaceUpdatePlan');
    const templatesFile = join(tmp, 'templates.yaml');
    writeFileSync(templatesFile, templates.map((d) => JSON.stringify(d)).join('\n---\n'));
    await applyFile(env.client, templatesFile, nsA);
    // The fleet demo's clusters (npm start -- --fleet): three shapes in three rollout rings.
    const clusters = fleetOf(FLEET.clusters, 'edge', FLEET.label).map((c, i) => ({
      ...c,
      labels: { ...c.labels, 'rollout-ring': String(Math.floor(i / 2) % 3) },
    }));
    await applyInventory(env.client, buildFleetInventory({ namespace: nsEdge, version: FLEET.version, clusters }));
  });
  after(async () => env?.stop());

  it('has an entry for every file of examples/, and none for a file that is gone', () => {
    expect(exampleFiles()).to.deep.equal(Object.keys(TABLE).sort());
  });

  it('each example run by another end-to-end test is named in that test', () => {
    for (const [file, { demo }] of Object.entries(TABLE)) {
      if (!('test' in demo)) continue;
      const p = join(ROOT, demo.test);
      expect(existsSync(p), `${file}: ${demo.test}`).to.equal(true);
      expect(readFileSync(p, 'utf8'), `${demo.test} runs ${file}`).to.contain(demo.shows);
    }
  });

  for (const [file, { preview }] of Object.entries(TABLE)) {
    if ('none' in preview) continue;
    const what = 'ok' in preview ? 'OK' : 'notOk' in preview ? 'NOT OK with its documented problems' : `with ${preview.via}`;
    it(`${file} previews ${what}`, async () => {
      let r: CliRun;
      if ('via' in preview) {
        await applyFile(env.client, copy(file), nsA);
        r = await cli(...preview.via.split(' '), '-n', nsA, ...kc);
        expect(r.code, r.out + r.err).to.equal(preview.expectCode);
        expect(r.out).to.match(preview.out);
        return;
      }
      r = await cli('preview', '-f', copy(file), ...(preview.args ?? []), ...kc);
      if ('ok' in preview) {
        expect(r.code, r.out + r.err).to.equal(0);
        expect(r.out).to.match(/Result: OK|VALID/);
        expect(r.out).not.to.match(/NOT VALID|NOT OK/);
      } else {
        expect(r.code, r.out + r.err).to.equal(1);
        for (const re of preview.notOk) expect(r.out + r.err).to.match(re);
      }
    });
  }

  it('gated-plan.yaml is refused without the write policy, naming the annotations', async () => {
    const r = await cli('preview', '-f', copy('gated-plan.yaml'), ...kc);
    expect(r.code).to.equal(1);
    expect(r.out + r.err).to.contain('annotations are not writable');
  });

  it('gated-plan.yaml runs in the demo with --write-policy examples/write-policy.yaml: valid, then waiting for its window', async function () {
    if (env.isRealCluster) this.skip(); // the demo brings its own API server; once is enough
    this.timeout(240_000);
    const work = mkdtempSync(join(tmpdir(), 'inplace-gated-demo-'));
    const state = join(work, 'state.json');
    const args = [
      join(ROOT, 'bin', 'inplace.mjs'),
      'demo',
      '--write-policy',
      join(EXAMPLES, 'write-policy.yaml'),
      '--plan',
      join(EXAMPLES, 'gated-plan.yaml'),
      '--timeout',
      '15',
      '--state-out',
      state,
      '--work-dir',
      work,
    ];
    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (out += d.toString()));
      p.on('close', (code) => resolve({ code, out }));
    });
    // It ends when --timeout passes: the plan waits for Saturday night in Berlin (or, then, is still updating).
    expect(run.out, run.out).not.to.contain('not writable');
    expect(run.out).not.to.contain('the plan is invalid');
    const plan = (JSON.parse(readFileSync(state, 'utf8')) as { plan: InPlaceUpdatePlan & KubeObject }).plan;
    expect(
      plan.status?.conditions?.find((c) => c.type === 'Valid'),
      run.out,
    ).to.include({ status: 'True' });
    expect(run.code).to.equal(plan.status?.updateStatus === 'updated' ? 0 : 1);
  });
});
