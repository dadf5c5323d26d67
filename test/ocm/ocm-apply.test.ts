// `npm run synth -- --ocm examples/ocm/fleet.yaml` (docs/ocm.md) through an API server with the real Open Cluster
// Management CRDs installed (OCM_CRDS_DIR, else ../shared/reference/ocm-crds beside the checkout): the embedded API
// server here, a real kube-apiserver under `npm run test:real`. Every hub object is server-side applied and read back
// with every field written (a field the CRD does not know would be pruned, silently); the ManifestWork OCM derives
// per management cluster from the replica set's template and the campaign it carries are applied as OCM's agent would
// apply them. What the CRDs refuse (a CEL rule without condition, a bad percentage or deadline, a bad group name) is
// refused by the server too. Also: the input's validation (every problem at once) and the command itself.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/api/index.js';
import { PROJECT_ROOT } from '../../cdk8s/synth.js';
import {
  campaignManifest,
  ocmObjects,
  parseOcmFleetInput,
  synthesizeOcm,
  workAgentRole,
  type OcmFleetInput,
  type OcmObject,
} from '../../cdk8s/ocm.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { manifestProblems } from '../cli/manifest-schemas.js';

const EXAMPLE = join(PROJECT_ROOT, 'examples', 'ocm', 'fleet.yaml');

/** The real OCM CRDs: OCM_CRDS_DIR, else ../shared/reference/ocm-crds beside the checkout. */
const ocmCrdsDir = (): string =>
  process.env['OCM_CRDS_DIR'] ? resolve(process.env['OCM_CRDS_DIR']) : resolve(PROJECT_ROOT, '../shared/reference/ocm-crds');

/** The example input, with the hub's and the campaign's namespace set to `ns`. */
function exampleIn(ns: string): OcmFleetInput {
  const doc = parse(readFileSync(EXAMPLE, 'utf8')) as { hub: { namespace: string }; campaign: { namespace: string } };
  doc.hub.namespace = ns;
  doc.campaign.namespace = ns;
  return parseOcmFleetInput(doc);
}

/** The paths where `actual` lacks a value `expected` has (objects by key, arrays by index). */
function missing(expected: unknown, actual: unknown, path = ''): string[] {
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(expected) !== Array.isArray(actual)) return [path || '(root)'];
    return Object.entries(expected).flatMap(([k, v]) => missing(v, (actual as Record<string, unknown>)[k], `${path}.${k}`));
  }
  return expected === actual ? [] : [`${path}: ${JSON.stringify(actual)} instead of ${JSON.stringify(expected)}`];
}

const clone = <T>(x: T): T => structuredClone(x);

