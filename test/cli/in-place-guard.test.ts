// The in-place-only guard (cdk8s/in-place-guard.ts): its CEL, evaluated against upstream-shaped v1beta2
// KubeadmControlPlane and MachineDeployment updates, lets covered changes through, refuses uncovered ones naming the
// fields, ignores objects that did not opt in and the plan controller's owner alignment; the objects validate against
// the Kubernetes API schema; the fields it compares exist in the real Cluster API CRDs (so the CEL type-checks on a
// real server); with INPLACE_TEST_KUBECONFIG the real kube-apiserver enforces it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import * as admission from 'kubernetes-models/admissionregistration.k8s.io/v1';
import type { KubeObject } from '../../src/api/index.js';
import {
  GUARDED_KINDS,
  GUARD_FILE,
  GUARD_LABEL,
  guardCoversOf,
  guardPolicyName,
  inPlaceGuardObjects,
  synthesizeGuard,
  type GuardCover,
} from '../../cdk8s/in-place-guard.js';
import { PROJECT_ROOT } from '../../cdk8s/synth.js';
import { evaluateCel } from '../../tools/local-apiserver/offline.js';
import { loadCrdsByKind, schemaProblems } from '../capi-sim/schema-check.js';
import { realCapiCrdsDir, requireRealCapiCrds } from '../support/real-capi-crds.js';
import { startTestEnv } from '../support/env.js';
import { waitFor } from '../support/wait.js';

// Fixture edits reach deep into upstream-shaped JSON; a declared type per edit would drown the cases.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Obj = Record<string, unknown> & { metadata: { name: string; namespace: string; labels?: Record<string, string> } };
interface Policy {
  spec: {
    matchConditions: { name: string; expression: string }[];
    variables: { name: string; expression: string }[];
    validations: { expression: string; messageExpression: string }[];
  };
}

// The embedded API server's CEL (@bufbuild/cel), through its public entry: the admission variables (object,
// oldObject, request, variables) bound as kube-apiserver binds them.
const evalCel = (expr: string, root: Record<string, unknown>): unknown => evaluateCel(expr, root);

/** What kube-apiserver does with an UPDATE under `policy`: match conditions, variables in order, validations. */
function admit(
  policy: Policy,
  oldObject: Obj,
  object: Obj,
  username = 'system:serviceaccount:capi-system:capi-manager',
): { matched: boolean; allowed: boolean; message?: string } {
  const variables: Record<string, unknown> = {};
  const root = { object, oldObject, request: { operation: 'UPDATE', userInfo: { username } }, variables };
  for (const mc of policy.spec.matchConditions) if (evalCel(mc.expression, root) !== true) return { matched: false, allowed: true };
  for (const v of policy.spec.variables) variables[v.name] = evalCel(v.expression, root);
  for (const val of policy.spec.validations)
    if (evalCel(val.expression, root) !== true)
      return { matched: true, allowed: false, message: String(evalCel(val.messageExpression, root)) };
  return { matched: true, allowed: true };
}

const exampleCovers = (): GuardCover[] =>
  guardCoversOf(
    parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'hooks', 'updaters.yaml'), 'utf8')).map((d) => d.toJS() as unknown),
  );
// fleet-a: examples/hooks/updaters.yaml (Machine /spec/version; InfraMachine /spec/backend/docker/customImage).
// fleet-b: an NTP updater and one deep inside clusterConfiguration. fleet-c: no updater at all.
const COVERS: GuardCover[] = [
  ...exampleCovers(),
  { namespace: 'fleet-b', updater: 'ntp', selectResource: 'BootstrapConfig', path: '/spec/ntp' },
  { namespace: 'fleet-b', updater: 'apiserver-args', selectResource: 'BootstrapConfig', path: '/spec/clusterConfiguration/apiServer' },
];
const objects = inPlaceGuardObjects({ covers: COVERS, namespace: 'inplace-system', instance: 'inplace-capi' });
const policyOf = (kind: string): Policy =>
  objects.find(
    (o) =>
      o['kind'] === 'ValidatingAdmissionPolicy' &&
      (o['metadata'] as { name: string }).name === guardPolicyName(GUARDED_KINDS.find((k) => k.kind === kind)!),
  ) as unknown as Policy;

