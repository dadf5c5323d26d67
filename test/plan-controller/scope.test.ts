// One snapshot builder (buildScope) for the plan controller and `inplace preview`: on the same cluster they see the
// same MachineUpdates of a plan whose name is longer than a label value (the hashed plan-name label) and the same
// problems for a malformed template reference (nothing looked up, no "not served" error only one of them reports).
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { InPlaceUpdatePlan, KubeObject } from '../../src/api/index.js';
import { InPlaceUpdatePlans } from '../../src/api/index.js';
import type { PlanPreview } from '../../src/plan-controller/index.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { CP, conditionOf, planObject, refUpdater } from '../e2e/harness.js';

describe('plan controller and preview: one snapshot builder', function () {
  this.timeout(120_000);
  const env = useE2eEnv();
  const dir = mkdtempSync(join(tmpdir(), 'scope-'));
  const preview = async (plan: InPlaceUpdatePlan & KubeObject): Promise<PlanPreview> => {
    const file = join(dir, `${plan.metadata.name}.yaml`);
    writeFileSync(file, stringify(plan));
    const r = await cli('preview', '-f', file, '-o', 'json', '--kubeconfig', env().kubeconfigPath);
    expect(r.err).to.equal('');
    return JSON.parse(r.out) as PlanPreview;
  };

  it('a plan name longer than 63 characters: preview shows the machine the controller started', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [] });
    // Only the plan controller: the started machine stays in flight.
    await p.startPlanControllerOnly();
    const name = `retry-${'x'.repeat(70)}`;
    const plan = planObject(p.ns, name, { cp: { name: CP, sequence: 1, updaters: [refUpdater()] } });
    await p.apply(plan);
    await p.waitPlan(name, (x) => x.status?.updateStatus === 'updating', 'plan updating');
    const started = (await p.machineUpdates()).map((m) => m.spec.machineRef.name);
    expect(started).to.have.length(1);

    const r = await preview(plan);
    const machines = r.groups.flatMap((g) => g.targets.flatMap((t) => t.machines));
    expect(machines.map((m) => [m.name, m.state])).to.deep.equal([[started[0], 'inFlight']]);
  });

  it('a malformed template reference: preview lists exactly the controller problems', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [] });
    await p.startPlanControllerOnly();
    // No API group: nothing to look up; validation names it, and neither side adds a "not served" problem.
    const plan = planObject(p.ns, 'malformed', {
      cp: {
        name: CP,
        sequence: 1,
        updaters: [refUpdater({ updaterUpdateTemplateRef: { apiVersion: 'v1', kind: 'FooTemplate', name: 'foo' } })],
      },
    });
    await p.apply(plan);
    const invalid = await p.waitPlan('malformed', (x) => conditionOf(x, 'Valid')?.status === 'False', 'plan Valid=False');
    const message = conditionOf(invalid, 'Valid')?.message ?? '';

    const r = await preview(plan);
    expect(r.valid).to.equal(false);
    expect(r.problems.length).to.be.greaterThan(0);
    for (const problem of r.problems) expect(message, `controller's Valid message lacks "${problem}"`).to.contain(problem);
    expect(r.problems.join('\n')).to.not.match(/not served/);
    // The controller's problems, one per line or joined: preview has as many.
    const controllerCount = await waitFor(
      async () =>
        (await env().client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, p.ns, 'malformed'))?.status?.conditions?.find(
          (c) => c.type === 'Valid',
        )?.message,
      { message: 'Valid message' },
    );
    expect(r.problems.filter((x) => controllerCount.includes(x))).to.have.length(r.problems.length);
  });
});
