// CPU of the plan controller's owner steps at fleet scale, in process (no API server): ownerSteps and actOwners
// (owners-act.ts) on a mid-rollout snapshot of N machines in MachineDeployments of --md-size, as at 30,003 machines
// with maxUnavailable 1: the control plane done (its owner aligned: a level check every reconcile), every
// MachineDeployment running with its owner held (already paused by the plan), half of each one's machines updated.
// Before every run --change N targets' in-flight machines progress (new objects, as the store gives), and the decision
// is made through the plan's decision memo as the controller does (not timed): only the owner steps are. The client
// is a fake that records writes (there should be none: every owner already carries what it should).
// --three-updaters: every target also sets the InfraMachine's image (an infraTemplate value, as bench/run.ts
// --three-updaters), so each running target checks its finished machines' InfraMachines every reconcile (annotateAhead);
// they all carry the clone's name already. Reads go through a fake informer read that costs what the controller's
// does per call (resolve, the sync wait with its timer, a typed copy).
//
//   npx tsx bench/owners-cpu.ts [--machines 30000] [--md-size 100] [--runs 60] [--change 40] [--three-updaters]
import type { KubeObject, MachineUpdate, PlanUpdater, ResourceType } from '../src/api/index.js';
import { nameOf } from '../src/api/capi/index.js';
import { settlesWithin } from '../src/runtime/parallel.js';
import { Annotations } from '../src/api/index.js';
import type { KubeClient, Logger } from '../src/runtime/pure/types.js';
import { deepFreeze } from '../src/runtime/pure/freeze.js';
import { PlanCache, decideThroughCache } from '../src/plan-controller/cache/decide.js';
import { AtTargetMemo, atTargetThrough } from '../src/plan-controller/cache/at-target.js';
import { actOwners, ownerSteps } from '../src/plan-controller/owners/owners-act.js';
import { CLONED_FROM_NAME, PAUSED_BY_PLAN, carrierName, ownerValues } from '../src/rules/owners.js';
import { NS, cpUpdated, kcp, machines, md, mu, plan, snapshot, started, target, versionUpdater } from '../src/plan-controller/testkit.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number): number => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : dflt);
const total = opt('machines', 30_000);
const mdSize = opt('md-size', 100);
const runs = opt('runs', 60);
const changed = opt('change', 40);
const infra = argv.includes('--three-updaters');
const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io';
const imageUpdater: PlanUpdater = {
  name: 'os',
  sequence: 2,
  responsibilities: [{ selectResource: 'InfraMachine', path: '/spec/image', value: 'img-2' }],
};
// The informer caches of the InfraMachine kinds: templates and InfraMachines by kind/name.
const cache = new Map<string, KubeObject>();
const infraObj = (kind: string, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): KubeObject =>
  deepFreeze({
    apiVersion: `${INFRA_GROUP}/v1beta2`,
    kind,
    metadata: { name, namespace: NS, resourceVersion: '1', ...(annotations ? { annotations } : {}) },
    spec,
  });
const infraValues = ownerValues('MachineDeployment', [imageUpdater]);

