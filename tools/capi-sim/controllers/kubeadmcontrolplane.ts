// The simulated KubeadmControlPlane controller (upstream: controlplane/kubeadm/internal/controllers).
import { Labels, apiVersionOf, type KubeObject } from '../../../src/api/index.js';
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import {
  Clusters,
  DevMachineTemplates,
  DevMachines,
  KubeadmConfigs,
  KubeadmControlPlanes,
  Machines,
  controlPlaneMachineLabels,
  type MachineBlueprint,
} from '../builders.js';
import { DELETE_MACHINE_ANNOTATION, countReplicas } from '../decisions.js';
import {
  UPDATE_IN_PROGRESS_ANNOTATION,
  clonedFromAnnotations,
  decideKcpStep,
  isPaused,
  kcpMachineUpToDate,
  machineReady,
  kubeadmConfigSpecForDiff,
  type ClusterView,
  type KcpMember,
} from '../rollout.js';
import {
  CAN_UPDATE_MACHINE_HOOK,
  PENDING_HOOKS_ANNOTATION,
  UPDATE_MACHINE_HOOK,
  decideKcpInPlace,
  forHookRequest,
  judgeCanUpdateMachine,
  answerAffectsAvailability,
  kcpSurgeCandidate,
  pendingHooksValue,
  type CanUpdateMachinePatches,
  type MachineObjects,
} from '../inplace.js';
import { callExtension, registrationsFor } from '../extension-client.js';
import type { KubeadmControlPlane, Machine } from '../../../src/api/capi/index.js';
import { type SimWorld, merge } from './world.js';

/** The KubeadmControlPlane controller: rollouts one machine at a time, in-place updates through CanUpdateMachine, status. */
export class KubeadmControlPlaneController {
  constructor(private readonly world: SimWorld) {}

