// Integration: the plan keeps the owners of its machines (KubeadmControlPlane, MachineDeployment, MachineSet, cloned
// templates) in agreement with the machines (docs/design.md §11): paused during a target, aligned and unpaused after it, kept
// paused over mixed machines after an abort. Against the local API server, or a real cluster (INPLACE_TEST_KUBECONFIG).
import { expect } from 'chai';
import type { KubeObject, PlanUpdater } from '../../src/api/index.js';
import {
  Annotations,
  DevMachines,
  Events,
  InPlaceUpdatePlans,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineSets,
} from '../../src/api/index.js';
import { DevMachineTemplates, KubeadmConfigTemplates, inventoryMachineSetName } from '../../tools/capi-sim/index.js';
import { CLONED_FROM_NAME, PAUSED_BY_PLAN } from '../../src/rules/owners.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import type { Platform } from '../e2e/harness.js';
import { CP, TO_VERSION, conditionOf, planObject, refUpdater } from '../e2e/harness.js';

const MD = 'cluster1-md-0';
const IMAGE = 'ubuntu-24.04-k8s-1.30.1';
const NTP = { enabled: true, servers: ['time.example.com'] };
const UPDATERS = ['os', 'k8s', 'ntp'];

// One updater per selectable resource; nobody serves them: the scenario plays them by hand.
const updaters = (): PlanUpdater[] => [
  refUpdater({
    name: 'os',
    sequence: 1,
    responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: IMAGE }],
  }),
  refUpdater({ name: 'k8s', sequence: 2 }),
  refUpdater({ name: 'ntp', sequence: 3, responsibilities: [{ selectResource: 'BootstrapConfig', path: '/spec/ntp', value: NTP }] }),
];

const get = (p: Platform, res: typeof KubeadmControlPlanes, name: string): Promise<KubeObject | undefined> => p.client.get(res, p.ns, name);
const at = (o: KubeObject | undefined, ...keys: string[]): unknown =>
  keys.reduce<unknown>((cur, k) => (cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined), o);
const ann = (o: KubeObject | undefined, k: string): string | undefined => o?.metadata.annotations?.[k];
/** A clone's name: the original template's name and a hash of the clone's spec (never a previous clone's name). */
const cloneOf = (original: string): RegExp => new RegExp(`^${original}-[0-9a-f]{10}$`);

/** Finishes every open task of the plan's updaters until the plan reaches `status`. */
async function playUntil(p: Platform, plan: string, status: string): Promise<void> {
  await waitFor(
    async () => {
      for (const u of UPDATERS) await p.finishTasks(u);
      return (await p.plan(plan))?.status?.updateStatus === status;
    },
    { timeoutMs: 60_000, intervalMs: 50, message: `plan ${plan} ${status}` },
  );
}

/** Plays the in-flight task of a deleted plan only once the platform asked it to abort (so it ends aborted), until the plan is gone. */
async function abortedAndGone(p: Platform, plan: string): Promise<void> {
  await waitFor(
    async () => {
      const open = (await p.tasks()).filter(
        (t) =>
          (t['spec'] as { updatePhase?: string }).updatePhase !== 'aborting' &&
          !['updated', 'failed', 'aborted'].includes((t['status'] as { updateStatus?: string } | undefined)?.updateStatus ?? ''),
      );
      if (open.length === 0) await p.finishTasks('k8s');
      return (await p.plan(plan)) === undefined;
    },
    { timeoutMs: 60_000, intervalMs: 50, message: `plan ${plan} aborted and deleted` },
  );
}

