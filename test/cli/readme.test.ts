// The README's numbers come from the code: the demo transcript's CRD count, inventory, process count and totals are
// computed here from what the demo installs and starts (src/cli/demo-platform.ts, src/components.ts, the sample
// updaters, examples/plan.yaml) and must equal what the README says. An illustrative value (a port, a pid, a
// duration) is not a number the code decides and is not checked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { satisfies as semverSatisfies, validRange } from 'semver';
import { parseAllDocuments } from 'yaml';
import { crdKinds, heapSizeMiB } from '../../cdk8s/charts.js';
import { DEFAULTS, PROJECT_ROOT } from '../../cdk8s/synth.js';
import { COMPONENTS } from '../../src/components.js';
import { DEMO, demoCrdFiles } from '../../src/cli/demo-platform.js';
import { DEMO_CONTROLLERS } from '../../src/cli/demo.js';
import { campaignUpdaterNames } from '../../src/cli/demo-fleet.js';
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

  it('"started N processes" and "all N components ready": the CAPI simulator, the controllers the demo starts and the sample updaters', () => {
    // What the demo starts, not every default component: the single-plan demo runs no campaign controller.
    for (const c of DEMO_CONTROLLERS) expect(COMPONENTS.map((x) => x.name)).to.include(c);
    const processes = 1 + DEMO_CONTROLLERS.length + Object.keys(sampleUpdaters).length;
    // The transcript's process list names only processes the demo starts.
    const started = /started \d+ processes: (.*)/.exec(README)![1]!;
    for (const c of COMPONENTS)
      expect(started.includes(`${c.name} (pid`), c.name).to.equal((DEMO_CONTROLLERS as readonly string[]).includes(c.name));
    expect(numbers(/started (\d+) processes/)).to.deep.equal([processes]);
    expect(numbers(/all (\d+) components ready/)).to.deep.equal([processes]);
    // The prose spells them out.
    const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
    const spelt = (re: RegExp): number[] => [...README.matchAll(new RegExp(re.source, 'g'))].map((m) => WORDS.indexOf(m[1]!));
    expect(spelt(/While the ([a-z]+) processes/)).to.deep.equal([processes]);
    expect(spelt(/the ([a-z]+) sample updaters/)).to.deep.equal([Object.keys(sampleUpdaters).length]);
    expect(spelt(/runs ([a-z]+) updaters/)).to.deep.equal([(plan.spec?.controlPlane?.updaters ?? []).length]);
  });

  it("the --fleet demo's reference updater: the README names what it serves (the campaign file's generic updater names)", () => {
    const names = campaignUpdaterNames(join(PROJECT_ROOT, 'examples', 'campaign.yaml'));
    expect(names).to.have.length.greaterThan(0);
    expect(README).to.contain(
      `in the \`--fleet\` demo it serves exactly the generic updater names of the campaign file (${names.map((n) => `\`${n}\``).join(', ')} in`,
    );
  });

  it('the summary: machines updated, changes committed and tasks per updater follow examples/plan.yaml', () => {
    const cp = DEMO.controlPlane.replicas;
    const changes =
      changesPer(plan.spec?.controlPlane) * cp +
      DEMO.machineDeployments.reduce(
        (n, m) => n + changesPer(plan.spec?.machineDeployments?.find((t) => t.name === m.name)) * m.replicas,
        0,
      );
    // The single-plan summary ("9/9 updated, 0 failed"), not the fleet demo's ("56/56 updated (0 skipped").
    expect(numbers(/machines: +(\d+)\/\d+ updated, /)).to.deep.equal([machines]);
    expect(numbers(/changes committed: (\d+)\/\d+/)).to.deep.equal([changes]);
    expect(numbers(/changes committed: \d+\/(\d+)/)).to.deep.equal([changes]);
    const updaters = (plan.spec?.controlPlane?.updaters ?? []).length;
    expect(numbers(/ {2,}(\d+) tasks {2}avg/)).to.deep.equal(Array<number>(updaters).fill(machines));
    expect(numbers(/updated by (\d+) updater\(s\)/)[0]).to.equal(updaters);
    expect(numbers(/ControlPlane cluster1-cp +\[[^\]]*\] \d+\/(\d+) updated/)).to.deep.equal([cp]);
  });

  it('the default requests, limits and heap in the README and docs/operations.md are the synthesized defaults', () => {
    const r = DEFAULTS.resources;
    expect(r.cpuLimitMillis).to.equal(1000);
    expect(numbers(/defaults: one core, (\d+)Mi with a \d+ MiB V8 heap/)).to.deep.equal([r.memoryLimitMiB]);
    expect(numbers(/defaults: one core, \d+Mi with a (\d+) MiB V8 heap/)).to.deep.equal([heapSizeMiB(r.memoryLimitMiB)]);
    const ops = readFileSync(join(PROJECT_ROOT, 'docs', 'operations.md'), 'utf8');
    expect(ops).to.include(`| \`${r.cpuRequestMillis}m\`, \`${r.cpuLimitMillis}m\` |`);
    expect(ops).to.include(`| \`${r.memoryRequestMiB}Mi\`, \`${r.memoryLimitMiB}Mi\` |`);
    expect(ops).to.include(`--max-old-space-size=${heapSizeMiB(r.memoryLimitMiB)}\` by default`);
  });

  it('"Node.js ≥ X" is package.json\'s engines, and every locked package accepts that Node (no EBADENGINE on npm ci)', () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    const min = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)?.[1];
    expect(min, pkg.engines.node).to.be.a('string');
    expect(README).to.include(`Node.js ≥ ${min!.replace(/\.0$/, '')}`);
    const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }>;
    };
    const refusing = Object.entries(lock.packages)
      .map(([name, p]) => [name, Array.isArray(p.engines) ? undefined : p.engines?.node] as const)
      .filter((e): e is readonly [string, string] => typeof e[1] === 'string' && !satisfies(min!, e[1]))
      .map(([name, range]) => `${name}: node ${range}`);
    expect(refusing).to.deep.equal([]);
    // The evaluator itself: it must be able to say no.
    expect(satisfies('20.19.0', '>=22')).to.equal(false);
    expect(satisfies('20.19.0', '^20.19.0 || ^22.13.0 || >=24')).to.equal(true);
    expect(satisfies('20.19.0', '^20.20.0 || >=22')).to.equal(false);
    expect(satisfies('20.19.0', '6.* || 8.* || >= 10.*')).to.equal(true); // get-caller-file's range
    expect(() => satisfies('20.19.0', 'twenty')).to.throw(/not a semver range/);
  });
});

/** Whether `version` satisfies an npm engines range, as npm reads it (semver, the library npm itself uses). */
function satisfies(version: string, range: string): boolean {
  if (validRange(range) === null) throw new Error(`engines range "${range}": not a semver range`);
  return semverSatisfies(version, range);
}
