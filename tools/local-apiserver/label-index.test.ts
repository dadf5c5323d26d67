import { expect } from 'chai';
import { startLocalApiServer } from './index.js';
import { ResourceStore } from './store.js';

// Lists selecting by `label=value` read the keys from the store's label index (store.ts keysWithLabel): the answers,
// paging included, must be the ones a scan of every object gives.
describe('local API server label index', function () {
  const obj = (ns: string, name: string, labels?: Record<string, string>): Record<string, unknown> => ({
    metadata: { name, ...(ns ? { namespace: ns } : {}), ...(labels ? { labels } : {}) },
  });

  it('keeps the keys of an indexed label in step with creates, label changes, removals and restores', function () {
    const s = new ResourceStore(100, 0);
    s.put('a', 'm1', obj('a', 'm1', { c: 'x' }), 1, 'ADDED');
    s.put('b', 'm2', obj('b', 'm2', { c: 'x' }), 2, 'ADDED');
    // Built on first use from what is stored.
    expect(s.keysWithLabel('c', 'x', undefined)).to.deep.equal(['a/m1', 'b/m2']);
    expect(s.keysWithLabel('c', 'x', 'a')).to.deep.equal(['a/m1']);
    s.put('a', 'm0', obj('a', 'm0', { c: 'x' }), 3, 'ADDED');
    s.put('b', 'm2', obj('b', 'm2', { c: 'y' }), 4, 'MODIFIED');
    s.put('a', 'm3', obj('a', 'm3'), 5, 'ADDED');
    expect(s.keysWithLabel('c', 'x', undefined)).to.deep.equal(['a/m0', 'a/m1']);
    expect(s.keysWithLabel('c', 'y', 'b')).to.deep.equal(['b/m2']);
    s.remove('a', 'm0', obj('a', 'm0', { c: 'x' }), 6);
    s.put('a', 'm1', obj('a', 'm1'), 7, 'MODIFIED');
    expect(s.keysWithLabel('c', 'x', undefined)).to.deep.equal([]);
    s.restore('a', 'm3', obj('a', 'm3', { c: 'x' }), 8);
    expect(s.keysWithLabel('c', 'x', 'a')).to.deep.equal(['a/m3']);
    // Cluster-scoped objects have the empty namespace: their keys have no slash.
    s.put('', 'n1', obj('', 'n1', { c: 'x' }), 9, 'ADDED');
    expect(s.keysWithLabel('c', 'x', '')).to.deep.equal(['n1']);
    s.clear(10);
    expect(s.keysWithLabel('c', 'x', undefined)).to.deep.equal([]);
  });

  it('answers label-selected lists, paged or not, as a scan of every object would', async function () {
    this.timeout(60_000);
    const server = await startLocalApiServer({ https: false });
    const auth = { Authorization: `Bearer ${server.token}` };
    const url = (ns: string): string => `${server.url}/api/v1/namespaces/${ns}/configmaps`;
    const send = async (method: string, u: string, body?: unknown, ct = 'application/json'): Promise<void> => {
      const r = await fetch(u, { method, headers: { ...auth, 'Content-Type': ct }, ...(body ? { body: JSON.stringify(body) } : {}) });
      expect(r.status, `${method} ${u}`).to.be.oneOf([200, 201]);
    };
    type Item = { metadata: { name: string; namespace: string; labels?: Record<string, string> } };
    const list = async (u: string): Promise<{ items: Item[]; metadata: { continue?: string } }> => {
      const r = await fetch(u, { headers: auth });
      expect(r.status, u).to.equal(200);
      return (await r.json()) as { items: Item[]; metadata: { continue?: string } };
    };
    const listAll = async (base: string, selector: string, limit: number): Promise<string[]> => {
      const names: string[] = [];
      let cont: string | undefined;
      do {
        const q = new URLSearchParams({
          labelSelector: selector,
          ...(limit ? { limit: String(limit) } : {}),
          ...(cont ? { continue: cont } : {}),
        });
        const page = await list(`${base}?${q}`);
        if (limit) expect(page.items.length).to.be.at.most(limit);
        names.push(...page.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`));
        cont = page.metadata.continue || undefined;
      } while (cont);
      return names;
    };
    try {
      await send('POST', `${server.url}/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } });
      // A seeded pseudo-random fleet: clusters and roles as labels, some changed and some deleted afterwards.
      let seed = 7;
      const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
      const made: { ns: string; name: string }[] = [];
      for (let i = 0; i < 120; i++) {
        const ns = rnd(4) === 0 ? 'other' : 'default';
        const labels: Record<string, string> = { cluster: `c${rnd(5)}` };
        if (rnd(2)) labels['role'] = rnd(2) ? 'cp' : 'worker';
        const name = `m-${String(rnd(1000)).padStart(3, '0')}-${i}`;
        await send('POST', url(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels } });
        made.push({ ns, name });
      }
      const selectors = ['cluster=c1', 'cluster==c2,role=cp', 'cluster in (c3)', 'role=worker,cluster!=c0', 'cluster=c9'];
      const scan = async (ns: string | undefined, selector: string): Promise<string[]> => {
        // The oracle: every object, filtered here by the same requirements (a plain list has no label index to use).
        const all = (await list(ns ? url(ns) : `${server.url}/api/v1/configmaps`)).items;
        const reqs = selector.split(/,(?![^(]*\))/).map((r) => r.trim());
        const ok = (l: Record<string, string> = {}): boolean =>
          reqs.every((r) => {
            let m = /^(\S+?)\s*(==|=|!=)\s*(\S*)$/.exec(r);
            if (m) return m[2] === '!=' ? l[m[1]!] !== m[3] : l[m[1]!] === m[3];
            m = /^(\S+) in \((.*)\)$/.exec(r);
            return l[m![1]!] === m![2];
          });
        return all.filter((i) => ok(i.metadata.labels)).map((i) => `${i.metadata.namespace}/${i.metadata.name}`);
      };
      const check = async (): Promise<void> => {
        for (const selector of selectors)
          for (const ns of ['default', 'other', undefined]) {
            const base = ns ? url(ns) : `${server.url}/api/v1/configmaps`;
            const want = await scan(ns, selector);
            for (const limit of [0, 1, 7])
              expect(await listAll(base, selector, limit), `${ns ?? 'all'} ${selector} limit ${limit}`).to.deep.equal(want);
          }
      };
      await check();
      for (let i = 0; i < 40; i++) {
        const { ns, name } = made[rnd(made.length)]!;
        const labels = rnd(3) === 0 ? { cluster: null, role: 'cp' } : { cluster: `c${rnd(5)}` };
        await send('PATCH', `${url(ns)}/${name}`, { metadata: { labels } }, 'application/merge-patch+json');
      }
      for (let i = 0; i < 15; i++) {
        const [m] = made.splice(rnd(made.length), 1);
        await send('DELETE', `${url(m!.ns)}/${m!.name}`);
      }
      await check();
    } finally {
      await server.close();
    }
  });
});
