import { expect } from 'chai';
import { startLocalApiServer } from './index.js';
import { WATCH_BLOCK_EVENTS } from './store.js';

// The watch window seals its older events in deflated blocks (store.ts): a watch resumed from an old resourceVersion
// must get exactly the bytes the live watchers got, selector transitions (ADDED/DELETED when labels change) included.
describe('local API server watch window: sealed events replay as sent', function () {
  it('a resumed watch, filtered or not, gets the live stream byte for byte', async function () {
    const server = await startLocalApiServer({ https: false });
    const auth = { Authorization: `Bearer ${server.token}` };
    const base = `${server.url}/api/v1/namespaces/default/configmaps`;
    const send = async (method: string, url: string, body?: unknown, ct = 'application/json'): Promise<void> => {
      const r = await fetch(url, { method, headers: { ...auth, 'Content-Type': ct }, ...(body ? { body: JSON.stringify(body) } : {}) });
      expect(r.status, `${method} ${url}`).to.be.oneOf([200, 201]);
    };
    // Reads a watch until a line names the sentinel object; returns the raw text.
    const readUntilSentinel = async (url: string): Promise<{ text: Promise<string>; abort: () => void }> => {
      const ac = new AbortController();
      const res = await fetch(url, { headers: auth, signal: ac.signal });
      expect(res.status).to.equal(200);
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      const text = (async (): Promise<string> => {
        let buf = '';
        while (!buf.includes('"name":"zz-sentinel"')) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
        }
        return buf;
      })();
      return { text, abort: () => ac.abort() };
    };
    try {
      const list = (await (await fetch(base, { headers: auth })).json()) as { metadata: { resourceVersion: string } };
      const from = list.metadata.resourceVersion;
      const liveAll = await readUntilSentinel(`${base}?watch=1&resourceVersion=${from}`);
      const liveSel = await readUntilSentinel(`${base}?watch=1&resourceVersion=${from}&labelSelector=app%3Dx`);
      const text = 'é "quoted" \u2028 ' + 'x'.repeat(500);
      for (const name of ['a', 'b', 'c'])
        await send('POST', base, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { app: 'x' } }, data: { n: '0', text } });
      for (let i = 1; i <= 2 * WATCH_BLOCK_EVENTS; i++) {
        const name = ['a', 'b', 'c'][i % 3]!;
        // Labels leave and re-enter the selector; data changes otherwise.
        const patch = i % 17 === 0 ? { metadata: { labels: { app: i % 34 === 0 ? 'x' : 'y' } } } : { data: { n: String(i) } };
        await send('PATCH', `${base}/${name}`, patch, 'application/merge-patch+json');
      }
      await send('DELETE', `${base}/b`);
      await send('POST', base, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'zz-sentinel', labels: { app: 'x' } } });
      const [all, sel] = [await liveAll.text, await liveSel.text];
      liveAll.abort();
      liveSel.abort();
      const lines = all.trim().split('\n');
      expect(lines.length).to.be.greaterThan(2 * WATCH_BLOCK_EVENTS);
      const types = sel
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type);
      expect(types).to.include('DELETED');
      expect(types.filter((t) => t === 'ADDED').length, 'objects re-entering the selector').to.be.greaterThan(4);
      // Resumed after the fact: the oldest events are sealed by now.
      const replayAll = await readUntilSentinel(`${base}?watch=1&resourceVersion=${from}`);
      const replaySel = await readUntilSentinel(`${base}?watch=1&resourceVersion=${from}&labelSelector=app%3Dx`);
      const [rAll, rSel] = [await replayAll.text, await replaySel.text];
      replayAll.abort();
      replaySel.abort();
      expect(rAll).to.equal(all);
      expect(rSel).to.equal(sel);
      // As a Table too: the sealed object is parsed for it.
      const tableRes = await fetch(`${base}?watch=1&resourceVersion=${from}`, {
        headers: { ...auth, Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
        signal: AbortSignal.timeout(30_000),
      });
      const reader = tableRes.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      expect(first).to.match(/^\{"type":"ADDED","object":\{"kind":"Table"/);
      expect(first).to.include('"name":"a"');
      // A selectable field beyond the labels (Nodes' spec.unschedulable): the sealed events keep the whole previous state.
      const nodes = `${server.url}/api/v1/nodes`;
      const nodeList = (await (await fetch(nodes, { headers: auth })).json()) as { metadata: { resourceVersion: string } };
      const nodeFrom = nodeList.metadata.resourceVersion;
      const liveNodes = await readUntilSentinel(`${nodes}?watch=1&resourceVersion=${nodeFrom}&fieldSelector=spec.unschedulable%3Dfalse`);
      await send('POST', nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
      for (let i = 1; i <= 2 * WATCH_BLOCK_EVENTS; i++) {
        const patch = i % 9 === 0 ? { spec: { unschedulable: i % 18 === 9 } } : { metadata: { annotations: { i: String(i) } } };
        await send('PATCH', `${nodes}/n1`, patch, 'application/merge-patch+json');
      }
      await send('POST', nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'zz-sentinel' } });
      const liveN = await liveNodes.text;
      liveNodes.abort();
      expect(liveN).to.include('"type":"DELETED"');
      const replayNodes = await readUntilSentinel(`${nodes}?watch=1&resourceVersion=${nodeFrom}&fieldSelector=spec.unschedulable%3Dfalse`);
      const rN = await replayNodes.text;
      replayNodes.abort();
      expect(rN).to.equal(liveN);
    } finally {
      await server.close();
    }
  });
});
