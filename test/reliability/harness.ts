// Shared harness of the reliability suites: a fleet in its own namespace, the platform's components as separate
// processes (killable), recorders fed by watches, and the invariants every suite asserts at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Annotations,
  InPlaceUpdatePlans,
  Labels,
  MachineUpdates,
  Machines,
  UpdaterUpdateTasks,
  isTerminal,
  type InPlaceUpdatePlan,
  type KubeObject,
  type MachineUpdate,
} from '../../src/api/index.js';
import { capiCrdDirs } from '../../tools/capi-sim/index.js';
import { createInformer, type KubeClient, type SharedInformer } from '../../src/runtime/index.js';
import { applyFleet, buildFleet, type Fleet, type FleetShape } from '../../bench/lib/fleet.js';
import { Proc, type ProcSpec } from '../../bench/lib/procs.js';
import { PROJECT_CRDS, startTestEnv, type TestEnv } from '../support/env.js';
import { delay, waitFor } from '../support/wait.js';

/** Worker machines of the crash/fault suites: INPLACE_RELIABILITY_SCALE (e.g. 500), else a CI-sized default. */
export function reliabilityScale(ciDefault: number): number {
  const v = Number(process.env['INPLACE_RELIABILITY_SCALE'] ?? '');
  return Number.isInteger(v) && v > 0 ? v : ciDefault;
}

/** A seeded PRNG (mulberry32) so a failing run can be replayed with INPLACE_RELIABILITY_SEED. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of this run (printed by the suites). */
export const SEED = Number(process.env['INPLACE_RELIABILITY_SEED'] ?? '') || Math.floor(Math.random() * 1e9);

/** The controller components (`inplace run <name>`). */
export const CONTROLLERS = ['plan-controller', 'machine-task-controller', 'mhc-extension'] as const;

/** Process specs of the platform: every controller and the reference updater, scoped to `ns`. */
export function platformSpecs(kubeconfig: string, ns: string, opts: { leaderElect?: boolean; replica?: string } = {}): ProcSpec[] {
  const le = opts.leaderElect ? ['--leader-elect'] : [];
  const suffix = opts.replica ? `-${opts.replica}` : '';
  return [
    ...CONTROLLERS.map((c): ProcSpec => ({
      name: `${c}${suffix}`,
      inplace: ['run', c, '--kubeconfig', kubeconfig, '-n', ns, ...le, ...(opts.leaderElect ? ['--lease-namespace', ns] : [])],
    })),
    { name: `updater-reference${suffix}`, inplace: ['updater', 'reference', '--catch-all', '--kubeconfig', kubeconfig, '-n', ns, ...le] },
  ];
}

/** One suite's world: test env, namespace, fleet, process log dir. */
export interface World {
  env: TestEnv;
  client: KubeClient;
  ns: string;
  fleet: Fleet;
  logDir: string;
  procs: Proc[];
}

/** Starts the env (local API server unless INPLACE_TEST_KUBECONFIG), installs the CRDs, creates the fleet. */
export async function startWorld(shape: Omit<FleetShape, 'namespace'>, prefix: string): Promise<World> {
  const env = await startTestEnv({ crds: [...PROJECT_CRDS, ...capiCrdDirs()] });
  const ns = await env.newNamespace(prefix);
  const fleet = buildFleet({ ...shape, namespace: ns });
  await applyFleet(env.client, fleet.objects, 24);
  return { env, client: env.client, ns, fleet, logDir: mkdtempSync(join(tmpdir(), `inplace-${prefix}-`)), procs: [] };
}

/** Starts processes of the world and waits until each is up (its log has content or it listens). */
export function startProcs(w: World, specs: ProcSpec[]): Proc[] {
  const ps = specs.map((s) => new Proc(s, w.logDir));
  for (const p of ps) p.start();
  w.procs.push(...ps);
  return ps;
}

/** An `inplace run` without a namespace: its controllers watch (and act in) every namespace of the cluster. */
function isClusterWide(s: ProcSpec): boolean {
  return 'inplace' in s && s.inplace[0] === 'run' && !s.inplace.some((a) => a === '-n' || a.startsWith('--namespace'));
}

/** Stops every process and the env; removes the process logs unless INPLACE_RELIABILITY_KEEP_LOGS is set. */
export async function stopWorld(w: World | undefined): Promise<void> {
  if (!w) return;
  await Promise.all(w.procs.map((p) => p.stop(3000)));
  // A process started without --namespace watched the whole cluster, other suites' namespaces being deleted too.
  if (w.procs.some((p) => isClusterWide(p.spec))) await w.env.releaseTerminatingTestNamespaces();
  await w.env.stop();
  if (process.env['INPLACE_RELIABILITY_KEEP_LOGS']) process.stdout.write(`      process logs kept in ${w.logDir}\n`);
  else rmSync(w.logDir, { recursive: true, force: true });
}

