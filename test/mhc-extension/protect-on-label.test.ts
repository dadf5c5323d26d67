// Integration (issue 25): the MHC protection rides on the plan controller's label patch, and only there. An MHC whose
// in-place timeout is invalid when the machines are labelled protects nothing (neither component writes it); once an
// operator fixes the annotation, the MHC extension protects the machines already in update itself (its write remains
// in that case only), and the plan's unlabel restores them. The whole platform on the local API server.
import { expect } from 'chai';
import { Annotations, Labels, MachineHealthChecks, Machines } from '../../src/api/index.js';
import { waitFor } from '../support/wait.js';
import { useE2eEnv } from '../e2e/env.js';
import { planObject, refUpdater, type Platform } from '../e2e/harness.js';

const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const MHC = 'cluster1-mhc';

/** Successful Machine patches of a component, from its manager's /metrics text. */
async function machinePatches(p: Platform, component: string): Promise<number> {
  let n = 0;
  for (const line of (await p.metrics(component)).split('\n')) {
    const m = /^inplace_api_requests_total\{(.*)\} (\d+)$/.exec(line);
    if (m && /verb="patch"/.test(m[1]!) && /resource="machines(\.|")/.test(m[1]!) && /code="2\d\d"/.test(m[1]!)) n += Number(m[2]);
  }
  return n;
}

describe('mhc-extension: a machine labelled before its MHC acts on it is protected by the extension (integration)', function () {
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
    expect(await machinePatches(p, 'mhc-extension'), 'MHC extension Machine patches while the MHC is invalid').to.equal(0);

    await setTimeoutAnnotation('10m');
    const protectedNow = await waitFor(
      async () => ((await get()).every((a) => a[P] === 'false' && a[S] !== undefined) ? get() : undefined),
      {
        timeoutMs: 60_000,
        message: 'the extension protects the machines already in update',
      },
    );
    for (const a of protectedNow) expect(a[S]).to.match(new RegExp(`MachineHealthCheck ${MHC} skips remediation until `));
    expect(await machinePatches(p, 'mhc-extension'), 'MHC extension Machine patches (its own protection, one per machine)').to.equal(2);

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
});
