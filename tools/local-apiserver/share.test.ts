import { expect } from 'chai';
import { Core } from './core.js';
import { startLocalApiServer } from './index.js';
import { grKey } from './resources.js';
import { Interner, shareWith } from './share.js';

type Obj = Record<string, unknown>;

describe('structural sharing of stored versions', function () {
  it('reuses the previous version’s equal subtrees and keeps the new content and key order', function () {
    const prev = { a: { x: 1, y: [1, 2, { z: 's' }] }, b: { k: 'v' }, c: [1, 2], d: 'same' };
    const next = JSON.parse('{"a":{"x":1,"y":[1,2,{"z":"s"}]},"b":{"k":"w"},"c":[1,2,3],"d":"same","e":{"n":null}}') as Obj;
    const before = JSON.stringify(next);
    const out = shareWith(next, prev, new Interner());
    expect(out).to.equal(next);
    expect(JSON.stringify(next)).to.equal(before);
    expect(next.a).to.equal(prev.a);
    expect(next.b).to.not.equal(prev.b);
    expect((next.c as number[]).length).to.equal(3);
    expect(next.c).to.not.equal(prev.c);
  });

  it('returns the previous version when equal, but not when only the key order differs', function () {
    const prev = { a: 1, b: { c: [true, null] } };
    expect(shareWith({ a: 1, b: { c: [true, null] } }, prev, new Interner())).to.equal(prev);
    const reordered = { b: { c: [true, null] }, a: 1 };
    expect(shareWith(reordered, prev, new Interner())).to.equal(reordered);
    expect(Object.keys(reordered)).to.deep.equal(['b', 'a']);
    expect(reordered.b).to.equal(prev.b);
    // A key dropped or added is a change.
    const fewer = { a: 1 };
    expect(shareWith(fewer, prev, new Interner())).to.equal(fewer);
    const more = { a: 1, b: prev.b, x: 2 };
    expect(shareWith(more, prev, new Interner())).to.equal(more);
    // An array is not an object with index keys, nor the reverse.
    const arr: unknown = { 0: 'a' };
    expect(shareWith(arr, ['a'], new Interner())).to.equal(arr);
  });

  it('keeps the intern table bounded however many distinct strings pass', function () {
    const it = new Interner(100);
    for (let i = 0; i < 10_000; i++) it.intern(`uid-${i}`);
    expect(it.size).to.be.at.most(200);
    expect(it.intern('x'.repeat(1000))).to.equal('x'.repeat(1000));
  });

  it('stored versions share what a write left alone; no stored or returned version changes with later writes', function () {
    const core = new Core(10_000);
    core.bootstrap();
    const cms = core.lookup('', 'v1', 'configmaps')!;
    const big = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, `value-${i}`]));
    const created = core.create(
      cms,
      'v1',
      'default',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { n: '0' }, binaryData: {}, immutable: false },
      {},
    ).obj;
    core.patch(
      cms,
      'v1',
      'default',
      'c',
      'application/merge-patch+json',
      { metadata: { labels: { keep: 'me' } }, binaryData: { b: 'AAAA' } },
      {},
    );
    const returned: { obj: Obj; json: string }[] = [{ obj: created, json: JSON.stringify(created) }];
    for (let i = 1; i <= 30; i++) {
      const r = core.patch(
        cms,
        'v1',
        'default',
        'c',
        'application/merge-patch+json',
        { data: { n: String(i), ...(i === 1 ? big : {}) } },
        {},
      );
      returned.push({ obj: r.obj, json: JSON.stringify(r.obj) });
      const got = core.get(cms, 'default', 'c').obj;
      returned.push({ obj: got, json: JSON.stringify(got) });
    }
    for (const r of returned) expect(JSON.stringify(r.obj)).to.equal(r.json);
    const events = core.store(grKey('', 'configmaps')).eventsSince(0)!;
    expect(events).to.have.length(32);
    events.forEach((ev, i) => {
      if (i >= 2) expect((ev.obj.data as Obj).n).to.equal(String(i - 1));
      expect((ev.obj.metadata as Obj).resourceVersion).to.equal(String(ev.rv));
    });
    // Unchanged between two writes of `data.n`: the labels and binaryData are the previous version's own objects.
    const [a, b] = [events[10]!.obj, events[11]!.obj];
    expect((b.metadata as Obj).labels).to.equal((a.metadata as Obj).labels);
    expect(b.binaryData).to.equal(a.binaryData);
    expect(b.data).to.not.equal(a.data);
    core.close();
  });

  it('a watch resumed after many writes replays each version as it was written, and 410 once it left the window', async function () {
    const server = await startLocalApiServer({ https: false, watchCacheSize: 50 });
    const headers = { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/merge-patch+json' };
    const base = `${server.url}/api/v1/namespaces/default/configmaps`;
    try {
      const c = await fetch(base, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'c', labels: { a: 'b' } },
          data: { n: '0', fixed: 'x' },
        }),
      });
      expect(c.status).to.equal(201);
      const rvs: string[] = [];
      for (let i = 1; i <= 120; i++) {
        const r = await fetch(`${base}/c`, { method: 'PATCH', headers, body: JSON.stringify({ data: { n: String(i) } }) });
        expect(r.status).to.equal(200);
        rvs.push(((await r.json()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
      }
      const lines = async (rv: string, n: number): Promise<Obj[]> => {
        const ac = new AbortController();
        const res = await fetch(`${base}?watch=1&resourceVersion=${rv}`, { headers, signal: ac.signal });
        const out: Obj[] = [];
        let buf = '';
        const reader = res.body!.getReader();
        const dec = new TextDecoder();
        while (out.length < n) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i: number;
          while ((i = buf.indexOf('\n')) >= 0) {
            out.push(JSON.parse(buf.slice(0, i)) as Obj);
            buf = buf.slice(i + 1);
          }
        }
        ac.abort();
        return out;
      };
      // The last 50 writes are retained: from the 80th, 40 MODIFIED events, each with its own data.n.
      const evs = await lines(rvs[79]!, 40);
      expect(evs.map((e) => e.type)).to.deep.equal(Array(40).fill('MODIFIED'));
      expect(evs.map((e) => ((e.object as Obj).data as Obj).n)).to.deep.equal(Array.from({ length: 40 }, (_, i) => String(i + 81)));
      for (const e of evs) {
        expect(((e.object as Obj).data as Obj).fixed).to.equal('x');
        expect(((e.object as Obj).metadata as Obj).labels).to.deep.equal({ a: 'b' });
      }
      const gone = await lines(rvs[10]!, 1);
      expect(gone[0]!.type).to.equal('ERROR');
      expect((gone[0]!.object as Obj).code).to.equal(410);
    } finally {
      await server.close();
    }
  });
});
