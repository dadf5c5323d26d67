import { expect } from 'chai';
import { Core } from './core.js';

describe('local-apiserver write bodies', () => {
  it("leaves a caller's create and update body as it was unless the body is given away (ownedBody)", function () {
    const core = new Core(10_000);
    core.bootstrap();
    const cms = core.lookup('', 'v1', 'configmaps')!;
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: 'y' } }, data: { k: 'v' } };
    const copy = JSON.parse(JSON.stringify(body)) as unknown;
    const created = core.create(cms, 'v1', 'default', body, {}).obj;
    expect(body, 'create').to.deep.equal(copy);
    const update = {
      ...body,
      metadata: { ...body.metadata, resourceVersion: (created.metadata as Record<string, unknown>).resourceVersion },
    };
    const updateCopy = JSON.parse(JSON.stringify(update)) as unknown;
    core.update(cms, 'v1', 'default', 'a', update, {});
    expect(update, 'update').to.deep.equal(updateCopy);
    // Given away, the body becomes the stored object's base (no deep copy).
    const owned = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' }, data: { k: 'v' } };
    const stored = core.create(cms, 'v1', 'default', owned, { ownedBody: true }).obj;
    expect(stored.data).to.equal(owned.data);
    core.close();
  });
});
