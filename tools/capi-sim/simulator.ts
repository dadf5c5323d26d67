// A stand-in for Cluster API's controllers and the workload cluster's kubelets, just enough for the platform's
// scenarios in local mode: KubeadmControlPlane and MachineDeployment rollouts on drift as upstream does them
// (rollout.ts: out-of-date machines are replaced, a template change gets a new MachineSet), MachineSet scaling from
// its own templates (clones with cloned-from annotations), the topology controller's version writes, paused owners
// left alone, machines becoming Ready after a delay with their DevMachine, KubeadmConfig and Node, manual remediation
// (remediate-machine -> replacement at the owner's version), node info following in-place changes, and replica / MHC
// status; with inPlaceUpdates, upstream's in-place flow calling a runtime extension (inplace.ts, extension-client.ts).
// Writes only fields the real CRDs keep. This file is the wiring: each simulated controller lives in its own file under
// controllers/ (named after the upstream controller it stands in for), sharing controllers/world.ts.
import { Labels, MachineHealthChecks, Nodes, type KubeObject, type ResourceType } from '../../src/api/index.js';
import type { Machine, MachineHealthCheck, Node } from '../../src/api/capi/index.js';
// eslint-disable-next-line no-restricted-imports -- the simulator's controllers run on the product's controller runtime, as upstream's run on controller-runtime (docs/adr/0004-layering.md)
import { createManager } from '../../src/runtime/index.js';
import type { Action, Controller, Logger, KubeClient, Manager, ObjectKey } from '../../src/runtime/pure/types.js';
import {
  Clusters,
  DevMachines,
  KubeadmConfigs,
  KubeadmControlPlanes,
  MachineDeployments,
  MachineSets,
  Machines,
  NODE_CLUSTER_NAMESPACE_ANNOTATION,
  NODE_MACHINE_ANNOTATION,
  wantsRemediation,
} from './builders.js';
import { mhcTargets } from './decisions.js';
import { CAN_UPDATE_MACHINESET_HOOK, CAN_UPDATE_MACHINE_HOOK, UPDATE_MACHINE_HOOK } from './inplace.js';
import { ExtensionConfigs, registrationsFor } from './extension-client.js';
import { SimWorld } from './controllers/world.js';
import { MachineDeploymentController } from './controllers/machinedeployment.js';
import { MachineSetController } from './controllers/machineset.js';
import { KubeadmControlPlaneController } from './controllers/kubeadmcontrolplane.js';
import { TopologyController } from './controllers/topology.js';
import { MachineController } from './controllers/machine.js';
import { ExtensionConfigController } from './controllers/extensionconfig.js';
import { MachineHealthCheckController } from './controllers/machinehealthcheck.js';
import type { SimulatorStats } from './controllers/world.js';

export type { SimulatorStats } from './controllers/world.js';

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
  /**
   * The Cluster API version whose in-place flow is modelled (default v1.12): from v1.15 a CanUpdateMachineSet answer
   * with affectsAvailability false moves and updates machines without a surge machine, paced by the rollout's speed
   * instead of maxUnavailable (capi#14160); before, the field is ignored and every in-place update counts as disruptive.
   */
  clusterAPIVersion?: string;
}

/** True when a Cluster API version (v1.15, 1.16.2, v2.0) reads CanUpdate `affectsAvailability`. */
export function readsAffectsAvailability(version: string | undefined): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 1 || (major === 1 && minor >= 15);
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

const nsKey = (o: KubeObject, name: string | undefined): ObjectKey[] =>
  name ? [{ ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name }] : [];

