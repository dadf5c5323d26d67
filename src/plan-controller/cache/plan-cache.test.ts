import { expect } from 'chai';
import type { InPlaceUpdatePlan, KubeObject, MachineUpdate } from '../../api/index.js';
import { Annotations, Labels } from '../../api/index.js';
import { decidePlan, machinesByTarget } from '../decide.js';
import { PlanCache, decideThroughCache } from './decide.js';
import { groupsThrough } from './groups.js';
import { ownUpdates as plainOwnUpdates } from '../decide/mode.js';
import type { PlanDecision } from '../decide.js';
import { labelValue, machineUpdateName } from '../decide/names.js';
import { kcp, machines, md, mu, plan, snapshot, started, target, versionUpdater } from '../testkit.js';
import { deepFreeze } from '../../runtime/pure/freeze.js';
import { machineIndex, ownUpdates, soakCandidates } from './stance.js';
import { machinesAtTarget } from '../../rules/at-target.js';
import { AtTargetMemo, atTargetThrough } from './at-target.js';
import { ownMachineUpdates, type OwnFilterMemo } from '../scope.js';
import { machine } from '../testkit.js';

// The plan cache is a pure cache: a decision through it must equal the decision without it, reconcile after
// reconcile, while the world changes the way the informer stores change it (changed objects are new frozen objects,
// unchanged ones the same). A memo entry kept past a change of any input it read fails these comparisons.

const MIN = 60_000;
const at = (ms: number): string => new Date(Date.parse('2026-01-01T00:10:00Z') + ms).toISOString().replace('.000Z', 'Z');

interface World {
  plan: InPlaceUpdatePlan;
  mds: KubeObject[];
  machines: KubeObject[];
  mus: MachineUpdate[];
  clock: number;
  atTarget?: string[];
}

/** A new frozen version of the object named `name` in `list` (the others stay the same objects, as in the store). */
function change<T extends { metadata?: { name?: string } }>(list: T[], name: string, fn: (o: T) => void): T[] {
  return list.map((o) => {
    if (o.metadata?.name !== name) return o;
    const c = structuredClone(o);
    fn(c);
    return deepFreeze(c);
  });
}

/** A new version of machine `name` whose first condition (Ready) has this status. */
const setReady = (machines: KubeObject[], name: string, status: string): KubeObject[] =>
  change(machines, name, (m) => ((m['status'] as { conditions: { status: string }[] }).conditions[0]!.status = status));

const nameOfMu = (m: MachineUpdate): string => m.spec.machineRef.name;

/** The world after the controller carried out a decision: MachineUpdates created, machines labelled and unlabelled, status written. */
function apply(w: World, d: PlanDecision): World {
  let machinesNow = w.machines;
  for (const l of d.label)
    machinesNow = change(machinesNow, l.machine, (m) => {
      m.metadata.labels = { ...m.metadata.labels, [Labels.planName]: labelValue('p1') };
      m.metadata.annotations = { ...m.metadata.annotations, [Annotations.updateStartedAt]: l.startedAt };
    });
  for (const n of d.unlabel)
    machinesNow = change(machinesNow, n, (m) => {
      delete m.metadata.labels![Labels.planName];
      delete m.metadata.annotations?.[Annotations.updateStartedAt];
    });
  let musNow = w.mus;
  for (const a of d.abort)
    musNow = musNow.map((x) =>
      x.metadata?.name === a ? deepFreeze({ ...structuredClone(x), spec: { ...x.spec, updatePhase: 'aborting' } }) : x,
    );
  const created = d.create.map((c) => {
    const m = mu(c.machine, 'updating', { target: c.target.name, kind: c.target.kind });
    m.metadata!.name = machineUpdateName('p1', c.machine);
    m.metadata!.ownerReferences = [{ apiVersion: 'x', kind: 'InPlaceUpdatePlan', name: 'p1', uid: 'uid-1', controller: true }];
    m.spec.updaters = c.updaters;
    m.status = { ...m.status, startTime: at(w.clock) };
    return deepFreeze(m);
  });
  const p = deepFreeze({ ...structuredClone(w.plan), status: d.status });
  return { ...w, plan: p, machines: machinesNow, mus: [...musNow, ...created] };
}

/** Every in-flight MachineUpdate ends updated now; its machine runs the new version (and its node shows it unless `noNode`). */
function finish(w: World, noNode: ReadonlySet<string> = new Set()): World {
  let machinesNow = w.machines;
  const musNow = w.mus.map((x) => {
    if (x.status?.updateStatus !== 'updating') return x;
    const name = nameOfMu(x);
    machinesNow = change(machinesNow, name, (m) => {
      (m['spec'] as Record<string, unknown>)['version'] = 'v1.30.1';
      if (!noNode.has(name)) (m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.1' };
    });
    const aborting = x.spec.updatePhase === 'aborting';
    return deepFreeze({
      ...structuredClone(x),
      status: { ...x.status, updateStatus: aborting ? 'aborted' : 'updated', completionTime: at(w.clock) },
    } as MachineUpdate);
  });
  return { ...w, machines: machinesNow, mus: musNow };
}

const snapOf = (w: World) => {
  const s = snapshot({ plan: w.plan, kcp: kcp(), mds: w.mds, machines: [...w.machines], mus: [...w.mus], plans: [w.plan] });
  s.controlPlane!.object = CP;
  s.now = at(w.clock);
  if (w.atTarget) s.atTarget = w.atTarget;
  return s;
};

const CP = deepFreeze(kcp());

/** The updater that sets Machine /spec/version to v1.31.0. */
const V31 = [versionUpdater({ responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: 'v1.31.0' }] })];
const MD_NAMES = ['cluster1-md-0', 'cluster1-md-1', 'cluster1-md-2'];
/** Sets a machine's /spec/version (a commit). */
const version = (v: string) => (m: KubeObject) => ((m['spec'] as Record<string, unknown>)['version'] = v);

