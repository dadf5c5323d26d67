// `inplace revert` end to end (issue 29 item 5) on the embedded API server with the CAPI simulator and the platform: a
// plan changes the OS image, the bootstrap configuration and the Kubernetes version; its revert puts the image and the
// configuration back on every machine through a plan of the same shape, keeps the version (kubeadm does not support a
// downgrade) and says so, and refuses — creating nothing — when a machine changed since or the journal was pruned.
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import {
  DevMachines,
  InPlaceUpdatePlans,
  KubeadmConfigs,
  Labels,
  MachineUpdates,
  Machines,
  type InPlaceUpdatePlan,
  type KubeObject,
} from '../../src/api/index.js';
import { REVERTS_ANNOTATION } from '../../src/cli/revert-decide.js';
import type { Machine } from '../../tools/capi-sim/index.js';
import { useE2eEnv } from '../e2e/env.js';
import { FROM_VERSION, TO_VERSION, planObject, refUpdater, type Platform } from '../e2e/harness.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const MD = 'cluster1-md-0';
const IMAGE_PATH = '/spec/backend/docker/customImage';
const NEW_IMAGE = 'ubuntu-24.04-k8s-v1.30.1';

const imageOf = (o: KubeObject | undefined): unknown =>
  ((o?.['spec'] as { backend?: { docker?: { customImage?: unknown } } } | undefined)?.backend?.docker ?? {}).customImage;
const formatOf = (o: KubeObject | undefined): unknown => (o?.['spec'] as { format?: unknown } | undefined)?.format;

