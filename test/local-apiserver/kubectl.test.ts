/* eslint-disable @typescript-eslint/no-explicit-any -- kubectl JSON output is asserted structurally */
// kubectl 1.32 against the server (local, or INPLACE_TEST_KUBECONFIG): apply, get (JSON and Table), patch, wait,
// watch, explain and delete, exactly as a user runs them.
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CRD_NAME, GROUP, PLURAL, widget, widgetCrd } from './fixtures.js';
import { existingCrd, startTarget, uniq, waitCrdGone, type Target } from './target.js';
import { crdDifferences, ExistingCrdMismatchError } from '../support/crds.js';
import { ConfigMaps, type KubeObject } from '../../src/api/kube.js';
import { createClient } from '../../src/runtime/client.js';
import { createEventRecorder } from '../../src/runtime/events.js';

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const hasKubectl = spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe('kubectl against the API server', function () {
  let t: Target;
  let dir: string;
  let kubeconfig: string;
  let ns: string;
  /** On a real cluster: the widget CRD was there before this run (so it is neither applied over nor deleted). */
  let crdPreexisted = false;
  let createdNs = false;

  const run = (args: string[], input?: string): Promise<{ code: number; out: string; err: string }> =>
    new Promise((resolve) => {
      const p = spawn(KUBECTL, ['--kubeconfig', kubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (c) => (out += c));
      p.stderr.on('data', (c) => (err += c));
      p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
      if (input !== undefined) p.stdin.end(input);
      else p.stdin.end();
    });
  const ok = async (args: string[], input?: string): Promise<string> => {
    const r = await run(args, input);
    expect(r.code, `kubectl ${args.join(' ')}\n${r.err}${r.out}`).to.equal(0);
    return r.out;
  };

  before(async function () {
    this.timeout(180_000);
    if (!hasKubectl) {
      console.log(`    (skipped: no kubectl on PATH; install Debian's kubernetes-client or set KUBECTL)`);
      this.skip();
    }
    t = await startTarget();
    dir = await mkdtemp(join(tmpdir(), 'las-kubectl-'));
    kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, t.kubeconfigYaml);
    ns = uniq('kctl');
    if (!t.local) {
      // One being deleted (e.g. by the conformance suite on a shared cluster) is waited out, not taken as present.
      const existing = await existingCrd(t, CRD_NAME);
      if (existing) {
        crdPreexisted = true;
        const differences = crdDifferences(existing, widgetCrd());
        if (differences.length > 0) throw new ExistingCrdMismatchError([{ name: CRD_NAME, differences }]);
      }
    }
  });

  after(async function () {
    this.timeout(180_000);
    if (!t) return;
    // Only what this run created.
    if (createdNs) await run(['delete', 'namespace', ns, '--wait=false']);
    if (!t.local && !crdPreexisted) {
      // Gone before the next suite looks for it (a terminating CRD passes for present, then vanishes).
      await run(['delete', 'crd', CRD_NAME, '--wait=false']);
      await waitCrdGone(t, CRD_NAME);
    }
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies a CRD and waits for it to be Established', async function () {
    await writeFile(join(dir, 'crd.yaml'), stringify(widgetCrd()));
    // A CRD that was already on a real cluster is not written: the server-side dry run goes through the same path.
    const out = await ok(['apply', ...(crdPreexisted ? ['--dry-run=server'] : []), '-f', join(dir, 'crd.yaml')]);
    expect(out).to.match(new RegExp(`customresourcedefinition.apiextensions.k8s.io/${CRD_NAME} (created|configured|unchanged)`));
    await ok(['wait', '--for=condition=Established', `crd/${CRD_NAME}`, '--timeout=30s']);
  });

  it('creates a namespace and applies a custom resource (client-side apply, fieldValidation=Strict)', async function () {
    expect(await ok(['create', 'namespace', ns])).to.contain(`namespace/${ns} created`);
    createdNs = true;
    await writeFile(join(dir, 'w.yaml'), stringify(widget(ns, 'w1', { size: 3 })));
    expect(await ok(['apply', '-f', join(dir, 'w.yaml')])).to.contain(`widget.${GROUP}/w1 created`);
    expect(await ok(['apply', '-f', join(dir, 'w.yaml')])).to.contain(`widget.${GROUP}/w1 unchanged`);
    await writeFile(join(dir, 'w.yaml'), stringify(widget(ns, 'w1', { size: 4 })));
    expect(await ok(['apply', '-f', join(dir, 'w.yaml')])).to.contain(`widget.${GROUP}/w1 configured`);
  });

  it('rejects an unknown field on apply (kubectl sends fieldValidation=Strict)', async function () {
    await writeFile(join(dir, 'bad.yaml'), stringify(widget(ns, 'w1', { size: 4, bogus: true })));
    const r = await run(['apply', '-f', join(dir, 'bad.yaml')]);
    expect(r.code).to.not.equal(0);
    expect(r.err).to.contain('unknown field "spec.bogus"');
  });

  it('reports schema violations from the server', async function () {
    await writeFile(join(dir, 'bad2.yaml'), stringify(widget(ns, 'w2', { size: 99 })));
    const r = await run(['apply', '-f', join(dir, 'bad2.yaml')]);
    expect(r.code).to.not.equal(0);
    expect(r.err).to.contain('spec.size');
    expect(r.err).to.contain('Invalid');
  });

  it('gets the object as JSON and as a Table with printer columns', async function () {
    const json = JSON.parse(await ok(['get', `${PLURAL}.${GROUP}`, 'w1', '-n', ns, '-o', 'json']));
    expect(json.spec.size).to.equal(4);
    expect(json.spec.color).to.equal('red');
    const table = await ok(['get', 'wd', '-n', ns]);
    const [header, row] = table.trim().split('\n');
    expect(header!.split(/\s{2,}/)).to.deep.equal(['NAME', 'SIZE', 'READY', 'AGE']);
    expect(row!.split(/\s+/).slice(0, 2)).to.deep.equal(['w1', '4']);
    const wide = await ok(['get', 'wd', '-n', ns, '-o', 'wide']);
    expect(wide.split('\n')[0]).to.contain('REASON');
  });

  it('patches the spec (merge) and the status subresource, then waits for a condition', async function () {
    expect(await ok(['patch', 'wd', 'w1', '-n', ns, '--type', 'merge', '-p', '{"spec":{"size":5}}'])).to.contain('patched');
    const waiter = run(['wait', `wd/w1`, '-n', ns, '--for=condition=Ready', '--timeout=30s']);
    await new Promise((r) => setTimeout(r, 300));
    await ok([
      'patch',
      'wd',
      'w1',
      '-n',
      ns,
      '--subresource=status',
      '--type',
      'merge',
      '-p',
      '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Done"}]}}',
    ]);
    const w = await waiter;
    expect(w.code, w.err).to.equal(0);
    expect(w.out).to.contain('condition met');
    const json = JSON.parse(await ok(['get', 'wd', 'w1', '-n', ns, '-o', 'json']));
    expect(json.metadata.generation).to.equal(3);
    expect(json.status.conditions[0].reason).to.equal('Done');
    await ok(['wait', 'wd/w1', '-n', ns, '--for=jsonpath={.spec.size}=5', '--timeout=10s']);
  });

  it('watches with get -w and prints a change', async function () {
    const p = spawn(KUBECTL, ['--kubeconfig', kubeconfig, 'get', 'wd', '-n', ns, '-w', '--output-watch-events'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    try {
      const deadline = Date.now() + 20_000;
      while (!out.includes('w1') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await ok(['patch', 'wd', 'w1', '-n', ns, '--type', 'merge', '-p', '{"spec":{"size":6}}']);
      while (!/MODIFIED\s+w1\s+6/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(out).to.match(/ADDED\s+w1\s+5/);
      expect(out).to.match(/MODIFIED\s+w1\s+6/);
    } finally {
      p.kill('SIGTERM');
    }
  });

  it('explains a field of the CRD from OpenAPI v3', async function () {
    const out = await ok(['explain', 'widgets.spec.size']);
    expect(out).to.contain(`GROUP:      ${GROUP}`);
    expect(out).to.contain('KIND:       Widget');
    expect(out).to.contain('FIELD: size <integer>');
  });

  it('server-side applies with a field manager', async function () {
    await writeFile(join(dir, 'ssa.yaml'), stringify(widget(ns, 'w3', { size: 2 })));
    expect(await ok(['apply', '--server-side', '--field-manager', 'kubectl-test', '-f', join(dir, 'ssa.yaml')])).to.contain(
      'serverside-applied',
    );
    const json = JSON.parse(await ok(['get', 'wd', 'w3', '-n', ns, '-o', 'json', '--show-managed-fields']));
    expect(json.metadata.managedFields.some((m: any) => m.manager === 'kubectl-test' && m.operation === 'Apply')).to.equal(true);
  });

  it('creates and lists built-in kinds with kubectl create (protobuf request bodies)', async function () {
    await ok(['create', 'configmap', 'cm1', '-n', ns, '--from-literal=a=b']);
    await ok(['create', 'secret', 'generic', 's1', '-n', ns, '--from-literal=a=b']);
    await ok(['create', 'serviceaccount', 'sa1', '-n', ns]);
    const cm = JSON.parse(await ok(['get', 'configmap', 'cm1', '-n', ns, '-o', 'json']));
    expect(cm.data).to.deep.equal({ a: 'b' });
    const s = JSON.parse(await ok(['get', 'secret', 's1', '-n', ns, '-o', 'json']));
    expect(s.data).to.deep.equal({ a: Buffer.from('b').toString('base64') });
    await ok(['label', 'configmap', 'cm1', '-n', ns, 'x=y']);
    expect(await ok(['get', 'cm', '-n', ns, '-l', 'x=y', '-o', 'name'])).to.contain('configmap/cm1');
  });

  it('shows the events.k8s.io/v1 Events the platform records in kubectl describe and kubectl events', async function () {
    const client = createClient(t.kc, { userAgent: 'kubectl-test-recorder' });
    const cm = await client.get<KubeObject>(ConfigMaps, ns, 'cm1');
    if (!cm) throw new Error('configmap cm1 is missing');
    const rec = createEventRecorder(client, { component: 'inplace-test-recorder', host: 'test-host', eventAction: () => 'Testing' });
    rec.event(cm, 'Warning', 'SeriesReason', 'seen twice');
    rec.event(cm, 'Warning', 'SeriesReason', 'seen twice');
    rec.event(cm, 'Normal', 'OnceReason', 'seen once');
    await rec.flush();
    const described = await ok(['describe', 'configmap', 'cm1', '-n', ns]);
    expect(described).to.match(/Events:[\s\S]*Warning\s+SeriesReason[\s\S]*seen twice/);
    expect(described).to.match(/Normal\s+OnceReason[\s\S]*seen once/);
    expect(described).to.contain('inplace-test-recorder');
    const events = await ok(['events', '-n', ns, '--for', 'configmap/cm1']);
    expect(events).to.match(/SeriesReason[\s\S]*seen twice/);
    expect(events).to.match(/OnceReason[\s\S]*seen once/);
    const v1 = JSON.parse(await ok(['get', 'events.v1.events.k8s.io', '-n', ns, '-o', 'json']));
    const series = v1.items.find((e: any) => e.reason === 'SeriesReason');
    expect(series).to.deep.include({ action: 'Testing', note: 'seen twice', reportingController: 'inplace-test-recorder' });
    expect(series.series.count).to.equal(2);
  });

  it('deletes, and reports NotFound for a missing object', async function () {
    expect(await ok(['delete', 'wd', 'w1', '-n', ns])).to.contain(`widget.${GROUP} "w1" deleted`);
    const r = await run(['delete', 'wd', 'w1', '-n', ns]);
    expect(r.code).to.not.equal(0);
    expect(r.err).to.contain(`Error from server (NotFound): ${PLURAL}.${GROUP} "w1" not found`);
  });
});
