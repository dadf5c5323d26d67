// A stand-in for Cluster API's controllers and the workload cluster's kubelets, just enough for the platform's
// scenarios in local mode: KubeadmControlPlane and MachineDeployment rollouts on drift as upstream does them
// (rollout.ts: out-of-date machines are replaced, a template change gets a new MachineSet), MachineSet scaling from
// its own templates (clones with cloned-from annotations), the topology controller's version writes, paused owners
// left alone, machines becoming Ready after a delay with their DevMachine, KubeadmConfig and Node, manual remediation
// (remediate-machine -> replacement at the owner's version), node info following in-place changes, and replica / MHC
// status; with inPlaceUpdates, upstream's in-place flow calling a runtime extension (inplace.ts, extension-client.ts).
// Writes only fields the real CRDs keep.
import { randomInt } from 'node:crypto';
import { Labels, MachineHealthChecks, Nodes, apiVersionOf, type KubeObject, type ResourceType } from '../../src/api/index.js';
import { createManager } from '../../src/runtime/index.js';
import { setCondition } from '../../src/runtime/conditions.js';
import { isNotFound, isAlreadyExists } from '../../src/runtime/errors.js';
import { formatLabelSelector, type LabelSelector } from '../../src/runtime/labels.js';
import { Action, type Controller, type KubeClient, type Logger, type Manager, type ObjectKey } from '../../src/runtime/types.js';
import {
  Clusters,
  DevMachineTemplates,
  controllerRef,
  DevMachines,
  KubeadmConfigTemplates,
  KubeadmConfigs,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineSets,
  Machines,
  NODE_CLUSTER_NAMESPACE_ANNOTATION,
  NODE_MACHINE_ANNOTATION,
  buildDevMachine,
  buildKubeadmConfig,
  buildMachine,
  buildNode,
  controlPlaneMachineLabels,
  devMachineReadyStatus,
  isControlPlaneMachine,
  kubeTime,
  kubeadmConfigReadyStatus,
  machineProvisioningStatus,
  machineRunningStatus,
  nodeInfoFor,
  nodeNameFor,
  nodeReadyStatus,
  wantsRemediation,
  type MachineBlueprint,
} from './builders.js';
import {
  DELETE_MACHINE_ANNOTATION,
  countReplicas,
  decideProvisioning,
  decideScale,
  mhcCounts,
  mhcTargets,
  newMachineName,
  mirroredNodeInfo,
  remediationVerdict,
} from './decisions.js';
import {
  UPDATE_IN_PROGRESS_ANNOTATION,
  clonedFromAnnotations,
  decideKcpStep,
  decideMdRollout,
  decideTopology,
  findNewMachineSet,
  isPaused,
  kcpMachineUpToDate,
  machineAvailable,
  machineFromSet,
  machineReady,
  kubeadmConfigSpecForDiff,
  type ClusterView,
  type KcpMember,
  type MdSetView,
} from './rollout.js';
import {
  ACKNOWLEDGED_MOVE_ANNOTATION,
  CAN_UPDATE_MACHINESET_HOOK,
  MOVE_MACHINES_TO_ANNOTATION,
  PENDING_ACKNOWLEDGE_MOVE_ANNOTATION,
  RECEIVE_MACHINES_FROM_ANNOTATION,
  acknowledgeMoves,
  decideMoves,
  inPlaceCandidates,
  judgeCanUpdateMachineSet,
  moveAnnotations,
  type CanUpdateMachineSetPatches,
  type MachineSetObjects,
  CAN_UPDATE_MACHINE_HOOK,
  PENDING_HOOKS_ANNOTATION,
  UPDATE_MACHINE_FAILED_MESSAGE,
  UPDATE_MACHINE_HOOK,
  UpdatingReason,
  decideKcpInPlace,
  decideMachineInPlace,
  forHookRequest,
  inProgressMessage,
  judgeCanUpdateMachine,
  pendingHooksValue,
  updateMachineOutcome,
  updatingCondition,
  type CanUpdateMachinePatches,
  type ConditionInput,
  type MachineObjects,
  type UpdateMachineAnswer,
} from './inplace.js';
import {
  ExtensionConfigs,
  ExtensionFailureError,
  callExtension,
  discover,
  registrationsFor,
  type ExtensionConfig,
} from './extension-client.js';
import type {
  KubeadmControlPlane,
  Machine,
  MachineDeployment,
  MachineHealthCheck,
  MachineSet,
  Node,
  ObjectRef,
} from '../../src/api/capi/index.js';

/** Options of the simulator. */
export interface CapiSimulatorOptions {
  client: KubeClient;
  /** Only this namespace (default: all). */
  namespace?: string;
  log?: Logger;
  /** How long a new machine takes to become Running and Ready (default 200 ms). */
  readyDelayMs?: number;
  /**
   * Upstream's rollout triggers (default true): KCP replaces out-of-date machines, a MachineDeployment whose template
   * no MachineSet matches rolls out a new one, the topology controller writes versions. False: owners only scale.
   */
  faithfulRollouts?: boolean;
  /**
   * Upstream's InPlaceUpdates feature gate (default false): KubeadmControlPlane asks the runtime extension registered
   * through an ExtensionConfig (CanUpdateMachine) before replacing an out-of-date machine, a MachineDeployment asks
   * CanUpdateMachineSet and moves old machines to the new MachineSet instead of replacing them, and the machine
   * controller calls UpdateMachine until it is done (docs/hooks-sim.md). Needs faithfulRollouts and the ExtensionConfig CRD. Unset: on when the
   * environment has CAPI_SIM_IN_PLACE=1.
   */
  inPlaceUpdates?: boolean;
}

/** Machines the simulator created and deleted since it started (remediation, scaling and rollouts alike). */
export interface SimulatorStats {
  machinesCreated: number;
  machinesDeleted: number;
  /** Machines whose in-place update completed (UpdateMachine answered done). */
  machinesUpdatedInPlace: number;
  /** UpdateMachine calls that failed (Failure answer or call error); each is retried. */
  updateMachineFailures: number;
}

