// End-to-end harness: one namespace with a CAPI inventory, the CAPI simulator, the three components on their own
// runtime managers (as separate processes would run them), and the reference updater. Works against the local API
// server or a real cluster (whatever client it is given).
import { eventAction } from '../../src/api/event-actions.js';
import type { AlertGatePolicy, InPlaceUpdatePlan, KubeObject, MachineUpdate, PlanTarget, PlanUpdater } from '../../src/api/index.js';
import {
  API_VERSION,
  InPlaceUpdatePlans,
  Labels,
  MachineDeployments,
  MachineUpdates,
  Machines,
  Nodes,
  UpdaterUpdateTasks,
} from '../../src/api/index.js';
import {
  applyInventory,
  buildInventory,
  inventoryMachineName,
  inventoryMachineSetName,
  startCapiSimulator,
  type CapiSimulator,
} from '../../tools/capi-sim/index.js';
import { machineTaskController } from '../../src/machine-task-controller/index.js';
import { mhcExtension } from '../../src/mhc-extension/index.js';
import { createPlanController, planController } from '../../src/plan-controller/index.js';
import { createLogger, createManager, type RuntimeManager } from '../../src/runtime/index.js';
import type { Component, KubeClient, WatchHandle } from '../../src/runtime/pure/types.js';
import { sampleUpdaters } from '../../src/sample-updaters/index.js';
import { isNotFound } from '../../src/runtime/pure/errors.js';
import { waitFor } from '../support/wait.js';

/** The cluster every scenario uses. */
export const CLUSTER = 'cluster1';
/** The control plane of the scenarios. */
export const CP = 'cluster1-cp';
/** Kubernetes version the inventory starts at. */
export const FROM_VERSION = 'v1.30.0';
/** Kubernetes version the plans move to. */
export const TO_VERSION = 'v1.30.1';

/** Options of a scenario's inventory. */
export interface InventoryShape {
  cpReplicas?: number;
  mds?: { name: string; replicas: number; maxUnavailable?: number | string; strategy?: 'RollingUpdate' | 'OnDelete' }[];
}

/** A reference-updater entry (generic kind) owning Machine /spec/version unless told otherwise. */
export function refUpdater(o: Partial<PlanUpdater> & { durationSeconds?: number; failWith?: string } = {}): PlanUpdater {
  const { durationSeconds, failWith, ...rest } = o;
  return {
    name: 'ref',
    sequence: 1,
    responsibilities: [{ selectResource: 'Machine', path: '/spec/version', value: TO_VERSION }],
    parameters: { durationSeconds: durationSeconds ?? 0.05, ...(failWith ? { failWith } : {}) },
    ...rest,
  };
}

/** A daily UTC maintenance window opening `fromNowH` hours from the real clock (the controllers' clock), `hours` long. */
export function dailyUtcWindow(fromNowH: number, hours: number): { start: string; duration: string; timeZone: string } {
  const at = new Date(Date.now() + fromNowH * 3_600_000);
  const hhmm = `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')}`;
  return { start: hhmm, duration: `${hours}h`, timeZone: 'UTC' };
}

/** A plan object for CLUSTER. */
export function planObject(
  ns: string,
  name: string,
  spec: { cp?: PlanTarget; mds?: PlanTarget[]; failurePolicy?: 'Halt' | 'Continue'; paused?: boolean },
): InPlaceUpdatePlan & KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'InPlaceUpdatePlan',
    metadata: { name, namespace: ns },
    spec: {
      clusterName: CLUSTER,
      ...(spec.failurePolicy ? { failurePolicy: spec.failurePolicy } : {}),
      ...(spec.paused !== undefined ? { paused: spec.paused } : {}),
      ...(spec.cp ? { controlPlane: spec.cp } : {}),
      ...(spec.mds ? { machineDeployments: spec.mds } : {}),
    },
  };
}

/** Events seen on a watch, in resourceVersion order (exact ordering, no timing). */
export interface Recorder<T extends KubeObject> {
  events: { type: string; object: T }[];
  stop(): void;
}

/** One scenario's platform. */
export class Platform {
  private managers = new Map<string, RuntimeManager>();
  private sim: CapiSimulator | undefined;
  private updaters: { stop(): Promise<void> }[] = [];
  private watches: WatchHandle[] = [];

  constructor(
    readonly client: KubeClient,
    readonly ns: string,
  ) {}

  /** Machine name of the i-th control-plane machine / MachineDeployment machine of the inventory. */
  cpMachine(i: number): string {
    return inventoryMachineName(CP, i);
  }
  mdMachine(md: string, i: number): string {
    return inventoryMachineName(inventoryMachineSetName(md), i);
  }