/** Starts the simulator's controllers; resolves once their caches are synced. */
export async function startCapiSimulator(opts: CapiSimulatorOptions): Promise<CapiSimulator> {
  const mgr = createManager({
    client: opts.client,
    name: 'capi-sim',
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  const inPlace = opts.inPlaceUpdates ?? process.env['CAPI_SIM_IN_PLACE'] === '1';
  const world = new SimWorld(mgr, opts.client, {
    readyDelayMs: opts.readyDelayMs ?? 200,
    faithful: opts.faithfulRollouts ?? true,
    inPlace,
    readsAffectsAvailability: readsAffectsAvailability(opts.clusterAPIVersion),
  });
  const sim = new Simulator(world);
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

/**
 * The wiring: one simulated CAPI controller per file under controllers/ (sharing one SimWorld), registered here with
 * the watches that wake each, and the owner reconciles counted for reconcileOwners.
 */
class Simulator {
  /** Completed owner reconciles per controller/key (what reconcileOwners counts). */
  private readonly runs = new Map<string, number>();
  private readonly controllers = new Map<string, { ctl: Controller; res: ResourceType }>();
  private readonly mgr: Manager;

  constructor(private readonly world: SimWorld) {
    this.mgr = world.mgr;
  }

  stats(): SimulatorStats {
    return { ...this.world.counters };
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

  setup(): void {
    const md = new MachineDeploymentController(this.world);
    const ms = new MachineSetController(this.world);
    const kcp = new KubeadmControlPlaneController(this.world);
    const topology = new TopologyController(this.world);
    const machine = new MachineController(this.world);
    const extensionConfig = new ExtensionConfigController(this.world);
    const healthCheck = new MachineHealthCheckController(this.world);
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
      (key) => md.reconcile(key),
    );
    this.owner(
      'capi-sim-machineset',
      MachineSets,
      (b) => b.watches(Machines, byLabel(Labels.setName)).watches(Clusters, ofCluster(MachineSets)),
      (key) => ms.reconcile(key),
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
      (key) => kcp.reconcile(key),
    );
    if (this.world.faithful) {
      const toCluster = (o: KubeObject): ObjectKey[] => nsKey(o, o.metadata.labels?.[Labels.clusterName]);
      this.owner(
        'capi-sim-topology',
        Clusters,
        (b) => b.watches(KubeadmControlPlanes, toCluster).watches(MachineDeployments, toCluster),
        (key) => topology.reconcile(key),
      );
    }
    this.machineSide(machine, extensionConfig, healthCheck);
  }

  /** The machine-level controllers: Machines (following their Nodes and remediation), ExtensionConfigs, MHCs. */
  private machineSide(
    machine: MachineController,
    extensionConfig: ExtensionConfigController,
    healthCheck: MachineHealthCheckController,
  ): void {
    this.mgr
      .controller('capi-sim-machine')
      .for(Machines)
      .watches<Node>(Nodes, (n) => {
        const machine = n.metadata.annotations?.[NODE_MACHINE_ANNOTATION];
        const ns = n.metadata.annotations?.[NODE_CLUSTER_NAMESPACE_ANNOTATION];
        return machine && ns && (!this.mgr.namespace || ns === this.mgr.namespace) ? [{ namespace: ns, name: machine }] : [];
      })
      .watches<MachineHealthCheck>(MachineHealthChecks, (h) =>
        mhcTargets(h, this.world.machines)
          .filter(wantsRemediation)
          .map((m) => ({ namespace: m.metadata.namespace ?? '', name: m.metadata.name ?? '' })),
      )
      .withConcurrency(4)
      .reconcile((key) => machine.reconcile(key));
    if (this.world.inPlace) {
      this.mgr
        .controller('capi-sim-extensionconfig')
        .for(ExtensionConfigs)
        .reconcile((key) => extensionConfig.reconcile(key));
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
      .reconcile((key) => healthCheck.reconcile(key));
  }

  /** The handler names of the registry (all hooks, or one), sorted. */
  handlers(hook?: string): string[] {
    if (!this.world.inPlace) return [];
    const hooks = hook ? [hook] : [CAN_UPDATE_MACHINE_HOOK, CAN_UPDATE_MACHINESET_HOOK, UPDATE_MACHINE_HOOK];
    return hooks.flatMap((h) => registrationsFor(this.world.extensionConfigs, h).map((r) => r.handler.name)).sort();
  }
}
