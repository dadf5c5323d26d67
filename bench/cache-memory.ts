// What one cached object costs an informer's store, with and without metadata.managedFields, on any API server: a
// fleet of N clusters is created the way Cluster API and the platform write it (create, then the status through
// /status, then the plan controller's label patch: three field managers per Machine on a real server), listed, and
// cached in a MemoryStore twice; the V8 heap each store holds is measured after full collections.
//   node --expose-gc --import tsx bench/cache-memory.ts --kubeconfig F [--clusters 20] [--keep]
import { parseArgs } from 'node:util';
import { Namespaces, type KubeObject } from '../src/api/index.js';
import { createClient, forEachLimit, loadKubeConfig } from '../src/runtime/index.js';
import { MemoryStore } from '../src/runtime/store.js';
import { resourceOf } from '../tools/capi-sim/index.js';
import { applyFleet, buildFleet } from './lib/fleet.js';

const { values: args } = parseArgs({
  options: { kubeconfig: { type: 'string' }, clusters: { type: 'string', default: '20' }, keep: { type: 'boolean', default: false } },
});
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const client = createClient(loadKubeConfig(args.kubeconfig), { userAgent: 'inplace-bench-cache-memory' });
const ns = `cache-memory-${Date.now().toString(36)}`;
await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
try {
  const objs: KubeObject[] = [];
  for (let c = 0; c < Number(args.clusters); c++)
    objs.push(...buildFleet({ namespace: ns, clusterName: `c${String(c).padStart(4, '0')}`, version: 'v1.30.0', workers: 27 }).objects);
  await applyFleet(client, objs, 32);
  // The plan controller's label on every Machine (a third field manager, as during an update).
  const machines = objs.filter((o) => o.kind === 'Machine');
  await forEachLimit(machines, 32, async (m) => {
    await client.patch(
      resourceOf(m),
      ns,
      m.metadata.name!,
      { metadata: { labels: { 'inplace.cluster.x-k8s.io/plan-name': 'p' } } },
      { type: 'merge' },
    );
  });
  // The objects as the watch delivers them (JSON text, parsed into the store inside the measured span).
  const heapOf = (texts: string[], strip: boolean): number => {
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    const store = new MemoryStore();
    for (const t of texts) {
      const o = JSON.parse(t) as KubeObject;
      if (strip) delete o.metadata.managedFields;
      store.upsert(o);
    }
    gc();
    gc();
    const bytes = (process.memoryUsage().heapUsed - before) / texts.length;
    if (store.size !== texts.length) throw new Error('store lost objects');
    return bytes;
  };
  console.log(`server ${client.server}, ${args.clusters} clusters`);
  for (const kind of ['Machine', 'DevMachine', 'KubeadmConfig']) {
    const sample = objs.find((o) => o.kind === kind)!;
    const items = (await client.list<KubeObject>(resourceOf(sample), ns)).items;
    const json = items.reduce((n, o) => n + JSON.stringify(o).length, 0) / items.length;
    const mf = items.reduce((n, o) => n + JSON.stringify(o.metadata.managedFields ?? []).length, 0) / items.length;
    const texts = items.map((o) => JSON.stringify(o));
    const kept = heapOf(texts, false);
    const dropped = heapOf(texts, true);
    console.log(
      `  ${kind}: ${items.length} objects, JSON ${json.toFixed(0)} B of which managedFields ${mf.toFixed(0)} B; cached heap ${kept.toFixed(0)} B with managedFields, ${dropped.toFixed(0)} B without (${((1 - dropped / kept) * 100).toFixed(0)} % less)`,
    );
  }
} finally {
  if (!args.keep) await client.delete(Namespaces, undefined, ns);
}
process.exit(0);
