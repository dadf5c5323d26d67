// `inplace preview -f plan.yaml` lists every problem of a plan at once, without the cluster: schema (the CRD in crds/),
// CEL rules (which a real server skips after a schema error) and the plan controller's own validation.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { API_VERSION, type KubeObject } from '../../src/api/index.js';
import { checkPlan, renderPlanProblems, withOfflineProblems, type PlanCheckProblem } from '../../src/cli/plan-check.js';
import type { PlanPreview } from '../../src/plan-controller/index.js';
import { readYamlDocs } from '../../src/cli/install.js';
import { projectRoot } from '../../src/cli/procs.js';
import { cli } from '../support/cli.js';

const responsibility = (path: string, selectResource = 'Machine') => ({ selectResource, path, value: 'v1.30.1' });
const updater = (r = responsibility('/spec/version')) => ({ name: 'version', sequence: 1, responsibilities: [r] });

function plan(spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name: 'p', namespace: 'ns1' },
    spec: { clusterName: 'c1', ...spec },
  };
}

/** The plan of issue 19: two schema errors (a path without a leading /, an unknown selectResource) and a rule error. */
const threeMistakes = (): KubeObject =>
  plan({
    controlPlane: { name: 'c1-cp', sequence: 2, updaters: [updater(responsibility('spec/version'))] },
    machineDeployments: [{ name: 'c1-md-0', sequence: 1, updaters: [updater(responsibility('/spec/version', 'Node'))] }],
  });

const of = (problems: PlanCheckProblem[], source: PlanCheckProblem['source']): string[] =>
  problems.filter((p) => p.source === source).map((p) => p.message);

describe('plan check (offline, for inplace preview)', function () {
  this.timeout(60_000);

  it("lists the schema errors, the rule a real server would skip, and the controller's checks together", function () {
    const problems = checkPlan(threeMistakes());
    const schema = of(problems, 'schema');
    expect(
      schema.some((m) => m.startsWith('spec.controlPlane.updaters[0].responsibilities[0].path: Invalid value: "spec/version"')),
    ).to.equal(true, schema.join('\n'));
    expect(
      schema.some((m) =>
        m.startsWith('spec.machineDeployments[0].updaters[0].responsibilities[0].selectResource: Unsupported value: "Node"'),
      ),
    ).to.equal(true, schema.join('\n'));
    expect(of(problems, 'rule')).to.deep.equal([
      'spec: Invalid value: "object": every control-plane sequence must be lower than every MachineDeployment sequence (Kubernetes version-skew rule)',
    ]);
    const controller = of(problems, 'controller');
    expect(
      controller.some((m) => m.includes('machineDeployment c1-md-0 has sequence 1, not higher than controlPlane sequence 2')),
    ).to.equal(true, controller.join('\n'));
    expect(controller.some((m) => m.includes('path spec/version is not a JSON pointer'))).to.equal(true, controller.join('\n'));
    expect(controller.some((m) => m.includes('selectResource Node is not one of'))).to.equal(true, controller.join('\n'));
  });

  it('finds nothing in the example plans, whose cluster objects it does not need', function () {
    for (const f of ['plan.yaml', 'staged-plan.yaml', 'workers-only-plan.yaml']) {
      const doc = readYamlDocs(join(projectRoot(), 'examples', f)).find((d) => d.kind === 'InPlaceUpdatePlan')!;
      expect(checkPlan(doc), f).to.deep.equal([]);
    }
  });

  it('reports unknown fields (kubectl apply refuses them) and missing required fields', function () {
    const doc = plan({ machineDeployments: [{ name: 'c1-md-0', sequence: 1, updaters: [updater()], maxParallel: 3 }] });
    delete (doc['spec'] as Record<string, unknown>)['clusterName'];
    const schema = of(checkPlan(doc), 'schema');
    expect(schema).to.include('spec.machineDeployments[0].maxParallel: unknown field (kubectl apply refuses it: strict field validation)');
    expect(schema).to.include('spec.clusterName: Required value');
  });

  it("reports the controller's spec-level checks that no schema expresses (overlapping fields, duplicate updater names)", function () {
    const doc = plan({
      machineDeployments: [
        {
          name: 'c1-md-0',
          sequence: 1,
          updaters: [
            {
              name: 'a',
              sequence: 1,
              responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: { enabled: true } }],
            },
            { name: 'a', sequence: 2, responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp/servers', value: ['x'] }] },
          ],
        },
      ],
    });
    const controller = of(checkPlan(doc), 'controller');
    expect(controller.some((m) => /\/spec\/ntp and \/spec\/ntp\/servers overlap/.test(m))).to.equal(true, controller.join('\n'));
    expect(controller.some((m) => m.includes('updater name a is used more than once'))).to.equal(true, controller.join('\n'));
  });

  it('renders the problems grouped by where they were found', function () {
    const text = renderPlanProblems('plan.yaml', checkPlan(threeMistakes()));
    expect(text).to.match(/^"plan\.yaml" is not a valid InPlaceUpdatePlan \(\d+ problems, found without the cluster\):/);
    const at = (s: string): number => text.indexOf(s);
    expect(at('  schema (crds/ openAPIV3Schema):')).to.be.greaterThan(0);
    expect(at('  rules (x-kubernetes-validations):')).to.be.greaterThan(at('  schema'));
    expect(at('  plan controller validation:')).to.be.greaterThan(at('  rules'));
  });

  it('adds the schema and rule problems to a preview made against the cluster (its controller checks ran on real objects)', function () {
    const preview = {
      valid: true,
      problems: [],
      groups: [],
      coverage: [],
      uncovered: [],
      impossiblePaths: [],
      warnings: [],
    } as PlanPreview;
    const merged = withOfflineProblems(preview, checkPlan(threeMistakes()));
    expect(merged.valid).to.equal(false);
    expect(merged.problems.some((m) => m.includes('Unsupported value: "Node"'))).to.equal(true);
    expect(merged.problems.some((m) => m.startsWith('spec: Invalid value: "object": every control-plane sequence'))).to.equal(true);
    expect(
      merged.problems.some((m) => m.includes('not higher than controlPlane sequence')),
      'controller checks come from the real snapshot',
    ).to.equal(false);
    expect(withOfflineProblems(preview, [])).to.equal(preview);
  });

  it('inplace preview prints them all and exits 1 without reaching any cluster', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'inplace-plan-check-'));
    const file = join(dir, 'plan.yaml');
    writeFileSync(file, stringify(threeMistakes()));
    const r = await cli('preview', '-f', file, '--kubeconfig', join(dir, 'no-such-kubeconfig'));
    expect(r.code).to.equal(1);
    expect(r.err).to.contain('is not a valid InPlaceUpdatePlan');
    expect(r.err).to.contain('Unsupported value: "Node"');
    expect(r.err).to.contain('every control-plane sequence must be lower than every MachineDeployment sequence');
    expect(r.err).to.contain('not higher than controlPlane sequence 2');
  });
});