describe('npm run synth -- --ocm: the hub objects on an API server with the real OCM CRDs', function () {
  this.timeout(180_000);
  let env: TestEnv;
  let ns = '';

  before(async function () {
    const dir = ocmCrdsDir();
    if (!existsSync(dir)) {
      // A check that silently skips proves nothing: CI and an explicit OCM_CRDS_DIR fail instead.
      if (process.env['CI'] || process.env['OCM_CRDS_DIR'])
        throw new Error(`the real OCM CRDs are required here but ${dir} does not exist`);
      console.log(`    (skipped: no OCM CRDs at ${dir}; set OCM_CRDS_DIR; CI fails here)`);
      this.skip();
    }
    env = await startTestEnv({ crds: PROJECT_CRDS });
    // Every OCM CRD is accepted as it is (structural schema, CEL rules and their cost, defaults).
    await env.installCrds([dir]);
    ns = await env.newNamespace('ocm');
  });
  after(async () => {
    await env?.stop();
  });

  /** Server-side applies `obj` (dry run or for real); returns what the server answered. */
  async function apply(obj: OcmObject, dryRun = false): Promise<KubeObject> {
    const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
    const res = await env.client.resolve(group!, obj.kind);
    return env.client.patch({ ...res, version: version! }, obj.metadata.namespace, obj.metadata.name, obj as unknown as KubeObject, {
      type: 'apply',
      force: true,
      dryRun,
      fieldManager: 'inplace-ocm-test',
    });
  }

  it('every hub object (examples/ocm/fleet.yaml) is accepted and stored with every field written', async () => {
    const objs = ocmObjects(exampleIn(ns));
    expect(objs.map((o) => o.kind)).to.deep.equal(['ManagedClusterSetBinding', 'Placement', 'ManifestWorkReplicaSet']);
    for (const o of objs) {
      await apply(o);
      const [group] = o.apiVersion.split('/');
      const stored = await env.client.get(await env.client.resolve(group!, o.kind), ns, o.metadata.name);
      expect(missing(o['spec'], stored?.['spec']), `${o.kind} ${o.metadata.name}`).to.deep.equal([]);
    }
  });

  it("the ManifestWork OCM makes per management cluster from the template is accepted, and so is the campaign it carries (what OCM's agent applies there)", async () => {
    const input = exampleIn(ns);
    const mwrs = ocmObjects(input).find((o) => o.kind === 'ManifestWorkReplicaSet')!;
    // OCM's replica set controller: a ManifestWork in the management cluster's namespace on the hub, its spec the template.
    const work: OcmObject = {
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: { name: mwrs.metadata.name, namespace: ns },
      spec: (mwrs['spec'] as { manifestWorkTemplate: unknown }).manifestWorkTemplate,
    };
    await apply(work);
    const stored = await env.client.get(
      await env.client.resolve('work.open-cluster-management.io', 'ManifestWork'),
      ns,
      work.metadata.name,
    );
    expect(missing(work['spec'], stored?.['spec'])).to.deep.equal([]);
    // What the work carries: the agent's role, then the campaign.
    const manifests = (work['spec'] as { workload: { manifests: OcmObject[] } }).workload.manifests;
    expect(manifests.map((m) => m.kind)).to.deep.equal(['ClusterRole', 'InPlaceUpdateCampaign']);
    // The campaign against the platform's CRD (its CEL rules included), server-side applied as the agent's strategy says.
    const campaign = campaignManifest(input);
    const applied = await apply(campaign, true);
    expect(missing(campaign['spec'], applied['spec'])).to.deep.equal([]);
    // The embedded server serves no RBAC kinds: the role is checked against the Kubernetes schema, and on a real one.
    expect(manifestProblems([workAgentRole() as unknown as KubeObject])).to.deep.equal([]);
    if (env.isRealCluster) await apply(workAgentRole(), true);
  });

  it('what the OCM CRDs refuse is refused', async () => {
    const objs = ocmObjects(exampleIn(ns));
    const mwrs = objs.find((o) => o.kind === 'ManifestWorkReplicaSet')!;
    const placement = objs.find((o) => o.kind === 'Placement')!;
    type Mwrs = {
      spec: {
        placementRefs: { rolloutStrategy: { progressive: Record<string, unknown> } }[];
        manifestWorkTemplate: { manifestConfigs: { conditionRules: { condition: string }[] }[] };
      };
    };
    type Plc = { spec: { decisionStrategy: { groupStrategy: { decisionGroups: Record<string, unknown>[] } } } };
    const bad: [string, OcmObject, RegExp][] = [];
    {
      const o = clone(mwrs) as unknown as Mwrs;
      o.spec.manifestWorkTemplate.manifestConfigs[0]!.conditionRules[0]!.condition = '';
      bad.push(['a CEL condition rule without condition', o as unknown as OcmObject, /Condition is required for CEL rules/]);
    }
    {
      const o = clone(mwrs) as unknown as Mwrs;
      o.spec.placementRefs[0]!.rolloutStrategy.progressive['maxConcurrency'] = '150%';
      bad.push(['maxConcurrency 150%', o as unknown as OcmObject, /maxConcurrency/]);
    }
    {
      const o = clone(mwrs) as unknown as Mwrs;
      o.spec.placementRefs[0]!.rolloutStrategy.progressive['progressDeadline'] = '12 hours';
      bad.push(['progressDeadline "12 hours"', o as unknown as OcmObject, /progressDeadline/]);
    }
    {
      const o = clone(placement) as unknown as Plc;
      o.spec.decisionStrategy.groupStrategy.decisionGroups[0]!['groupName'] = 'canary group!';
      bad.push(['a decision group name with a space', o as unknown as OcmObject, /groupName/]);
    }
    {
      const o = clone(placement) as unknown as Plc;
      delete o.spec.decisionStrategy.groupStrategy.decisionGroups[0]!['groupClusterSelector'];
      bad.push(['a decision group without selector', o as unknown as OcmObject, /groupClusterSelector/]);
    }
    const accepted: string[] = [];
    for (const [what, o, why] of bad) {
      const err = await apply(o, true).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      if (!err) accepted.push(what);
      else expect(err.message, what).to.match(why);
    }
    expect(accepted).to.deep.equal([]);
  });
});