/** A running simulator. */
export interface CapiSimulator {
  stop(): Promise<void>;
  /** Machines created and deleted so far. */
  stats(): SimulatorStats;
  /**
   * Runs `rounds` passes over every owner (KubeadmControlPlane, MachineDeployment, MachineSet, topology Cluster):
   * each pass enqueues every owner and resolves once each has been reconciled again. For state checks such as "CAPI
   * changes nothing over N passes", which do not depend on timing.
   */
  reconcileOwners(rounds?: number): Promise<void>;
  /**
   * The runtime extension handlers this simulator's registry knows (its ExtensionConfig cache, as upstream's KCP and
   * core managers each read ExtensionConfig status from their own cache): until a handler shows here, a change is
   * rolled out, not updated in place, so callers wait for it, not only for the ExtensionConfig's status.
   */
  handlers(hook?: string): string[];
}

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const randomSuffix = (): string => Array.from({ length: 5 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
const nsKey = (o: KubeObject, name: string | undefined): ObjectKey[] =>
  name ? [{ ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name }] : [];
const merge = { type: 'merge' } as const;
const mergeStatus = { type: 'merge', subresource: 'status' } as const;

/** Starts the simulator's controllers; resolves once their caches are synced. */
export async function startCapiSimulator(opts: CapiSimulatorOptions): Promise<CapiSimulator> {
  const mgr = createManager({
    client: opts.client,
    name: 'capi-sim',
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  const inPlace = opts.inPlaceUpdates ?? process.env['CAPI_SIM_IN_PLACE'] === '1';
  const sim = new Simulator(mgr, opts.client, opts.readyDelayMs ?? 200, opts.faithfulRollouts ?? true, inPlace);
  sim.setup();
  await mgr.start();
  // Callers act on the simulated world right away: wait for the caches the reconcilers read.
  await Promise.all(
    [
      MachineDeployments,
      MachineSets,
      KubeadmControlPlanes,
      Machines,
      MachineHealthChecks,
      Nodes,
      Clusters,
      DevMachines,
      KubeadmConfigs,
      ...(inPlace ? [ExtensionConfigs] : []),
    ].map((r) => mgr.informer(r).synced()),
  );
  return {
    stop: () => mgr.stop(),
    stats: () => sim.stats(),
    reconcileOwners: (rounds) => sim.reconcileOwners(rounds ?? 1),
    handlers: (hook) => sim.handlers(hook),
  };
}

/** The simulator's reconcilers, sharing the manager's caches and the in-flight creation/deletion expectations. */
class Simulator {
  /** Machines created but maybe not yet in the cache, per owner key. */
  private readonly expectedCreates = new Map<string, Set<string>>();
  /** Machines deleted but maybe still in the cache. */
  private readonly expectedDeletes = new Set<string>();
  /** When this process created a machine (ms precision; creationTimestamp only has seconds). */
  private readonly createdAt = new Map<string, number>();
  /** MachineSets a deployment created that the cache may not show yet, per deployment key. */
  private readonly expectedSets = new Map<string, string>();
  /**
   * When UpdateMachine may be called again per machine (upstream's hook cache): a watch event in between (our own
   * condition write) must not call the extension before retryAfterSeconds, nor retry a failure at once.
   */
  private readonly updateMachineNotBefore = new Map<string, number>();
  /** Completed owner reconciles per controller/key (what reconcileOwners counts). */
  private readonly runs = new Map<string, number>();
  private readonly counters: SimulatorStats = {
    machinesCreated: 0,
    machinesDeleted: 0,
    machinesUpdatedInPlace: 0,
    updateMachineFailures: 0,
  };
  private readonly controllers = new Map<string, { ctl: Controller; res: ResourceType }>();

  constructor(
    private readonly mgr: Manager,
    private readonly client: KubeClient,
    private readonly readyDelayMs: number,
    private readonly faithful: boolean,
    private readonly inPlace: boolean,
  ) {}

  stats(): SimulatorStats {
    return { ...this.counters };
  }

  async reconcileOwners(rounds: number): Promise<void> {
    for (let r = 0; r < rounds; r++) {
      const want = new Map<string, number>();
      for (const [name, { ctl, res }] of this.controllers) {
        for (const o of this.mgr.informer(res).store.list(this.mgr.namespace)) {
          const key = { ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name: o.metadata.name ?? '' };
          const id = `${name}/${key.namespace ?? ''}/${key.name}`;
          want.set(id, (this.runs.get(id) ?? 0) + 1);
          ctl.enqueue(key);
        }
      }
      const deadline = Date.now() + 60_000;
      while ([...want].some(([id, n]) => (this.runs.get(id) ?? 0) < n)) {
        if (Date.now() > deadline) throw new Error('capi-sim: owners were not reconciled within 60 s');
        await new Promise((res) => setTimeout(res, 10));
      }
    }
  }

  /** Registers an owner controller whose runs reconcileOwners counts. */
  private owner(
    name: string,
    res: ResourceType,
    build: (b: ReturnType<Manager['controller']>) => ReturnType<Manager['controller']>,
    fn: (key: ObjectKey) => Promise<Action>,
  ): void {
    const ctl = build(this.mgr.controller(name).for(res)).reconcile(async (key) => {
      try {
        return await fn(key);
      } finally {
        const id = `${name}/${key.namespace ?? ''}/${key.name}`;
        this.runs.set(id, (this.runs.get(id) ?? 0) + 1);
      }
    });
    this.controllers.set(name, { ctl, res });
  }

  private cluster(namespace: string | undefined, name: string | undefined): ClusterView | undefined {
    return name ? this.mgr.informer<ClusterView>(Clusters).store.peek(namespace, name) : undefined;
  }

  private get machines(): Machine[] {
    return this.mgr.informer<Machine>(Machines).store.list(this.mgr.namespace);
  }

  setup(): void {
    const byLabel =
      (label: string) =>
      (o: KubeObject): ObjectKey[] =>
        nsKey(o, o.metadata.labels?.[label]);
    // A Cluster's change (spec.paused) concerns every owner of the cluster.
    const ofCluster =
      (res: ResourceType) =>
      (c: KubeObject): ObjectKey[] =>
        this.mgr
          .informer(res)
          .store.byLabel(Labels.clusterName, c.metadata.name ?? '', c.metadata.namespace)
          .map((o) => ({ namespace: o.metadata.namespace ?? '', name: o.metadata.name ?? '' }));
    // A clone's change (a committed value on a DevMachine / KubeadmConfig) concerns its machine's control plane.
    const toControlPlane = (o: KubeObject): ObjectKey[] => {
      const owner = o.metadata.ownerReferences?.find((r) => r.kind === Machines.kind)?.name;
      const m = owner ? this.mgr.informer<Machine>(Machines).store.peek(o.metadata.namespace, owner) : undefined;
      return m ? nsKey(m, m.metadata.labels?.[Labels.controlPlaneName]) : [];
    };
    this.owner(
      'capi-sim-machinedeployment',
      MachineDeployments,
      (b) =>
        b
          .watches(MachineSets, byLabel(Labels.deploymentName))
          .watches(Machines, byLabel(Labels.deploymentName))
          .watches(Clusters, ofCluster(MachineDeployments)),
      (key) => this.reconcileMachineDeployment(key),
    );
    this.owner(
      'capi-sim-machineset',
      MachineSets,
      (b) => b.watches(Machines, byLabel(Labels.setName)).watches(Clusters, ofCluster(MachineSets)),
      (key) => this.reconcileMachineSet(key),
    );
    this.owner(
      'capi-sim-kubeadmcontrolplane',
      KubeadmControlPlanes,
      (b) =>
        b
          .watches(Machines, byLabel(Labels.controlPlaneName))
          .watches(Clusters, ofCluster(KubeadmControlPlanes))
          .watches(DevMachines, toControlPlane)
          .watches(KubeadmConfigs, toControlPlane),
      (key) => this.reconcileControlPlane(key),
    );
    if (this.faithful) {
      const toCluster = (o: KubeObject): ObjectKey[] => nsKey(o, o.metadata.labels?.[Labels.clusterName]);
      this.owner(
        'capi-sim-topology',
        Clusters,
        (b) => b.watches(KubeadmControlPlanes, toCluster).watches(MachineDeployments, toCluster),
        (key) => this.reconcileTopology(key),
      );
    }
    this.mgr
      .controller('capi-sim-machine')
      .for(Machines)
      .watches<Node>(Nodes, (n) => {
        const machine = n.metadata.annotations?.[NODE_MACHINE_ANNOTATION];
        const ns = n.metadata.annotations?.[NODE_CLUSTER_NAMESPACE_ANNOTATION];
        return machine && ns && (!this.mgr.namespace || ns === this.mgr.namespace) ? [{ namespace: ns, name: machine }] : [];
      })
      .watches<MachineHealthCheck>(MachineHealthChecks, (h) =>
        mhcTargets(h, this.machines)
          .filter(wantsRemediation)
          .map((m) => ({ namespace: m.metadata.namespace ?? '', name: m.metadata.name ?? '' })),
      )
      .withConcurrency(4)
      .reconcile((key) => this.reconcileMachine(key));
    if (this.inPlace) {
      this.mgr
        .controller('capi-sim-extensionconfig')
        .for(ExtensionConfigs)
        .reconcile((key) => this.reconcileExtensionConfig(key));
    }
    this.mgr
      .controller('capi-sim-machinehealthcheck')
      .for(MachineHealthChecks)
      .watches<Machine>(Machines, (m) =>
        this.mgr
          .informer<MachineHealthCheck>(MachineHealthChecks)
          .store.list(m.metadata.namespace)
          .filter((h) => h.spec.clusterName === m.metadata.labels?.[Labels.clusterName])
          .map((h) => ({ namespace: h.metadata.namespace ?? '', name: h.metadata.name ?? '' })),
      )
      .reconcile((key) => this.reconcileHealthCheck(key));
  }

  // --- owners -------------------------------------------------------------------------------------------------

  /**
   * A MachineDeployment: with faithful rollouts, upstream's rolloutRolling / rolloutOnDelete (a new MachineSet from
   * the deployment's template when none matches, old ones scaled down within maxUnavailable); otherwise only the
   * first MachineSet follows spec.replicas. Keeps the deployment's replica status either way.
   */
  private async reconcileMachineDeployment(key: ObjectKey): Promise<Action> {
    const md = this.mgr.informer<MachineDeployment>(MachineDeployments).store.get(key.namespace, key.name);
    if (!md || md.metadata.deletionTimestamp) return Action.awaitChange();
    const mdKey = `${key.namespace ?? ''}/${key.name}`;
    const sets = this.mgr
      .informer<MachineSet>(MachineSets)
      .store.byLabel(Labels.deploymentName, key.name, key.namespace)
      .filter((s) => s.metadata.ownerReferences?.some((r) => r.kind === MachineDeployments.kind && r.name === key.name));
    const pendingSet = this.expectedSets.get(mdKey);
    if (pendingSet !== undefined) {
      // The set created last time is not in the cache yet: deciding now would create a second one.
      if (!sets.some((s) => s.metadata.name === pendingSet)) return Action.requeue(50);
      this.expectedSets.delete(mdKey);
    }
    const desired = md.spec.replicas ?? 1;
    const machines = this.machines.filter(
      (m) => m.metadata.namespace === key.namespace && m.metadata.labels?.[Labels.deploymentName] === key.name,
    );
    const live = machines.filter((m) => !m.metadata.deletionTimestamp);
    if (this.faithful) {
      const inPlaceOn = this.inPlace && registrationsFor(this.extensionConfigs, CAN_UPDATE_MACHINESET_HOOK).length === 1;
      const ofSet = (name: string | undefined): Machine[] => live.filter((m) => m.metadata.labels?.[Labels.setName] === name);
      // In place: machines moved into the new set count once the deployment acknowledged them (replicas + annotation, one write).
      const setPatches = new Map<string, { annotations: Record<string, string | null>; replicas?: number }>();
      const patchOf = (name: string) => setPatches.get(name) ?? setPatches.set(name, { annotations: {} }).get(name)!;
      let views: MdSetView[] = sets.map((set) => {
        const mine = ofSet(set.metadata.name);
        return {
          set,
          machines: mine.length,
          // In place: a machine being updated (or being moved: the cache may not show it yet) is not available, and
          // machines above a set's replicas are pending scale-down (upstream subtracts them): neither may widen the
          // maxUnavailable budget, or a second machine would move while the first one is still updating.
          available: inPlaceOn
            ? Math.min(
                set.spec.replicas ?? 0,
                mine.filter(
                  (m) =>
                    machineAvailable(m) &&
                    m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined &&
                    !this.expectedMoves.has(`${m.metadata.namespace}/${m.metadata.name}`),
                ).length,
              )
            : mine.filter(machineAvailable).length,
          createdAtMs: Date.parse(set.metadata.creationTimestamp ?? '') || 0,
        };
      });
      const currentNew = findNewMachineSet(md, sets);
      if (inPlaceOn && currentNew) {
        const ack = acknowledgeMoves(currentNew.metadata.annotations?.[ACKNOWLEDGED_MOVE_ANNOTATION], ofSet(currentNew.metadata.name));
        if (ack.scaleUp > 0 || (ack.acknowledged ?? '') !== (currentNew.metadata.annotations?.[ACKNOWLEDGED_MOVE_ANNOTATION] ?? '')) {
          const replicas = (currentNew.spec.replicas ?? 0) + ack.scaleUp;
          const p = patchOf(currentNew.metadata.name ?? '');
          p.replicas = replicas;
          p.annotations[ACKNOWLEDGED_MOVE_ANNOTATION] = ack.acknowledged ?? null;
          views = views.map((v) => (v.set === currentNew ? { ...v, set: { ...v.set, spec: { ...v.set.spec, replicas } } } : v));
        }
      }
      const decision = decideMdRollout(md, this.cluster(key.namespace, md.spec.clusterName), views);
      // Confirm against the API server (caches lag independently) before rolling out a new MachineSet.
      if (decision.create && sets.length > 0 && !(await this.rolloutLive(md))) return Action.requeue(100);
      if (decision.create) {
        await this.createMachineSet(md, decision.create.replicas);
        // Upstream decides the in-place intent against the new set in the same pass: hold the old sets' scale-down
        // until the set exists, rather than delete a machine that could have moved.
        if (inPlaceOn) return Action.requeue(50);
      }
      for (const [name, replicas] of Object.entries(decision.scale)) patchOf(name).replicas = replicas;
      if (inPlaceOn && currentNew) {
        const newReplicas = setPatches.get(currentNew.metadata.name ?? '')?.replicas ?? currentNew.spec.replicas ?? 0;
        const olds = views.filter((v) => v.set.metadata.name !== currentNew.metadata.name && !v.set.metadata.deletionTimestamp);
        const candidates = inPlaceCandidates(
          true,
          1,
          newReplicas,
          desired,
          olds.map((v) => ({ name: v.set.metadata.name ?? '', machines: v.machines })),
        );
        const covered: string[] = [];
        for (const name of candidates) {
          const old = olds.find((v) => v.set.metadata.name === name)!.set;
          try {
            if (await this.canUpdateMachineSet(old, currentNew)) covered.push(name);
          } catch (err) {
            this.mgr.log.error({ machineDeployment: key.name, machineSet: name, err }, 'capi-sim: CanUpdateMachineSet failed');
            return Action.requeue(1000);
          }
        }
        const ann = moveAnnotations(currentNew.metadata.name ?? '', covered);
        for (const [name, a] of Object.entries(ann.old)) {
          const old = olds.find((v) => v.set.metadata.name === name)!.set;
          if (old.metadata.annotations?.[MOVE_MACHINES_TO_ANNOTATION] !== a[MOVE_MACHINES_TO_ANNOTATION])
            Object.assign(patchOf(name).annotations, a);
        }
        if (ann.receive && currentNew.metadata.annotations?.[RECEIVE_MACHINES_FROM_ANNOTATION] !== ann.receive)
          patchOf(currentNew.metadata.name ?? '').annotations[RECEIVE_MACHINES_FROM_ANNOTATION] = ann.receive;
      }
      for (const [name, p] of setPatches) {
        const body: Record<string, unknown> = {};
        if (Object.keys(p.annotations).length > 0) body['metadata'] = { annotations: p.annotations };
        if (p.replicas !== undefined) body['spec'] = { replicas: p.replicas };
        await this.client.patch(MachineSets, key.namespace, name, body, merge);
      }
      for (const name of decision.delete) await this.deleteIgnoringMissing(MachineSets, key.namespace ?? '', name);
    } else {
      const current = sets[0];
      if (current && (current.spec.replicas ?? 1) !== desired) {
        await this.client.patch(MachineSets, key.namespace, current.metadata.name ?? '', { spec: { replicas: desired } }, merge);
      }
    }
    const newSet = this.faithful ? findNewMachineSet(md, sets) : sets[0];
    const counts = countReplicas(machines, md.spec.template.spec.version);
    if (this.faithful)
      counts.upToDateReplicas = live.filter(
        (m) => newSet !== undefined && m.metadata.labels?.[Labels.setName] === newSet.metadata.name,
      ).length;
    const status = {
      observedGeneration: md.metadata.generation ?? 1,
      selector: formatLabelSelector(md.spec.selector as LabelSelector),
      ...counts,
      phase: phaseOf(desired, counts.replicas),
    };
    await this.patchStatusIfChanged(MachineDeployments, md, status);
    return Action.awaitChange();
  }

  /** Whether the API server (not the cache) still shows an unpaused deployment whose template no MachineSet has. */
  private async rolloutLive(cached: MachineDeployment): Promise<boolean> {
    const ns = cached.metadata.namespace;
    const md = await this.client.get<MachineDeployment>(MachineDeployments, ns, cached.metadata.name ?? '');
    if (!md || isPaused(md, await this.client.get<ClusterView>(Clusters, ns, md.spec.clusterName))) return false;
    const sets = (await this.client.list<MachineSet>(MachineSets, ns)).items.filter(
      (s) => s.metadata.labels?.[Labels.deploymentName] === md.metadata.name,
    );
    return findNewMachineSet(md, sets) === undefined;
  }

  /** A MachineSet with the deployment's template (upstream: name from the deployment's, labels and selector too). */
  private async createMachineSet(md: MachineDeployment, replicas: number): Promise<void> {
    const ns = md.metadata.namespace ?? '';
    const mdName = md.metadata.name ?? '';
    const taken = new Set(
      this.mgr
        .informer(MachineSets)
        .store.list(ns)
        .map((s) => s.metadata.name ?? ''),
    );
    const name = newMachineName(mdName, taken, randomSuffix);
    const labels = { ...(md.spec.selector.matchLabels ?? {}), [Labels.clusterName]: md.spec.clusterName, [Labels.deploymentName]: mdName };
    const template = structuredClone(md.spec.template);
    const ms: MachineSet = {
      apiVersion: apiVersionOf(MachineSets),
      kind: MachineSets.kind,
      metadata: { name, namespace: ns, labels, ownerReferences: [controllerRef(MachineDeployments, mdName, md.metadata.uid ?? '')] },
      spec: {
        clusterName: md.spec.clusterName,
        replicas,
        selector: structuredClone(md.spec.selector),
        template,
        ...(md.spec.deletion ? { deletion: structuredClone(md.spec.deletion) } : {}),
      },
    };
    this.expectedSets.set(`${ns}/${mdName}`, name);
    await this.client.create(MachineSets, ms);
    this.mgr.log.info({ machineDeployment: mdName, machineSet: name, replicas }, 'capi-sim: rollout: new MachineSet');
  }

  /** Scales a MachineSet's machines to its replicas from its own template, and keeps its replica status. */
  private async reconcileMachineSet(key: ObjectKey): Promise<Action> {
    const ms = this.mgr.informer<MachineSet>(MachineSets).store.get(key.namespace, key.name);
    if (!ms || ms.metadata.deletionTimestamp) return Action.awaitChange();
    let machines = this.ownedMachines(
      `MachineSet/${key.namespace}/${key.name}`,
      (m) => m.metadata.labels?.[Labels.setName] === key.name && m.metadata.namespace === key.namespace,
    );
    const mdName = ms.metadata.labels?.[Labels.deploymentName];
    const paused = this.faithful && isPaused(ms, this.cluster(key.namespace, ms.spec.clusterName));
    let moving = false;
    if (this.inPlace && this.faithful && !paused) {
      // Machines moved away that the cache still shows here are gone from this set.
      machines = machines.filter((m) => {
        const k = `${m.metadata.namespace}/${m.metadata.name}`;
        const target = this.expectedMoves.get(k);
        if (target === undefined) return true;
        if (m.metadata.labels?.[Labels.setName] !== target) return false;
        this.expectedMoves.delete(k);
        return true;
      });
      const moves = decideMoves(ms, machines);
      for (const name of moves.trigger) {
        const m = machines.find((x) => x.metadata.name === name);
        if (m) await this.triggerMachineSetInPlace(ms, m);
      }
      machines = machines.filter((m) => !moves.notAcknowledged.includes(m.metadata.name ?? ''));
      const target = ms.metadata.annotations?.[MOVE_MACHINES_TO_ANNOTATION];
      const targetSet = target ? this.mgr.informer<MachineSet>(MachineSets).store.peek(key.namespace, target) : undefined;
      const active = machines.filter((m) => !m.metadata.deletionTimestamp);
      if (targetSet && active.length > (ms.spec.replicas ?? 1)) {
        moving = true;
        // startMoveMachines: surplus machines move (not those still updating from an earlier move), in deletion order.
        const movable = active.filter((m) => m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] === undefined);
        const surplus = active.length - (ms.spec.replicas ?? 1);
        const pick = decideScale(Math.max(0, movable.length - surplus), movable, ms.spec.deletion?.order, (m) => this.createdAtOf(m));
        for (const name of pick.delete)
          await this.moveMachine(
            machines.find((m) => m.metadata.name === name)!,
            targetSet,
          );
      }
    }
    if (!moving && !paused) {
      await this.scale(
        `MachineSet/${key.namespace}/${key.name}`,
        ms.spec.replicas ?? 1,
        machines,
        ms.spec.deletion?.order,
        async (name) => {
          const want = machineFromSet(ms, key.name, mdName);
          return {
            namespace: key.namespace ?? '',
            clusterName: ms.spec.clusterName,
            name,
            version: want.version ?? '',
            owner: { res: MachineSets, name: key.name, uid: ms.metadata.uid ?? '' },
            labels: want.labels,
            annotations: want.annotations,
            infraSpec: await this.templateSpec(DevMachineTemplates, key.namespace, want.infraTemplate.name),
            infraAnnotations: clonedFromAnnotations(want.infraTemplate),
            bootstrapSpec: want.bootstrapTemplate
              ? await this.templateSpec(KubeadmConfigTemplates, key.namespace, want.bootstrapTemplate.name)
              : {},
            ...(want.bootstrapTemplate ? { bootstrapAnnotations: clonedFromAnnotations(want.bootstrapTemplate) } : {}),
            ...(want.failureDomain ? { failureDomain: want.failureDomain } : {}),
          };
        },
      );
    }
    const counts = countReplicas(machines, ms.spec.template.spec.version);
    await this.patchStatusIfChanged(MachineSets, ms, {
      observedGeneration: ms.metadata.generation ?? 1,
      selector: formatLabelSelector(ms.spec.selector as LabelSelector),
      ...counts,
    });
    return Action.awaitChange();
  }

  /**
   * A control plane: with faithful rollouts, upstream's KCP (out-of-date machines replaced one at a time: scale up
   * within maxSurge, then delete the oldest out-of-date one; preflight on ready machines); otherwise scaling only.
   * Keeps the control plane's replica status (status.version: the lowest version its machines run).
   */
  private async reconcileControlPlane(key: ObjectKey): Promise<Action> {
    const kcp = this.mgr.informer<KubeadmControlPlane>(KubeadmControlPlanes).store.get(key.namespace, key.name);
    if (!kcp || kcp.metadata.deletionTimestamp) return Action.awaitChange();
    const clusterName = this.clusterOf(kcp);
    const ownerKey = `KubeadmControlPlane/${key.namespace}/${key.name}`;
    const machines = this.ownedMachines(
      ownerKey,
      (m) => m.metadata.labels?.[Labels.controlPlaneName] === key.name && m.metadata.namespace === key.namespace,
    );
    const infraRef = kcp.spec.machineTemplate.spec.infrastructureRef;
    const blueprint = async (name: string): Promise<MachineBlueprint> => ({
      namespace: key.namespace ?? '',
      clusterName,
      name,
      version: kcp.spec.version,
      owner: { res: KubeadmControlPlanes, name: key.name, uid: kcp.metadata.uid ?? '' },
      labels: { ...(kcp.spec.machineTemplate.metadata?.labels ?? {}), ...controlPlaneMachineLabels(clusterName, key.name) },
      ...(kcp.spec.machineTemplate.metadata?.annotations ? { annotations: kcp.spec.machineTemplate.metadata.annotations } : {}),
      infraSpec: await this.templateSpec(DevMachineTemplates, key.namespace, infraRef.name),
      infraAnnotations: clonedFromAnnotations(infraRef),
      bootstrapSpec: structuredClone(kcp.spec.kubeadmConfigSpec ?? {}),
    });
    const upToDate = new Map(
      machines.map((m) => [m.metadata.name ?? '', this.isPlaceholder(m) || kcpMachineUpToDate(kcp, this.kcpView(m)).upToDate]),
    );
    if (this.faithful) {
      const members: KcpMember[] = machines.map((m) => ({
        name: m.metadata.name ?? '',
        upToDate: upToDate.get(m.metadata.name ?? '') ?? true,
        ready: machineReady(m),
        deleting: m.metadata.deletionTimestamp !== undefined,
        deleteMarked: m.metadata.annotations?.[DELETE_MACHINE_ANNOTATION] !== undefined,
        updatingInPlace: m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined,
        createdAtMs: this.createdAtOf(m),
      }));
      const step = decideKcpStep(kcp, this.cluster(key.namespace, clusterName), members);
      // The caches of KCPs, Machines and their clones lag independently (by milliseconds here, where a plan commits
      // and unpauses in quick succession): confirm a rollout against the API server before replacing anything.
      if (
        members.some((m) => !m.upToDate) &&
        (step.kind === 'create' || step.kind === 'delete') &&
        !(await this.outdatedLive(key, machines))
      )
        return Action.requeue(100);
      if (step.kind === 'create') await this.createOwned(ownerKey, blueprint);
      if (step.kind === 'delete' && this.inPlace) {
        const outdated = new Set(members.filter((m) => !m.upToDate).map((m) => m.name));
        const victim = machines.find((x) => x.metadata.name === step.machine);
        const view = victim ? this.kcpView(victim) : undefined;
        const inPlace = decideKcpInPlace(step, outdated, {
          enabled: true,
          canUpdateHandlers: registrationsFor(this.extensionConfigs, CAN_UPDATE_MACHINE_HOOK).length,
          eligible: view?.infraMachine !== undefined && (view.kubeadmConfigSpec !== undefined || !victim?.spec.bootstrap.configRef),
          upToDateReplicas: members.filter((m) => m.upToDate && !m.deleting).length,
          desiredReplicas: kcp.spec.replicas ?? 1,
        });
        if (inPlace.kind === 'error') {
          this.mgr.log.error({ controlPlane: key.name }, `capi-sim: ${inPlace.message}`);
          return Action.requeue(1000);
        }
        if (inPlace.kind === 'askCanUpdate' && victim && view?.infraMachine) {
          try {
            if (await this.tryKcpInPlace(kcp, victim, view.infraMachine)) return Action.awaitChange();
          } catch (err) {
            // Upstream returns the error (retried with backoff); the machine is neither updated nor replaced meanwhile.
            this.mgr.log.error({ controlPlane: key.name, machine: step.machine, err }, 'capi-sim: CanUpdateMachine failed');
            return Action.requeue(1000);
          }
        }
      }
      if (step.kind === 'delete') {
        const m = machines.find((x) => x.metadata.name === step.machine);
        this.mgr.log.info(
          { controlPlane: key.name, machine: step.machine, why: step.why },
          'capi-sim: KubeadmControlPlane deletes a machine',
        );
        if (m) await this.deleteMachine(m);
      }
    } else {
      await this.scale(ownerKey, kcp.spec.replicas ?? 1, machines, 'Oldest', blueprint);
    }
    const real = machines.filter((m) => !this.isPlaceholder(m));
    const counts = countReplicas(real, kcp.spec.version);
    if (this.faithful)
      counts.upToDateReplicas = real.filter((m) => !m.metadata.deletionTimestamp && upToDate.get(m.metadata.name ?? '') === true).length;
    const selector = `${Labels.clusterName}=${clusterName},${Labels.controlPlane},${Labels.controlPlaneName}=${key.name}`;
    const version = lowestVersion(real.filter((m) => !m.metadata.deletionTimestamp).map((m) => m.spec.version ?? '')) ?? kcp.spec.version;
    await this.patchStatusIfChanged(KubeadmControlPlanes, kcp, {
      observedGeneration: kcp.metadata.generation ?? 1,
      selector,
      ...counts,
      version,
      initialization: { controlPlaneInitialized: true },
    });
    return Action.awaitChange();
  }

  /** The handler names of the registry (all hooks, or one), sorted. */
  handlers(hook?: string): string[] {
    if (!this.inPlace) return [];
    const hooks = hook ? [hook] : [CAN_UPDATE_MACHINE_HOOK, CAN_UPDATE_MACHINESET_HOOK, UPDATE_MACHINE_HOOK];
    return hooks.flatMap((h) => registrationsFor(this.extensionConfigs, h).map((r) => r.handler.name)).sort();
  }

  private get extensionConfigs(): ExtensionConfig[] {
    return this.mgr.informer<ExtensionConfig>(ExtensionConfigs).store.list(undefined);
  }

  /**
   * KCP tryInPlaceUpdate: asks the one CanUpdateMachine handler with the machine's current and desired Machine,
   * DevMachine and KubeadmConfig (cleaned for diff), applies its patches to current and, when that yields desired,
   * triggers the update (triggerInPlaceUpdate): update-in-progress on the Machine, desired specs with the annotation on
   * the DevMachine and KubeadmConfig, then the Machine's desired spec with UpdateMachine pending. False: not covered,
   * the caller scales the machine down as without the gate.
   */
  private async tryKcpInPlace(kcp: KubeadmControlPlane, m: Machine, infra: KubeObject): Promise<boolean> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const reg = registrationsFor(this.extensionConfigs, CAN_UPDATE_MACHINE_HOOK)[0];
    if (!reg) return false;
    const infraRef = kcp.spec.machineTemplate.spec.infrastructureRef;
    const infraSpec = (infra['spec'] ?? {}) as Record<string, unknown>;
    const desiredInfraSpec = {
      ...(await this.templateSpec(DevMachineTemplates, ns, infraRef.name)),
      ...(infraSpec['providerID'] !== undefined ? { providerID: infraSpec['providerID'] } : {}),
    };
    const configRef = m.spec.bootstrap.configRef;
    const config = configRef
      ? await this.client.get<KubeObject & { spec?: Record<string, unknown> }>(KubeadmConfigs, ns, configRef.name)
      : undefined;
    const desiredMachine: Machine = { ...m, spec: { ...structuredClone(m.spec), version: kcp.spec.version } };
    const infraAv = apiVersionOf(DevMachines);
    const bootAv = apiVersionOf(KubeadmConfigs);
    const current: MachineObjects = {
      machine: forHookRequest(m, apiVersionOf(Machines), Machines.kind),
      infrastructureMachine: forHookRequest(infra, infraAv, DevMachines.kind),
      ...(config
        ? { bootstrapConfig: { ...forHookRequest(config, bootAv, KubeadmConfigs.kind), spec: kubeadmConfigSpecForDiff(config.spec) } }
        : {}),
    };
    const desired: MachineObjects = {
      machine: forHookRequest(desiredMachine, apiVersionOf(Machines), Machines.kind),
      infrastructureMachine: {
        ...forHookRequest(infra, infraAv, DevMachines.kind),
        metadata: { name, namespace: ns, annotations: clonedFromAnnotations(infraRef) },
        spec: desiredInfraSpec,
      },
      ...(config
        ? {
            bootstrapConfig: {
              ...forHookRequest(config, bootAv, KubeadmConfigs.kind),
              spec: kubeadmConfigSpecForDiff(kcp.spec.kubeadmConfigSpec),
            },
          }
        : {}),
    };
    // Upstream diffs with the desired labels and annotations on the current clones: only specs count.
    current.infrastructureMachine.metadata = structuredClone(desired.infrastructureMachine.metadata);
    const answer = (await callExtension(reg, CAN_UPDATE_MACHINE_HOOK, { current, desired })) as CanUpdateMachinePatches;
    const coverage = judgeCanUpdateMachine(current, desired, answer);
    if (!coverage.covered) {
      this.mgr.log.info({ machine: name, reasons: coverage.reasons }, 'capi-sim: in-place update not possible, rolling out');
      return false;
    }
    this.mgr.log.info({ controlPlane: kcp.metadata.name, machine: name }, 'capi-sim: triggering in-place update');
    await this.client.patch(Machines, ns, name, { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '' } } }, merge);
    await this.client.patch(
      DevMachines,
      ns,
      infra.metadata.name ?? '',
      { metadata: { annotations: { ...clonedFromAnnotations(infraRef), [UPDATE_IN_PROGRESS_ANNOTATION]: '' } }, spec: desiredInfraSpec },
      merge,
    );
    if (config && configRef)
      await this.client.patch(
        KubeadmConfigs,
        ns,
        configRef.name,
        { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '' } }, spec: structuredClone(kcp.spec.kubeadmConfigSpec ?? {}) },
        merge,
      );
    const pending = pendingHooksValue(m.metadata.annotations, UPDATE_MACHINE_HOOK, true);
    await this.client.patch(
      Machines,
      ns,
      name,
      { metadata: { annotations: { [PENDING_HOOKS_ANNOTATION]: pending ?? null } }, spec: { version: kcp.spec.version } },
      merge,
    );
    return true;
  }

  /** Machines moved to another MachineSet that the cache may still show in the old one (key → target set). */
  private readonly expectedMoves = new Map<string, string>();

  /**
   * startMoveMachines: the machine changes MachineSet (set-name label, controller reference) and carries
   * update-in-progress and pending-acknowledge-move until the deployment counts it in the target's replicas.
   */
  private async moveMachine(m: Machine, target: MachineSet): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    this.expectedMoves.set(`${ns}/${name}`, target.metadata.name ?? '');
    const owners = (m.metadata.ownerReferences ?? []).filter((r) => !r.controller);
    owners.push(controllerRef(MachineSets, target.metadata.name ?? '', target.metadata.uid ?? ''));
    this.mgr.log.info({ machine: name, to: target.metadata.name }, 'capi-sim: moving machine to the new MachineSet for an in-place update');
    await this.client.patch(
      Machines,
      ns,
      name,
      {
        metadata: {
          labels: { [Labels.setName]: target.metadata.name ?? '' },
          annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '', [PENDING_ACKNOWLEDGE_MOVE_ANNOTATION]: '' },
          ownerReferences: owners,
        },
      },
      merge,
    );
  }

  /**
   * The MachineSet's trigger for an acknowledged moved machine: desired specs from the set's own template on the
   * Machine (version), DevMachine and KubeadmConfig (with their cloned-from and update-in-progress annotations),
   * pending-acknowledge-move dropped and UpdateMachine marked pending.
   */
  private async triggerMachineSetInPlace(ms: MachineSet, m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const want = machineFromSet(ms, ms.metadata.name ?? '', ms.metadata.labels?.[Labels.deploymentName]);
    const infra = await this.client.get(DevMachines, ns, m.spec.infrastructureRef.name);
    const providerID = (infra?.['spec'] as Record<string, unknown> | undefined)?.['providerID'];
    await this.patchIgnoringMissing(
      DevMachines,
      ns,
      m.spec.infrastructureRef.name,
      {
        metadata: { annotations: { ...clonedFromAnnotations(want.infraTemplate), [UPDATE_IN_PROGRESS_ANNOTATION]: '' } },
        spec: { ...(await this.templateSpec(DevMachineTemplates, ns, want.infraTemplate.name)), ...(providerID ? { providerID } : {}) },
      },
      merge,
    );
    const ref = m.spec.bootstrap.configRef;
    if (ref && want.bootstrapTemplate)
      await this.patchIgnoringMissing(
        KubeadmConfigs,
        ns,
        ref.name,
        {
          metadata: { annotations: { ...clonedFromAnnotations(want.bootstrapTemplate), [UPDATE_IN_PROGRESS_ANNOTATION]: '' } },
          spec: await this.templateSpec(KubeadmConfigTemplates, ns, want.bootstrapTemplate.name),
        },
        merge,
      );
    const pending = pendingHooksValue(m.metadata.annotations, UPDATE_MACHINE_HOOK, true);
    this.mgr.log.info({ machineSet: ms.metadata.name, machine: name }, 'capi-sim: triggering in-place update');
    await this.patchIgnoringMissing(
      Machines,
      ns,
      name,
      {
        metadata: { annotations: { [PENDING_ACKNOWLEDGE_MOVE_ANNOTATION]: null, [PENDING_HOOKS_ANNOTATION]: pending ?? null } },
        spec: { ...(want.version ? { version: want.version } : {}) },
      },
      merge,
    );
  }

  /** CanUpdateMachineSet answers per old/new MachineSet generation pair (upstream caches them too). */
  private readonly canUpdateMachineSetCache = new Map<string, boolean>();

  /**
   * canUpdateMachineSetInPlace: asks the one CanUpdateMachineSet handler with the old and new MachineSet and their
   * DevMachineTemplate / KubeadmConfigTemplate, applies its patches to the old ones and compares with the new ones.
   */
  private async canUpdateMachineSet(old: MachineSet, next: MachineSet): Promise<boolean> {
    const cacheKey = `${old.metadata.namespace}/${old.metadata.name}/${old.metadata.generation}->${next.metadata.name}/${next.metadata.generation}`;
    const cached = this.canUpdateMachineSetCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const reg = registrationsFor(this.extensionConfigs, CAN_UPDATE_MACHINESET_HOOK)[0];
    if (!reg) return false;
    const ns = old.metadata.namespace;
    const tpl = async (res: ResourceType, name: string | undefined): Promise<(KubeObject & { spec?: unknown }) | undefined> => {
      const o = name ? await this.client.get<KubeObject & { spec?: unknown }>(res, ns, name) : undefined;
      return o ? forHookRequest(o, apiVersionOf(res), res.kind) : undefined;
    };
    const side = async (ms: MachineSet): Promise<MachineSetObjects | undefined> => {
      const infra = await tpl(DevMachineTemplates, ms.spec.template.spec.infrastructureRef.name);
      if (!infra) return undefined;
      const boot = await tpl(KubeadmConfigTemplates, ms.spec.template.spec.bootstrap.configRef?.name);
      return {
        machineSet: forHookRequest(ms, apiVersionOf(MachineSets), MachineSets.kind),
        infrastructureMachineTemplate: infra,
        ...(boot ? { bootstrapConfigTemplate: boot } : {}),
      };
    };
    const current = await side(old);
    const desired = await side(next);
    if (!current || !desired) return false;
    const answer = (await callExtension(reg, CAN_UPDATE_MACHINESET_HOOK, { current, desired })) as CanUpdateMachineSetPatches;
    const coverage = judgeCanUpdateMachineSet(current, desired, answer);
    if (!coverage.covered)
      this.mgr.log.info(
        { machineSet: old.metadata.name, reasons: coverage.reasons },
        'capi-sim: MachineSet cannot be updated in place, rolling out',
      );
    this.canUpdateMachineSetCache.set(cacheKey, coverage.covered);
    return coverage.covered;
  }

  /** ExtensionConfig controller: discovery, handlers written to status.handlers (condition Discovered). */
  private async reconcileExtensionConfig(key: ObjectKey): Promise<Action> {
    const ec = this.mgr.informer<ExtensionConfig>(ExtensionConfigs).store.get(undefined, key.name);
    if (!ec || ec.metadata.deletionTimestamp) return Action.awaitChange();
    try {
      const handlers = await discover(ec);
      const conditions = setCondition(
        ec.status?.conditions as never,
        { type: 'Discovered', status: 'True', reason: 'Discovered' },
        ec.metadata.generation,
      );
      await this.patchStatusIfChanged(ExtensionConfigs, ec, { handlers, conditions });
      return Action.awaitChange();
    } catch (err) {
      const message = (err as Error).message;
      this.mgr.log.info({ extensionConfig: key.name, err: message }, 'capi-sim: discovery failed');
      const conditions = setCondition(
        ec.status?.conditions as never,
        { type: 'Discovered', status: 'False', reason: 'DiscoveryFailed', message },
        ec.metadata.generation,
      );
      await this.patchStatusIfChanged(ExtensionConfigs, ec, { conditions });
      return Action.requeue(2000);
    }
  }

  /**
   * The machine controller's in-place part (reconcileInPlaceUpdate): calls UpdateMachine with the machine's and its
   * clones' current specs while it answers in progress (requeued after retryAfterSeconds), then removes the
   * update-in-progress annotations and the pending hook; a failed call sets Updating's failure message and is retried.
   * Undefined: nothing in place to do.
   */
  private async reconcileInPlace(m: Machine): Promise<Action | undefined> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const infra = await this.client.get(DevMachines, ns, m.spec.infrastructureRef.name);
    const ref = m.spec.bootstrap.configRef;
    const boot = ref ? await this.client.get(KubeadmConfigs, ns, ref.name) : undefined;
    const step = decideMachineInPlace(this.inPlace, {
      machine: m,
      infraMachine: infra,
      bootstrapConfig: boot,
      hasBootstrapRef: ref !== undefined,
    });
    if (step.kind === 'none') return undefined;
    if (step.kind === 'wait') return Action.requeue(200);
    if (step.kind === 'complete') {
      await this.completeInPlace(m, infra, boot);
      return Action.awaitChange();
    }
    if (step.kind === 'failed') {
      await this.setUpdating(m, updatingCondition(true, UpdatingReason.inPlaceUpdateFailed, step.message));
      return Action.requeue(1000);
    }
    const reg = registrationsFor(this.extensionConfigs, UPDATE_MACHINE_HOOK);
    if (reg.length !== 1) {
      this.mgr.log.error({ machine: name, handlers: reg.length }, 'capi-sim: UpdateMachine needs exactly one registered handler');
      await this.setUpdating(m, updatingCondition(true, UpdatingReason.inPlaceUpdateFailed, UPDATE_MACHINE_FAILED_MESSAGE));
      return Action.requeue(1000);
    }
    const cacheKey = `${ns}/${name}`;
    const notBefore = this.updateMachineNotBefore.get(cacheKey) ?? 0;
    if (Date.now() < notBefore) return Action.requeue(notBefore - Date.now());
    const retryIn = (ms: number): Action => {
      this.updateMachineNotBefore.set(cacheKey, Date.now() + ms);
      return Action.requeue(ms);
    };
    const desired: MachineObjects = {
      machine: forHookRequest(m, apiVersionOf(Machines), Machines.kind),
      infrastructureMachine: forHookRequest(infra!, apiVersionOf(DevMachines), DevMachines.kind),
      ...(boot ? { bootstrapConfig: forHookRequest(boot, apiVersionOf(KubeadmConfigs), KubeadmConfigs.kind) } : {}),
    };
    let answer: UpdateMachineAnswer;
    try {
      answer = (await callExtension(reg[0]!, UPDATE_MACHINE_HOOK, { desired })) as UpdateMachineAnswer;
    } catch (err) {
      const extensionMessage = err instanceof ExtensionFailureError ? err.extensionMessage : (err as Error).message;
      this.mgr.log.info({ machine: name, err: (err as Error).message, extensionMessage }, 'capi-sim: UpdateMachine failed');
      this.counters.updateMachineFailures++;
      await this.setUpdating(m, updatingCondition(true, UpdatingReason.inPlaceUpdateFailed, UPDATE_MACHINE_FAILED_MESSAGE));
      return retryIn(1000);
    }
    const outcome = updateMachineOutcome(answer);
    if (outcome.kind === 'inProgress') {
      await this.setUpdating(m, updatingCondition(true, UpdatingReason.inPlaceUpdating, inProgressMessage(outcome.message)));
      return retryIn(outcome.retryAfterMs);
    }
    if (outcome.kind === 'failed') {
      await this.setUpdating(m, updatingCondition(true, UpdatingReason.inPlaceUpdateFailed, UPDATE_MACHINE_FAILED_MESSAGE));
      return retryIn(1000);
    }
    this.updateMachineNotBefore.delete(cacheKey);
    await this.completeInPlace(m, infra, boot);
    this.counters.machinesUpdatedInPlace++;
    this.mgr.log.info({ machine: name }, 'capi-sim: in-place update done');
    return Action.awaitChange();
  }

  /** completeInPlaceUpdate: annotations off the Machine and its clones, UpdateMachine no longer pending, Updating False. */
  private async completeInPlace(m: Machine, infra: KubeObject | undefined, boot: KubeObject | undefined): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const off = { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: null } } };
    if (infra) await this.patchIgnoringMissing(DevMachines, ns, infra.metadata.name ?? '', off, merge);
    if (boot) await this.patchIgnoringMissing(KubeadmConfigs, ns, boot.metadata.name ?? '', off, merge);
    const pending = pendingHooksValue(m.metadata.annotations, UPDATE_MACHINE_HOOK, false);
    await this.patchIgnoringMissing(
      Machines,
      ns,
      m.metadata.name ?? '',
      { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: null, [PENDING_HOOKS_ANNOTATION]: pending ?? null } } },
      merge,
    );
    const fresh = await this.client.get<Machine>(Machines, ns, m.metadata.name ?? '');
    if (fresh) await this.setUpdating(fresh, updatingCondition(false));
  }

  /** Writes the machine's Updating condition when it changes. */
  private async setUpdating(m: Machine, c: ConditionInput): Promise<void> {
    const before = m.status?.conditions?.find((x) => x.type === c.type);
    if (before && before.status === c.status && before.reason === c.reason && (before.message ?? '') === (c.message ?? '')) return;
    const conditions = setCondition(m.status?.conditions, c, m.metadata.generation);
    await this.patchIgnoringMissing(Machines, m.metadata.namespace ?? '', m.metadata.name ?? '', { status: { conditions } });
  }

  /** Whether the API server (not the cache) still shows the KCP paused-free with an out-of-date machine. */
  private async outdatedLive(key: ObjectKey, machines: Machine[]): Promise<boolean> {
    const kcp = await this.client.get<KubeadmControlPlane>(KubeadmControlPlanes, key.namespace, key.name);
    if (!kcp || isPaused(kcp, await this.client.get<ClusterView>(Clusters, key.namespace, this.clusterOf(kcp)))) return false;
    for (const cached of machines.filter((m) => !this.isPlaceholder(m))) {
      const m = await this.client.get<Machine>(Machines, key.namespace, cached.metadata.name ?? '');
      if (!m || m.metadata.deletionTimestamp) continue;
      const infra =
        m.spec.infrastructureRef.kind === DevMachines.kind
          ? await this.client.get(DevMachines, key.namespace, m.spec.infrastructureRef.name)
          : undefined;
      const ref = m.spec.bootstrap.configRef;
      const config = ref?.kind === KubeadmConfigs.kind ? await this.client.get(KubeadmConfigs, key.namespace, ref.name) : undefined;
      const spec = config?.['spec'] as Record<string, unknown> | undefined;
      if (
        !kcpMachineUpToDate(kcp, { machine: m, ...(infra ? { infraMachine: infra } : {}), ...(spec ? { kubeadmConfigSpec: spec } : {}) })
          .upToDate
      )
        return true;
    }
    return false;
  }

  private clusterOf(kcp: KubeadmControlPlane): string {
    return kcp.metadata.labels?.[Labels.clusterName] ?? kcp.metadata.ownerReferences?.find((r) => r.kind === 'Cluster')?.name ?? '';
  }

  /** What the KCP compares for a machine: the machine, its DevMachine and its KubeadmConfig's spec, as cached. */
  private kcpView(m: Machine): { machine: Machine; infraMachine?: KubeObject; kubeadmConfigSpec?: Record<string, unknown> } {
    const ns = m.metadata.namespace;
    const infra =
      m.spec.infrastructureRef.kind === DevMachines.kind
        ? this.mgr.informer(DevMachines).store.peek(ns, m.spec.infrastructureRef.name)
        : undefined;
    const ref = m.spec.bootstrap.configRef;
    const config =
      ref?.kind === KubeadmConfigs.kind
        ? this.mgr.informer<KubeObject & { spec?: Record<string, unknown> }>(KubeadmConfigs).store.peek(ns, ref.name)
        : undefined;
    return { machine: m, ...(infra ? { infraMachine: infra } : {}), ...(config?.spec ? { kubeadmConfigSpec: config.spec } : {}) };
  }

  /** The topology controller: Cluster.spec.topology.version onto the KCP, then onto managed MachineDeployments. */
  private async reconcileTopology(key: ObjectKey): Promise<Action> {
    const cluster = this.mgr.informer<ClusterView>(Clusters).store.get(key.namespace, key.name);
    if (!cluster?.spec?.topology || cluster.metadata.deletionTimestamp) return Action.awaitChange();
    const cpRef: ObjectRef | undefined = cluster.spec.controlPlaneRef;
    const kcp =
      cpRef?.kind === KubeadmControlPlanes.kind
        ? this.mgr.informer<KubeadmControlPlane>(KubeadmControlPlanes).store.peek(key.namespace, cpRef.name)
        : undefined;
    const mds = this.mgr
      .informer<MachineDeployment>(MachineDeployments)
      .store.list(key.namespace)
      .filter((m) => m.spec.clusterName === key.name);
    const patches = decideTopology(cluster, kcp, mds);
    if (patches.controlPlaneVersion && kcp)
      await this.client.patch(
        KubeadmControlPlanes,
        key.namespace,
        kcp.metadata.name ?? '',
        { spec: { version: patches.controlPlaneVersion } },
        merge,
      );
    for (const [name, version] of Object.entries(patches.machineDeploymentVersions)) {
      await this.client.patch(MachineDeployments, key.namespace, name, { spec: { template: { spec: { version } } } }, merge);
    }
    return Action.awaitChange();
  }

  private isPlaceholder(m: Machine): boolean {
    return m.spec.clusterName === '' && m.metadata.namespace === undefined;
  }

  private createdAtOf(m: Machine): number {
    return this.createdAt.get(`${m.metadata.namespace}/${m.metadata.name}`) ?? (Date.parse(m.metadata.creationTimestamp ?? '') || 0);
  }

  /** Creates one machine for an owner, remembering it until the cache shows it. */
  private async createOwned(ownerKey: string, blueprint: (name: string) => Promise<MachineBlueprint>): Promise<void> {
    const owner = ownerKey.split('/')[2] ?? '';
    const taken = new Set(this.machines.map((m) => m.metadata.name ?? ''));
    for (const s of this.expectedCreates.values()) for (const n of s) taken.add(n);
    const bp = await blueprint(newMachineName(owner, taken, randomSuffix));
    const pending = this.expectedCreates.get(ownerKey) ?? new Set<string>();
    pending.add(bp.name);
    this.expectedCreates.set(ownerKey, pending);
    await this.createMachine(bp);
  }

  /** The owner's machines as the cache shows them, plus created ones the cache has not seen, minus deleted ones. */
  private ownedMachines(ownerKey: string, mine: (m: Machine) => boolean): Machine[] {
    const cached = this.machines.filter(mine);
    const names = new Set(cached.map((m) => m.metadata.name));
    const pending = this.expectedCreates.get(ownerKey) ?? new Set<string>();
    for (const n of [...pending]) if (names.has(n)) pending.delete(n);
    for (const n of [...this.expectedDeletes]) if (!this.machines.some((m) => m.metadata.name === n)) this.expectedDeletes.delete(n);
    const placeholders: Machine[] = [...pending].map((n) => ({
      metadata: { name: n },
      spec: { clusterName: '', bootstrap: {}, infrastructureRef: { apiGroup: '', kind: '', name: n } },
    }));
    return [...cached.filter((m) => !this.expectedDeletes.has(`${m.metadata.namespace}/${m.metadata.name}`)), ...placeholders];
  }

  private async scale(
    ownerKey: string,
    desired: number,
    machines: Machine[],
    order: 'Random' | 'Newest' | 'Oldest' | undefined,
    blueprint: (name: string) => Promise<MachineBlueprint>,
  ): Promise<void> {
    const decision = decideScale(desired, machines, order, (m) => this.createdAtOf(m));
    if (decision.create > 0 || decision.delete.length > 0)
      this.mgr.log.info(
        {
          owner: ownerKey,
          replicas: desired,
          machines: machines.length,
          create: decision.create,
          delete: decision.delete,
        },
        'capi-sim: scaling machines',
      );
    for (let i = 0; i < decision.create; i++) await this.createOwned(ownerKey, blueprint);
    for (const name of decision.delete) {
      const m = machines.find((x) => x.metadata.name === name);
      if (m) await this.deleteMachine(m);
    }
  }

  private async templateSpec(res: ResourceType, namespace: string | undefined, name: string): Promise<Record<string, unknown>> {
    const tpl = await this.client.get<KubeObject & { spec?: { template?: { spec?: Record<string, unknown> } } }>(res, namespace, name);
    return structuredClone(tpl?.spec?.template?.spec ?? (res === DevMachineTemplates ? { backend: { docker: {} } } : {}));
  }

  // --- machines -----------------------------------------------------------------------------------------------

  /** Creates a Machine with its DevMachine and KubeadmConfig; it becomes Running after the ready delay. */
  private async createMachine(bp: MachineBlueprint): Promise<void> {
    this.createdAt.set(`${bp.namespace}/${bp.name}`, Date.now());
    const machine = await this.client.create(Machines, buildMachine(bp));
    this.counters.machinesCreated++;
    const uid = machine.metadata.uid ?? '';
    await this.createIgnoringExisting(DevMachines, buildDevMachine(bp, uid));
    await this.createIgnoringExisting(KubeadmConfigs, buildKubeadmConfig(bp, uid));
    await this.client.patch(Machines, bp.namespace, bp.name, { status: machineProvisioningStatus(kubeTime(new Date())) }, mergeStatus);
  }

  private async createIgnoringExisting(res: ResourceType, obj: KubeObject): Promise<void> {
    try {
      await this.client.create(res, obj);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** Deletes a machine and what CAPI would delete with it (its Node, DevMachine and KubeadmConfig). */
  private async deleteMachine(m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    this.expectedDeletes.add(`${ns}/${name}`);
    this.counters.machinesDeleted++;
    await this.deleteIgnoringMissing(Machines, ns, name);
    await this.deleteChildren(ns, name);
  }

  private async deleteChildren(ns: string, name: string): Promise<void> {
    await this.deleteIgnoringMissing(
      Nodes,
      undefined,
      nodeNameFor(ns, name),
      (o) => o.metadata.annotations?.[NODE_MACHINE_ANNOTATION] === name,
    );
    await this.deleteIgnoringMissing(DevMachines, ns, name, (o) => ownedByMachine(o, name));
    await this.deleteIgnoringMissing(KubeadmConfigs, ns, name, (o) => ownedByMachine(o, name));
    this.createdAt.delete(`${ns}/${name}`);
  }

  private async deleteIgnoringMissing(
    res: ResourceType,
    ns: string | undefined,
    name: string,
    guard?: (o: KubeObject) => boolean,
  ): Promise<void> {
    try {
      if (guard) {
        const o = await this.client.get(res, ns, name);
        if (!o || !guard(o)) return;
      }
      await this.client.delete(res, ns, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Remediates, provisions, and keeps a machine's node and node info in line with its spec. */
  private async reconcileMachine(key: ObjectKey): Promise<Action> {
    const ns = key.namespace ?? '';
    const cached = this.mgr.informer<Machine>(Machines).store.get(key.namespace, key.name);
    const m = cached ?? (await this.client.get<Machine>(Machines, key.namespace, key.name));
    if (!m) {
      await this.deleteChildren(ns, key.name);
      return Action.awaitChange();
    }
    if (m.metadata.deletionTimestamp) return Action.awaitChange();
    if (wantsRemediation(m)) {
      const mhcs = this.mgr.informer<MachineHealthCheck>(MachineHealthChecks).store.list(key.namespace);
      const verdict = remediationVerdict(m, mhcs, this.machines);
      if (verdict.remediate) {
        await this.remediate(m);
        return Action.awaitChange();
      }
      this.mgr.log.debug({ machine: key.name, why: verdict.why }, 'capi-sim: remediate-machine not honoured');
    }
    const createdAt = this.createdAt.get(`${ns}/${key.name}`) ?? (Date.parse(m.metadata.creationTimestamp ?? '') || 0);
    const decision = decideProvisioning(m, createdAt, Date.now(), this.readyDelayMs);
    if (decision.kind === 'wait') return Action.requeue(decision.afterMs);
    if (decision.kind === 'makeReady') {
      await this.makeReady(m);
      return Action.awaitChange();
    }
    const inPlace = this.inPlace ? await this.reconcileInPlace(m) : undefined;
    const now = inPlace ? await this.client.get<Machine>(Machines, key.namespace, key.name) : m;
    if (now) await this.followNode(now);
    return inPlace ?? Action.awaitChange();
  }

  /** What the MHC and the owner do with a machine marked remediate-machine: mark it unhealthy, delete it (the owner replaces it). */
  private async remediate(m: Machine): Promise<void> {
    const now = new Date();
    let conditions = setCondition(
      m.status?.conditions,
      {
        type: 'HealthCheckSucceeded',
        status: 'False',
        reason: 'HasRemediateAnnotation',
        message: 'Marked for remediation via remediate-machine annotation',
      },
      undefined,
      now,
    );
    conditions = setCondition(
      conditions,
      { type: 'OwnerRemediated', status: 'False', reason: 'WaitingForRemediation', message: 'Waiting for remediation' },
      undefined,
      now,
    );
    try {
      await this.client.patch(Machines, m.metadata.namespace, m.metadata.name ?? '', { status: { conditions } }, mergeStatus);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.mgr.log.info({ machine: m.metadata.name }, 'capi-sim: remediating machine');
    await this.deleteMachine(m);
  }

  /** Provisioning done: infrastructure and bootstrap ready, a Ready Node, the machine Running. */
  private async makeReady(m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const now = kubeTime(new Date());
    const image = await this.imageOf(m);
    const nodeName = nodeNameFor(ns, name);
    const info = nodeInfoFor(nodeName, m.spec.version ?? '', image ?? '');
    await this.patchIgnoringMissing(DevMachines, ns, m.spec.infrastructureRef.name, { status: devMachineReadyStatus(now) });
    if (m.spec.bootstrap.configRef)
      await this.patchIgnoringMissing(KubeadmConfigs, ns, m.spec.bootstrap.configRef.name, { status: kubeadmConfigReadyStatus(now) });
    const clusterName = m.spec.clusterName;
    const node = buildNode(ns, clusterName, name, isControlPlaneMachine(m));
    await this.createIgnoringExisting(Nodes, node);
    await this.client.patch(Nodes, undefined, nodeName, { status: nodeReadyStatus(info, now) }, mergeStatus);
    await this.client.patch(
      Machines,
      ns,
      name,
      { status: machineRunningStatus(nodeName, info, m.metadata.generation ?? 1, now) },
      mergeStatus,
    );
  }

  /** Mirrors what the kubelet reports (node info, Ready) into the Machine, like CAPI's machine controller. */
  private async followNode(m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const nodeName = m.status?.nodeRef?.name;
    if (!nodeName) return;
    const node = await this.client.get<Node>(Nodes, undefined, nodeName);
    if (!node) return;
    const nodeInfo = mirroredNodeInfo(node.status?.nodeInfo, m.status?.nodeInfo);
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    const healthy = ready?.status === 'True';
    const now = new Date();
    let conditions = m.status?.conditions;
    conditions = setCondition(
      conditions,
      healthy
        ? { type: 'NodeReady', status: 'True', reason: 'NodeReady' }
        : {
            type: 'NodeReady',
            status: ready?.status === 'False' ? 'False' : 'Unknown',
            reason: 'NodeNotReady',
            message: ready?.message ?? 'Node is not ready',
          },
      undefined,
      now,
    );
    conditions = setCondition(
      conditions,
      healthy
        ? { type: 'NodeHealthy', status: 'True', reason: 'NodeHealthy' }
        : { type: 'NodeHealthy', status: 'False', reason: 'NodeNotHealthy', message: 'Node Ready condition is not True' },
      undefined,
      now,
    );
    conditions = setCondition(
      conditions,
      healthy
        ? { type: 'Ready', status: 'True', reason: 'Ready' }
        : { type: 'Ready', status: 'False', reason: 'NotReady', message: 'Node is not ready' },
      undefined,
      now,
    );
    conditions = setCondition(
      conditions,
      healthy
        ? { type: 'Available', status: 'True', reason: 'Available' }
        : { type: 'Available', status: 'False', reason: 'NotAvailable', message: 'Machine is not ready' },
      undefined,
      now,
    );
    const status: Record<string, unknown> = { conditions };
    if (nodeInfo) status['nodeInfo'] = nodeInfo;
    if (JSON.stringify(conditions) !== JSON.stringify(m.status?.conditions) || nodeInfo) {
      await this.client.patch(Machines, ns, m.metadata.name ?? '', { status }, mergeStatus);
    }
  }

  private async imageOf(m: Machine): Promise<string | undefined> {
    const dm = await this.client.get<KubeObject & { spec?: { backend?: { docker?: { customImage?: string } } } }>(
      DevMachines,
      m.metadata.namespace,
      m.spec.infrastructureRef.name,
    );
    return dm?.spec?.backend?.docker?.customImage;
  }

  private async patchIgnoringMissing(
    res: ResourceType,
    ns: string,
    name: string,
    body: unknown,
    how: typeof merge | typeof mergeStatus = mergeStatus,
  ): Promise<void> {
    try {
      await this.client.patch(res, ns, name, body, how);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  // --- health checks -------------------------------------------------------------------------------------------

  /** MHC status as CAPI reports it: expected machines, healthy ones, and how many remediations are allowed. */
  private async reconcileHealthCheck(key: ObjectKey): Promise<Action> {
    const mhc = this.mgr.informer<MachineHealthCheck>(MachineHealthChecks).store.get(key.namespace, key.name);
    if (!mhc) return Action.awaitChange();
    const targets = mhcTargets(mhc, this.machines);
    const counts = mhcCounts(mhc, targets);
    const status = {
      observedGeneration: mhc.metadata.generation ?? 1,
      expectedMachines: counts.expectedMachines,
      currentHealthy: counts.currentHealthy,
      remediationsAllowed: counts.remediationsAllowed,
      targets: targets.map((m) => m.metadata.name ?? '').sort(),
    };
    await this.patchStatusIfChanged(MachineHealthChecks, mhc, status);
    return Action.awaitChange();
  }

  private async patchStatusIfChanged(
    res: ResourceType,
    obj: KubeObject & { status?: unknown },
    status: Record<string, unknown>,
  ): Promise<void> {
    const current = (obj.status ?? {}) as Record<string, unknown>;
    if (Object.entries(status).every(([k, v]) => JSON.stringify(current[k]) === JSON.stringify(v))) return;
    try {
      await this.client.patch(res, obj.metadata.namespace, obj.metadata.name ?? '', { status }, mergeStatus);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

const ownedByMachine = (o: KubeObject, machine: string): boolean =>
  o.metadata.ownerReferences?.some((r) => r.kind === Machines.kind && r.name === machine) ?? false;

/** The lowest of some Kubernetes versions (vMAJOR.MINOR.PATCH), or undefined when there are none. */
function lowestVersion(versions: readonly string[]): string | undefined {
  const parts = (v: string): number[] =>
    v
      .replace(/^v/, '')
      .split(/[.+-]/)
      .slice(0, 3)
      .map((x) => Number(x) || 0);
  return [...versions]
    .filter((v) => v !== '')
    .sort((a, b) => {
      const [x, y] = [parts(a), parts(b)];
      return x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]!;
    })[0];
}

const phaseOf = (desired: number, current: number): string =>
  current < desired ? 'ScalingUp' : current > desired ? 'ScalingDown' : 'Running';
