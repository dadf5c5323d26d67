// Integration (issue 25): the MHC protection rides on the plan controller's label patch. An MHC whose in-place timeout
// is invalid when the machines are labelled protects nothing (neither component writes it); once an operator fixes the
// annotation, the MHC extension protects the machines already in update itself (its write remains in that case only),
// and the plan's unlabel restores them. A crash between the protecting label patch and the MachineUpdate's creation
// (the state written by hand, as the crash leaves it): the restarted platform finishes and the extension neither
// restores early nor writes at all. The restore is the plan's while the plan its label names exists; once that plan is
// gone without unlabelling (a finalizer removed by hand), the extension restores (a label younger than 30 s waits that
// long first: its plan's event may come after the machine's). The whole platform on the local API server.
import { expect } from 'chai';
import { Annotations, InPlaceUpdatePlans, Labels, MachineHealthChecks, Machines } from '../../src/api/index.js';
import type { Machine, MachineHealthCheck } from '../../src/api/capi/index.js';
import { mhcExtension } from '../../src/mhc-extension/index.js';
import { labelPatch } from '../../src/plan-controller/decide/label.js';
import { machineUpdateName } from '../../src/plan-controller/decide/names.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { planObject, refUpdater, type Platform } from '../e2e/harness.js';

const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const MHC = 'cluster1-mhc';

describe("mhc-extension and the protection the plan's label patch carries (integration)", function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it('invalid timeout at labelling: no protection; fixed afterwards: the extension protects; the unlabel restores', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 2 }] });
    const setTimeoutAnnotation = async (v: string): Promise<void> =>
      void (await env().client.patch(
        MachineHealthChecks,
        p.ns,
        MHC,
        { metadata: { annotations: { [Annotations.inPlaceUpdateTimeout]: v } } },
        { type: 'merge' },
      ));
    await setTimeoutAnnotation('not-a-duration');
    const names = [p.mdMachine('cluster1-md-0', 0), p.mdMachine('cluster1-md-0', 1)];
    await p.startPlatform({ referenceNames: ['ref'] });
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] }));
    await p.waitTasks('manual', 2);
    const get = async (): Promise<Record<string, string>[]> =>
      Promise.all(names.map(async (n) => (await env().client.get(Machines, p.ns, n))?.metadata.annotations ?? {}));
    // Both in update (tasks exist, so labelled and their MachineUpdates created); the invalid MHC protects nothing.
    for (const a of await get()) {
      expect(a).to.have.property(Annotations.updateStartedAt);
      expect(a).to.not.have.property(S);
      expect(a).to.not.have.property(P);
    }
    expect(await p.machinePatches('mhc-extension'), 'MHC extension Machine patches while the MHC is invalid').to.equal(0);

    await setTimeoutAnnotation('10m');
    const protectedNow = await waitFor(
      async () => ((await get()).every((a) => a[P] === 'false' && a[S] !== undefined) ? get() : undefined),
      {
        timeoutMs: 60_000,
        message: 'the extension protects the machines already in update',
      },
    );
    for (const a of protectedNow) expect(a[S]).to.match(new RegExp(`MachineHealthCheck ${MHC} skips remediation until `));
    expect(await p.machinePatches('mhc-extension'), 'MHC extension Machine patches (its own protection, one per machine)').to.equal(2);

    await p.drive('p', 'manual');
    await waitFor(
      async () => {
        const ms = await Promise.all(names.map((n) => env().client.get(Machines, p.ns, n)));
        return ms.every(
          (m) =>
            m &&
            m.metadata.labels?.[Labels.planName] === undefined &&
            m.metadata.annotations?.[P] === undefined &&
            m.metadata.annotations?.[S] === undefined,
        );
      },
      { timeoutMs: 60_000, message: 'both machines unlabelled and their protection restored' },
    );
  });

  /** Writes on `name` what the plan controller's label patch for plan `plan` writes (a crash right after it leaves this). */
  async function labelAsPlanController(p: Platform, name: string, plan: string): Promise<void> {
    const m = (await env().client.get<Machine>(Machines, p.ns, name))!;
    const mhc = (await env().client.get<MachineHealthCheck>(MachineHealthChecks, p.ns, MHC))!;
    const patch = labelPatch(m, plan, new Date().toISOString(), machineUpdateName(plan, name), [mhc]);
    expect(patch.protectedBy, 'the label patch protects').to.equal(MHC);
    if (patch.type === 'json') await env().client.patch(Machines, p.ns, name, patch.ops, { type: 'json' });
    else await env().client.patch(Machines, p.ns, name, patch.body, { type: 'merge' });
  }

  it('a crash between the label (with the protection) and the MachineUpdate: the restarted platform finishes, the extension never writes', async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 2 }] });
    const names = [p.mdMachine('cluster1-md-0', 0), p.mdMachine('cluster1-md-0', 1)];
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] }));
    // As the crashed plan controller left it: the first machine labelled and protected, no MachineUpdate yet.
    await labelAsPlanController(p, names[0]!, 'p');
    await p.startPlatform({ referenceNames: ['ref'] });
    await p.waitTasks('manual', 2);
    const a = (await env().client.get(Machines, p.ns, names[0]!))?.metadata.annotations ?? {};
    expect(a[P], 'still protected once its MachineUpdate exists').to.equal('false');
    await p.drive('p', 'manual');
    await waitFor(async () => (await p.labelledMachines()).length === 0, { timeoutMs: 60_000, message: 'machines unlabelled' });
    for (const n of names) {
      const after = (await env().client.get(Machines, p.ns, n))?.metadata.annotations ?? {};
      expect(after, n).to.not.have.property(S);
      expect(after, n).to.not.have.property(P);
    }
    // Neither the protection (it was there) nor the restore (the plan's unlabel) was the extension's.
    expect(await p.machinePatches('mhc-extension'), 'MHC extension Machine patches').to.equal(0);
  });

  it("the restore waits for the plan a machine's label names; once that plan is gone without unlabelling, the extension restores", async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 2 }] });
    const [kept, orphan] = [p.mdMachine('cluster1-md-0', 0), p.mdMachine('cluster1-md-0', 1)];
    // Plan p exists (no plan controller runs: it never gets a finalizer); the orphan's plan never existed.
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] }));
    await labelAsPlanController(p, kept, 'p');
    await labelAsPlanController(p, orphan, 'gone');
    await p.startComponent(mhcExtension);
    const annotations = async (n: string): Promise<Record<string, string>> =>
      (await env().client.get(Machines, p.ns, n))?.metadata.annotations ?? {};
    // Labelled just now: its plan's event may still be on its way (PLAN_CACHE_GRACE_MS), the restore waits for it.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await annotations(orphan))[P], 'the orphan within the grace of its label').to.equal('false');
    await waitFor(async () => (await annotations(orphan))[P] === undefined, { timeoutMs: 60_000, message: 'the orphan restored' });
    expect(await annotations(orphan)).to.not.have.property(S);
    expect((await annotations(kept))[P], "the plan's machine left to its plan").to.equal('false');
    // The plan goes without unlabelling (no finalizer): its deletion wakes the restore of its machine.
    await env().client.delete(InPlaceUpdatePlans, p.ns, 'p');
    await waitFor(async () => (await annotations(kept))[P] === undefined, { timeoutMs: 60_000, message: 'the kept machine restored' });
    expect(await annotations(kept)).to.not.have.property(S);
  });
});
