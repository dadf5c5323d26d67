// The example plans under examples/ validate (or fail validation) as their comments say, against the demo inventory.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import type { InPlaceUpdatePlan, KubeObject } from '../api/index.js';
import { PlanSpecSchema, parseWritePolicy } from '../api/index.js';
import { buildInventory } from '../../tools/capi-sim/index.js';
import { nameOf } from '../api/capi/index.js';
import { judgeTemplate } from '../contract/index.js';
import type { PreviewSnapshot } from '../rules/preview.js';
import { previewPlan } from '../rules/preview.js';
import { templateKey } from '../rules/inputs.js';

const examples = fileURLToPath(new URL('../../examples/', import.meta.url));
const load = (file: string): KubeObject[] =>
  parseAllDocuments(readFileSync(`${examples}${file}`, 'utf8'))
    .map((d) => d.toJS() as KubeObject)
    .filter(Boolean);

// The demo's inventory (src/cli demo: cluster1 in fleet-a, CP x3, two MachineDeployments x3) plus the example templates.
const inventory = buildInventory({
  namespace: 'fleet-a',
  clusterName: 'cluster1',
  version: 'v1.29.5',
  controlPlane: { name: 'cluster1-cp', replicas: 3 },
  machineDeployments: [
    { name: 'cluster1-md-0', replicas: 3, maxUnavailable: 1 },
    { name: 'cluster1-md-1', replicas: 3, maxUnavailable: 1 },
  ],
});
const templates = load('plan.yaml').filter((o) => o.kind?.endsWith('Template'));

function snapshotFor(plan: InPlaceUpdatePlan): PreviewSnapshot {
  const of = (kind: string): KubeObject[] => inventory.filter((o) => o.kind === kind);
  const refs = [plan.spec.controlPlane, ...(plan.spec.machineDeployments ?? [])]
    .flatMap((t) => t?.updaters ?? [])
    .flatMap((u) => (u.updaterUpdateTemplateRef ? [u.updaterUpdateTemplateRef] : []));
  return {
    plan,
    cluster: of('Cluster')[0],
    controlPlane: {
      kind: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane' },
      object: of('KubeadmControlPlane')[0]!,
    },
    machineDeployments: of('MachineDeployment'),
    machines: of('Machine'),
    infraMachines: of('DevMachine'),
    bootstrapConfigs: of('KubeadmConfig'),
    ownerTemplates: [...of('DevMachineTemplate'), ...of('KubeadmConfigTemplate')],
    templates: refs
      .map((ref) => {
        // As the controller looks it up: found in the file, and judged (size, spec.template.spec) as the object it is.
        const t = templates.find((o) => o.kind === ref.kind && nameOf(o) === ref.name);
        return { ref, found: t !== undefined, ...(t ? judgeTemplate(t) : {}) };
      })
      .filter((l, i, all) => all.findIndex((x) => templateKey(x.ref) === templateKey(l.ref)) === i),
  };
}

const planIn = (file: string): InPlaceUpdatePlan => load(file).find((o) => o.kind === 'InPlaceUpdatePlan') as unknown as InPlaceUpdatePlan;

describe('plan-controller examples', () => {
  for (const file of ['plan.yaml', 'workers-only-plan.yaml', 'staged-plan.yaml', 'gated-plan.yaml']) {
    it(`${file} is a valid plan for the demo cluster`, () => {
      const plan = planIn(file);
      expect(PlanSpecSchema.safeParse(plan.spec).success).to.equal(true);
      const snap = snapshotFor(plan);
      if (file === 'staged-plan.yaml') snap.templates = snap.templates.map((t) => ({ ...t, found: true, bytes: 100 }));
      // The write policy its comment names (examples/write-policy.yaml, the demo's --write-policy): the custom gates'
      // verdict annotations must be writable under it.
      if (file === 'gated-plan.yaml') snap.writePolicy = parseWritePolicy(parse(readFileSync(`${examples}write-policy.yaml`, 'utf8')));
      const preview = previewPlan(plan, snap);
      expect(preview.problems).to.deep.equal([]);
      expect(preview.impossiblePaths).to.deep.equal([]);
    });
  }

  it('plan.yaml updates the control plane first, then both MachineDeployments in parallel, with three updaters in order', () => {
    const plan = planIn('plan.yaml');
    const preview = previewPlan(plan, snapshotFor(plan));
    expect(preview.groups.map((g) => [g.sequence, g.targets.map((t) => t.name)])).to.deep.equal([
      [1, ['cluster1-cp']],
      [2, ['cluster1-md-0', 'cluster1-md-1']],
    ]);
    expect(preview.groups[0]!.targets[0]!.updaters.map((u) => [u.name, u.taskKind])).to.deep.equal([
      ['os-image', 'OSImageUpdateTask'],
      ['kubernetes-version', 'KubernetesVersionUpdateTask'],
      ['ntp-config', 'UpdaterUpdateTask'],
    ]);
    expect(preview.uncovered).to.deep.equal([]);
  });

  it('invalid-plan.yaml passes the schema but fails validation with every problem its comment lists', () => {
    const plan = planIn('invalid-plan.yaml');
    expect(PlanSpecSchema.safeParse(plan.spec).success).to.equal(true);
    const problems = previewPlan(plan, snapshotFor(plan)).problems.join('\n');
    expect(problems).to.match(/MachineDeployment fleet-a\/cluster1-md-9 not found/);
    expect(problems).to.match(/template OSImageUpdateTaskTemplate fleet-a\/no-such-template not found/);
    expect(problems).to.match(/Machine \/status\/phase is not writable/);
    expect(problems).to.match(/BootstrapConfig \/spec\/ntp \(updater ntp-a\) overlaps \/spec\/ntp\/servers \(updater ntp-b\)/);
  });
});
