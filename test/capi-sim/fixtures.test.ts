import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { CAPI_FIXTURE_CRDS_DIR, CAPI_RUNTIME_CRDS_DIR, capiCrdDirs } from '../../tools/capi-sim/index.js';
import { compareCrds, schemaPaths, type Crd } from './schema-compare.js';
import { requireRealCapiCrds } from '../support/real-capi-crds.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const realDir = process.env['CAPI_CRDS_DIR'] ?? resolve(repoRoot, '../shared/reference/capi-crds');

const loadDir = (dir: string): Map<string, Crd> => {
  const out = new Map<string, Crd>();
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const crd = doc.toJS() as Crd | null;
      if (crd?.kind === 'CustomResourceDefinition') out.set(crd.metadata.name ?? f, crd);
    }
  }
  return out;
};

/** Paths (per kind, in v1beta2) that the platform, the simulator and the tests read or write. */
const USED_PATHS: Record<string, string[]> = {
  'machines.cluster.x-k8s.io': [
    '/spec/clusterName',
    '/spec/version',
    '/spec/failureDomain',
    '/spec/infrastructureRef/apiGroup',
    '/spec/infrastructureRef/kind',
    '/spec/infrastructureRef/name',
    '/spec/bootstrap/configRef/apiGroup',
    '/spec/bootstrap/configRef/kind',
    '/spec/bootstrap/configRef/name',
    '/status/nodeRef/name',
    '/status/nodeInfo/kubeletVersion',
    '/status/initialization/infrastructureProvisioned',
    '/status/initialization/bootstrapDataSecretCreated',
    '/status/phase',
    '/status/conditions[]/type',
    '/status/conditions[]/reason',
  ],
  'machinedeployments.cluster.x-k8s.io': [
    '/spec/clusterName',
    '/spec/replicas',
    '/spec/selector/matchLabels',
    '/spec/rollout/strategy/type',
    '/spec/rollout/strategy/rollingUpdate/maxSurge',
    '/spec/rollout/strategy/rollingUpdate/maxUnavailable',
    '/spec/template/spec/version',
    '/spec/template/spec/infrastructureRef/name',
    '/spec/template/spec/bootstrap/configRef/name',
    '/status/replicas',
    '/status/readyReplicas',
    '/status/availableReplicas',
    '/status/upToDateReplicas',
    '/spec/template/metadata/labels',
    '/spec/template/spec/infrastructureRef/apiGroup',
    '/spec/template/spec/infrastructureRef/kind',
    '/spec/template/spec/bootstrap/configRef/apiGroup',
    '/spec/template/spec/bootstrap/configRef/kind',
    '/spec/template/spec/failureDomain',
  ],
  'machinesets.cluster.x-k8s.io': [
    '/spec/clusterName',
    '/spec/replicas',
    '/spec/selector/matchLabels',
    '/spec/template/metadata/labels',
    '/spec/template/spec/version',
    '/spec/template/spec/infrastructureRef/name',
    '/spec/template/spec/bootstrap/configRef/name',
    '/status/replicas',
    '/status/upToDateReplicas',
  ],
  'kubeadmcontrolplanes.controlplane.cluster.x-k8s.io': [
    '/spec/replicas',
    '/spec/version',
    '/spec/rollout/strategy/rollingUpdate/maxSurge',
    '/spec/machineTemplate/spec/infrastructureRef/name',
    '/spec/machineTemplate/spec/infrastructureRef/apiGroup',
    '/spec/machineTemplate/spec/infrastructureRef/kind',
    '/spec/kubeadmConfigSpec/ntp/servers',
    '/status/replicas',
    '/status/readyReplicas',
    '/status/upToDateReplicas',
    '/status/version',
  ],
  'machinehealthchecks.cluster.x-k8s.io': [
    '/spec/clusterName',
    '/spec/selector/matchLabels',
    '/spec/checks/nodeStartupTimeoutSeconds',
    '/spec/checks/unhealthyNodeConditions[]/type',
    '/spec/remediation/triggerIf/unhealthyLessThanOrEqualTo',
    '/spec/remediation/triggerIf/unhealthyInRange',
    '/status/expectedMachines',
    '/status/currentHealthy',
    '/status/remediationsAllowed',
    '/status/conditions[]/type',
  ],
  'devmachines.infrastructure.cluster.x-k8s.io': ['/spec/backend/docker/customImage', '/status/initialization/provisioned'],
  'kubeadmconfigs.bootstrap.cluster.x-k8s.io': [
    '/spec/ntp/servers',
    '/spec/ntp/enabled',
    '/spec/files[]/path',
    '/status/initialization/dataSecretCreated',
  ],
  'clusters.cluster.x-k8s.io': [
    '/spec/paused',
    '/spec/controlPlaneRef/name',
    '/spec/controlPlaneRef/kind',
    '/spec/infrastructureRef/name',
    '/status/initialization/controlPlaneInitialized',
  ],
};