const ref = (apiGroup: string, kind: string, name: string): Record<string, string> => ({ apiGroup, kind, name });
/** A v1beta2 KubeadmControlPlane as Cluster API 1.11+ serves it. */
const kcp = (ns: string, labels: Record<string, string> = { [GUARD_LABEL]: 'true' }): Obj => ({
  apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
  kind: 'KubeadmControlPlane',
  metadata: { name: 'cp', namespace: ns, labels: { 'cluster.x-k8s.io/cluster-name': 'c1', ...labels } },
  spec: {
    replicas: 3,
    version: 'v1.33.1',
    machineTemplate: {
      metadata: { labels: { tier: 'cp' } },
      spec: {
        infrastructureRef: ref('infrastructure.cluster.x-k8s.io', 'DevMachineTemplate', 'cp-1'),
        deletion: { nodeDrainTimeoutSeconds: 60 },
      },
    },
    kubeadmConfigSpec: {
      clusterConfiguration: { apiServer: { extraArgs: [{ name: 'v', value: '2' }] } },
      files: [{ path: '/etc/motd', content: 'hello' }],
      ntp: { servers: ['0.pool.ntp.org'] },
    },
    rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
  },
});
/** A v1beta2 MachineDeployment. */
const md = (ns: string, labels: Record<string, string> = { [GUARD_LABEL]: 'true' }): Obj => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'MachineDeployment',
  metadata: { name: 'md', namespace: ns, labels: { 'cluster.x-k8s.io/cluster-name': 'c1', ...labels } },
  spec: {
    clusterName: 'c1',
    replicas: 2,
    selector: { matchLabels: { pool: 'md' } },
    template: {
      metadata: { labels: { pool: 'md' } },
      spec: {
        clusterName: 'c1',
        version: 'v1.33.1',
        bootstrap: { configRef: ref('bootstrap.cluster.x-k8s.io', 'KubeadmConfigTemplate', 'md-1') },
        infrastructureRef: ref('infrastructure.cluster.x-k8s.io', 'DevMachineTemplate', 'md-1'),
        deletion: { nodeDrainTimeoutSeconds: 60 },
      },
    },
  },
});
/** A copy of `o` changed by `f`. */
const edit = (o: Obj, f: (spec: Record<string, Json>, meta: Obj['metadata']) => void): Obj => {
  const c = structuredClone(o);
  f(c['spec'] as Record<string, Json>, c.metadata);
  return c;
};
/** The fields a refusal names (between "covers:" and the closing sentence). */
const named = (message: string | undefined): string[] =>
  (/covers:(.*?)\. Cover/.exec(message ?? '')?.[1] ?? '').trim().split(' ').filter(Boolean);

