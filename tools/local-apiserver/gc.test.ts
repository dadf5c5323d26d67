import { expect } from 'chai';
import { Core } from './core.js';

type Obj = Record<string, unknown>;

describe('local-apiserver garbage collector indexes', () => {
  const cm = (name: string, owner?: Obj): Obj => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(owner ? { ownerReferences: [owner] } : {}) },
  });

  it('follows owner references through writes that keep them and writes that drop them', async function () {
    const core = new Core(10_000);
    core.bootstrap();
    const cms = core.lookup('', 'v1', 'configmaps')!;
    const owner = core.create(cms, 'v1', 'default', cm('owner'), {}).obj.metadata as Obj;
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.uid };
    core.create(cms, 'v1', 'default', cm('kept', ref), {});
    core.create(cms, 'v1', 'default', cm('released', ref), {});
    // Writes that leave the references as they were (the index is not touched), and one that drops them.
    core.patch(cms, 'v1', 'default', 'kept', 'application/merge-patch+json', { metadata: { labels: { a: 'b' } } }, {});
    core.patch(cms, 'v1', 'default', 'released', 'application/merge-patch+json', { data: { k: 'v' } }, {});
    core.patch(cms, 'v1', 'default', 'released', 'application/merge-patch+json', { metadata: { ownerReferences: null } }, {});
    core.delete(cms, 'default', 'owner', {});
    for (let i = 0; i < 100 && core.store('/configmaps').get('default', 'kept'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(core.store('/configmaps').get('default', 'kept'), 'a dependent of the deleted owner is collected').to.equal(undefined);
    expect(core.store('/configmaps').get('default', 'released'), 'an object that dropped its owner stays').to.not.equal(undefined);
    core.close();
  });
});