/** Waits for a plan to reach one of `statuses`; the failure message carries the plan status and process logs. */
export async function waitPlan(w: World, name: string, statuses: string[], timeoutMs: number): Promise<InPlaceUpdatePlan & KubeObject> {
  let last: (InPlaceUpdatePlan & KubeObject) | undefined;
  try {
    return await waitFor(
      async () => {
        last = await w.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, w.ns, name);
        return last && statuses.includes(last.status?.updateStatus ?? '') ? last : undefined;
      },
      { timeoutMs, intervalMs: 200, message: `plan ${name} to be ${statuses.join('|')}` },
    );
  } catch (err) {
    const crashed = w.procs
      .filter((p) => p.crashedOnItsOwn)
      .map((p) => `\n--- ${p.name} exited on its own:\n${p.tail()}`)
      .join('');
    throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status)}${crashed}`);
  }
}

/** Watch-fed record of what happened during a run (complements the final state). */
export class Recorder {
  /** uids seen per task, keyed by plan/machine/updater: more than one = a duplicate task. */
  readonly taskUids = new Map<string, Set<string>>();
  /** spec.version values seen per Machine, in order, deduplicated consecutive: each change is one commit. */
  readonly versions = new Map<string, string[]>();
  private informers: SharedInformer[] = [];

  constructor(
    private readonly client: KubeClient,
    private readonly ns: string,
  ) {}

  async start(): Promise<void> {
    const tasks = createInformer(this.client, UpdaterUpdateTasks, { namespace: this.ns });
    tasks.onChange((t) => {
      const l = t.metadata.labels ?? {};
      const key = `${l[Labels.planName] ?? '?'}/${l[Labels.machineName] ?? '?'}/${l[Labels.updaterName] ?? '?'}`;
      const set = this.taskUids.get(key) ?? new Set<string>();
      set.add(t.metadata.uid ?? '');
      this.taskUids.set(key, set);
    });
    const machines = createInformer(this.client, Machines, { namespace: this.ns });
    machines.onChange((m) => {
      const v = String((m['spec'] as { version?: string } | undefined)?.version ?? '');
      const seen = this.versions.get(m.metadata.name ?? '') ?? [];
      if (seen[seen.length - 1] !== v) seen.push(v);
      this.versions.set(m.metadata.name ?? '', seen);
    });
    this.informers = [tasks as SharedInformer, machines as SharedInformer];
    for (const i of this.informers) i.start();
    await Promise.all(this.informers.map((i) => i.synced()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** Task keys with more than one uid. */
  duplicateTasks(): string[] {
    return [...this.taskUids].filter(([, s]) => s.size > 1).map(([k, s]) => `${k} (${s.size} tasks)`);
  }
}

/** Expected outcome of the invariant check. */
export interface Expect {
  plan: string;
  /** Statuses the plan may end in. */
  planStatuses: string[];
  /** Every machine ends updated (else: updated or aborted). */
  allUpdated: boolean;
  toVersion: string;
  /** Machines before the plan (a commit bumps the generation exactly once and changes spec.version). */
  before: Map<string, MachineBefore>;
}

/** What a Machine looked like before a plan. */
export interface MachineBefore {
  generation: number;
  version: string;
}

/** Generation and spec.version of every Machine now, by name. */
export async function machinesBefore(client: KubeClient, ns: string): Promise<Map<string, MachineBefore>> {
  const ms = (await client.list(Machines, ns)).items;
  return new Map(
    ms.map((m) => [
      m.metadata.name ?? '',
      { generation: m.metadata.generation ?? 0, version: String((m['spec'] as { version?: string }).version ?? '') },
    ]),
  );
}

/**
 * The invariants of a finished plan, as a list of violations (empty = all hold): plan terminal as expected; one
 * MachineUpdate per machine, all terminal; at most one task per plan/machine/updater (final state and watch record);
 * every machine committed exactly once when updated (spec.version = target, generation +1, one version change seen)
 * and never when aborted/failed; no machine labelled, annotated as in update, or left with skip-remediation.
 */
export async function checkInvariants(client: KubeClient, ns: string, e: Expect, rec?: Recorder): Promise<string[]> {
  const v: string[] = [];
  const plan = await client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, ns, e.plan);
  if (!plan) return [`plan ${e.plan} not found`];
  if (!e.planStatuses.includes(plan.status?.updateStatus ?? ''))
    v.push(`plan ${e.plan} is ${plan.status?.updateStatus}, expected ${e.planStatuses.join('|')}`);
  const machines = (await client.list(Machines, ns)).items;
  const mus = (await client.list<MachineUpdate & KubeObject>(MachineUpdates, ns)).items.filter((m) => m.spec.planName === e.plan);
  const tasks = (await client.list(UpdaterUpdateTasks, ns)).items.filter((t) => t.metadata.labels?.[Labels.planName] === e.plan);

  const muByMachine = new Map<string, (MachineUpdate & KubeObject)[]>();
  for (const mu of mus) muByMachine.set(mu.spec.machineRef.name, [...(muByMachine.get(mu.spec.machineRef.name) ?? []), mu]);
  const taskKeys = new Map<string, number>();
  for (const t of tasks) {
    const k = `${t.metadata.labels?.[Labels.machineName]}/${t.metadata.labels?.[Labels.updaterName]}`;
    taskKeys.set(k, (taskKeys.get(k) ?? 0) + 1);
  }
  for (const [k, n] of taskKeys) if (n > 1) v.push(`${n} tasks for ${k}`);
  for (const d of rec?.duplicateTasks() ?? []) v.push(`duplicate task seen on the watch: ${d}`);

  for (const m of machines) {
    const name = m.metadata.name ?? '';
    const version = (m['spec'] as { version?: string }).version;
    const gen = m.metadata.generation ?? 0;
    const before = e.before.get(name);
    const list = muByMachine.get(name) ?? [];
    if (list.length > 1) v.push(`machine ${name} has ${list.length} MachineUpdates`);
    const mu = list[0];
    const st = mu?.status?.updateStatus;
    if (!mu) {
      if (e.allUpdated) v.push(`machine ${name} has no MachineUpdate`);
    } else if (!isTerminal(st)) v.push(`MachineUpdate of ${name} is stuck in "${st ?? ''}"`);
    if (e.allUpdated && st !== 'updated') v.push(`machine ${name} ended "${st ?? 'not started'}", expected updated`);
    if (!e.allUpdated && st !== undefined && !['updated', 'aborted'].includes(st))
      v.push(`machine ${name} ended "${st}", expected updated or aborted`);
    const committed = st === 'updated';
    if (committed && version !== e.toVersion) v.push(`machine ${name} is updated but spec.version is ${version}`);
    if (before && !committed && version !== before.version)
      v.push(`machine ${name} is ${st ?? 'not started'} but spec.version changed ${before.version} -> ${version}`);
    if (before && gen !== before.generation + (committed ? 1 : 0))
      v.push(`machine ${name}: generation ${before.generation} -> ${gen}, expected ${committed ? 'exactly one commit' : 'no spec write'}`);
    const seen = rec?.versions.get(name);
    if (seen && seen.length - 1 !== (committed ? 1 : 0))
      v.push(`machine ${name}: spec.version went ${seen.join(' -> ')} on the watch, expected ${committed ? 'one commit' : 'none'}`);
    const labels = m.metadata.labels ?? {};
    const ann = m.metadata.annotations ?? {};
    if (labels[Labels.planName] !== undefined) v.push(`machine ${name} still labelled ${Labels.planName}=${labels[Labels.planName]}`);
    if (ann[Annotations.updateStartedAt] !== undefined) v.push(`machine ${name} still annotated ${Annotations.updateStartedAt}`);
    if (ann[Annotations.skipRemediation] !== undefined) v.push(`machine ${name} still has ${Annotations.skipRemediation}`);
    if (ann[Annotations.skipRemediationPrior] !== undefined) v.push(`machine ${name} still has ${Annotations.skipRemediationPrior}`);
    if (ann[Annotations.remediateMachine] !== undefined) v.push(`machine ${name} was marked for remediation`);
  }
  return v;
}

/** Formats violations for an assertion message (first 30). */
export const report = (v: string[]): string => (v.length ? `${v.length} invariant violation(s):\n  ${v.slice(0, 30).join('\n  ')}` : 'ok');

/** Checks the invariants, re-checking for a few seconds while only label cleanup is outstanding (eventual). */
export async function settledInvariants(w: World, e: Expect, rec?: Recorder): Promise<string[]> {
  let v: string[] = [];
  for (let i = 0; i < 20; i++) {
    v = await checkInvariants(w.client, w.ns, e, rec);
    if (v.length === 0 || v.some((x) => !/still (labelled|annotated|has)/.test(x))) return v;
    await delay(500);
  }
  return v;
}