/** A started plan over a 3-machine control plane moving to v1.31.0 and md-0..md-2 of `perMd` machines each. */
function upgradeWorld(mds: ReturnType<typeof target>[], perMd: number): World {
  const p = plan({ ...started, cp: target('cluster1-cp', 1, V31), mds });
  p.metadata!.uid = 'uid-1';
  return {
    plan: deepFreeze(p),
    mds: MD_NAMES.map((n) => deepFreeze(md(n))),
    machines: deepFreeze([...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }), ...MD_NAMES.flatMap((n) => machines(n, perMd, { md: n }))]),
    mus: [],
    clock: 0,
  };
}

/** Decides with and without the memo and requires the same decision; returns it. */
function check(w: World, memo: PlanCache, step: string, restarted?: PlanCache): PlanDecision {
  const fresh = decidePlan(snapOf(w));
  const memoised = decideThroughCache(snapOf(w), memo);
  expect(memoised, `step ${step}`).to.deep.equal(fresh);
  // A controller restarted mid-rollout starts with an empty memo: from then on it decides the same too.
  if (restarted) expect(decideThroughCache(snapOf(w), restarted), `step ${step} (restarted)`).to.deep.equal(fresh);
  return fresh;
}

describe('the plan cache (cache/): decisions through it equal plain decisions', () => {
  it('decides as a fresh decision over a rollout where machines finish, go away, scale, fail, and the plan is patched', () => {
    const mdNames = ['cluster1-md-0', 'cluster1-md-1', 'cluster1-md-2'];
    const p = plan({
      ...started,
      failurePolicy: 'Continue',
      mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2), target('cluster1-md-2', 3)],
    });
    p.metadata!.uid = 'uid-1';
    p.spec.soak = '5m';
    let w: World = {
      plan: deepFreeze(p),
      mds: mdNames.map((n) => deepFreeze(md(n, { replicas: 4, maxUnavailable: 2 }))),
      machines: deepFreeze([...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }), ...mdNames.flatMap((n) => machines(n, 4, { md: n }))]),
      mus: [],
      clock: 0,
    };
    const memo = new PlanCache();
    const statuses = new Set<string>();
    let verified = false;
    let failedOne = false;
    let regressed = false;
    const restarted = new PlanCache();
    for (let step = 0; step < 40; step++) {
      const again = step >= 9 ? restarted : undefined;
      const d = check(w, memo, String(step), again);
      for (const t of d.status.targets ?? []) statuses.add(`${t.name.replace('cluster1-', '')}:${t.updateStatus}:${t.updated}`);
      w = apply(w, d);
      check(w, memo, `${step} applied`, again);
      // What happens in the world before the next reconcile.
      if (step === 6) {
        // A machine not yet started goes away; one in flight is being deleted (its update is aborted).
        const inFlight = w.mus.find((x) => x.status?.updateStatus === 'updating' && x.spec.target.name === 'cluster1-md-0');
        w = { ...w, machines: w.machines.filter((m) => m.metadata.name !== 'cluster1-md-0-3') };
        w = { ...w, machines: [...w.machines, deepFreeze(machines('cluster1-md-0', 10, { md: 'cluster1-md-0' })[9]!)] };
        if (inFlight) w = { ...w, machines: change(w.machines, nameOfMu(inFlight), (m) => (m.metadata.deletionTimestamp = at(w.clock))) };
      } else if (step === 8) {
        // md-1 scaled 4 -> 5, its new machine created; a machine of md-2 turns NotReady.
        w = { ...w, mds: change(w.mds, 'cluster1-md-1', (o) => ((o['spec'] as Record<string, unknown>)['replicas'] = 5)) };
        w = { ...w, machines: [...w.machines, deepFreeze(machines('cluster1-md-1', 5, { md: 'cluster1-md-1' })[4]!)] };
        w = { ...w, machines: setReady(w.machines, 'cluster1-md-2-1', 'False') };
      } else if (step === 10) {
        // The plan is patched (a new generation): soak 1m instead of 5m, and paused.
        w = { ...w, plan: change([w.plan], 'p1', (x) => ((x.spec.soak = '1m'), (x.spec.paused = true), (x.metadata!.generation = 2)))[0]! };
      } else if (step === 12) {
        w = { ...w, plan: change([w.plan], 'p1', (x) => ((x.spec.paused = false), (x.metadata!.generation = 3)))[0]! };
        w = { ...w, machines: setReady(w.machines, 'cluster1-md-2-1', 'True') };
      } else if (step === 14) {
        // A machine's node never shows the new kubelet (verification holds it, then times out or sees it at step 15).
        const b = w.mus.find((x) => x.status?.updateStatus === 'updating');
        if (b) w = finish(w, new Set([nameOfMu(b)]));
      } else if (step === 15) {
        // The node of the machine that did not show the new kubelet shows it now (only the Machine changed).
        const waiting = w.machines.find(
          (m) => (m['spec'] as { version?: string }).version === 'v1.30.1' && !(m['status'] as { nodeInfo?: unknown }).nodeInfo,
        );
        if (waiting)
          w = {
            ...w,
            machines: change(
              w.machines,
              waiting.metadata.name!,
              (m) => ((m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.1' }),
            ),
          };
        verified = waiting !== undefined;
      } else if (step === 18) {
        // A machine that passed its gates long ago reports the old kubelet again: only its Machine changed.
        const done = w.mus.find((x) => x.status?.updateStatus === 'updated' && x.spec.target.kind === 'ControlPlane');
        if (done)
          w = {
            ...w,
            machines: change(
              w.machines,
              nameOfMu(done),
              (m) => ((m['status'] as Record<string, unknown>)['nodeInfo'] = { kubeletVersion: 'v1.30.0' }),
            ),
          };
        regressed = done !== undefined;
      } else if (step === 16) {
        // A machine already at target, counted as updated without an update.
        const free = w.machines.find(
          (m) => !w.mus.some((x) => nameOfMu(x) === m.metadata.name) && m.metadata.labels?.[Labels.deploymentName],
        );
        if (free) w = { ...w, atTarget: [free.metadata.name!] };
      }
      if (step >= 17 && !failedOne) {
        // An update fails (Continue: its target goes on).
        const a = w.mus.find((x) => x.status?.updateStatus === 'updating');
        if (a)
          w = { ...w, mus: change(w.mus, a.metadata!.name!, (x) => (x.status = { ...x.status, updateStatus: 'failed', message: 'boom' })) };
        failedOne = a !== undefined;
      }
      if (step % 3 !== 2) w = finish(w);
      // The clock moves: soaks and the verification timeout pass while nothing else changes.
      w = { ...w, clock: w.clock + (step % 2 === 0 ? 30_000 : 2 * MIN) };
      check(w, memo, `${step} later`, again);
    }
    // The rollout went somewhere, and the memo was used (not only missed).
    expect([...statuses]).to.include.members(['cp:updated:3', 'md-0:updated:4', 'md-1:updated:5', 'cp:failed:2', 'md-2:updating:2']);
    expect(memo.stats.targetHits).to.be.greaterThan(memo.stats.targetMisses);
    expect(memo.stats.upgradeHits).to.be.greaterThan(0);
    expect(verified).to.equal(true);
    expect(failedOne).to.equal(true);
    expect(regressed).to.equal(true);
  });

  it('patches the grouping by target for machines replaced in place, and groups again when one moves, comes or goes', () => {
    const md0 = 'MachineDeployment/cluster1-md-0';
    const md1 = 'MachineDeployment/cluster1-md-1';
    const ms = deepFreeze([
      ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
      ...machines('cluster1-md-0', 3, { md: 'cluster1-md-0' }),
      ...machines('cluster1-md-1', 3, { md: 'cluster1-md-1' }),
    ]);
    const memo = new PlanCache();
    const same = (list: KubeObject[], step: string): Map<string, KubeObject[]> => {
      const out = groupsThrough(memo, 'cluster1', list);
      expect(out, step).to.deep.equal(machinesByTarget('cluster1', list));
      return out;
    };
    const a = same(ms, 'first');
    // One machine of md-1 changed: md-1's list is a new array holding it, md-0's is the same array as before.
    const ms2 = change(ms, 'cluster1-md-1-1', (m) => (m.metadata.deletionTimestamp = at(0)));
    const b = same(ms2, 'changed');
    expect(b.get(md0)).to.equal(a.get(md0));
    expect(b.get(md1)).to.not.equal(a.get(md1));
    expect(b.get(md1)![1]).to.equal(ms2.find((m) => m.metadata.name === 'cluster1-md-1-1'));
    // Moved to md-0 (labels changed in place), then one removed, then one added: each equals a fresh grouping.
    const ms3 = change(ms2, 'cluster1-md-1-0', (m) => (m.metadata.labels![Labels.deploymentName] = 'cluster1-md-0'));
    same(ms3, 'moved');
    // One leaves every target (its deployment label removed in place), then comes back.
    const left = change(ms3, 'cluster1-md-0-1', (m) => delete m.metadata.labels![Labels.deploymentName]);
    same(left, 'left');
    same(
      change(left, 'cluster1-md-0-1', (m) => (m.metadata.labels![Labels.deploymentName] = 'cluster1-md-0')),
      'back',
    );
    const ms4 = ms3.filter((m) => m.metadata.name !== 'cluster1-md-0-2');
    same(ms4, 'removed');
    const ms5 = [...ms4, deepFreeze(machines('cluster1-md-1', 5, { md: 'cluster1-md-1' })[4]!)];
    same(ms5, 'added');
    same(
      change(ms5, 'cluster1-md-1-4', (m) => (m.metadata.resourceVersion = '2')),
      'added, then changed',
    );
  });

  it('aborts the update of a machine that starts deleting, and labels what changed, only its objects being new', () => {
    const p = plan({ ...started, mds: [target('cluster1-md-0', 2)] });
    p.metadata!.uid = 'uid-1';
    const cpMus = [0, 1, 2].map((i) => deepFreeze(mu(`cluster1-cp-${i}`, 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })));
    const own = (n: string) => {
      const m = mu(n, 'updating', { target: 'cluster1-md-0' });
      m.metadata!.ownerReferences = [{ apiVersion: 'x', kind: 'InPlaceUpdatePlan', name: 'p1', uid: 'uid-1', controller: true }];
      return deepFreeze(m);
    };
    let w: World = {
      plan: deepFreeze(p),
      mds: [deepFreeze(md('cluster1-md-0', { replicas: 4, maxUnavailable: 2 }))],
      machines: deepFreeze([
        ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
        ...machines('cluster1-md-0', 4, { md: 'cluster1-md-0' }),
      ]),
      mus: [...cpMus, own('cluster1-md-0-0'), own('cluster1-md-0-1')],
      clock: 0,
    };
    const memo = new PlanCache();
    const steps: string[][] = [];
    const step = (name: string): PlanDecision => {
      const d = check(w, memo, name);
      steps.push([...d.abort, ...d.label.map((l) => `label ${l.machine}`), ...d.unlabel.map((n) => `unlabel ${n}`)]);
      return d;
    };
    step('first');
    w = apply(w, step('again'));
    step('labelled');
    // md-0-1 starts deleting (its Machine alone is a new object): its update is aborted.
    w = { ...w, machines: change(w.machines, 'cluster1-md-0-1', (m) => (m.metadata.deletionTimestamp = at(0))) };
    w = apply(w, step('deleting'));
    step('aborting');
    // md-0-0 finishes (its update alone is a new object): it is unlabelled.
    w = {
      ...w,
      mus: change(w.mus, machineUpdateName('p1', 'cluster1-md-0-0'), (x) => (x.status = { ...x.status, updateStatus: 'updated' })),
    };
    step('finished');
    expect(steps.some((x) => x.some((y) => /md-0-1/.test(y) && !y.startsWith('label')))).to.equal(true);
    expect(steps.flat().filter((x) => x === 'unlabel cluster1-md-0-0').length).to.be.greaterThan(0);
  });

  it('reuses a target evaluation only while its inputs are the same objects', () => {
    const p = plan({ ...started, mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)] });
    p.metadata!.uid = 'uid-1';
    const ms = deepFreeze([
      ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
      ...machines('cluster1-md-0', 2, { md: 'cluster1-md-0' }),
      ...machines('cluster1-md-1', 2, { md: 'cluster1-md-1' }),
    ]);
    const cpMus = [0, 1, 2].map((i) =>
      deepFreeze({ ...mu(`cluster1-cp-${i}`, 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' }) }),
    );
    const w: World = {
      plan: deepFreeze(p),
      mds: [deepFreeze(md('cluster1-md-0')), deepFreeze(md('cluster1-md-1'))],
      machines: ms,
      mus: cpMus,
      clock: 0,
    };
    const memo = new PlanCache();
    check(w, memo, 'first');
    expect(memo.stats).to.include({ targetHits: 0, targetMisses: 3 });
    check(w, memo, 'same');
    expect(memo.stats).to.include({ targetHits: 3, targetMisses: 3 });
    // One machine of md-1 changed (a new object): md-1 alone is evaluated again.
    const w2 = { ...w, machines: change(w.machines, 'cluster1-md-1-0', (m) => (m.metadata.resourceVersion = '9')) };
    check(w2, memo, 'md-1 changed');
    expect(memo.stats).to.include({ targetHits: 5, targetMisses: 4 });
    // md-0's MachineDeployment changed (maxUnavailable 2: both its machines may start), none of its machines: md-0
    // alone is evaluated again, and what it starts shows it.
    const wider = deepFreeze(md('cluster1-md-0', { maxUnavailable: 2 }));
    const w3 = { ...w2, mds: [wider, w2.mds[1]!] };
    const before = check(w2, memo, 'md-1 changed, again');
    const after = check(w3, memo, 'md-0 paused');
    expect(memo.stats).to.include({ targetHits: 10, targetMisses: 5 });
    const md0 = (d: PlanDecision): string[] => d.create.filter((c) => c.target.name === 'cluster1-md-0').map((c) => c.machine);
    expect([md0(before).length, md0(after).length]).to.deep.equal([1, 2]);
  });

  it("re-checks the upgrade rules when a machine's version changes, and only then", () => {
    const p = plan({ ...started, mds: [target('cluster1-md-0', 2)] });
    p.metadata!.uid = 'uid-1';
    const w: World = {
      plan: deepFreeze(p),
      mds: [deepFreeze(md('cluster1-md-0'))],
      machines: deepFreeze([
        ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
        ...machines('cluster1-md-0', 3, { md: 'cluster1-md-0' }),
      ]),
      mus: [],
      clock: 0,
    };
    const memo = new PlanCache();
    expect(check(w, memo, 'first').problems).to.deep.equal([]);
    // A status-only change of a machine: the rules' facts are the same, the answer is reused.
    const w2 = { ...w, machines: change(w.machines, 'cluster1-md-0-1', (m) => (m.metadata.resourceVersion = '5')) };
    expect(check(w2, memo, 'status').problems).to.deep.equal([]);
    expect(memo.stats).to.include({ upgradeHits: 1, upgradeMisses: 1 });
    // A worker now runs a newer version than the plan sets: the plan would downgrade it.
    const w3 = {
      ...w2,
      machines: change(w2.machines, 'cluster1-md-0-1', (m) => ((m['spec'] as Record<string, unknown>)['version'] = 'v1.31.0')),
    };
    expect(check(w3, memo, 'newer').problems.join()).to.match(/no-downgrade/);
    expect(memo.stats).to.include({ upgradeHits: 1, upgradeMisses: 2 });
  });

  it('reads per machine while an update counts under another target than its machine (and the decision after)', () => {
    const p = plan({ ...started, mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)] });
    p.metadata!.uid = 'uid-1';
    const cpMus = [0, 1, 2].map((i) => deepFreeze(mu(`cluster1-cp-${i}`, 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })));
    const ms = deepFreeze([
      ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
      ...machines('cluster1-md-0', 2, { md: 'cluster1-md-0' }),
      ...machines('cluster1-md-1', 2, { md: 'cluster1-md-1' }),
    ]);
    // md-1-0's update names md-0 as its target (its machine was relabelled since): it counts for md-1's machine.
    const cross = deepFreeze(mu('cluster1-md-1-0', 'failed', { target: 'cluster1-md-0', message: 'x' }));
    const w: World = {
      plan: deepFreeze(p),
      mds: [deepFreeze(md('cluster1-md-0')), deepFreeze(md('cluster1-md-1'))],
      machines: ms,
      mus: [...cpMus, cross],
      clock: 0,
    };
    const memo = new PlanCache();
    check(w, memo, 'cross 1');
    check(w, memo, 'cross 2');
    // The update goes away: md-1's machines and updates are the same objects, yet its machine's record is gone.
    const w2 = { ...w, mus: cpMus };
    check(w2, memo, 'gone 1');
    check(w2, memo, 'gone 2');
    check({ ...w2, mus: [...cpMus, cross] }, memo, 'back');
  });

  it('notices an update that counts under another target once its machine alone was relabelled, until the update goes', () => {
    const p = plan({ ...started, mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)] });
    p.metadata!.uid = 'uid-1';
    const cpMus = [0, 1, 2].map((i) => deepFreeze(mu(`cluster1-cp-${i}`, 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })));
    const own = deepFreeze(mu('cluster1-md-1-0', 'updated', { target: 'cluster1-md-1' }));
    let w: World = {
      plan: deepFreeze(p),
      mds: [deepFreeze(md('cluster1-md-0')), deepFreeze(md('cluster1-md-1'))],
      machines: deepFreeze([
        ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
        ...machines('cluster1-md-0', 2, { md: 'cluster1-md-0' }),
        ...machines('cluster1-md-1', 2, { md: 'cluster1-md-1' }),
      ]),
      mus: [...cpMus, own],
      clock: 0,
    };
    const memo = new PlanCache();
    check(w, memo, 'own 1');
    check(w, memo, 'own 2');
    // The machine moves to md-0 (only its labels change, in place): its md-1 update now counts for md-0's machine.
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-0', (m) => (m.metadata.labels![Labels.deploymentName] = 'cluster1-md-0')) };
    check(w, memo, 'moved 1');
    check(w, memo, 'moved 2');
    // The update goes away: md-0's machines and updates are the objects of the last decision, its count is not.
    w = { ...w, mus: cpMus };
    check(w, memo, 'gone');
  });

  it("keeps each target's upgrade check while its machines are the same objects, and re-checks the skew of a changed one", () => {
    const other = versionUpdater({
      name: 'label',
      responsibilities: [{ selectResource: 'Machine', path: '/metadata/labels/x', value: 'y' }],
    });
    let w = upgradeWorld([target('cluster1-md-0', 2, [other]), target('cluster1-md-1', 2, [other]), target('cluster1-md-2', 2)], 2);
    const memo = new PlanCache();
    const seen: string[][] = [];
    const step = (name: string): void => void seen.push(check(w, memo, name).problems);
    step('start');
    // md-1's second machine falls out of the skew, then md-0's: both named, in the order of their machines.
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-1', version('v1.27.0')) };
    step('md-1 behind');
    w = { ...w, machines: change(w.machines, 'cluster1-md-0-1', version('v1.26.0')) };
    step('md-0 behind');
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-1', (m) => (m.metadata.resourceVersion = '3')) };
    step('md-1 status only');
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-1', version('v1.30.0')) };
    step('md-1 back');
    // A worker of md-2 runs a newer version than md-2's target sets: a downgrade.
    w = { ...w, machines: change(w.machines, 'cluster1-md-2-0', version('v1.32.0')) };
    step('md-2 newer');
    expect(seen.map((x) => x.filter((y) => /version-skew|no-downgrade/.test(y)).length)).to.deep.equal([0, 1, 2, 2, 1, 2]);
    expect(seen[2]!.filter((y) => /version-skew/.test(y))[0]).to.match(/MachineDeployment cluster1-md-0 stays at v1\.26\.0/);
  });

  it("patches the upgrade rules' grouping for the machines that changed: commits that create and clear problems, skew, regrouping", () => {
    const other = versionUpdater({
      name: 'label',
      responsibilities: [{ selectResource: 'Machine', path: '/metadata/labels/x', value: 'y' }],
    });
    // md-1 sets no version of its own: the skew rule reads its workers' versions against the control plane's.
    let w = upgradeWorld([target('cluster1-md-0', 2, V31), target('cluster1-md-1', 2, [other]), target('cluster1-md-2', 2, V31)], 3);
    const memo = new PlanCache();
    // A controller restarted mid-rollout (below): its empty memo decides the same from then on.
    const restart: { memo?: PlanCache } = {};
    const rules = (name: string): string[] => check(w, memo, name, restart.memo).problems.filter((x) => /breaks upgrade rule/.test(x));
    expect(rules('start')).to.deep.equal([]);
    // Commits: md-0's and md-2's machines move to the plan's version one by one (each a miss, no problem).
    w = { ...w, machines: change(w.machines, 'cluster1-md-0-0', version('v1.31.0')) };
    expect(rules('commit md-0-0')).to.deep.equal([]);
    w = { ...w, machines: change(w.machines, 'cluster1-md-2-0', version('v1.31.0')) };
    expect(rules('commit md-2-0')).to.deep.equal([]);
    // A version change that creates a problem in md-2 (a downgrade), with md-0 unchanged, then clears it.
    w = { ...w, machines: change(w.machines, 'cluster1-md-2-1', version('v1.32.0')) };
    expect(rules('md-2 newer').join()).to.match(/machineDeployment cluster1-md-2 updater .*no-downgrade.*cluster1-md-2-1 runs v1\.32\.0/);
    restart.memo = new PlanCache();
    w = { ...w, machines: change(w.machines, 'cluster1-md-2-1', version('v1.31.0')) };
    expect(rules('md-2 back')).to.deep.equal([]);
    // Skew: md-1's last worker, then its first, fall out of range; the problem names the first of them in order.
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-2', version('v1.27.0')) };
    expect(rules('md-1-2 behind')).to.have.length(1);
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-0', version('v1.26.0')) };
    expect(rules('md-1-0 behind')[0]).to.match(/MachineDeployment cluster1-md-1 stays at v1\.26\.0/);
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-0', version('v1.30.0')) };
    expect(rules('md-1-0 back')[0]).to.match(/MachineDeployment cluster1-md-1 stays at v1\.27\.0/);
    // The behind machine starts deleting (regrouped: it no longer counts), then comes back.
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-2', (m) => (m.metadata.deletionTimestamp = '2026-01-01T00:00:00Z')) };
    expect(rules('md-1-2 deleting')).to.deep.equal([]);
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-2', (m) => delete m.metadata.deletionTimestamp) };
    expect(rules('md-1-2 back')).to.have.length(1);
    // It moves to md-2 (relabelled in place): md-2's check now reads it (it is two minors behind md-2's version).
    w = { ...w, machines: change(w.machines, 'cluster1-md-1-2', (m) => (m.metadata.labels![Labels.deploymentName] = 'cluster1-md-2')) };
    expect(rules('md-1-2 to md-2').join()).to.match(/cluster1-md-2 .*no-skipped-minor/);
    // A new machine of md-1 behind the skew (appended), then one removed.
    w = { ...w, machines: [...w.machines, deepFreeze(machine('cluster1-md-1-9', { md: 'cluster1-md-1', version: 'v1.25.0' }))] };
    expect(rules('appended').join()).to.match(/MachineDeployment cluster1-md-1 stays at v1\.25\.0/);
    w = { ...w, machines: w.machines.filter((m) => m.metadata.name !== 'cluster1-md-1-2') };
    expect(rules('removed')).to.have.length(1);
    // A control-plane machine runs a newer version than the plan sets.
    w = { ...w, machines: change(w.machines, 'cluster1-cp-1', version('v1.32.0')) };
    expect(rules('cp newer').join()).to.match(/controlPlane cluster1-cp updater .*no-downgrade/);
    w = { ...w, machines: change(w.machines, 'cluster1-cp-1', version('v1.31.0')) };
    expect(rules('cp committed')).to.have.length(1);
  });

  it("patches the targets' update lists for the updates that changed: soak holds and releases, an update appended, one renaming its target", () => {
    const p = plan({ ...started, failurePolicy: 'Continue', mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)] });
    p.metadata!.uid = 'uid-1';
    p.spec.soak = '5m';
    const cpMus = [0, 1, 2].map((i) => deepFreeze(mu(`cluster1-cp-${i}`, 'updated', { kind: 'ControlPlane', target: 'cluster1-cp' })));
    const upd = (machineName: string, status: 'updating' | 'updated' | 'failed', targetName: string, done?: number): MachineUpdate => {
      const x = mu(machineName, status, { target: targetName, ...(status === 'failed' ? { message: 'x' } : {}) });
      if (done !== undefined) x.status = { ...x.status, completionTime: at(done) };
      return deepFreeze(x);
    };
    let w: World = {
      plan: deepFreeze(p),
      mds: [deepFreeze(md('cluster1-md-0')), deepFreeze(md('cluster1-md-1'))],
      machines: deepFreeze([
        ...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }),
        ...machines('cluster1-md-0', 3, { md: 'cluster1-md-0' }),
        ...machines('cluster1-md-1', 3, { md: 'cluster1-md-1' }),
      ]),
      mus: [...cpMus, upd('cluster1-md-0-0', 'updated', 'cluster1-md-0', -MIN), upd('cluster1-md-0-1', 'updating', 'cluster1-md-0')],
      clock: 0,
    };
    const memo = new PlanCache();
    const restart: { memo?: PlanCache } = {};
    const rows = (name: string): string =>
      JSON.stringify(
        check(w, memo, name, restart.memo).status.targets?.map((t) => [t.name, t.updateStatus, t.updated, t.updating, t.failed]),
      );
    const replace = (m: MachineUpdate): MachineUpdate[] => w.mus.map((x) => (x.spec.machineRef.name === m.spec.machineRef.name ? m : x));
    rows('start');
    rows('same');
    // md-0-1 finishes: held in its soak as md-0-0 is (the gate's stand-ins are new objects every decision).
    w = { ...w, mus: replace(upd('cluster1-md-0-1', 'updated', 'cluster1-md-0', 0)) };
    rows('second held');
    restart.memo = new PlanCache();
    w = { ...w, clock: 2 * MIN };
    rows('still held');
    // Both soaks end: the stand-ins give way to the updates themselves.
    w = { ...w, clock: 10 * MIN };
    const released = rows('released');
    // An update of md-1 is created (appended to the store's list).
    w = { ...w, mus: [...w.mus, upd('cluster1-md-1-0', 'updating', 'cluster1-md-1')] };
    rows('appended');
    // md-0-1's update now names md-1 as its target (changed in place): md-1 counts it, md-0 no longer does.
    w = { ...w, mus: replace(upd('cluster1-md-0-1', 'updated', 'cluster1-md-1', 0)) };
    const moved = rows('target renamed');
    expect(moved).to.not.equal(released);
    w = { ...w, mus: replace(upd('cluster1-md-1-0', 'failed', 'cluster1-md-1')) };
    rows('failed');
    rows('failed again');
  });

  // The store's list of a plan's updates, reconcile after reconcile: changed in place, appended, a second update for a
  // machine (the later one wins), another plan's update, one removed, one naming another machine at the same place.
  const muSequence = (): { step: string; mus: MachineUpdate[] }[] => {
    const m = (machineName: string, status: 'updating' | 'updated', n = machineName, planName = 'p1'): MachineUpdate => {
      const x = mu(machineName, status, { target: 'cluster1-md-0', plan: planName });
      x.metadata!.name = n;
      return deepFreeze(x);
    };
    const a = [m('md-0', 'updated'), m('md-1', 'updating'), m('md-2', 'updating', 'md-2', 'p2')];
    const b = [...a.slice(0, 1), m('md-1', 'updated'), a[2]!];
    const c = [...b, m('md-3', 'updating'), m('md-1', 'updating', 'md-1-again')];
    const d = [...c.slice(0, 4), m('md-1', 'updated', 'md-1-again'), m('md-4', 'updating')];
    // The first update of md-1 changes after the second: the second still wins.
    const e = [d[0]!, m('md-1', 'updating'), ...d.slice(2)];
    const f = [e[0]!, ...e.slice(2)];
    const g = [f[0]!, m('md-5', 'updating', f[1]!.metadata!.name), ...f.slice(2)];
    const h = [...g.slice(0, 2), m('md-2', 'updating', 'md-2', 'p1'), ...g.slice(3)];
    // Another plan's update changes in place, and one of it is appended; then the last update goes (md-4 has none now).
    const i = [...h.slice(0, 5), m('md-6', 'updating', 'md-6', 'p2')];
    const j = [i[0]!, m('md-5', 'updated', i[1]!.metadata!.name), ...i.slice(2)];
    const k = [...j.slice(0, 4), m('md-4', 'updated')];
    const l = k.slice(0, 4);
    return [
      { step: 'first', mus: a },
      { step: 'same', mus: [...a] },
      { step: 'changed', mus: b },
      { step: 'appended, second for md-1', mus: c },
      { step: 'second changed', mus: d },
      { step: 'first changed', mus: e },
      { step: 'removed', mus: f },
      { step: 'another machine', mus: g },
      { step: 'another plan', mus: h },
      { step: "another plan's appended", mus: i },
      { step: 'changed again', mus: j },
      { step: 'md-4 changed', mus: k },
      { step: 'last removed', mus: l },
      { step: 'back', mus: [...a] },
    ];
  };

  it("keeps the plan's updates by machine as a fresh pass does, patched for the updates that are new objects", () => {
    const memo = new PlanCache();
    let kept: Map<string, MachineUpdate> | undefined;
    let patched = 0;
    for (const { step, mus } of muSequence()) {
      const out = ownUpdates(mus, 'p1', memo);
      // Same entries in the same order (the soak gate reads them in map order).
      expect([...out], step).to.deep.equal([...plainOwnUpdates(mus, 'p1')]);
      if (out === kept) patched++;
      kept = out;
    }
    expect(patched, 'patched rather than rebuilt').to.be.greaterThan(2);
    // Another plan's name reads afresh.
    expect([...ownUpdates(muSequence()[0]!.mus, 'p2', memo)]).to.deep.equal([...plainOwnUpdates(muSequence()[0]!.mus, 'p2')]);
  });

  it('excludes the machines with an update from machines at target as a fresh set does, the set patched in place', () => {
    const p = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
    // Every machine runs the target version: at target unless it has an update.
    const ms = deepFreeze(Array.from({ length: 7 }, (_, i) => machine(`md-${i}`, { md: 'cluster1-md-0', version: 'v1.30.1' })));
    const memo = new AtTargetMemo();
    let machinesNow: KubeObject[] = ms;
    let kept: ReadonlySet<string> | undefined;
    let patched = 0;
    for (const { step, mus } of muSequence()) {
      const exclude = memo.excluded(mus);
      expect([...exclude].sort(), step).to.deep.equal([...new Set(mus.map(nameOfMu))].sort());
      if (exclude === kept) patched++;
      kept = exclude;
      expect(
        atTargetThrough(p, machinesNow, () => undefined, exclude, { memo }),
        step,
      ).to.deep.equal(machinesAtTarget(p, machinesNow, () => undefined, new Set(mus.map(nameOfMu))));
      // A machine unrelated to the updates changes now and then (a new object at the same place).
      if (step === 'changed') machinesNow = change(machinesNow, 'md-6', (m) => (m.metadata.resourceVersion = '9'));
    }
    expect(patched, 'patched rather than rebuilt').to.be.greaterThan(2);
    // A caller passing its own set in between: the next call with the memo's set does not trust what it added.
    const mus = muSequence()[0]!.mus;
    atTargetThrough(p, ms, () => undefined, memo.excluded(mus), { memo });
    atTargetThrough(p, ms, () => undefined, new Set(), { memo });
    const more = [...mus, deepFreeze(mu('md-6', 'updating', { target: 'cluster1-md-0' }))];
    expect(atTargetThrough(p, ms, () => undefined, memo.excluded(more), { memo })).to.deep.equal(
      machinesAtTarget(p, ms, () => undefined, new Set(more.map(nameOfMu))),
    );
    // The other way round: the caller's own set twice, the memo's set patched in between (not the caller's set).
    const own = new Set(mus.map(nameOfMu));
    atTargetThrough(p, ms, () => undefined, own, { memo });
    memo.excluded([...more, deepFreeze(mu('md-5', 'updating', { target: 'cluster1-md-0' }))]);
    expect(atTargetThrough(p, ms, () => undefined, own, { memo })).to.deep.equal(machinesAtTarget(p, ms, () => undefined, own));
  });

  it("filters the store's list to the plan's own updates as a fresh filter does, patching the last answer", () => {
    const p = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
    p.metadata!.uid = 'uid-1';
    const owner = (uid: string) => [{ apiVersion: 'x', kind: 'InPlaceUpdatePlan', name: 'p1', uid, controller: true }];
    const m = (machineName: string, uid = 'uid-1', status: 'updating' | 'updated' = 'updating'): MachineUpdate => {
      const x = mu(machineName, status, { target: 'cluster1-md-0' });
      x.metadata!.ownerReferences = owner(uid);
      return deepFreeze(x);
    };
    const mine = { ...p } as typeof p & KubeObject;
    // An update changes in place, one is appended, one of a former plan of the same name (another uid) is appended and
    // changes, one stops being owned (its owner's uid changes in place), one is removed, and nothing changes at all.
    const a = [m('md-0'), m('md-1'), m('md-2', 'uid-0')];
    const b = [m('md-0', 'uid-1', 'updated'), a[1]!, a[2]!];
    const c = [...b, m('md-3'), m('md-4', 'uid-0')];
    const d = [...c.slice(0, 4), m('md-4', 'uid-0', 'updated')];
    const e = [d[0]!, m('md-1', 'uid-0'), ...d.slice(2)];
    const f = [e[0]!, m('md-1'), ...e.slice(2)];
    const g = [...f.slice(0, 3), ...f.slice(4)];
    const memo: OwnFilterMemo = {};
    let patched = 0;
    let last: MachineUpdate[] | undefined;
    for (const [step, list] of Object.entries({ a, same: a, b, c, d, e, f, g, again: [...g] })) {
      const out = ownMachineUpdates(list, mine, memo);
      expect(out, step).to.deep.equal(list.filter((x) => ownMachineUpdates([x], mine).length === 1));
      if (step === 'same' || step === 'again') expect(out, step).to.equal(last);
      if (memo.last?.out === out && last !== out && list !== a) patched++;
      last = out;
    }
    expect(patched).to.be.greaterThan(0);
    // Another plan (a recreated one: same name, another uid) filters afresh.
    const other = { ...mine, metadata: { ...mine.metadata, uid: 'uid-0' } };
    expect(ownMachineUpdates(g, other, memo)).to.deep.equal(ownMachineUpdates(g, other));
  });
  it("takes a pass's changed positions from the soak gate's scan only when it compared the same two lists", () => {
    const ms = deepFreeze(Array.from({ length: 4 }, (_, i) => machine(`md-${i}`, { md: 'cluster1-md-0' })));
    const mus = deepFreeze([mu('md-0', 'updating', { target: 'cluster1-md-0' }), mu('md-1', 'updating', { target: 'cluster1-md-0' })]);
    const memo = new PlanCache();
    soakCandidates(memo, 'k', mus, ms);
    ownUpdates(mus, 'p1', memo);
    machineIndex(ms, memo);
    // Next lists: one update and one machine replaced in place; the soak gate's scan records them (memo.delta).
    const mus2 = deepFreeze([mus[0]!, mu('md-1', 'updated', { target: 'cluster1-md-0' })]);
    const ms2 = deepFreeze([ms[0]!, ms[1]!, machine('md-2', { md: 'cluster1-md-0', version: 'v9' }), ms[3]!]);
    soakCandidates(memo, 'k', mus2, ms2);
    expect(memo.delta?.mus).to.deep.equal([1]);
    expect(memo.delta?.machines).to.deep.equal([2]);
    expect(ownUpdates(mus2, 'p1', memo).get('md-1')).to.equal(mus2[1]);
    expect(machineIndex(ms2, memo).get('md-2')).to.equal(ms2[2]);
    // Other lists than the scan compared (a caller in between, or a decision without the scan): scanned afresh, the
    // delta (positions 1 and 2 of other lists) not trusted.
    const mus3 = deepFreeze([mu('md-0', 'updated', { target: 'cluster1-md-0' }), mus2[1]!]);
    const ms3 = deepFreeze([machine('md-0', { md: 'cluster1-md-0', version: 'v9' }), ...ms2.slice(1)]);
    expect(ownUpdates(mus3, 'p1', memo).get('md-0')).to.equal(mus3[0]);
    expect(machineIndex(ms3, memo).get('md-0')).to.equal(ms3[0]);
    expect([...ownUpdates(mus3, 'p1', memo)]).to.deep.equal([...plainOwnUpdates(mus3, 'p1')]);
  });
  it('reports an updater that stops or starts reporting as a fresh decision does, notes kept per update', () => {
    const mdNames = ['cluster1-md-0', 'cluster1-md-1'];
    const p = plan({ ...started, mds: [target('cluster1-md-0', 2), target('cluster1-md-1', 2)] });
    p.metadata!.uid = 'uid-1';
    let w: World = {
      plan: deepFreeze(p),
      mds: mdNames.map((n) => deepFreeze(md(n, { replicas: 3, maxUnavailable: 1 }))),
      machines: deepFreeze([...machines('cluster1-cp', 3, { cp: 'cluster1-cp' }), ...mdNames.flatMap((n) => machines(n, 3, { md: n }))]),
      mus: [],
      clock: 0,
    };
    const memo = new PlanCache();
    const ready = (d: PlanDecision): string => d.status.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
    // The control plane's updates, then the first machine of each MachineDeployment in flight.
    for (let i = 0; i < 6 && !w.mus.some((x) => x.status?.updateStatus === 'updating'); i++) {
      w = apply(w, check(w, memo, `start ${i}`));
      w = { ...w, clock: w.clock + MIN };
    }
    const inFlight = w.mus.filter((x) => x.status?.updateStatus === 'updating').map(nameOfMu);
    expect(inFlight.length).to.be.greaterThan(0);
    const stuck = inFlight[0]!;
    const notReporting = (on: boolean) => (x: MachineUpdate) => {
      const conditions = (x.status?.conditions ?? []).filter((c) => c.type !== 'InPlaceUpdate');
      if (on)
        conditions.push({
          type: 'InPlaceUpdate',
          status: 'True',
          reason: 'UpdaterNotReporting',
          message: 'no updater has reported',
          lastTransitionTime: at(w.clock),
        });
      x.status = { ...x.status, conditions } as MachineUpdate['status'];
    };
    // Nothing to note: the memo's last answer had no notes.
    expect(ready(check(w, memo, 'reporting'))).to.not.include('no updater has reported');
    // One updater stops reporting (its update a new object in place): the memo'd decision must see it.
    w = { ...w, mus: change(w.mus, machineUpdateName('p1', stuck), notReporting(true)), clock: w.clock + 1000 };
    expect(ready(check(w, memo, 'stopped reporting'))).to.include('no updater has reported');
    w = { ...w, clock: w.clock + 1000 };
    expect(ready(check(w, memo, 'still not reporting'))).to.include('no updater has reported');
    // It reports again: the note goes.
    w = { ...w, mus: change(w.mus, machineUpdateName('p1', stuck), notReporting(false)), clock: w.clock + 1000 };
    expect(ready(check(w, memo, 'reporting again'))).to.not.include('no updater has reported');
  });
  it("takes the soak gate's changed updates from the ownership filter only when it patched the last decision's list into this one", () => {
    const p = plan({ cp: null, mds: [target('cluster1-md-0', 2)] });
    p.metadata!.uid = 'uid-1';
    const mine = p as typeof p & KubeObject;
    const m = (machineName: string, status: 'updating' | 'updated' = 'updating'): MachineUpdate => {
      const x = mu(machineName, status, { target: 'cluster1-md-0' });
      x.metadata!.ownerReferences = [{ apiVersion: 'x', kind: 'InPlaceUpdatePlan', name: 'p1', uid: 'uid-1', controller: true }];
      return deepFreeze(x);
    };
    const ms = deepFreeze([machine('md-0', { md: 'cluster1-md-0' }), machine('md-1', { md: 'cluster1-md-0' })]);
    const memo = new PlanCache();
    const a = [m('md-0'), m('md-1')];
    soakCandidates(memo, 'k', ownMachineUpdates(a, mine, memo.ownFilter), ms);
    // Two filters between two decisions: the last one patched from a list the soak gate never saw.
    const b = [m('md-0', 'updated'), a[1]!];
    ownMachineUpdates(b, mine, memo.ownFilter);
    const c = [b[0]!, m('md-1', 'updated')];
    soakCandidates(memo, 'k', ownMachineUpdates(c, mine, memo.ownFilter), ms);
    expect(memo.delta?.mus).to.deep.equal([0, 1]);
    // One filter: its positions serve.
    const d = [m('md-0'), c[1]!];
    const outD = ownMachineUpdates(d, mine, memo.ownFilter);
    soakCandidates(memo, 'k', outD, ms);
    expect(memo.delta?.mus).to.deep.equal([0]);
    // A list other than the filter's answer (a caller's own): scanned.
    const e = [d[0]!, m('md-1')];
    ownMachineUpdates(e, mine, memo.ownFilter);
    const own = [m('md-0', 'updated'), e[1]!];
    soakCandidates(memo, 'k', own, ms);
    expect(memo.delta?.mus).to.deep.equal([0, 1]);
  });
});
