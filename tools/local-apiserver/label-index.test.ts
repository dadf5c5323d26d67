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

// Watchers selecting by `label=value` are given only the events whose object or previous state carries that value
// (store.ts addWatcher): exactly the events a watcher given every event would keep by that rule.
describe('local API server watchers by label', function () {
  const obj = (ns: string, name: string, labels?: Record<string, string>): Record<string, unknown> => ({
    metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
  });
  type Seen = { type: string; name: string; now?: string; before?: string };
  const labelIn = (o: unknown, key: string): string | undefined =>
    (o as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels?.[key];

  it('gives each indexed watcher the events of its label value (before or after the change), in its namespace, and no others', function () {
    const s = new ResourceStore(1000, 0);
    const all: (Seen & { ns: string })[] = [];
    s.addWatcher({
      ns: undefined,
      deliver: (ev) =>
        all.push({
          type: ev.type,
          ns: ev.ns,
          name: (ev.obj['metadata'] as { name: string }).name,
          now: labelIn(ev.obj, 'c'),
          before: labelIn(ev.prev, 'c'),
        }),
    });
    const indexed = new Map<string, Seen[]>();
    const watch = (ns: string | undefined, value: string): (() => void) => {
      const seen: Seen[] = [];
      indexed.set(`${ns ?? '*'}/${value}`, seen);
      const w = {
        ns,
        label: ['c', value] as const,
        deliver: (ev: { type: string; obj: Record<string, unknown>; prev?: unknown }) =>
          seen.push({
            type: ev.type,
            name: (ev.obj['metadata'] as { name: string }).name,
            now: labelIn(ev.obj, 'c'),
            before: labelIn(ev.prev, 'c'),
          }),
      };
      s.addWatcher(w);
      return () => s.removeWatcher(w);
    };
    watch('a', 'x');
    watch('a', 'y');
    watch(undefined, 'x');
    const stopZ = watch('b', 'z');
    let rv = 0;
    // As core.ts writes: a change carries the previous state.
    const last = new Map<string, Record<string, unknown>>();
    const put = (ns: string, name: string, labels?: Record<string, string>): void => {
      const o = obj(ns, name, labels);
      const prev = last.get(`${ns}/${name}`);
      s.put(ns, name, o, ++rv, prev ? 'MODIFIED' : 'ADDED', prev);
      last.set(`${ns}/${name}`, o);
    };
    put('a', 'm1', { c: 'x' });
    put('b', 'm2', { c: 'x' });
    put('a', 'm3');
    put('a', 'm1', { c: 'y' });
    put('b', 'm2', { c: 'z' });
    put('a', 'm3', { c: 'x', d: '1' });
    put('a', 'm1', { c: 'y', d: '2' });
    stopZ();
    put('b', 'm2', { c: 'z', d: '3' });
    s.remove('a', 'm3', obj('a', 'm3', { c: 'x', d: '1' }), ++rv);
    s.remove('a', 'm1', obj('a', 'm1', { c: 'y', d: '2' }), ++rv);
    const expected = (ns: string | undefined, value: string, until = Infinity): Seen[] =>
      all
        .slice(0, until)
        .filter((e) => (ns === undefined || e.ns === ns) && (e.now === value || e.before === value))
        .map(({ ns: _ns, ...e }) => e);
    expect(all).to.have.length(10);
    expect(indexed.get('a/x')).to.deep.equal(expected('a', 'x'));
    expect(indexed.get('a/y')).to.deep.equal(expected('a', 'y'));
    expect(indexed.get('*/x')).to.deep.equal(expected(undefined, 'x'));
    // Removed after the 7th event: nothing after it.
    expect(indexed.get('b/z')).to.deep.equal(expected('b', 'z', 7));
    // The relabel of m1 from x to y reached both sides once each.
    expect(indexed.get('a/x')!.filter((e) => e.name === 'm1')).to.have.length(2);
    expect(indexed.get('a/y')!.filter((e) => e.name === 'm1')).to.have.length(3);
  });
});