describe('in-place-only guard (ValidatingAdmissionPolicy, npm run synth -- --in-place-guard)', () => {
  // Against the real CRDs (the simulator's fixture CRDs are trimmed to what it uses): skipped locally without them,
  // failing in CI.
  it('the fixtures are upstream-shaped: they validate against the real v1beta2 CRDs', function () {
    requireRealCapiCrds(this);
    const crds = loadCrdsByKind(realCapiCrdsDir());
    expect([kcp('fleet-a'), md('fleet-a')].flatMap((o) => schemaProblems(o as unknown as KubeObject, crds))).to.deep.equal([]);
  });

  it('every field it compares exists in the v1beta2 schema of its kind (the CEL type-checks on a real server)', function () {
    requireRealCapiCrds(this);
    const crds = loadCrdsByKind(realCapiCrdsDir());
    for (const k of GUARDED_KINDS) {
      const crd = crds.get(`${k.group}/${k.kind}`)!;
      const schema = crd.spec.versions.find((v) => v.name === k.version)!.schema.openAPIV3Schema;
      for (const f of k.fields) {
        let s = schema;
        for (const t of f.path) {
          expect(s.properties, `${k.kind} ${f.path.join('.')}`).to.have.property(t);
          s = s.properties![t]!;
        }
      }
    }
  });

  it('the policies and bindings validate against the Kubernetes API schema', () => {
    expect(objects.map((o) => o['kind'])).to.deep.equal([
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    for (const o of objects) {
      const Model =
        o['kind'] === 'ValidatingAdmissionPolicy' ? admission.ValidatingAdmissionPolicy : admission.ValidatingAdmissionPolicyBinding;
      expect(() => new Model(structuredClone(o) as never).validate()).not.to.throw();
    }
    const file = synthesizeGuard({ covers: COVERS, namespace: 'inplace-system', instance: 'inplace-capi' });
    expect(file.name).to.equal(GUARD_FILE);
    expect(parseAllDocuments(file.content).map((d) => d.toJS() as unknown)).to.deep.equal(objects);
  });

  it('reads covers from InPlaceUpdater documents only, and refuses a bad updater naming it and what is wrong', () => {
    const u = (metadata: Record<string, unknown>, covers: unknown): Record<string, unknown> => ({
      apiVersion: 'inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'InPlaceUpdater',
      metadata,
      spec: { sequence: 1, covers },
    });
    const good = u({ name: 'k', namespace: 'fleet-x' }, [{ selectResource: 'Machine', path: '/spec/version' }]);
    const other = {
      apiVersion: 'samples.inplace.cluster.x-k8s.io/v1alpha1',
      kind: 'KubernetesVersionUpdateTaskTemplate',
      metadata: { name: 't' },
    };
    expect(guardCoversOf([good, other, null])).to.deep.equal([
      { namespace: 'fleet-x', updater: 'k', selectResource: 'Machine', path: '/spec/version' },
    ]);
    expect(() => guardCoversOf([u({ name: 'a' }, [])])).to.throw('InPlaceUpdater a has no metadata.namespace');
    expect(() => guardCoversOf([u({ name: 'b', namespace: 'n' }, [])])).to.throw('InPlaceUpdater b has no spec.covers');
    expect(() => guardCoversOf([u({ name: 'c', namespace: 'n' }, [{ selectResource: 'Node', path: '/spec/x' }])])).to.throw(
      /InPlaceUpdater c: selectResource must be Machine, InfraMachine or BootstrapConfig, got "Node"/,
    );
    expect(() => guardCoversOf([u({ name: 'd', namespace: 'n' }, [{ selectResource: 'Machine', path: '/status/x' }])])).to.throw(
      /InPlaceUpdater d: path must be a JSON pointer under \/spec/,
    );
  });

  describe('KubeadmControlPlane', () => {
    const policy = (): Policy => policyOf('KubeadmControlPlane');

    it('a covered change (the version, fleet-a) is allowed', () => {
      const old = kcp('fleet-a');
      expect(
        admit(
          policy(),
          old,
          edit(old, (s) => (s['version'] = 'v1.34.0')),
        ),
      ).to.deep.equal({ matched: true, allowed: true });
    });

    it('an uncovered change is refused naming exactly the uncovered fields (not the covered one)', () => {
      const old = kcp('fleet-a');
      const r = admit(
        policy(),
        old,
        edit(old, (s) => {
          s['version'] = 'v1.34.0';
          s['kubeadmConfigSpec'].files[0].content = 'bye';
          s['kubeadmConfigSpec'].mounts = [['/dev/sdb', '/data']];
        }),
      );
      expect(r.allowed).to.equal(false);
      expect(r.message).to.match(
        /^KubeadmControlPlane fleet-a\/cp is in-place-only \(label inplace.cluster.x-k8s.io\/in-place-only=true\)/,
      );
      expect(named(r.message)).to.deep.equal(['spec.kubeadmConfigSpec.files', 'spec.kubeadmConfigSpec.mounts']);
    });

    it('a template swap is allowed where an InfraMachine cover exists (fleet-a), refused where none does (fleet-c)', () => {
      const swap = (o: Obj): Obj => edit(o, (s) => (s['machineTemplate'].spec.infrastructureRef.name = 'cp-2'));
      expect(admit(policy(), kcp('fleet-a'), swap(kcp('fleet-a'))).allowed).to.equal(true);
      const r = admit(policy(), kcp('fleet-c'), swap(kcp('fleet-c')));
      expect(named(r.message)).to.deep.equal(['spec.machineTemplate.spec.infrastructureRef']);
    });

    it('a rollout request (spec.rollout.after) is always refused', () => {
      const r = admit(
        policy(),
        kcp('fleet-a'),
        edit(kcp('fleet-a'), (s) => (s['rollout'].after = '2026-11-26T00:00:00Z')),
      );
      expect(named(r.message)).to.deep.equal(['spec.rollout.after']);
    });

    it('what Cluster API propagates in place (template labels, deletion timeouts) and replicas pass without any updater', () => {
      const old = kcp('fleet-c');
      const next = edit(old, (s) => {
        s['replicas'] = 5;
        s['machineTemplate'].metadata.labels.tier = 'control-plane';
        s['machineTemplate'].spec.deletion.nodeDrainTimeoutSeconds = 120;
      });
      expect(admit(policy(), old, next)).to.deep.equal({ matched: true, allowed: true });
    });

    it('per namespace: fleet-b covers NTP; a change inside clusterConfiguration is refused as only partly covered', () => {
      const old = kcp('fleet-b');
      expect(
        admit(
          policy(),
          old,
          edit(old, (s) => (s['kubeadmConfigSpec'].ntp.servers = ['1.pool.ntp.org'])),
        ).allowed,
      ).to.equal(true);
      const r = admit(
        policy(),
        old,
        edit(old, (s) => (s['kubeadmConfigSpec'].clusterConfiguration.apiServer.extraArgs[0].value = '4')),
      );
      expect(r.message).to.include('spec.kubeadmConfigSpec.clusterConfiguration (only partly covered)');
      // fleet-a's version updater does not cover fleet-b.
      expect(
        named(
          admit(
            policy(),
            old,
            edit(old, (s) => (s['version'] = 'v1.34.0')),
          ).message,
        ),
      ).to.deep.equal(['spec.version']);
    });

    it('opted out (no label): not matched; removing the label together with an uncovered change: still refused', () => {
      const plain = kcp('fleet-c', {});
      expect(
        admit(
          policy(),
          plain,
          edit(plain, (s) => (s['version'] = 'v1.34.0')),
        ),
      ).to.deep.equal({ matched: false, allowed: true });
      const old = kcp('fleet-c');
      const r = admit(
        policy(),
        old,
        edit(old, (s, m) => {
          s['version'] = 'v1.34.0';
          delete m.labels![GUARD_LABEL];
        }),
      );
      expect(r.allowed).to.equal(false);
      // Removing the label on its own changes no machine: allowed, and afterwards the object is opted out.
      expect(
        admit(
          policy(),
          old,
          edit(old, (_s, m) => (m.labels![GUARD_LABEL] = 'false')),
        ).allowed,
      ).to.equal(true);
    });

    it("the plan controller's owner alignment is let through", () => {
      const old = kcp('fleet-c');
      const r = admit(
        policy(),
        old,
        edit(old, (s) => (s['version'] = 'v1.34.0')),
        'system:serviceaccount:inplace-system:inplace-plan-controller',
      );
      expect(r).to.deep.equal({ matched: false, allowed: true });
    });
  });

  describe('MachineDeployment', () => {
    const policy = (): Policy => policyOf('MachineDeployment');

    it('a covered version change is allowed; a bootstrap template swap without a BootstrapConfig cover and a failure domain are refused', () => {
      const old = md('fleet-a');
      expect(
        admit(
          policy(),
          old,
          edit(old, (s) => (s['template'].spec.version = 'v1.34.0')),
        ).allowed,
      ).to.equal(true);
      const r = admit(
        policy(),
        old,
        edit(old, (s) => {
          s['template'].spec.version = 'v1.34.0';
          s['template'].spec.bootstrap.configRef.name = 'md-2';
          s['template'].spec.failureDomain = 'zone-b';
        }),
      );
      expect(r.message).to.match(/^MachineDeployment fleet-a\/md is in-place-only/);
      expect(named(r.message)).to.deep.equal(['spec.template.spec.failureDomain', 'spec.template.spec.bootstrap']);
    });

    it('template labels, deletion timeouts, minReadySeconds and replicas pass in a namespace without updaters', () => {
      const old = md('fleet-c');
      const next = edit(old, (s) => {
        s['replicas'] = 4;
        s['template'].metadata.labels.extra = 'x';
        s['template'].spec.deletion.nodeDrainTimeoutSeconds = 30;
        s['template'].spec.minReadySeconds = 10;
      });
      expect(admit(policy(), old, next)).to.deep.equal({ matched: true, allowed: true });
    });
  });

  it('npm run synth -- --in-place-guard FILE writes the guard; an updater without namespace exits 2 naming the file; a later run without the flag removes it', function () {
    this.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), 'inplace-guard-'));
    try {
      const out = join(dir, 'out');
      const run = (args: string[]): ReturnType<typeof spawnSync> =>
        spawnSync(
          process.execPath,
          ['--import', 'tsx', join(PROJECT_ROOT, 'cdk8s', 'main.ts'), '--image', 'registry.example.com/x:1', '--outdir', out, ...args],
          {
            cwd: PROJECT_ROOT,
            encoding: 'utf8',
          },
        );
      const bad = join(dir, 'bad.yaml');
      writeFileSync(
        bad,
        'apiVersion: inplace.cluster.x-k8s.io/v1alpha1\nkind: InPlaceUpdater\nmetadata: {name: u}\nspec: {sequence: 1, covers: [{selectResource: Machine, path: /spec/version}]}\n',
      );
      const refused = run(['--in-place-guard', bad]);
      expect(refused.status).to.equal(2);
      expect(String(refused.stderr)).to.include(`--in-place-guard ${bad}: InPlaceUpdater u has no metadata.namespace`);
      expect(existsSync(join(out, GUARD_FILE))).to.equal(false);
      const ok = run(['--in-place-guard', join(PROJECT_ROOT, 'examples', 'hooks', 'updaters.yaml')]);
      expect(ok.status, String(ok.stderr)).to.equal(0);
      expect(readFileSync(join(out, GUARD_FILE), 'utf8')).to.equal(
        synthesizeGuard({ covers: exampleCovers(), namespace: 'inplace-system', instance: 'inplace-capi' }).content,
      );
      const again = run([]);
      expect(again.status).to.equal(0);
      expect(existsSync(join(out, GUARD_FILE))).to.equal(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // The real kube-apiserver evaluates the same CEL: the guard (bound to the test's namespace only) refuses an
  // uncovered KCP change naming the field and admits a covered one. A new policy takes effect after the API server's
  // informer sees it, so the refusal is waited for (dry-run updates: nothing changes meanwhile).
  it('a real kube-apiserver (INPLACE_TEST_KUBECONFIG) enforces it', async function () {
    if (!process.env['INPLACE_TEST_KUBECONFIG']) this.skip();
    requireRealCapiCrds(this);
    this.timeout(240_000);
    const env = await startTestEnv();
    const created: { res: Awaited<ReturnType<typeof env.client.resolve>>; name: string }[] = [];
    try {
      // The real KubeadmControlPlane CRD (used as it is when the cluster has it), so the policy type-checks against it.
      await env.installCrds([join(realCapiCrdsDir(), 'controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml')]);
      const ns = await env.newNamespace('guard');
      const covers: GuardCover[] = [{ namespace: ns, updater: 'kubernetes-version', selectResource: 'Machine', path: '/spec/version' }];
      const suffix = ns.slice(-6);
      for (const o of inPlaceGuardObjects({ covers, namespace: 'inplace-system', instance: 'inplace-test' })) {
        if (!String((o['metadata'] as { name: string }).name).includes('kubeadmcontrolplanes')) continue;
        const obj = structuredClone(o) as Record<string, Json>;
        obj['metadata'].name = `${obj['metadata'].name}-${suffix}`;
        if (obj['kind'] === 'ValidatingAdmissionPolicyBinding') {
          obj['spec'].policyName = `${obj['spec'].policyName}-${suffix}`;
          obj['spec'].matchResources = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } };
        }
        const res = await env.client.resolve('admissionregistration.k8s.io', String(obj['kind']));
        await env.client.create(res, obj as KubeObject);
        created.push({ res, name: obj['metadata'].name as string });
      }
      const kcpRes = await env.client.resolve('controlplane.cluster.x-k8s.io', 'KubeadmControlPlane');
      const v1beta2 = { ...kcpRes, version: 'v1beta2' };
      const current = await env.client.create(v1beta2, kcp(ns) as unknown as KubeObject);
      const tryUpdate = async (f: (s: Record<string, Json>) => void): Promise<string | undefined> => {
        const next = edit(current as unknown as Obj, f);
        try {
          await env.client.update(v1beta2, next as unknown as KubeObject, { dryRun: true });
          return undefined;
        } catch (e) {
          return (e as Error).message;
        }
      };
      let refusal: string | undefined;
      await waitFor(async () => (refusal = await tryUpdate((s) => (s['kubeadmConfigSpec'].files[0].content = 'bye'))) !== undefined, {
        timeoutMs: 120_000,
        intervalMs: 1000,
        message: 'the guard to refuse an uncovered change',
      });
      expect(refusal).to.include('spec.kubeadmConfigSpec.files');
      expect(refusal).to.include('is in-place-only');
      expect(await tryUpdate((s) => (s['version'] = 'v1.34.0'))).to.equal(undefined);
    } finally {
      for (const c of created.reverse()) await env.client.delete(c.res, undefined, c.name).catch(() => undefined);
      await env.stop();
    }
  });
});