  /** The running CAPI simulator (after provision). */
  get simulator(): CapiSimulator {
    if (!this.sim) throw new Error('provision() first: the CAPI simulator is not running');
    return this.sim;
  }

  /** Creates the cluster's CAPI objects and starts the simulator (machines become Ready quickly). */
  async provision(shape: InventoryShape = {}): Promise<void> {
    const objs = buildInventory({
      namespace: this.ns,
      clusterName: CLUSTER,
      version: FROM_VERSION,
      controlPlane: { name: CP, replicas: shape.cpReplicas ?? 3 },
      machineDeployments: (shape.mds ?? [{ name: 'cluster1-md-0', replicas: 3, maxUnavailable: 1 }]).map((m) => ({ ...m })),
      // An MHC with an in-place timeout: the MHC extension keeps machines in update from being remediated.
      mhc: { name: 'cluster1-mhc', inPlaceUpdateTimeout: '10m', unhealthyLessThanOrEqualTo: '40%' },
    });
    await applyInventory(this.client, objs);
    // CAPI_SIM_FAITHFUL=0 turns upstream's rollout triggers off (owners only scale), to tell a failure they cause apart.
    this.sim = await startCapiSimulator({
      client: this.client,
      namespace: this.ns,
      readyDelayMs: 20,
      faithfulRollouts: process.env['CAPI_SIM_FAITHFUL'] !== '0',
    });
  }

  /** Starts a component on its own manager scoped to the scenario namespace. */
  async startComponent(c: Component): Promise<void> {
    const mgr = createManager({
      client: this.client,
      name: c.name,
      eventAction,
      namespace: this.ns,
      ...(process.env['E2E_LOG'] ? { log: createLogger({ name: c.name, level: process.env['E2E_LOG'] }) } : {}),
    });
    await c.setup(mgr);
    await mgr.start();
    this.managers.set(c.name, mgr);
  }

  /** A running component's manager (e.g. to look at its caches). */
  manager(component: string): RuntimeManager {
    const mgr = this.managers.get(component);
    if (!mgr) throw new Error(`component ${component} is not running`);
    return mgr;
  }

  /** The /metrics text of a running component's manager. */
  async metrics(component: string): Promise<string> {
    const mgr = this.managers.get(component);
    if (!mgr) throw new Error(`component ${component} is not running`);
    return mgr.metrics.registry.metrics();
  }

  /** Successful Machine patches a running component made, from its manager's inplace_api_requests_total. */
  async machinePatches(component: string): Promise<number> {
    return this.apiRequests(component, 'patch', 'machines');
  }

  /** Successful requests of one verb on one resource (plural, or plural.group) a running component made. */
  async apiRequests(component: string, verb: string, resource: string): Promise<number> {
    let n = 0;
    for (const line of (await this.metrics(component)).split('\n')) {
      const m = /^inplace_api_requests_total\{(.*)\} (\d+)$/.exec(line);
      if (!m || !m[1]!.includes(`verb="${verb}"`) || !/code="2\d\d"/.test(m[1]!)) continue;
      const r = /resource="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
      if (r === resource || r.startsWith(`${resource}.`)) n += Number(m[2]);
    }
    return n;
  }

  /** Stops one component (e.g. to restart it mid-update). */
  async stopComponent(name: string): Promise<void> {
    await this.managers.get(name)?.stop();
    this.managers.delete(name);
  }

  /**
   * Starts the plan controller, the machine task controller, the MHC extension (unless `mhc` is false), and the reference
   * updater (serving only `referenceNames` when given, so that the scenario can play the other updaters by hand).
   */
  async startPlatform(opts: { mhc?: boolean; referenceNames?: string[]; alertGatePolicy?: AlertGatePolicy } = {}): Promise<void> {
    // The operator's alert-gate policy, when the scenario's plans use an alert gate (none: every gate is refused).
    await this.startComponent(opts.alertGatePolicy ? createPlanController({ alertGatePolicy: opts.alertGatePolicy }) : planController);
    await this.startComponent(machineTaskController);
    if (opts.mhc ?? true) await this.startComponent(mhcExtension);
    this.updaters.push(
      await sampleUpdaters.reference.start({
        client: this.client,
        namespace: this.ns,
        ...(opts.referenceNames ? { names: opts.referenceNames } : { catchAll: true }),
      }),
    );
  }

