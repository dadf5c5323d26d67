// CPU of one plan decision at fleet scale, in process (no API server): the pure part of a plan reconcile
// (machines-at-target with its memo, decidePlan) on a mid-rollout snapshot of N machines in MachineDeployments of 50,
// half of every MachineDeployment updated and one machine in flight each. Prints milliseconds per decision.
// --memo decides through the plan's decision cache (src/plan-controller/cache/) as the controller does; --change-one replaces, before
// every run, one target's in-flight Machine and MachineUpdate with new objects (as a real reconcile sees: one machine
// progressed and was committed: its /spec/version changed), so the memo has that target to re-evaluate. Without --change-one every run sees the same objects. The
// CPU median (process.cpuUsage) depends less on the machine's load than the wall-clock one. Each run also takes the
// snapshot's MachineUpdates through buildScope's ownership filter (scope.ts; with --memo the plan's filter memo) from
// a store-like list: frozen, the same array until something changed, then a copy with the new objects in place.
//
//   npx tsx bench/decide-cpu.ts [--machines 10000] [--md-size 50] [--runs 30] [--memo] [--change-one | --change N]
import { performance } from 'node:perf_hooks';
import type { KubeObject, MachineUpdate } from '../src/api/index.js';
import { decidePlan } from '../src/plan-controller/decide.js';
import { PlanCache, decideThroughCache } from '../src/plan-controller/cache/decide.js';
import { AtTargetMemo, atTargetThrough } from '../src/plan-controller/cache/at-target.js';
import { buildScope, type ScopeReader } from '../src/plan-controller/scope.js';
import { NS, cpUpdated, kcp, machines, md, mu, plan, snapshot, started, target } from '../src/plan-controller/testkit.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number): number => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : dflt);
const total = opt('machines', 10_000);
const mdSize = opt('md-size', 50);
const runs = opt('runs', 30);
const useMemo = argv.includes('--memo');
// --change N: N targets' in-flight machines progress before every run (a busy fleet: at 10,003 machines and
// maxUnavailable 1 about 200 machines are in flight, and tens of them change between two reconciles).
const changed = argv.includes('--change') ? opt('change', 1) : argv.includes('--change-one') ? 1 : 0;
const changeOne = changed > 0;

const mdNames = Array.from({ length: Math.ceil(total / mdSize) }, (_, i) => `cluster1-md-${i}`);
const ms: KubeObject[] = [...machines('cluster1-cp', 3, { cp: 'cluster1-cp' })];
const mus: MachineUpdate[] = [...cpUpdated()];
for (const name of mdNames) {
  const own = machines(name, mdSize, { md: name });
  own.forEach((m, i) => (m.metadata.resourceVersion = String(i + 1)));
  ms.push(...own);
  const half = Math.floor(mdSize / 2);
  for (let i = 0; i < half; i++) {
    mus.push(mu(`${name}-${i}`, 'updated', { target: name }));
    // Verified: the node reports the new kubelet (as the simulator's nodes do once updated).
    (own[i]!['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.1' };
  }
  mus.push(mu(`${name}-${half}`, 'updating', { target: name }));
}
for (const m of mus) {
  m.status = { ...m.status, completionTime: '2026-01-01T00:09:00Z' } as MachineUpdate['status'];
  // Created by the plan (uid-1 below): the ownership filter keeps them.
  m.metadata!.ownerReferences = [{ apiVersion: 'x', kind: 'InPlaceUpdatePlan', name: 'p1', uid: 'uid-1', controller: true }];
}
const p = plan({ ...started, mds: mdNames.map((n) => target(n, 2)) });
p.metadata!.uid = 'uid-1';
const base = snapshot({ plan: p, kcp: kcp(), mds: mdNames.map((n) => md(n, { replicas: mdSize })), machines: ms, mus });

const memo = new AtTargetMemo();
let storeMus: readonly MachineUpdate[] = Object.freeze([...mus]);
const reader: ScopeReader = {
  now: () => base.now,
  cluster: async () => base.cluster,
  machineDeployments: async () => base.machineDeployments,
  machines: async () => ms,
  machineUpdates: async () => storeMus as MachineUpdate[],
  plans: async () => base.plans,
  read: async () => ({ object: base.controlPlane?.object }),
  taskCrd: async () => undefined,
};
const decideMemo = useMemo ? new PlanCache() : undefined;
const muIndex = new Map(mus.map((m, i) => [m.spec.machineRef.name, i]));
const machineIndex = new Map(ms.map((m, i) => [m.metadata.name ?? '', i]));
const times: number[] = [];
const cpu: number[] = [];
let starts = 0;
for (let r = 0; r < runs; r++) {
  for (let c = 0; c < changed; c++) {
    // One target's in-flight machine progressed: its Machine and MachineUpdate are new objects (new resourceVersions).
    // Every change is a version change of a machine with an update (as the commits at maxUnavailable 1 are): the plan's
    // version on a target's first turn, back to the old one on its next, and so on (never a machine without an update,
    // which would join the machines at target).
    const k = r * changed + c;
    const name = `${mdNames[k % mdNames.length]!}-${Math.floor(mdSize / 2)}`;
    const mi = machineIndex.get(name)!;
    const m = ms[mi]!;
    ms[mi] = {
      ...m,
      metadata: { ...m.metadata, resourceVersion: String(Number(m.metadata.resourceVersion ?? 0) + 1) },
      spec: { ...(m['spec'] as object), version: Math.floor(k / mdNames.length) % 2 === 0 ? 'v1.30.1' : 'v1.30.0' },
    };
    const ui = muIndex.get(name);
    if (ui !== undefined) mus[ui] = { ...mus[ui]!, status: { ...mus[ui]!.status } } as MachineUpdate;
  }
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  // The store copies a changed list once (store.ts byLabelView); a reconcile reads the machines afresh.
  if (changed > 0 || r === 0) storeMus = Object.freeze([...mus]);
  const scoped = await buildScope(p as Parameters<typeof buildScope>[0], reader, decideMemo?.ownFilter);
  const snap = { ...base, machines: [...ms], machineUpdates: scoped.machineUpdates };
  snap.atTarget = atTargetThrough(
    p,
    snap.machines,
    () => undefined,
    useMemo ? memo.excluded(snap.machineUpdates) : new Set(snap.machineUpdates.map((m) => m.spec.machineRef.name)),
    { memo },
  );
  const d = decideMemo ? decideThroughCache(snap, decideMemo) : decidePlan(snap);
  times.push(performance.now() - t0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
  starts = d.create.length;
}
times.sort((a, b) => a - b);
cpu.sort((a, b) => a - b);
const reuse = decideMemo
  ? `; memo: targets ${decideMemo.stats.targetHits} reused / ${decideMemo.stats.targetMisses} evaluated, upgrade rules ${decideMemo.stats.upgradeHits} / ${decideMemo.stats.upgradeMisses}`
  : '';
process.stdout.write(
  `${ms.length} machines in ${mdNames.length} MachineDeployments (${NS}), ${mus.length} MachineUpdates${useMemo ? ', memo' : ''}${changeOne ? `, ${changed} target(s) changed per run` : ''}: decision median ${times[Math.floor(runs / 2)]!.toFixed(1)} ms, min ${times[0]!.toFixed(1)} ms over ${runs} runs (CPU median ${cpu[Math.floor(runs / 2)]!.toFixed(1)} ms, the process's: GC threads included); ${starts} starts${reuse}\n`,
);
