// CPU of the informer store's event path at fleet scale, in process: a label bucket of N Machines (the plan
// controller's cluster bucket), R watch-event replacements (new frozen versions, as the informer upserts them) between
// two reads of the bucket's namespace view (store.ts byLabelView, as the plan controller reads it per reconcile).
// --namespaces 2 puts every other Machine in a second namespace (a bucket shared by namespaces: one filter per change
// burst). Events are built before the clock starts, so the figure is the store's own work (freeze, index, view copy).
//
//   npx tsx bench/store-cpu.ts [--machines 30000] [--replacements 300] [--rounds 300] [--namespaces 1] [--repeat 5]
import { MemoryStore } from '../src/runtime/store.js';
import type { KubeObject } from '../src/api/kube.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number): number => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : dflt);
const total = opt('machines', 30_000);
const perRound = opt('replacements', 300);
const rounds = opt('rounds', 300);
const spaces = opt('namespaces', 1);
const repeat = opt('repeat', 5);
const CLUSTER = 'cluster.x-k8s.io/cluster-name';

/** A Machine as the API server sends it (parsed from JSON: a fresh, unfrozen object per event). */
const machine = (i: number, rv: number): KubeObject => {
  const md = `fleet-md-${Math.floor(i / 100)}`;
  return JSON.parse(
    JSON.stringify({
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'Machine',
      metadata: {
        name: `${md}-${i}`,
        namespace: i % spaces === 0 ? 'fleet' : `fleet-${i % spaces}`,
        resourceVersion: String(rv),
        uid: `uid-${i}`,
        labels: { [CLUSTER]: 'fleet', 'cluster.x-k8s.io/deployment-name': md, 'cluster.x-k8s.io/set-name': `${md}-ms` },
        ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'MachineSet', name: `${md}-ms`, uid: 'ms', controller: true }],
      },
      spec: {
        clusterName: 'fleet',
        version: 'v1.30.0',
        bootstrap: { dataSecretName: `b-${i}` },
        infrastructureRef: { kind: 'DockerMachine', name: `dm-${i}` },
      },
      status: {
        phase: 'Running',
        nodeRef: { name: `node-${i}` },
        addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      },
    }),
  ) as KubeObject;
};

const results: number[] = [];
for (let r = 0; r < repeat; r++) {
  const store = new MemoryStore();
  let rv = 1;
  for (let i = 0; i < total; i++) store.upsert(machine(i, rv++));
  store.byLabelView(CLUSTER, 'fleet', 'fleet');
  const events = Array.from({ length: perRound * rounds }, (_, j) => machine((j * 7919) % total, rv++));
  let e = 0;
  let seen = 0;
  const t0 = process.cpuUsage();
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < perRound; j++) store.upsert(events[e++]!);
    seen += store.byLabelView(CLUSTER, 'fleet', 'fleet').length + store.byLabelView(CLUSTER, 'fleet', 'fleet').length;
  }
  const u = process.cpuUsage(t0);
  if (seen !== rounds * 2 * Math.ceil(total / spaces)) throw new Error(`wrong view length: ${seen}`);
  results.push((u.user + u.system) / 1000 / rounds);
}
results.sort((a, b) => a - b);
console.log(
  `${total} machines in ${spaces} namespace(s), ${perRound} replacements + 2 namespace views per round, ${rounds} rounds: ` +
    `CPU ms/round median ${results[Math.floor(results.length / 2)]!.toFixed(3)} (min ${results[0]!.toFixed(3)}, ${repeat} runs)`,
);
