// Unit: the plan controller's unlabel of a machine whose update ended is also the end of its MHC protection (issue 25):
// one JSON patch removes the plan label and start time and restores skip-remediation as the MHC extension would,
// guarded by tests of what it read. The patch is applied here as the API server applies it (the local server's
// JSON patch), against the Machine as cached and against one changed meanwhile.
import { expect } from 'chai';
import { Annotations, Labels, type InPlaceUpdatePlan, type KubeObject } from '../../src/api/index.js';
import type { PlanDeps } from '../../src/plan-controller/deps.js';
import { reconcileMachines } from '../../src/plan-controller/machines/start.js';
import type { PlanDecision } from '../../src/plan-controller/decide.js';
import { noopLogger, type KubeClient, type Store } from '../../src/runtime/index.js';
import { jsonPatch } from '../../tools/local-apiserver/patch.js';

const NS = 'ns1';
const S = Annotations.skipRemediation;
const P = Annotations.skipRemediationPrior;
const STARTED = Annotations.updateStartedAt;
const OTHER = 'example.com/keep';

const plan = { apiVersion: 'x', kind: 'InPlaceUpdatePlan', metadata: { name: 'p1', namespace: NS } } as InPlaceUpdatePlan & KubeObject;
const machine = (annotations: Record<string, string>): KubeObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Machine',
  metadata: { name: 'm1', namespace: NS, labels: { [Labels.planName]: 'p1', keep: 'yes' }, annotations },
});

/** Runs the unlabel of m1 with `cached` in the plan controller's cache; the server holds `live`. Returns the Machine after, and the patches sent. */
async function unlabel(cached: KubeObject, live: KubeObject = cached): Promise<{ after: KubeObject; patches: number }> {
  let current = structuredClone(live);
  let patches = 0;
  const client = {
    patch: async (_r: unknown, _ns: string, _name: string, ops: unknown) => {
      patches++;
      current = jsonPatch(current, ops) as KubeObject;
      return current;
    },
  } as unknown as KubeClient;
  const machines = {
    peek: (ns: string | undefined, name: string) => (ns === NS && name === 'm1' ? cached : undefined),
  } as unknown as Store;
  const deps = { client, machines } as unknown as PlanDeps;
  const d = { create: [], label: [], abort: [], unlabel: ['m1'] } as unknown as PlanDecision;
  await reconcileMachines(deps, plan, d, noopLogger);
  return { after: current, patches };
}

describe('plan-controller unlabel restores skip-remediation in the same patch (issue 25)', () => {
  it('removes the label, the start time, the protection the MHC extension set and its prior state: one patch', async () => {
    const { after, patches } = await unlabel(machine({ [STARTED]: 't', [S]: 'in-place update p1-m1: ...', [P]: 'false', [OTHER]: 'x' }));
    expect(patches).to.equal(1);
    expect(after.metadata.labels).to.deep.equal({ keep: 'yes' });
    expect(after.metadata.annotations).to.deep.equal({ [OTHER]: 'x' });
  });

  it("keeps the operator's own skip-remediation (prior state true), forgetting the prior state", async () => {
    const { after } = await unlabel(machine({ [STARTED]: 't', [S]: 'operator', [P]: 'true' }));
    expect(after.metadata.annotations).to.deep.equal({ [S]: 'operator' });
  });

  it('puts back an operator skip-remediation removed during the update, and forgets a lifted protection', async () => {
    expect((await unlabel(machine({ [STARTED]: 't', [P]: 'true' }))).after.metadata.annotations).to.deep.equal({ [S]: '' });
    expect((await unlabel(machine({ [STARTED]: 't', [P]: 'false', [OTHER]: 'x' }))).after.metadata.annotations).to.deep.equal({
      [OTHER]: 'x',
    });
  });

  it('without prior state (no MHC protected it) touches no skip-remediation', async () => {
    const { after } = await unlabel(machine({ [STARTED]: 't', [S]: 'operator' }));
    expect(after.metadata.annotations).to.deep.equal({ [S]: 'operator' });
    expect(after.metadata.labels).to.deep.equal({ keep: 'yes' });
  });

  it('fails (changes nothing) when the annotations it read changed meanwhile: decided again, never clobbered', async () => {
    const cached = machine({ [STARTED]: 't', [S]: 'in-place update p1-m1', [P]: 'false' });
    const operatorEdit = machine({ [STARTED]: 't', [S]: 'operator now', [P]: 'false' });
    let err: unknown;
    try {
      await unlabel(cached, operatorEdit);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/test failed/);
    // Resting on an absent skip-remediation: the extension protecting again meanwhile fails the whole-map test.
    const lifted = machine({ [STARTED]: 't', [P]: 'false' });
    const reprotected = machine({ [STARTED]: 't', [P]: 'false', [S]: 'in-place update p2-m1' });
    err = undefined;
    try {
      await unlabel(lifted, reprotected);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/test failed/);
  });
});
