// The README's numbers come from the code: the demo transcript's CRD count, inventory, process count and totals are
// computed here from what the demo installs and starts (src/cli/demo-platform.ts, src/components.ts, the sample
// updaters, examples/plan.yaml) and must equal what the README says. An illustrative value (a port, a pid, a
// duration) is not a number the code decides and is not checked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import { crdKinds } from '../../cdk8s/charts.js';
import { PROJECT_ROOT } from '../../cdk8s/synth.js';
import { COMPONENTS } from '../../src/components.js';
import { DEMO, demoCrdFiles } from '../../src/cli/demo-platform.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';

const README = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
/** The numbers `re` captures everywhere in the README (at least one occurrence required). */
function numbers(re: RegExp): number[] {
  const found = [...README.matchAll(new RegExp(re.source, 'g'))].map((m) => Number(m[1]));
  expect(found.length, `README has no ${re}`).to.be.greaterThan(0);
  return found;
}

type Target = { updaters?: { responsibilities?: unknown[] }[] };
const plan = parseAllDocuments(readFileSync(join(PROJECT_ROOT, 'examples', 'plan.yaml'), 'utf8'))
  .map((d) => d.toJSON() as { kind?: string; spec?: { controlPlane?: Target; machineDeployments?: (Target & { name: string })[] } })
  .find((d) => d?.kind === 'InPlaceUpdatePlan')!;
const machines = DEMO.controlPlane.replicas + DEMO.machineDeployments.reduce((n, m) => n + m.replicas, 0);
const changesPer = (t: Target | undefined): number => (t?.updaters ?? []).reduce((n, u) => n + (u.responsibilities?.length ?? 0), 0);

describe('README numbers come from the code', () => {
  it('"installed N CRDs" is the number of CRDs the demo installs', async () => {
    const crds = (await demoCrdFiles(PROJECT_ROOT)).flatMap(crdKinds).length;
    expect(crds).to.be.greaterThan(0);
    expect(numbers(/installed (\d+) CRDs/)).to.deep.equal([crds]);
  });

  it('the inventory: N-machine cluster, control plane and MachineDeployment sizes, "N machines at"', () => {
    expect(numbers(/(\d+)-machine demo cluster/)).to.deep.equal([machines]);
    expect(numbers(/(\d+) machines at v/)).to.deep.equal([machines]);
    expect(numbers(/a (\d+)-machine control plane/)).to.deep.equal([DEMO.controlPlane.replicas]);
    const mdSizes = [...new Set(DEMO.machineDeployments.map((m) => m.replicas))];
    expect(mdSizes).to.have.length(1);
    expect(numbers(/two (\d+)-machine MachineDeployments/)).to.deep.equal(mdSizes);
    expect(DEMO.machineDeployments).to.have.length(2);
  });

  it('"started N processes" and "all N components ready": the CAPI simulator, the default controllers and the sample updaters', () => {
    const processes = 1 + COMPONENTS.filter((c) => !c.optIn).length + Object.keys(sampleUpdaters).length;
    expect(numbers(/started (\d+) processes/)).to.deep.equal([processes]);
    expect(numbers(/all (\d+) components ready/)).to.deep.equal([processes]);
    // The prose spells them out.
    const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
    const spelt = (re: RegExp): number[] => [...README.matchAll(new RegExp(re.source, 'g'))].map((m) => WORDS.indexOf(m[1]!));
    expect(spelt(/While the ([a-z]+) processes/)).to.deep.equal([processes]);
    expect(spelt(/the ([a-z]+) sample updaters/)).to.deep.equal([Object.keys(sampleUpdaters).length]);
    expect(spelt(/runs ([a-z]+) updaters/)).to.deep.equal([(plan.spec?.controlPlane?.updaters ?? []).length]);
  });

  it('the summary: machines updated, changes committed and tasks per updater follow examples/plan.yaml', () => {
    const cp = DEMO.controlPlane.replicas;
    const changes =
      changesPer(plan.spec?.controlPlane) * cp +
      DEMO.machineDeployments.reduce(
        (n, m) => n + changesPer(plan.spec?.machineDeployments?.find((t) => t.name === m.name)) * m.replicas,
        0,
      );
    expect(numbers(/machines: +(\d+)\/\d+ updated/)).to.deep.equal([machines]);
    expect(numbers(/changes committed: (\d+)\/\d+/)).to.deep.equal([changes]);
    expect(numbers(/changes committed: \d+\/(\d+)/)).to.deep.equal([changes]);
    const updaters = (plan.spec?.controlPlane?.updaters ?? []).length;
    expect(numbers(/ {2,}(\d+) tasks {2}avg/)).to.deep.equal(Array<number>(updaters).fill(machines));
    expect(numbers(/updated by (\d+) updater\(s\)/)[0]).to.equal(updaters);
    expect(numbers(/ControlPlane cluster1-cp +\[[^\]]*\] \d+\/(\d+) updated/)).to.deep.equal([cp]);
  });
});