describe('plan controller: owners next to Cluster API', function () {
  this.timeout(180_000);
  const env = useE2eEnv();

  it('pauses each owner during its target, then aligns KCP, MachineDeployment, MachineSet and cloned templates and unpauses', async () => {
    const p = await env().platform();
    await p.provision({ mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    await p.apply(
      planObject(p.ns, 'p', {
        cp: { name: CP, sequence: 1, updaters: updaters() },
        mds: [{ name: MD, sequence: 2, updaters: updaters() }],
      }),
    );

    // During the control-plane target: the KCP is paused by the plan, the MachineDeployment is not.
    await p.waitTasks('os', 1);
    const kcpDuring = await get(p, KubeadmControlPlanes, CP);
    expect(ann(kcpDuring, Annotations.paused), 'KCP paused during its target').to.equal('');
    expect(ann(kcpDuring, PAUSED_BY_PLAN)).to.equal('p');
    expect(ann(await p.md(MD), Annotations.paused), 'MD not paused before its target').to.equal(undefined);

    // During the MachineDeployment target: the MD is paused, the KCP already aligned and unpaused.
    await waitFor(
      async () => {
        for (const u of UPDATERS) await p.finishTasks(u);
        return (await p.machineUpdates()).some((m) => m.spec.target.kind === 'MachineDeployment') || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, message: 'MachineDeployment target started' },
    );
    const mdDuring = await p.md(MD);
    expect(ann(mdDuring, Annotations.paused), 'MD paused during its target').to.equal('');
    expect(ann(mdDuring, PAUSED_BY_PLAN)).to.equal('p');
    const kcpBetween = await get(p, KubeadmControlPlanes, CP);
    expect(ann(kcpBetween, Annotations.paused), 'KCP unpaused once aligned').to.equal(undefined);
    expect(at(kcpBetween, 'spec', 'version')).to.equal(TO_VERSION);

    await playUntil(p, 'p', 'updated');
    const plan = await p.plan('p');
    expect(conditionOf(plan, 'OwnersAligned')).to.include({ status: 'True', reason: 'Aligned' });

    // KCP: version, kubeadmConfigSpec and a new infrastructure template carrying the image.
    const kcp = await get(p, KubeadmControlPlanes, CP);
    expect(at(kcp, 'spec', 'version')).to.equal(TO_VERSION);
    expect(at(kcp, 'spec', 'kubeadmConfigSpec', 'ntp')).to.deep.equal(NTP);
    // The clone is named from the original template and its content (stable over plans, never chained).
    const cpClone = at(kcp, 'spec', 'machineTemplate', 'spec', 'infrastructureRef', 'name') as string;
    expect(cpClone).to.match(cloneOf(CP));
    expect(
      at(await p.client.get(DevMachineTemplates, p.ns, cpClone), 'spec', 'template', 'spec', 'backend', 'docker', 'customImage'),
    ).to.equal(IMAGE);
    expect(
      at(await p.client.get(DevMachineTemplates, p.ns, CP), 'spec', 'template', 'spec', 'backend', 'docker', 'customImage'),
      'original template untouched',
    ).to.not.equal(IMAGE);

    // MachineDeployment and the MachineSet owning its machines: version and both cloned templates.
    const md = await p.md(MD);
    const ms = await p.client.get(MachineSets, p.ns, inventoryMachineSetName(MD));
    for (const o of [md, ms]) {
      expect(at(o, 'spec', 'template', 'spec', 'version'), o?.kind).to.equal(TO_VERSION);
      expect(at(o, 'spec', 'template', 'spec', 'infrastructureRef', 'name'), o?.kind).to.match(cloneOf(MD));
      expect(at(o, 'spec', 'template', 'spec', 'bootstrap', 'configRef', 'name'), o?.kind).to.match(cloneOf(MD));
    }
    const mdInfra = at(md, 'spec', 'template', 'spec', 'infrastructureRef', 'name') as string;
    const mdBoot = at(md, 'spec', 'template', 'spec', 'bootstrap', 'configRef', 'name') as string;
    expect(
      at(await p.client.get(DevMachineTemplates, p.ns, mdInfra), 'spec', 'template', 'spec', 'backend', 'docker', 'customImage'),
    ).to.equal(IMAGE);
    expect(at(await p.client.get(KubeadmConfigTemplates, p.ns, mdBoot), 'spec', 'template', 'spec', 'ntp')).to.deep.equal(NTP);

    // Every InfraMachine says it was cloned from its owner's new template (KCP compares it with its infrastructureRef).
    for (const m of await p.machines()) {
      const dm = await p.client.get(DevMachines, p.ns, m.metadata.name!);
      const owner = m.metadata.labels?.['cluster.x-k8s.io/control-plane-name'] !== undefined ? CP : MD;
      expect(ann(dm, CLONED_FROM_NAME), m.metadata.name).to.equal(owner === CP ? cpClone : mdInfra);
    }
    // Owners unpaused.
    expect(ann(kcp, Annotations.paused)).to.equal(undefined);
    expect(ann(md, Annotations.paused)).to.equal(undefined);
    expect(ann(md, PAUSED_BY_PLAN)).to.equal(undefined);
  });

  it("leaves an operator's pause on a MachineDeployment in place, and still aligns its spec", async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
    await p.client.patch(MachineDeployments, p.ns, MD, { metadata: { annotations: { [Annotations.paused]: '' } } }, { type: 'merge' });
    await p.startPlatform();
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: MD, sequence: 2, updaters: [refUpdater()] }] }));
    const plan = await p.waitStatus('p', 'updated', 60_000);
    const md = await p.md(MD);
    expect(ann(md, Annotations.paused), 'operator pause kept').to.equal('');
    expect(ann(md, PAUSED_BY_PLAN)).to.equal(undefined);
    expect(at(md, 'spec', 'template', 'spec', 'version')).to.equal(TO_VERSION);
    expect(conditionOf(plan, 'OwnersAligned')).to.include({ status: 'True' });
  });

  it('abort mid control plane keeps the KCP paused with OwnersAligned=False MixedMachines; a retry plan aligns and unpauses it', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 3, mds: [] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    await p.apply(planObject(p.ns, 'p', { cp: { name: CP, sequence: 1, updaters: [refUpdater({ name: 'k8s' })] } }));
    await p.waitTasks('k8s', 1);
    await p.finishTasks('k8s');
    await waitFor(async () => (await p.machineUpdates()).filter((m) => m.status?.updateStatus === 'updated').length === 1 || undefined, {
      message: 'first CP machine updated',
    });
    await p.waitTasks('k8s', 1);
    await p.patchPlan('p', { updatePhase: 'aborting' });
    await playUntil(p, 'p', 'aborted');

    const plan = await p.waitPlan('p', (x) => conditionOf(x, 'OwnersAligned')?.reason === 'MixedMachines', 'OwnersAligned MixedMachines');
    expect(conditionOf(plan, 'OwnersAligned')?.status).to.equal('False');
    const kcp = await get(p, KubeadmControlPlanes, CP);
    expect(ann(kcp, Annotations.paused), 'KCP kept paused over mixed machines').to.equal('');
    expect(ann(kcp, PAUSED_BY_PLAN)).to.equal('p');
    expect(at(kcp, 'spec', 'version'), 'spec left as it was').to.not.equal(TO_VERSION);
    const events = await waitFor(
      async () => {
        const ev = (await p.client.list(Events, p.ns)).items.filter(
          (e) => (e as unknown as { reason?: string }).reason === 'OwnerKeptPaused',
        );
        return ev.length > 0 ? ev : undefined;
      },
      { message: 'OwnerKeptPaused event' },
    );
    expect((events[0] as unknown as { message: string }).message).to.match(/apply a plan with the same changes/);

    // The retry plan takes the pause over, finishes the target and aligns.
    await p.apply(planObject(p.ns, 'p2', { cp: { name: CP, sequence: 1, updaters: [refUpdater({ name: 'k8s' })] } }));
    await playUntil(p, 'p2', 'updated');
    const after = await get(p, KubeadmControlPlanes, CP);
    expect(at(after, 'spec', 'version')).to.equal(TO_VERSION);
    expect(ann(after, Annotations.paused)).to.equal(undefined);
    expect(ann(after, PAUSED_BY_PLAN)).to.equal(undefined);
  });
  it('a surging MachineDeployment (maxUnavailable 0) stays unpaused so it can scale, and is aligned and unpaused at the end', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 0 }] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: MD, sequence: 2, updaters: [refUpdater({ name: 'k8s' })] }] }));
    await p.waitTasks('k8s', 1);
    const during = await p.md(MD);
    expect(ann(during, Annotations.paused), 'surging MD not paused').to.equal(undefined);
    expect(at(during, 'spec', 'replicas'), 'surged').to.equal(3);
    await playUntil(p, 'p', 'updated');
    const md = await p.md(MD);
    expect(at(md, 'spec', 'template', 'spec', 'version')).to.equal(TO_VERSION);
    expect(at(md, 'spec', 'replicas')).to.equal(2);
    expect(ann(md, Annotations.paused)).to.equal(undefined);
    expect(at(await p.client.get(MachineSets, p.ns, inventoryMachineSetName(MD)), 'spec', 'template', 'spec', 'version')).to.equal(
      TO_VERSION,
    );
  });

  it('9 replicas, maxUnavailable 10%, maxSurge 1: surged to 10 and never paused while its machines update (the rule reads the replicas before the surge)', async () => {
    // 10 % of 9 rounds down to 0: the MachineDeployment surges. Once surged, 10 % of its 10 replicas would be 1 ("not
    // surging"): a rule re-taken from the surged count paused it for the rest of the target (issue 42, item 11).
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 9, maxUnavailable: '10%' }] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: MD, sequence: 2, updaters: [refUpdater({ name: 'k8s' })] }] }));
    const pausedWhileUpdating: string[] = [];
    let rounds = 0;
    await waitFor(
      async () => {
        // Whenever a machine is in update (an open task), the owner must be unpaused with its surge in place.
        const open = (await p.tasks()).filter(
          (t) => !['updated', 'failed', 'aborted'].includes((t['status'] as { updateStatus?: string } | undefined)?.updateStatus ?? ''),
        );
        if (open.length > 0) {
          const md = await p.md(MD);
          if (ann(md, Annotations.paused) !== undefined)
            pausedWhileUpdating.push(`${open.length} open task(s), paused by ${ann(md, PAUSED_BY_PLAN) ?? '?'}`);
          expect(at(md, 'spec', 'replicas'), 'surged while its machines update').to.equal(10);
          rounds++;
          await p.finishTasks('k8s');
        }
        return (await p.plan('p'))?.status?.updateStatus === 'updated';
      },
      { timeoutMs: 120_000, intervalMs: 50, message: 'plan p updated' },
    );
    expect(pausedWhileUpdating, 'a surging MachineDeployment is not paused during its target').to.deep.equal([]);
    expect(rounds, 'machines seen in update').to.be.greaterThan(0);
    const md = await p.md(MD);
    expect(at(md, 'spec', 'replicas'), 'restored after the surge').to.equal(9);
    expect(ann(md, Annotations.paused)).to.equal(undefined);
    expect(ann(md, Annotations.surgeOriginalReplicas)).to.equal(undefined);
  });

  it('deleting a plan follows the same rule: nothing committed -> owner unpaused; mixed -> owner stays paused', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 3, mds: [] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    await p.apply(planObject(p.ns, 'a', { cp: { name: CP, sequence: 1, updaters: [refUpdater({ name: 'k8s' })] } }));
    await p.waitTasks('k8s', 1);
    expect(ann(await get(p, KubeadmControlPlanes, CP), PAUSED_BY_PLAN)).to.equal('a');
    await p.client.delete(InPlaceUpdatePlans, p.ns, 'a');
    await abortedAndGone(p, 'a');
    const released = await get(p, KubeadmControlPlanes, CP);
    expect(ann(released, Annotations.paused), 'unpaused: nothing committed').to.equal(undefined);

    await p.apply(planObject(p.ns, 'b', { cp: { name: CP, sequence: 1, updaters: [refUpdater({ name: 'k8s' })] } }));
    await p.waitTasks('k8s', 1);
    await p.finishTasks('k8s');
    await waitFor(
      async () =>
        (await p.machineUpdates()).filter((m) => m.spec.planName === 'b' && m.status?.updateStatus === 'updated').length === 1 || undefined,
      { message: 'one machine of b updated' },
    );
    await p.waitTasks('k8s', 1);
    await p.client.delete(InPlaceUpdatePlans, p.ns, 'b');
    await abortedAndGone(p, 'b');
    const kept = await get(p, KubeadmControlPlanes, CP);
    expect(ann(kept, Annotations.paused), 'kept paused: mixed machines').to.equal('');
    expect(ann(kept, PAUSED_BY_PLAN)).to.equal('b');
  });
  it('deletes a deleted plan’s template clones once nothing refers to them, never a referenced one', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    const os = (image: string): PlanUpdater[] => [
      refUpdater({
        name: 'os',
        sequence: 1,
        responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: image }],
      }),
    ];
    const infraRef = async (): Promise<unknown> => at(await p.md(MD), 'spec', 'template', 'spec', 'infrastructureRef', 'name');
    await p.apply(planObject(p.ns, 'a', { mds: [{ name: MD, sequence: 2, updaters: os(IMAGE) }] }));
    await playUntil(p, 'a', 'updated');
    const cloneOfA = await waitFor(
      async () => {
        const r = await infraRef();
        return typeof r === 'string' && cloneOf(MD).test(r) ? r : undefined;
      },
      { message: 'MD on the clone of plan a' },
    );
    await p.apply(planObject(p.ns, 'b', { mds: [{ name: MD, sequence: 2, updaters: os(`${IMAGE}-2`) }] }));
    await playUntil(p, 'b', 'updated');
    // Plan b cloned plan a's clone (the template the MachineDeployment then named), named from the original: no chain.
    const cloneOfB = await waitFor(
      async () => {
        const r = await infraRef();
        return typeof r === 'string' && r !== cloneOfA && cloneOf(MD).test(r) ? r : undefined;
      },
      { message: 'MD on the clone of plan b' },
    );
    expect(await p.client.get(DevMachineTemplates, p.ns, cloneOfA), "plan a's clone kept while plan a exists").to.not.equal(undefined);

    // Deleting plan a: its clone is referenced by nothing any more (MD, MachineSet and InfraMachines moved to b's).
    await p.client.delete(InPlaceUpdatePlans, p.ns, 'a');
    await waitFor(async () => (await p.plan('a')) === undefined || undefined, { message: 'plan a gone' });
    await waitFor(async () => (await p.client.get(DevMachineTemplates, p.ns, cloneOfA)) === undefined || undefined, {
      message: "plan a's clone deleted",
    });
    // Deleting plan b: its clone is what the MachineDeployment and MachineSet use, it stays; so does the original.
    await p.client.delete(InPlaceUpdatePlans, p.ns, 'b');
    await waitFor(async () => (await p.plan('b')) === undefined || undefined, { message: 'plan b gone' });
    expect(await p.client.get(DevMachineTemplates, p.ns, cloneOfB), "plan b's clone is still referenced").to.not.equal(undefined);
    expect(await p.client.get(DevMachineTemplates, p.ns, MD), 'original template').to.not.equal(undefined);
    expect(await infraRef()).to.equal(cloneOfB);
  });

  it('over 6 successive plans the clone name stays bounded and never chains, clones of plans beyond the history limit go; preview of a plan that already ran says already done', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    const infraRef = async (): Promise<unknown> =>
      at(await get(p, KubeadmControlPlanes, CP), 'spec', 'machineTemplate', 'spec', 'infrastructureRef', 'name');
    const planOf = (n: number): ReturnType<typeof planObject> =>
      planObject(p.ns, `${'image-rollout-number-'.repeat(3)}${n}`, {
        cp: {
          name: CP,
          sequence: 1,
          updaters: [
            refUpdater({
              name: 'os',
              responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: `${IMAGE}-${n}` }],
            }),
          ],
        },
      });
    const names: string[] = [];
    for (let n = 1; n <= 6; n++) {
      const plan = planOf(n);
      await p.apply(plan);
      await playUntil(p, plan.metadata.name!, 'updated');
      names.push(
        await waitFor(
          async () => {
            const r = await infraRef();
            return typeof r === 'string' && !names.includes(r) && r !== CP ? r : undefined;
          },
          { message: `KCP on the clone of plan ${n}` },
        ),
      );
    }
    for (const name of names) {
      expect(name.length, name).to.be.at.most(63);
      expect(name).to.match(cloneOf(CP));
    }
    expect(new Set(names).size).to.equal(6);

    // The plans stay (user-applied plans are never deleted by default), but the three beyond the history limit (3)
    // lose their records and, since nothing refers to them any more, their clones; the newest three keep theirs.
    const [old1, old2, old3, kept4, kept5, current] = names as [string, string, string, string, string, string];
    for (const gone of [old1, old2, old3])
      await waitFor(async () => (await p.client.get(DevMachineTemplates, p.ns, gone)) === undefined || undefined, {
        message: `clone ${gone} of a plan beyond the history limit deleted`,
      });
    for (const kept of [kept4, kept5, current])
      expect(await p.client.get(DevMachineTemplates, p.ns, kept), `clone ${kept} kept`).to.not.equal(undefined);
    expect(await p.client.get(DevMachineTemplates, p.ns, CP), 'original template').to.not.equal(undefined);
    expect(await p.plan(planOf(1).metadata.name!), 'the oldest plan itself stays').to.not.equal(undefined);

    const file = join(mkdtempSync(join(tmpdir(), 'owners-')), 'plan.yaml');
    writeFileSync(file, stringify(planOf(6)));
    const r = await cli('preview', '-f', file, '--kubeconfig', env().kubeconfigPath);
    expect(r.out).to.match(/Result: already done/);
    expect(r.out).to.not.match(/\(new\)/);
  });

  it("moves a finished machine's InfraMachine to the target's clone while the target runs (the end writes only the owners)", async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: MD, replicas: 2, maxUnavailable: 1 }] });
    await p.startPlatform({ referenceNames: ['nobody'] });
    const os = refUpdater({
      name: 'os',
      responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: IMAGE }],
    });
    await p.apply(planObject(p.ns, 'ahead', { mds: [{ name: MD, sequence: 2, updaters: [os] }] }));
    await p.waitTasks('os', 1);
    await p.finishTasks('os');
    const first = await waitFor(
      async () => (await p.machineUpdates()).find((m) => m.status?.updateStatus === 'updated')?.spec.machineRef.name,
      { message: 'first machine updated' },
    );
    // Only one machine at a time: the target is still running, its MachineDeployment paused, when the annotation lands.
    const clone = await waitFor(
      async () => {
        const v = ann(await p.client.get(DevMachines, p.ns, first), CLONED_FROM_NAME);
        return v && cloneOf(MD).test(v) ? v : undefined;
      },
      { message: "first machine's InfraMachine on the clone" },
    );
    expect(ann(await p.md(MD), PAUSED_BY_PLAN), 'target still running').to.equal('ahead');
    expect(
      at(await p.client.get(DevMachineTemplates, p.ns, clone), 'spec', 'template', 'spec', 'backend', 'docker', 'customImage'),
    ).to.equal(IMAGE);
    await playUntil(p, 'ahead', 'updated');
    expect(at(await p.md(MD), 'spec', 'template', 'spec', 'infrastructureRef', 'name')).to.equal(clone);
    const workers = (await p.machines()).filter((m) => m.metadata.labels?.['cluster.x-k8s.io/deployment-name'] === MD);
    expect(workers).to.have.length(2);
    for (const m of workers)
      expect(ann(await p.client.get(DevMachines, p.ns, m.metadata.name!), CLONED_FROM_NAME), m.metadata.name).to.equal(clone);
  });

  it('reports an owner it cannot align (AlignFailed) and aligns it once the cause is fixed, even after the plan ended', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [] });
    const original = (await p.client.get(DevMachineTemplates, p.ns, CP))!;
    await p.client.delete(DevMachineTemplates, p.ns, CP);
    await p.startPlatform();
    await p.apply(
      planObject(p.ns, 'p', {
        cp: {
          name: CP,
          sequence: 1,
          updaters: [
            refUpdater({
              name: 'os',
              responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/backend/docker/customImage', value: IMAGE }],
            }),
          ],
        },
      }),
    );
    const failed = await p.waitPlan(
      'p',
      (x) => conditionOf(x, 'OwnersAligned')?.reason === 'AlignFailed',
      'OwnersAligned AlignFailed',
      60_000,
    );
    expect(conditionOf(failed, 'OwnersAligned')?.message).to.match(/infrastructure template of ControlPlane cluster1-cp was not found/);
    expect(ann(await get(p, KubeadmControlPlanes, CP), PAUSED_BY_PLAN), 'kept paused until aligned').to.equal('p');

    await p.client.create(DevMachineTemplates, {
      apiVersion: original.apiVersion,
      kind: original.kind,
      metadata: { name: CP, namespace: p.ns, ...(original.metadata.labels ? { labels: original.metadata.labels } : {}) },
      spec: original['spec'],
    } as KubeObject);
    const aligned = await p.waitPlan(
      'p',
      (x) => x.status?.updateStatus === 'updated' && conditionOf(x, 'OwnersAligned')?.status === 'True',
      'owners aligned after the fix',
      90_000,
    );
    expect(conditionOf(aligned, 'OwnersAligned')?.reason).to.equal('Aligned');
    const kcp = await get(p, KubeadmControlPlanes, CP);
    expect(at(kcp, 'spec', 'machineTemplate', 'spec', 'infrastructureRef', 'name')).to.match(cloneOf(CP));
    expect(ann(kcp, Annotations.paused)).to.equal(undefined);
  });
});
