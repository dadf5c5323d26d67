// `inplace capi-sim --health-port`: /readyz waits until every handler the ExtensionConfigs' status lists (as the API
// server has it) is in the simulator's registry, so a caller that saw the status written still waits for the cache.
import { expect } from 'chai';
import { missingHandlers } from '../../src/cli/capi-sim.js';

const ec = (name: string, handlers?: string[]) => ({
  apiVersion: 'runtime.cluster.x-k8s.io/v1beta2',
  kind: 'ExtensionConfig',
  metadata: { name },
  ...(handlers ? { status: { handlers: handlers.map((h) => ({ name: `${h}.${name}` })) } } : {}),
});
const three = ['can-update-machine', 'can-update-machineset', 'update-machine'];

describe('capi-sim readiness: missingHandlers', () => {
  it('is empty without ExtensionConfigs, or when none has discovered handlers yet', () => {
    expect(missingHandlers([], [])).to.deep.equal([]);
    expect(missingHandlers([ec('inplace')], [])).to.deep.equal([]);
  });

  it("lists the status' handlers the registry does not know yet (status written, cache behind)", () => {
    expect(missingHandlers([ec('inplace', three)], ['can-update-machine.inplace'])).to.deep.equal([
      'can-update-machineset.inplace',
      'update-machine.inplace',
    ]);
  });

  it('is empty once the registry knows every handler of every ExtensionConfig', () => {
    const known = three.map((h) => `${h}.inplace`);
    expect(missingHandlers([ec('inplace', three)], known)).to.deep.equal([]);
    expect(missingHandlers([ec('inplace', three), ec('other', ['update-machine'])], known)).to.deep.equal(['update-machine.other']);
  });
});