describe('npm run synth -- --ocm: the input and the command', function () {
  this.timeout(120_000);

  it('the example parses, with the rollout mapped onto a Progressive strategy and the canaries as the mandatory group', () => {
    const objs = ocmObjects(parseOcmFleetInput(parse(readFileSync(EXAMPLE, 'utf8'))));
    const mwrs = objs.find((o) => o.kind === 'ManifestWorkReplicaSet')!;
    expect((mwrs['spec'] as { placementRefs: unknown[] }).placementRefs).to.deep.equal([
      {
        name: 'edge-v1-30-1',
        rolloutStrategy: {
          type: 'Progressive',
          progressive: {
            mandatoryDecisionGroups: [{ groupName: 'canary' }],
            maxConcurrency: '25%',
            maxFailures: 1,
            minSuccessTime: '3600s',
            progressDeadline: '12h',
          },
        },
      },
    ]);
    const placement = objs.find((o) => o.kind === 'Placement')!;
    expect(placement['spec']).to.deep.include({
      decisionStrategy: {
        groupStrategy: {
          decisionGroups: [{ groupName: 'canary', groupClusterSelector: { labelSelector: { matchLabels: { 'rollout-ring': 'canary' } } } }],
        },
      },
    });
  });

  it('without canary or options: no decision group, no mandatory group, one management cluster at a time, no failure tolerated', () => {
    const input = parseOcmFleetInput({
      name: 'f',
      hub: { namespace: 'h', clusterSets: ['s'] },
      campaign: { namespace: 'c', spec: { clusterNames: ['a'], template: { controlPlane: {} } } },
    });
    const objs = ocmObjects(input);
    expect(objs.find((o) => o.kind === 'Placement')!['spec']).to.deep.equal({ clusterSets: ['s'] });
    const refs = (objs.find((o) => o.kind === 'ManifestWorkReplicaSet')!['spec'] as { placementRefs: unknown[] }).placementRefs;
    expect(refs).to.deep.equal([
      {
        name: 'f',
        rolloutStrategy: {
          type: 'Progressive',
          progressive: { maxConcurrency: 1, maxFailures: 0, minSuccessTime: '0s', progressDeadline: 'None' },
        },
      },
    ]);
  });

  it('a bad input is refused with every problem listed', () => {
    const bad = {
      name: 'Edge_1',
      hub: { namespace: 'fleet', clusterSets: [], managementClusters: {} },
      rollout: {
        maxConcurrentClusters: '0%',
        failureBudget: -1,
        soakSeconds: 1.5,
        progressDeadline: '12 hours',
        canary: { clusterNames: ['a'] },
      },
      campaign: { namespace: 'fleet-edge', spec: { template: {} } },
      extra: true,
    };
    let message = '';
    try {
      parseOcmFleetInput(bad);
    } catch (e) {
      message = (e as Error).message;
    }
    for (const p of [
      /^invalid --ocm input \(\d+ problems\):/,
      /name: must be a DNS label/,
      /hub\.clusterSets: name at least one ManagedClusterSet/,
      /hub\.managementClusters: a label selector needs matchLabels or matchExpressions/,
      /rollout\.maxConcurrentClusters: /,
      /rollout\.failureBudget: /,
      /rollout\.soakSeconds: /,
      /rollout\.progressDeadline: must be a duration/,
      /rollout\.canary: .*clusterNames/,
      /campaign\.spec: a campaign selects Clusters by clusterSelector or clusterNames/,
      /\(root\): .*extra/,
    ])
      expect(message).to.match(p);
  });

  it('writes dist/ocm/<name>.yaml (here --outdir) equal to the synthesized objects; a bad file exits 2 and writes nothing', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'inplace-ocm-'));
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'cdk8s', 'main.ts'), ...args], {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
      });
    const ok = run('--ocm', EXAMPLE, '--outdir', join(tmp, 'ok'));
    expect(ok.status, ok.stderr).to.equal(0);
    const written = readFileSync(join(tmp, 'ok', 'edge-v1-30-1.yaml'), 'utf8');
    expect(written).to.equal(synthesizeOcm(parseOcmFleetInput(parse(readFileSync(EXAMPLE, 'utf8')))).content);
    expect(parseAllDocuments(written).map((d) => (d.toJS() as OcmObject).kind)).to.deep.equal([
      'ManagedClusterSetBinding',
      'Placement',
      'ManifestWorkReplicaSet',
    ]);
    const badFile = join(tmp, 'bad.yaml');
    spawnSync('sh', ['-c', `printf 'name: x\\nhub: {}\\n' > ${badFile}`]);
    const bad = run('--ocm', badFile, '--outdir', join(tmp, 'bad'));
    expect(bad.status).to.equal(2);
    expect(bad.stderr).to.match(/hub\.namespace: [\s\S]*hub\.clusterSets: [\s\S]*campaign: /);
    expect(existsSync(join(tmp, 'bad')) ? readdirSync(join(tmp, 'bad')) : []).to.deep.equal([]);
    const flags = run('--ocm', EXAMPLE, '--image', 'x/y:z');
    expect(flags.status).to.equal(2);
    expect(flags.stderr).to.match(/--ocm takes only --outdir, not --image/);
  });
});
