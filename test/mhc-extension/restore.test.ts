// Integration (issue 25): the plan controller's label patch also protects the machine (as the MHC extension would) and
// its unlabel also restores skip-remediation, so the MHC extension writes no machine and the plan controller writes
// each twice (label + protect; unlabel + restore), where an update used to cost four Machine patches. The whole
// platform on the local API server.
import { expect } from 'chai';
import { Annotations, Labels, Machines, type KubeObject } from '../../src/api/index.js';
import type { RuntimeManager } from '../../src/runtime/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { planObject, refUpdater } from '../e2e/harness.js';

const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const OWN = 'example.com/owner';

describe('mhc-extension: the end of the protection rides on the plan unlabel (integration)', function () {
  this.timeout(120_000);
  const env = useE2eEnv();

  it("ends the update with no label and no protection, the operator's annotations kept: no extension patch and 2 plan patches per machine", async () => {
    const p = await env().platform();
    await p.provision({ cpReplicas: 1, mds: [{ name: 'cluster1-md-0', replicas: 2, maxUnavailable: 2 }] });
    const [plain, opted] = [p.mdMachine('cluster1-md-0', 0), p.mdMachine('cluster1-md-0', 1)];
    // The operator's own annotation on both, and on one its own skip-remediation (which the restore keeps).
    await env().client.patch(Machines, p.ns, plain, { metadata: { annotations: { [OWN]: 'a' } } }, { type: 'merge' });
    await env().client.patch(Machines, p.ns, opted, { metadata: { annotations: { [OWN]: 'b', [S]: 'operator' } } }, { type: 'merge' });
    await p.startPlatform({ referenceNames: ['ref'] });
    await p.apply(planObject(p.ns, 'p', { mds: [{ name: 'cluster1-md-0', sequence: 2, updaters: [refUpdater({ name: 'manual' })] }] }));
    await p.waitTasks('manual', 2);
    const annotations = async (name: string): Promise<Record<string, string>> =>
      (await env().client.get(Machines, p.ns, name))?.metadata.annotations ?? {};
    await waitFor(async () => (await annotations(plain))[P] === 'false' && (await annotations(opted))[P] === 'true', {
      timeoutMs: 60_000,
      message: 'both machines protected (prior state recorded)',
    });
    // The plan controller restores from its cache: let it see the protection (its own write) before the updates end
    // (else the extension restores, correctly, after the unlabel, and the counts below would not hold).
    const planCache = (p as unknown as { managers: Map<string, RuntimeManager> }).managers
      .get('plan-controller')!
      .informer<KubeObject>(Machines).store;
    await waitFor(() => [plain, opted].every((m) => planCache.peek(p.ns, m)?.metadata.annotations?.[P] !== undefined), {
      message: 'the plan controller cache shows the protection',
    });

    await p.drive('p', 'manual');
    const settled = await waitFor(
      async () => {
        const ms = await Promise.all([plain, opted].map((m) => env().client.get(Machines, p.ns, m)));
        return ms.every((m) => m && m.metadata.labels?.[Labels.planName] === undefined && m.metadata.annotations?.[P] === undefined)
          ? ms
          : undefined;
      },
      { timeoutMs: 60_000, message: 'both machines unlabelled and restored' },
    );
    const [a, b] = settled.map((m) => m!.metadata.annotations ?? {});
    expect(a).to.not.have.property(S);
    expect(a).to.not.have.property(Annotations.updateStartedAt);
    expect(a).to.include({ [OWN]: 'a' });
    expect(b).to.include({ [OWN]: 'b', [S]: 'operator' });
    expect(b).to.not.have.property(Annotations.updateStartedAt);

    // The protection rode on the label patch: the extension found both machines protected and wrote nothing.
    expect(await p.machinePatches('mhc-extension'), 'MHC extension Machine patches').to.equal(0);
    // The plan controller: per machine the label + protect and the unlabel + restore; per plan one pre-start dry-run.
    expect(
      await p.machinePatches('plan-controller'),
      'plan controller Machine patches (dry-run; label + protect, unlabel + restore)',
    ).to.equal(1 + 2 * 2);
  });
});