  /**
   * A control plane: with faithful rollouts, upstream's KCP (out-of-date machines replaced one at a time: scale up
   * within maxSurge, then delete the oldest out-of-date one; preflight on ready machines); otherwise scaling only.
   * Keeps the control plane's replica status (status.version: the lowest version its machines run).
   */
  async reconcile(key: ObjectKey): Promise<Action> {
    const kcp = this.world.mgr.informer<KubeadmControlPlane>(KubeadmControlPlanes).store.get(key.namespace, key.name);
    if (!kcp || kcp.metadata.deletionTimestamp) return Action.awaitChange();
    const clusterName = this.clusterOf(kcp);
    const ownerKey = `KubeadmControlPlane/${key.namespace}/${key.name}`;
    const machines = this.world.ownedMachines(
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
      infraSpec: await this.world.templateSpec(DevMachineTemplates, key.namespace, infraRef.name),
      infraAnnotations: clonedFromAnnotations(infraRef),
      bootstrapSpec: structuredClone(kcp.spec.kubeadmConfigSpec ?? {}),
    });
    const upToDate = new Map(
      machines.map((m) => [m.metadata.name ?? '', this.world.isPlaceholder(m) || kcpMachineUpToDate(kcp, this.kcpView(m)).upToDate]),
    );
    if (this.world.faithful) {
      const members: KcpMember[] = machines.map((m) => ({
        name: m.metadata.name ?? '',
        upToDate: upToDate.get(m.metadata.name ?? '') ?? true,
        ready: machineReady(m),
        deleting: m.metadata.deletionTimestamp !== undefined,
        deleteMarked: m.metadata.annotations?.[DELETE_MACHINE_ANNOTATION] !== undefined,
        updatingInPlace: m.metadata.annotations?.[UPDATE_IN_PROGRESS_ANNOTATION] !== undefined,
        createdAtMs: this.world.createdAtOf(m),
      }));
      const step = decideKcpStep(kcp, this.world.cluster(key.namespace, clusterName), members);
      // The caches of KCPs, Machines and their clones lag independently (by milliseconds here, where a plan commits
      // and unpauses in quick succession): confirm a rollout against the API server before replacing anything.
      if (
        members.some((m) => !m.upToDate) &&
        (step.kind === 'create' || step.kind === 'delete') &&
        !(await this.outdatedLive(key, machines))
      )
        return Action.requeue(100);
      if (step.kind === 'create' && this.world.inPlace && this.world.readsAffectsAvailability) {
        const candidate = kcpSurgeCandidate(
          step,
          members,
          kcp.spec.replicas ?? 1,
          registrationsFor(this.world.extensionConfigs, CAN_UPDATE_MACHINE_HOOK).length,
        );
        const victim = machines.find((x) => x.metadata.name === candidate);
        const infra = victim ? this.kcpView(victim).infraMachine : undefined;
        if (victim && infra) {
          try {
            if (await this.tryKcpInPlace(kcp, victim, infra, true)) return Action.awaitChange();
          } catch (err) {
            this.world.mgr.log.error({ controlPlane: key.name, machine: candidate, err }, 'capi-sim: CanUpdateMachine failed');
            return Action.requeue(1000);
          }
        }
      }
      if (step.kind === 'create') await this.world.createOwned(ownerKey, blueprint);
      if (step.kind === 'delete' && this.world.inPlace) {
        const outdated = new Set(members.filter((m) => !m.upToDate).map((m) => m.name));
        const victim = machines.find((x) => x.metadata.name === step.machine);
        const view = victim ? this.kcpView(victim) : undefined;
        const inPlace = decideKcpInPlace(step, outdated, {
          enabled: true,
          canUpdateHandlers: registrationsFor(this.world.extensionConfigs, CAN_UPDATE_MACHINE_HOOK).length,
          eligible: view?.infraMachine !== undefined && (view.kubeadmConfigSpec !== undefined || !victim?.spec.bootstrap.configRef),
          upToDateReplicas: members.filter((m) => m.upToDate && !m.deleting).length,
          desiredReplicas: kcp.spec.replicas ?? 1,
        });
        if (inPlace.kind === 'error') {
          this.world.mgr.log.error({ controlPlane: key.name }, `capi-sim: ${inPlace.message}`);
          return Action.requeue(1000);
        }
        if (inPlace.kind === 'askCanUpdate' && victim && view?.infraMachine) {
          try {
            if (await this.tryKcpInPlace(kcp, victim, view.infraMachine)) return Action.awaitChange();
          } catch (err) {
            // Upstream returns the error (retried with backoff); the machine is neither updated nor replaced meanwhile.
            this.world.mgr.log.error({ controlPlane: key.name, machine: step.machine, err }, 'capi-sim: CanUpdateMachine failed');
            return Action.requeue(1000);
          }
        }
      }
      if (step.kind === 'delete') {
        const m = machines.find((x) => x.metadata.name === step.machine);
        this.world.mgr.log.info(
          { controlPlane: key.name, machine: step.machine, why: step.why },
          'capi-sim: KubeadmControlPlane deletes a machine',
        );
        if (m) await this.world.deleteMachine(m);
      }
    } else {
      await this.world.scale(ownerKey, kcp.spec.replicas ?? 1, machines, 'Oldest', blueprint);
    }
    const real = machines.filter((m) => !this.world.isPlaceholder(m));
    const counts = countReplicas(real, kcp.spec.version);
    if (this.world.faithful)
      counts.upToDateReplicas = real.filter((m) => !m.metadata.deletionTimestamp && upToDate.get(m.metadata.name ?? '') === true).length;
    const selector = `${Labels.clusterName}=${clusterName},${Labels.controlPlane},${Labels.controlPlaneName}=${key.name}`;
    const version = lowestVersion(real.filter((m) => !m.metadata.deletionTimestamp).map((m) => m.spec.version ?? '')) ?? kcp.spec.version;
    await this.world.patchStatusIfChanged(KubeadmControlPlanes, kcp, {
      observedGeneration: kcp.metadata.generation ?? 1,
      selector,
      ...counts,
      version,
      initialization: { controlPlaneInitialized: true },
    });
    return Action.awaitChange();
  }

  /**
   * KCP tryInPlaceUpdate: asks the one CanUpdateMachine handler with the machine's current and desired Machine,
   * DevMachine and KubeadmConfig (cleaned for diff), applies its patches to current and, when that yields desired,
   * triggers the update (triggerInPlaceUpdate): update-in-progress on the Machine, desired specs with the annotation on
   * the DevMachine and KubeadmConfig, then the Machine's desired spec with UpdateMachine pending. False: not covered,
   * the caller scales the machine down as without the gate.
   */
  private async tryKcpInPlace(kcp: KubeadmControlPlane, m: Machine, infra: KubeObject, onlyNonDisruptive = false): Promise<boolean> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const reg = registrationsFor(this.world.extensionConfigs, CAN_UPDATE_MACHINE_HOOK)[0];
    if (!reg) return false;
    const infraRef = kcp.spec.machineTemplate.spec.infrastructureRef;
    const infraSpec = (infra['spec'] ?? {}) as Record<string, unknown>;
    const desiredInfraSpec = {
      ...(await this.world.templateSpec(DevMachineTemplates, ns, infraRef.name)),
      ...(infraSpec['providerID'] !== undefined ? { providerID: infraSpec['providerID'] } : {}),
    };
    const configRef = m.spec.bootstrap.configRef;
    const config = configRef
      ? await this.world.client.get<KubeObject & { spec?: Record<string, unknown> }>(KubeadmConfigs, ns, configRef.name)
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
      this.world.mgr.log.info({ machine: name, reasons: coverage.reasons }, 'capi-sim: in-place update not possible, rolling out');
      return false;
    }
    // Before the surge (v1.15): only a non-disruptive answer skips it; otherwise the surge machine comes first.
    if (onlyNonDisruptive && answerAffectsAvailability(answer, true)) return false;
    this.world.mgr.log.info({ controlPlane: kcp.metadata.name, machine: name }, 'capi-sim: triggering in-place update');
    await this.world.client.patch(Machines, ns, name, { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '' } } }, merge);
    await this.world.client.patch(
      DevMachines,
      ns,
      infra.metadata.name ?? '',
      { metadata: { annotations: { ...clonedFromAnnotations(infraRef), [UPDATE_IN_PROGRESS_ANNOTATION]: '' } }, spec: desiredInfraSpec },
      merge,
    );
    if (config && configRef)
      await this.world.client.patch(
        KubeadmConfigs,
        ns,
        configRef.name,
        { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: '' } }, spec: structuredClone(kcp.spec.kubeadmConfigSpec ?? {}) },
        merge,
      );
    const pending = pendingHooksValue(m.metadata.annotations, UPDATE_MACHINE_HOOK, true);
    await this.world.client.patch(
      Machines,
      ns,
      name,
      { metadata: { annotations: { [PENDING_HOOKS_ANNOTATION]: pending ?? null } }, spec: { version: kcp.spec.version } },
      merge,
    );
    return true;
  }

  /** Whether the API server (not the cache) still shows the KCP paused-free with an out-of-date machine. */
  private async outdatedLive(key: ObjectKey, machines: Machine[]): Promise<boolean> {
    const kcp = await this.world.client.get<KubeadmControlPlane>(KubeadmControlPlanes, key.namespace, key.name);
    if (!kcp || isPaused(kcp, await this.world.client.get<ClusterView>(Clusters, key.namespace, this.clusterOf(kcp)))) return false;
    for (const cached of machines.filter((m) => !this.world.isPlaceholder(m))) {
      const m = await this.world.client.get<Machine>(Machines, key.namespace, cached.metadata.name ?? '');
      if (!m || m.metadata.deletionTimestamp) continue;
      const infra =
        m.spec.infrastructureRef.kind === DevMachines.kind
          ? await this.world.client.get(DevMachines, key.namespace, m.spec.infrastructureRef.name)
          : undefined;
      const ref = m.spec.bootstrap.configRef;
      const config = ref?.kind === KubeadmConfigs.kind ? await this.world.client.get(KubeadmConfigs, key.namespace, ref.name) : undefined;
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
        ? this.world.mgr.informer(DevMachines).store.peek(ns, m.spec.infrastructureRef.name)
        : undefined;
    const ref = m.spec.bootstrap.configRef;
    const config =
      ref?.kind === KubeadmConfigs.kind
        ? this.world.mgr.informer<KubeObject & { spec?: Record<string, unknown> }>(KubeadmConfigs).store.peek(ns, ref.name)
        : undefined;
    return { machine: m, ...(infra ? { infraMachine: infra } : {}), ...(config?.spec ? { kubeadmConfigSpec: config.spec } : {}) };
  }
}

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