  /** Starts more sample updaters by name (e.g. the os-image and kubernetes-version updaters with their own kinds). */
  async startSampleUpdaters(names: (keyof typeof sampleUpdaters)[]): Promise<void> {
    for (const n of names)
      this.updaters.push(
        await sampleUpdaters[n].start({
          client: this.client,
          namespace: this.ns,
          ...(sampleUpdaters[n].generic ? { catchAll: true } : {}),
        }),
      );
  }

  /** Starts only the plan controller (for scenarios that must not progress machines). */
  async startPlanControllerOnly(): Promise<void> {
    await this.startComponent(planController);
  }

  async stop(): Promise<void> {
    for (const w of this.watches) w.abort();
    for (const u of this.updaters) await u.stop();
    for (const m of this.managers.values()) await m.stop();
    this.managers.clear();
    await this.sim?.stop();
  }

  /** Records every watch event of MachineUpdates in the namespace, in order. */
  async recordMachineUpdates(): Promise<Recorder<MachineUpdate & KubeObject>> {
    const events: { type: string; object: MachineUpdate & KubeObject }[] = [];
    const h = await this.client.watch<MachineUpdate & KubeObject>(MachineUpdates, this.ns, {}, (e) => {
      if (e.type === 'ADDED' || e.type === 'MODIFIED' || e.type === 'DELETED') events.push({ type: e.type, object: e.object });
    });
    this.watches.push(h);
    return { events, stop: () => h.abort() };
  }

  async apply(plan: InPlaceUpdatePlan & KubeObject): Promise<InPlaceUpdatePlan & KubeObject> {
    return this.client.create(InPlaceUpdatePlans, plan);
  }

  async plan(name: string): Promise<(InPlaceUpdatePlan & KubeObject) | undefined> {
    return this.client.get<InPlaceUpdatePlan & KubeObject>(InPlaceUpdatePlans, this.ns, name);
  }

  async patchPlan(name: string, spec: Record<string, unknown>): Promise<void> {
    await this.client.patch(InPlaceUpdatePlans, this.ns, name, { spec }, { type: 'merge' });
  }

