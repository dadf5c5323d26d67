// Splits a V8 heap snapshot of the local API server by what holds the memory (issue 25 item 6), for leak and size
// hunting: `node --max-old-space-size=8000 tools/local-apiserver/heap-split.mjs FILE.heapsnapshot`.
// Take the snapshot with `NODE_OPTIONS="--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR"` on the server's
// process and `kill -USR2 <its pid>`. Attribution is by first reach in priority order (not a dominator tree): the
// stored objects of each store (by kind), then what only the watch-event window holds, the stores' indexes, the
// intern table, the rest of the Core (garbage-collector indexes, Event TTLs); everything else by V8 node type.
// A subtree shared by several holders counts for the first, so "window" is what the window alone keeps alive.
import { readFileSync } from 'node:fs';

const say = (s) => process.stdout.write(`${s}\n`);

const snap = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const m = snap.snapshot.meta;
const NF = m.node_fields.length;
const EF = m.edge_fields.length;
const nodeTypes = m.node_types[0];
const edgeTypes = m.edge_types[0];
const { nodes: N, edges: E, strings: S } = snap;
const nN = N.length / NF;
const [fType, fName, fSize, fEc] = ['type', 'name', 'self_size', 'edge_count'].map((f) => m.node_fields.indexOf(f));
const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => m.edge_fields.indexOf(f));
const firstEdge = new Uint32Array(nN + 1);
for (let i = 0, e = 0; i < nN; i++) {
  firstEdge[i] = e;
  e += N[i * NF + fEc] * EF;
}
firstEdge[nN] = E.length;
const type = (i) => nodeTypes[N[i * NF + fType]];
const name = (i) => S[N[i * NF + fName]];
const size = (i) => N[i * NF + fSize];
function* edges(i) {
  for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += EF) {
    const t = edgeTypes[E[e + eType]];
    yield [t, t === 'element' || t === 'hidden' ? E[e + eName] : S[E[e + eName]], E[e + eTo] / NF];
  }
}
const owner = new Int32Array(nN).fill(-1);
const cats = [];
const catIdx = new Map();
const cat = (c) => {
  if (!catIdx.has(c)) {
    catIdx.set(c, cats.length);
    cats.push({ c, bytes: 0, nodes: 0 });
  }
  return catIdx.get(c);
};
// Data only: never through hidden classes, prototypes or code (they reach the whole heap).
const DATA = new Set(['object', 'string', 'concatenated string', 'sliced string', 'number', 'array', 'hidden', 'bigint']);
function claim(root, c) {
  const ci = cat(c);
  const stack = [root];
  while (stack.length) {
    const i = stack.pop();
    if (owner[i] !== -1 || !DATA.has(type(i))) continue;
    if (type(i) === 'hidden' && !/array|table/i.test(name(i))) continue;
    if (type(i) === 'object' && /^system \/ (Map|DescriptorArray)/.test(name(i))) continue;
    owner[i] = ci;
    cats[ci].bytes += size(i);
    cats[ci].nodes++;
    for (const [et, en, to] of edges(i)) {
      if (et === 'weak' || et === 'shortcut' || ['map', '__proto__', 'constructor', 'prototype'].includes(en)) continue;
      if (owner[to] === -1) stack.push(to);
    }
  }
}
const prop = (i, p) => {
  for (const [et, en, to] of edges(i)) if (en === p && (et === 'property' || et === 'internal')) return to;
  return -1;
};
const kindOf = (entry) => {
  const k = prop(prop(entry, 'obj'), 'kind');
  return k < 0 ? '?' : name(k);
};
const mapValues = (map) => {
  const out = [];
  const table = prop(map, 'table');
  if (table >= 0) for (const [, , to] of edges(table)) if (type(to) === 'object' && prop(to, 'obj') >= 0) out.push(to);
  return out;
};
const stores = [];
for (let i = 0; i < nN; i++) if (type(i) === 'object' && /^_?ResourceStore$/.test(name(i))) stores.push(i);
const storeKind = new Map();
for (const s of stores) {
  let k = '(empty)';
  for (const e of mapValues(prop(s, 'objects'))) {
    k = kindOf(e);
    claim(e, `stored:${k}`);
  }
  storeKind.set(s, k);
}
for (const s of stores)
  for (const p of ['events', 'blocks', 'prevLabels']) if (prop(s, p) >= 0) claim(prop(s, p), `window:${storeKind.get(s)}`);
for (const s of stores) claim(s, `store-index:${storeKind.get(s)}`);
for (let i = 0; i < nN; i++) if (type(i) === 'object' && name(i) === 'Interner') claim(i, 'intern-table');
for (let i = 0; i < nN; i++) if (type(i) === 'object' && name(i) === 'Core') claim(i, 'core-other');
for (let i = 0; i < nN; i++)
  if (owner[i] === -1) {
    const ci = cat(`rest:${type(i)}`);
    owner[i] = ci;
    cats[ci].bytes += size(i);
    cats[ci].nodes++;
  }
const mib = (b) => (b / 2 ** 20).toFixed(2);
const total = cats.reduce((a, c) => a + c.bytes, 0);
const byGroup = new Map();
for (const c of cats) byGroup.set(c.c.replace(/:.*/, ''), (byGroup.get(c.c.replace(/:.*/, '')) ?? 0) + c.bytes);
say(`self size ${mib(total)} MiB in ${nN} nodes`);
for (const [k, v] of [...byGroup].sort((a, b) => b[1] - a[1])) say(`  ${k.padEnd(16)} ${mib(v)}`);
for (const c of cats.sort((a, b) => b.bytes - a.bytes).slice(0, 40)) say(`${c.c.padEnd(44)} ${mib(c.bytes)} MiB ${c.nodes} nodes`);