describe('inplace revert of a finished plan (OS image, configuration; the version stays)', function () {
  this.timeout(300_000);
  const env = useE2eEnv();

  const updaters = () => [
    refUpdater({ name: 'os', sequence: 1, responsibilities: [{ selectResource: 'InfraMachine', path: IMAGE_PATH, value: NEW_IMAGE }] }),
    refUpdater({ name: 'k8s', sequence: 2 }),
    refUpdater({
      name: 'config',
      sequence: 3,
      responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/format', value: 'ignition' }],
    }),
  ];

  /** Each machine's image, bootstrap format and version, by machine name. */
  async function state(p: Platform): Promise<Record<string, [unknown, unknown, unknown]>> {
    const out: Record<string, [unknown, unknown, unknown]> = {};
    for (const m of (await p.client.list<Machine>(Machines, p.ns)).items.filter((x) => !x.metadata.deletionTimestamp)) {
      const infra = await p.client.get(DevMachines, p.ns, m.spec.infrastructureRef.name);
      const boot = await p.client.get(KubeadmConfigs, p.ns, m.spec.bootstrap.configRef?.name ?? '');
      out[m.metadata.name!] = [imageOf(infra), formatOf(boot), m.spec.version];
    }
    return out;
  }

  it('reverts the image and configuration end to end, keeps the version, and refuses changed machines and a pruned journal', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform();
    const kc = ['--kubeconfig', env().kubeconfigPath];
    const initial = await waitFor(
      async () => {
        const s = await state(p);
        return Object.keys(s).length === 3 && Object.values(s).every(([img]) => typeof img === 'string') ? s : undefined;
      },
      { timeoutMs: 60_000, message: 'three machines with their objects' },
    );
    const oldImage = Object.values(initial)[0]![0];
    expect(Object.values(initial)).to.deep.equal(Array(3).fill([oldImage, 'cloud-config', FROM_VERSION]));

    await p.apply(
      planObject(p.ns, 'upgrade', {
        cp: { name: 'cluster1-cp', sequence: 1, updaters: updaters() },
        mds: [{ name: MD, sequence: 2, updaters: updaters() }],
      }),
    );
    await p.waitStatus('upgrade', 'updated', 120_000);
    const machines = Object.keys(initial).sort();
    expect(Object.keys(await state(p)).sort()).to.deep.equal(machines);
    expect(Object.values(await state(p))).to.deep.equal(Array(3).fill([NEW_IMAGE, 'ignition', TO_VERSION]));

    // The preview: what goes back, what stays and why; nothing created.
    const preview = await cli('revert', 'upgrade', '-n', p.ns, ...kc);
    expect(preview.code, preview.err).to.equal(0);
    expect(preview.out).to.contain(`os: InfraMachine ${IMAGE_PATH} ${NEW_IMAGE} -> ${String(oldImage)}`);
    expect(preview.out).to.contain('config: BootstrapConfig /spec/format ignition -> cloud-config');
    expect(preview.out).to.contain('Not reverted:');
    expect(preview.out).to.contain(
      `Machine /spec/version stays: Kubernetes version "${TO_VERSION}" back to "${FROM_VERSION}" is a downgrade, which kubeadm does not support`,
    );
    expect(preview.out).to.contain('Validation (as inplace preview -f): OK');
    expect(preview.out).to.contain('Nothing was created');
    expect((await p.client.list(InPlaceUpdatePlans, p.ns)).items.map((x) => x.metadata.name)).to.deep.equal(['upgrade']);

    // The plan it would create: the same targets, sequences and updaters, minus the version, with the values before.
    const yaml = await cli('revert', 'upgrade', '-n', p.ns, '-o', 'yaml', ...kc);
    expect(yaml.code, yaml.err).to.equal(0);
    const built = parseYaml(yaml.out) as InPlaceUpdatePlan & KubeObject;
    expect(built.metadata.annotations?.[REVERTS_ANNOTATION]).to.equal('upgrade');
    for (const t of [built.spec.controlPlane!, built.spec.machineDeployments![0]!]) {
      expect(t.updaters.map((u) => [u.name, u.sequence, u.responsibilities.map((r) => r.value)])).to.deep.equal([
        ['os', 1, [oldImage]],
        ['config', 3, ['cloud-config']],
      ]);
    }
    expect([built.spec.controlPlane!.sequence, built.spec.machineDeployments![0]!.sequence]).to.deep.equal([1, 2]);

    // A machine changed by hand since the plan: refused, naming it; nothing created.
    const worker = machines.find((n) => n.startsWith(MD))!;
    const infraName = (await p.client.get<Machine>(Machines, p.ns, worker))!.spec.infrastructureRef.name;
    const setImage = (image: string) =>
      p.client.patch(DevMachines, p.ns, infraName, { spec: { backend: { docker: { customImage: image } } } }, { type: 'merge' });
    await setImage('hand-made');
    const changed = await cli('revert', 'upgrade', '-n', p.ns, '--apply', ...kc);
    expect(changed.code).to.equal(1);
    expect(changed.err).to.contain(
      `machine ${worker} (machineDeployment ${MD}) changed since the plan: InfraMachine ${IMAGE_PATH} is "hand-made", the plan wrote "${NEW_IMAGE}"`,
    );
    expect(changed.err).to.contain('nothing created');
    expect((await p.client.list(InPlaceUpdatePlans, p.ns)).items).to.have.length(1);
    await setImage(NEW_IMAGE);

    // Applied: the revert plan runs like any plan and leaves every machine at the old image and configuration.
    const applied = await cli('revert', 'upgrade', '-n', p.ns, '--apply', ...kc);
    expect(applied.code, applied.err).to.equal(0);
    expect(applied.out).to.contain(`created InPlaceUpdatePlan ${p.ns}/upgrade-revert`);
    await p.waitStatus('upgrade-revert', 'updated', 120_000);
    const after = await state(p);
    expect(Object.keys(after).sort(), 'no machine replaced').to.deep.equal(machines);
    expect(Object.values(after)).to.deep.equal(Array(3).fill([oldImage, 'cloud-config', TO_VERSION]));

    // Reverting again: nothing left but the version, which stays.
    const again = await cli('revert', 'upgrade', '-n', p.ns, ...kc);
    expect(again.code).to.equal(1);
    expect(again.err).to.contain('nothing to revert');
    expect(again.err).to.contain('which kubeadm does not support');

    // The plan history pruned the journal (its MachineUpdates): refused, naming the plan.
    for (const mu of (await p.client.list(MachineUpdates, p.ns)).items)
      if (mu.metadata.labels?.[Labels.planName] === 'upgrade') await p.client.delete(MachineUpdates, p.ns, mu.metadata.name!);
    await waitFor(
      async () =>
        (await p.client.list(MachineUpdates, p.ns)).items.some((mu) => mu.metadata.labels?.[Labels.planName] === 'upgrade')
          ? undefined
          : true,
      { timeoutMs: 30_000, message: "the plan's MachineUpdates gone" },
    );
    const pruned = await cli('revert', 'upgrade', '-n', p.ns, '--apply', '--name', 'second-revert', ...kc);
    expect(pruned.code).to.equal(1);
    expect(pruned.err).to.contain('the journal of InPlaceUpdatePlan upgrade was pruned');
    expect(await p.client.get(InPlaceUpdatePlans, p.ns, 'second-revert')).to.equal(undefined);
  });
});