  /** Waits until the plan satisfies `pred` (fails after the deadline with `message` and the plan's status). */
  async waitPlan(
    name: string,
    pred: (p: InPlaceUpdatePlan) => boolean,
    message: string,
    timeoutMs = 30_000,
  ): Promise<InPlaceUpdatePlan & KubeObject> {
    let last: InPlaceUpdatePlan | undefined;
    try {
      return await waitFor(
        async () => {
          last = await this.plan(name);
          return last && pred(last) ? (last as InPlaceUpdatePlan & KubeObject) : undefined;
        },
        { timeoutMs, intervalMs: 25, message },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status, null, 1)}`);
    }
  }

  /** Waits for a plan's updateStatus. */
  waitStatus(name: string, status: string, timeoutMs?: number): Promise<InPlaceUpdatePlan & KubeObject> {
    return this.waitPlan(name, (p) => p.status?.updateStatus === status, `plan ${name} ${status}`, timeoutMs);
  }

  async machines(): Promise<KubeObject[]> {
    return (await this.client.list(Machines, this.ns)).items;
  }

  async machineUpdates(): Promise<(MachineUpdate & KubeObject)[]> {
    return (await this.client.list<MachineUpdate & KubeObject>(MachineUpdates, this.ns)).items;
  }

  async tasks(): Promise<KubeObject[]> {
    return (await this.client.list(UpdaterUpdateTasks, this.ns)).items;
  }

  async md(name: string): Promise<KubeObject | undefined> {
    return this.client.get(MachineDeployments, this.ns, name);
  }

  /**
   * Plays updater `updater` by hand (contract C4–C6): every task of it not yet terminal ends `updated` (or
   * `outcome`), or `aborted` when the platform asked for an abort. Returns how many tasks it finished. `o.cluster`
   * keeps to one cluster's tasks (a fleet); `o.failMessage` is the Ready message of a failed task; `o.honest`
   * (default) also leaves a version task's node on the new kubelet (playKubelet), a liar (`honest: false`) does not.
   */
  async finishTasks(
    updater: string,
    outcome: 'updated' | 'failed' = 'updated',
    o: { cluster?: string; failMessage?: string; honest?: boolean } = {},
  ): Promise<number> {
    let n = 0;
    for (const t of await this.tasks()) {
      if (t.metadata.labels?.[Labels.updaterName] !== updater) continue;
      if (o.cluster !== undefined && t.metadata.labels?.[Labels.clusterName] !== o.cluster) continue;
      const st = t['status'] as { updateStatus?: string; observedGeneration?: number } | undefined;
      const status = st?.updateStatus;
      if (status === 'updated' || status === 'failed' || status === 'aborted') {
        // Terminal statuses are never left (C4), but they answer the current generation (C5).
        if ((st?.observedGeneration ?? 0) < (t.metadata.generation ?? 0))
          await this.client.patch(
            UpdaterUpdateTasks,
            this.ns,
            t.metadata.name!,
            { status: { observedGeneration: t.metadata.generation } },
            { type: 'merge', subresource: 'status' },
          );
        continue;
      }
      const aborting = (t['spec'] as { updatePhase?: string }).updatePhase === 'aborting';
      const end = aborting ? 'aborted' : outcome;
      // An honest updater of a Kubernetes version leaves the node on the new kubelet (what the plan verifies).
      if (end === 'updated' && o.honest !== false) await this.playKubelet(t);
      const reason = end === 'updated' ? 'Updated' : end === 'failed' ? 'Failed' : 'Aborted';
      await this.client.patch(
        UpdaterUpdateTasks,
        this.ns,
        t.metadata.name!,
        {
          status: {
            updateStatus: end,
            observedGeneration: t.metadata.generation,
            conditions: [
              {
                type: 'Ready',
                status: end === 'updated' ? 'True' : 'False',
                reason,
                message: end === 'failed' && o.failMessage ? o.failMessage : `${end} by the scenario`,
                lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
              },
            ],
          },
        },
        { type: 'merge', subresource: 'status' },
      );
      n++;
    }
    return n;
  }

  /**
   * What the kubernetes-version updater does to the node, for a task played by hand that owns Machine /spec/version:
   * the simulated Node's kubelet reports the new version (the CAPI simulator mirrors it into the Machine).
   */
  async playKubelet(task: KubeObject): Promise<void> {
    const spec = task['spec'] as {
      machineRef?: { name?: string };
      responsibilities?: { selectResource: string; path: string; value: unknown }[];
    };
    const version = spec.responsibilities?.find((r) => r.selectResource === 'Machine' && r.path === '/spec/version')?.value;
    if (typeof version !== 'string' || !spec.machineRef?.name) return;
    const m = await this.client.get(Machines, this.ns, spec.machineRef.name);
    const node = (m?.['status'] as { nodeRef?: { name?: string } } | undefined)?.nodeRef?.name;
    if (!node) return;
    try {
      await this.client.patch(
        Nodes,
        undefined,
        node,
        { status: { nodeInfo: { kubeletVersion: version } } },
        { type: 'merge', subresource: 'status' },
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Waits for at least `n` in-flight tasks of `updater` (of one cluster's machines, with `cluster`). */
  async waitTasks(updater: string, n: number, cluster?: string): Promise<KubeObject[]> {
    return waitFor(
      async () => {
        const open = (await this.tasks()).filter(
          (t) =>
            t.metadata.labels?.[Labels.updaterName] === updater &&
            (cluster === undefined || t.metadata.labels?.[Labels.clusterName] === cluster) &&
            !['updated', 'failed', 'aborted'].includes((t['status'] as { updateStatus?: string } | undefined)?.updateStatus ?? ''),
        );
        return open.length >= n ? open : undefined;
      },
      { timeoutMs: 60_000, message: `${n} in-flight task(s) of updater ${updater}${cluster ? ` on ${cluster}` : ''}` },
    );
  }

  /** Plays `updater` until the plan reaches `status` (`honest`: see finishTasks). */
  async drive(planName: string, updater: string, status = 'updated', honest = true): Promise<InPlaceUpdatePlan & KubeObject> {
    return waitFor(
      async () => {
        await this.finishTasks(updater, 'updated', { honest });
        const p = await this.plan(planName);
        return p?.status?.updateStatus === status ? p : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 25, message: `plan ${planName} ${status} while playing updater ${updater}` },
    );
  }

  /** Machines carrying the plan-name label (in update). */
  async labelledMachines(): Promise<string[]> {
    return (await this.machines()).filter((m) => m.metadata.labels?.[Labels.planName] !== undefined).map((m) => m.metadata.name!);
  }
}

/** spec.version of a machine. */
export const versionOf = (m: KubeObject): unknown => (m['spec'] as { version?: unknown } | undefined)?.version;
/** Whether a machine is a control-plane machine. */
export const isCp = (m: KubeObject): boolean => m.metadata.labels?.[Labels.controlPlaneName] !== undefined;
/** A plan condition. */
export const conditionOf = (p: InPlaceUpdatePlan | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);