describe('capi-sim fixture CRDs', () => {
  const fixtures = loadDir(CAPI_FIXTURE_CRDS_DIR);

  it('uses the fixtures unless CAPI_CRDS_DIR points elsewhere (plus the ExtensionConfig fixture)', () => {
    const saved = process.env['CAPI_CRDS_DIR'];
    try {
      delete process.env['CAPI_CRDS_DIR'];
      expect(capiCrdDirs()).to.deep.equal([CAPI_FIXTURE_CRDS_DIR, CAPI_RUNTIME_CRDS_DIR]);
      process.env['CAPI_CRDS_DIR'] = '/some/where';
      expect(capiCrdDirs()).to.deep.equal(['/some/where', CAPI_RUNTIME_CRDS_DIR]);
    } finally {
      if (saved === undefined) delete process.env['CAPI_CRDS_DIR'];
      else process.env['CAPI_CRDS_DIR'] = saved;
    }
  });

  it('declares every field the platform reads or writes, in the v1beta2 storage version', () => {
    for (const [name, paths] of Object.entries(USED_PATHS)) {
      const crd = fixtures.get(name);
      expect(crd, name).to.not.equal(undefined);
      const v = crd!.spec.versions.find((x) => x.name === 'v1beta2');
      expect(v?.storage, `${name} v1beta2 storage`).to.equal(true);
      const declared = new Set(schemaPaths(v!.schema.openAPIV3Schema));
      for (const p of paths) expect(declared.has(p), `${name} ${p}`).to.equal(true);
    }
  });

  describe('match the real CAPI CRDs for every declared path', function () {
    before(function () {
      requireRealCapiCrds(this, realDir);
    });

    let reals = new Map<string, Crd>();
    before(() => {
      reals = loadDir(realDir);
    });

    for (const name of [...fixtures.keys()].sort()) {
      it(`${name} is schema-equivalent to upstream`, () => {
        const real = reals.get(name);
        expect(real, `${name} in ${realDir}`).to.not.equal(undefined);
        const diffs = compareCrds(fixtures.get(name)!, real!);
        expect(diffs, diffs.join('\n')).to.deep.equal([]);
      });
    }

    it('the comparison detects a diverging type, a missing required field and a pruning difference', () => {
      const real = reals.get('machines.cluster.x-k8s.io')!;
      const broken = structuredClone(fixtures.get('machines.cluster.x-k8s.io')!);
      const v = broken.spec.versions.find((x) => x.name === 'v1beta2')!.schema.openAPIV3Schema;
      const spec = v.properties!['spec']!;
      spec.properties!['version']!['type'] = 'integer';
      spec.required = ['clusterName'];
      v.properties!['status']!['x-kubernetes-preserve-unknown-fields'] = true;
      const diffs = compareCrds(broken, real);
      expect(diffs.some((d) => d.includes('/spec/version: type'))).to.equal(true);
      expect(diffs.some((d) => d.includes('/spec: required'))).to.equal(true);
      expect(diffs.some((d) => d.includes('/status: x-kubernetes-preserve-unknown-fields'))).to.equal(true);
    });
  });
});