const mdNames = Array.from({ length: Math.ceil(total / mdSize) }, (_, i) => `cluster1-md-${i}`);
// Verified: an updated machine's node reports the new kubelet (as the simulator's nodes do once updated).
const verified = (m: KubeObject): void => void ((m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.1' });
const ms: KubeObject[] = machines('cluster1-cp', 3, { cp: 'cluster1-cp', version: 'v1.30.1' });
ms.forEach(verified);
const perTarget: MachineUpdate[][] = [];
for (const name of mdNames) {
  const own = machines(name, mdSize, { md: name });
  own.forEach((m, i) => (m.metadata.resourceVersion = String(i + 1)));
  ms.push(...own);
  const half = Math.floor(mdSize / 2);
  if (infra) {
    const template = infraObj('DevMachineTemplate', `${name}-tpl`, { template: { spec: { image: 'img-1' } } });
    cache.set(`DevMachineTemplate/${name}-tpl`, template);
    const carrier = carrierName(template, `${name}-tpl`, infraValues)!;
    own.forEach((m, i) => {
      (m['spec'] as Record<string, unknown>)['infrastructureRef'] = { apiGroup: INFRA_GROUP, kind: 'DevMachine', name: `${nameOf(m)}-im` };
      const carries = i < half ? { [CLONED_FROM_NAME]: carrier } : undefined;
      cache.set(`DevMachine/${nameOf(m)}-im`, infraObj('DevMachine', `${nameOf(m)}-im`, { image: i < half ? 'img-2' : 'img-1' }, carries));
    });
  }
  const list: MachineUpdate[] = [];
  for (let i = 0; i < half; i++) {
    list.push(mu(`${name}-${i}`, 'updated', { target: name }));
    verified(own[i]!);
  }
  list.push(mu(`${name}-${half}`, 'updating', { target: name }));
  perTarget.push(list);
}
// In creation order, as the store lists them: every MachineDeployment starts a machine in the same reconcile, so the
// MachineUpdates come round-robin over the targets.
const mus: MachineUpdate[] = [...cpUpdated()];
for (let i = 0; i <= Math.floor(mdSize / 2); i++) for (const list of perTarget) if (list[i]) mus.push(list[i]!);
for (const m of mus) {
  m.status = { ...m.status, completionTime: '2026-01-01T00:09:00Z' } as MachineUpdate['status'];
  m.metadata!.ownerReferences = [{ apiVersion: 'x', kind: 'InPlaceUpdatePlan', name: 'p1', uid: 'uid-1', controller: true }];
}
// As the store holds them: frozen objects (not the plan: a reconcile works on a copy of it, controller.ts).
ms.forEach((m) => deepFreeze(m));
mus.forEach((m) => deepFreeze(m));
const pausedByPlan = { [Annotations.paused]: '', [PAUSED_BY_PLAN]: 'p1' };
const p = plan({ ...started, mds: mdNames.map((n) => target(n, 2, infra ? [versionUpdater(), imageUpdater] : undefined)) });
p.metadata!.uid = 'uid-1';
const base = snapshot({
  plan: p,
  // The control plane's owner already carries the plan's version and is not paused: aligned.
  kcp: kcp('cluster1-cp', 3, 'v1.30.1'),
  mds: mdNames.map((n) => {
    const o = md(n, { replicas: mdSize, annotations: pausedByPlan });
    const spec = (o['spec'] as { template: { spec: Record<string, unknown> } }).template.spec;
    if (infra) spec['infrastructureRef'] = { apiGroup: INFRA_GROUP, kind: 'DevMachineTemplate', name: `${n}-tpl` };
    return o;
  }),
  machines: ms,
  mus,
});

let writes = 0;
const client = {
  patch: async (_r: unknown, _ns: string, _n: string, body: KubeObject) => (writes++, body),
  apply: async (_r: unknown, body: KubeObject) => (writes++, body),
  create: async (_r: unknown, body: KubeObject) => (writes++, body),
} as unknown as KubeClient;
const kinds = new Map<string, ResourceType>();
const resolve = async (kind: string): Promise<ResourceType> => {
  let res = kinds.get(kind);
  if (!res) kinds.set(kind, (res = { group: INFRA_GROUP, version: 'v1beta2', kind, plural: `${kind.toLowerCase()}s`, namespaced: true }));
  return res;
};
const synced = Promise.resolve();
const silent = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;
const deps = {
  client,
  fieldManager: 'bench',
  writesInFlight: 16,
  maxInfraWrites: 128,
  reads: {
    // What the controller's read does per call (act/owners.ts ownerDeps, snapshot/reader.ts cachedKind): resolve the kind, wait for its
    // informer's sync (already done: a timer raced against a settled promise), and a typed copy of the cached object.
    ref: async (_ns: string, ref: { apiGroup: string; kind: string; name: string }) => {
      const res = await resolve(ref.kind);
      if (!(await settlesWithin(synced, 60_000))) throw new Error('not synced');
      const typed = (o: KubeObject | undefined): KubeObject | undefined =>
        o ? { ...o, kind: res.kind, apiVersion: `${INFRA_GROUP}/v1beta2` } : undefined;
      const obj = typed(cache.get(`${ref.kind}/${ref.name}`));
      return { res, ...(obj ? { obj } : {}), byName: (n: string) => typed(cache.get(`${ref.kind}/${n}`)) };
    },
    machineSet: () => undefined,
  },
};

const decideMemo = new PlanCache();
const atMemo = new AtTargetMemo();
const machineIndex = new Map(ms.map((m, i) => [m.metadata.name ?? '', i]));
const muIndex = new Map(mus.map((m, i) => [m.spec.machineRef.name, i]));
const stepsCpu: number[] = [];
const actCpu: number[] = [];
let ops = '';
for (let r = 0; r < runs; r++) {
  for (let c = 0; c < changed; c++) {
    // One target's in-flight machine progressed: its Machine and MachineUpdate are new (frozen) objects.
    const name = `${mdNames[(r * changed + c) % mdNames.length]!}-${Math.floor(mdSize / 2)}`;
    const mi = machineIndex.get(name)!;
    const m = ms[mi]!;
    ms[mi] = deepFreeze({ ...m, metadata: { ...m.metadata, resourceVersion: String(Number(m.metadata.resourceVersion ?? 0) + 1) } });
    const ui = muIndex.get(name)!;
    mus[ui] = deepFreeze({ ...mus[ui]!, status: { ...mus[ui]!.status } } as MachineUpdate);
  }
  const snap = { ...base, machines: [...ms], machineUpdates: [...mus] };
  snap.atTarget = atTargetThrough(p, snap.machines, () => undefined, atMemo.excluded(snap.machineUpdates), { memo: atMemo });
  const d = decideThroughCache(snap, decideMemo);
  const c0 = process.cpuUsage();
  const steps = ownerSteps(snap, d);
  const c1 = process.cpuUsage(c0);
  stepsCpu.push((c1.user + c1.system) / 1000);
  const c2 = process.cpuUsage();
  const outcomes = await actOwners(deps, snap, { ...d, events: [] }, silent);
  const c3 = process.cpuUsage(c2);
  actCpu.push((c3.user + c3.system) / 1000);
  const byOp = new Map<string, number>();
  for (const s of steps) byOp.set(s.step.op, (byOp.get(s.step.op) ?? 0) + 1);
  ops = [...byOp].map(([op, n]) => `${op} ${n}`).join(', ');
  if (outcomes.some((o) => o.pending !== undefined || (o.problems?.length ?? 0) > 0)) throw new Error('an owner step did not finish');
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
process.stdout.write(
  `${ms.length} machines in ${mdNames.length} MachineDeployments${infra ? ' (three updaters: InfraMachine checks)' : ''}, ${changed} target(s) changed per run, ${runs} runs; steps: ${ops}; ` +
    `CPU median ownerSteps ${median(stepsCpu).toFixed(2)} ms, actOwners (steps included) ${median(actCpu).toFixed(2)} ms; ${writes} writes\n`,
);
