// The simulated Machine controller (upstream: internal/controllers/machine) and the kubelet side of the workload cluster.
import { MachineHealthChecks, Nodes, apiVersionOf, type KubeObject } from '../../../src/api/index.js';
import { setCondition } from '../../../src/runtime/pure/conditions.js';
import { isNotFound } from '../../../src/runtime/pure/errors.js';
import { Action, type ObjectKey } from '../../../src/runtime/pure/types.js';
import {
  DevMachines,
  KubeadmConfigs,
  Machines,
  buildNode,
  devMachineReadyStatus,
  isControlPlaneMachine,
  kubeTime,
  kubeadmConfigReadyStatus,
  machineRunningStatus,
  nodeInfoFor,
  nodeNameFor,
  nodeReadyStatus,
  wantsRemediation,
} from '../builders.js';
import { decideProvisioning, mirroredNodeInfo, remediationVerdict } from '../decisions.js';
import { UPDATE_IN_PROGRESS_ANNOTATION } from '../rollout.js';
import {
  PENDING_HOOKS_ANNOTATION,
  UPDATE_MACHINE_FAILED_MESSAGE,
  UPDATE_MACHINE_HOOK,
  UpdatingReason,
  decideMachineInPlace,
  forHookRequest,
  inProgressMessage,
  pendingHooksValue,
  updateMachineOutcome,
  updatingCondition,
  type ConditionInput,
  type MachineObjects,
  type UpdateMachineAnswer,
} from '../inplace.js';
import { ExtensionFailureError, callExtension, registrationsFor } from '../extension-client.js';
import type { Machine, MachineHealthCheck, Node } from '../../../src/api/capi/index.js';
import { type SimWorld, merge, mergeStatus } from './world.js';

/** CAPI's machine controller with the workload cluster's kubelets: provisioning, Node mirroring, remediation, UpdateMachine. */
export class MachineController {
  /**
   * When UpdateMachine may be called again per machine (upstream's hook cache): a watch event in between (our own
   * condition write) must not call the extension before retryAfterSeconds, nor retry a failure at once.
   */
  private readonly updateMachineNotBefore = new Map<string, number>();

  constructor(private readonly world: SimWorld) {}

  /** Remediates, provisions, and keeps a machine's node and node info in line with its spec. */
  async reconcile(key: ObjectKey): Promise<Action> {
    const ns = key.namespace ?? '';
    const cached = this.world.mgr.informer<Machine>(Machines).store.get(key.namespace, key.name);
    const m = cached ?? (await this.world.client.get<Machine>(Machines, key.namespace, key.name));
    if (!m) {
      await this.world.deleteChildren(ns, key.name);
      return Action.awaitChange();
    }
    if (m.metadata.deletionTimestamp) return Action.awaitChange();
    if (wantsRemediation(m)) {
      const mhcs = this.world.mgr.informer<MachineHealthCheck>(MachineHealthChecks).store.list(key.namespace);
      const verdict = remediationVerdict(m, mhcs, this.world.machines);
      if (verdict.remediate) {
        await this.remediate(m);
        return Action.awaitChange();
      }
      this.world.mgr.log.debug({ machine: key.name, why: verdict.why }, 'capi-sim: remediate-machine not honoured');
    }
    const createdAt = this.world.createdAt.get(`${ns}/${key.name}`) ?? (Date.parse(m.metadata.creationTimestamp ?? '') || 0);
    const decision = decideProvisioning(m, createdAt, Date.now(), this.world.readyDelayMs);
    if (decision.kind === 'wait') return Action.requeue(decision.afterMs);
    if (decision.kind === 'makeReady') {
      await this.makeReady(m);
      return Action.awaitChange();
    }
    const inPlace = this.world.inPlace ? await this.reconcileInPlace(m) : undefined;
    const now = inPlace ? await this.world.client.get<Machine>(Machines, key.namespace, key.name) : m;
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
      await this.world.client.patch(Machines, m.metadata.namespace, m.metadata.name ?? '', { status: { conditions } }, mergeStatus);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.world.mgr.log.info({ machine: m.metadata.name }, 'capi-sim: remediating machine');
    await this.world.deleteMachine(m);
  }

  /** Provisioning done: infrastructure and bootstrap ready, a Ready Node, the machine Running. */
  private async makeReady(m: Machine): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name ?? '';
    const now = kubeTime(new Date());
    const image = await this.imageOf(m);
    const nodeName = nodeNameFor(ns, name);
    const info = nodeInfoFor(nodeName, m.spec.version ?? '', image ?? '');
    await this.world.patchIgnoringMissing(DevMachines, ns, m.spec.infrastructureRef.name, { status: devMachineReadyStatus(now) });
    if (m.spec.bootstrap.configRef)
      await this.world.patchIgnoringMissing(KubeadmConfigs, ns, m.spec.bootstrap.configRef.name, { status: kubeadmConfigReadyStatus(now) });
    const clusterName = m.spec.clusterName;
    const node = buildNode(ns, clusterName, name, isControlPlaneMachine(m));
    await this.world.createIgnoringExisting(Nodes, node);
    await this.world.client.patch(Nodes, undefined, nodeName, { status: nodeReadyStatus(info, now) }, mergeStatus);
    await this.world.client.patch(
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
    const node = await this.world.client.get<Node>(Nodes, undefined, nodeName);
    if (!node) return;
    const nodeInfo = mirroredNodeInfo(node.status?.nodeInfo, m.status?.nodeInfo);
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    const healthy = ready?.status === 'True';
    const now = new Date();
    // The machine controller's node-derived conditions, in the order it sets them.
    const inputs: ConditionInput[] = healthy
      ? [
          { type: 'NodeReady', status: 'True', reason: 'NodeReady' },
          { type: 'NodeHealthy', status: 'True', reason: 'NodeHealthy' },
          { type: 'Ready', status: 'True', reason: 'Ready' },
          { type: 'Available', status: 'True', reason: 'Available' },
        ]
      : [
          {
            type: 'NodeReady',
            status: ready?.status === 'False' ? 'False' : 'Unknown',
            reason: 'NodeNotReady',
            message: ready?.message ?? 'Node is not ready',
          },
          { type: 'NodeHealthy', status: 'False', reason: 'NodeNotHealthy', message: 'Node Ready condition is not True' },
          { type: 'Ready', status: 'False', reason: 'NotReady', message: 'Node is not ready' },
          { type: 'Available', status: 'False', reason: 'NotAvailable', message: 'Machine is not ready' },
        ];
    let conditions = m.status?.conditions;
    for (const c of inputs) conditions = setCondition(conditions, c, undefined, now);
    const status: Record<string, unknown> = { conditions };
    if (nodeInfo) status['nodeInfo'] = nodeInfo;
    if (JSON.stringify(conditions) !== JSON.stringify(m.status?.conditions) || nodeInfo) {
      await this.world.client.patch(Machines, ns, m.metadata.name ?? '', { status }, mergeStatus);
    }
  }

  private async imageOf(m: Machine): Promise<string | undefined> {
    const dm = await this.world.client.get<KubeObject & { spec?: { backend?: { docker?: { customImage?: string } } } }>(
      DevMachines,
      m.metadata.namespace,
      m.spec.infrastructureRef.name,
    );
    return dm?.spec?.backend?.docker?.customImage;
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
    const infra = await this.world.client.get(DevMachines, ns, m.spec.infrastructureRef.name);
    const ref = m.spec.bootstrap.configRef;
    const boot = ref ? await this.world.client.get(KubeadmConfigs, ns, ref.name) : undefined;
    const step = decideMachineInPlace(this.world.inPlace, {
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
    const reg = registrationsFor(this.world.extensionConfigs, UPDATE_MACHINE_HOOK);
    if (reg.length !== 1) {
      this.world.mgr.log.error({ machine: name, handlers: reg.length }, 'capi-sim: UpdateMachine needs exactly one registered handler');
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
      this.world.mgr.log.info({ machine: name, err: (err as Error).message, extensionMessage }, 'capi-sim: UpdateMachine failed');
      this.world.counters.updateMachineFailures++;
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
    this.world.counters.machinesUpdatedInPlace++;
    this.world.mgr.log.info({ machine: name }, 'capi-sim: in-place update done');
    return Action.awaitChange();
  }

  /** completeInPlaceUpdate: annotations off the Machine and its clones, UpdateMachine no longer pending, Updating False. */
  private async completeInPlace(m: Machine, infra: KubeObject | undefined, boot: KubeObject | undefined): Promise<void> {
    const ns = m.metadata.namespace ?? '';
    const off = { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: null } } };
    if (infra) await this.world.patchIgnoringMissing(DevMachines, ns, infra.metadata.name ?? '', off, merge);
    if (boot) await this.world.patchIgnoringMissing(KubeadmConfigs, ns, boot.metadata.name ?? '', off, merge);
    const pending = pendingHooksValue(m.metadata.annotations, UPDATE_MACHINE_HOOK, false);
    await this.world.patchIgnoringMissing(
      Machines,
      ns,
      m.metadata.name ?? '',
      { metadata: { annotations: { [UPDATE_IN_PROGRESS_ANNOTATION]: null, [PENDING_HOOKS_ANNOTATION]: pending ?? null } } },
      merge,
    );
    const fresh = await this.world.client.get<Machine>(Machines, ns, m.metadata.name ?? '');
    if (fresh) await this.setUpdating(fresh, updatingCondition(false));
  }

  /** Writes the machine's Updating condition when it changes. */
  private async setUpdating(m: Machine, c: ConditionInput): Promise<void> {
    const before = m.status?.conditions?.find((x) => x.type === c.type);
    if (before && before.status === c.status && before.reason === c.reason && (before.message ?? '') === (c.message ?? '')) return;
    const conditions = setCondition(m.status?.conditions, c, m.metadata.generation);
    await this.world.patchIgnoringMissing(Machines, m.metadata.namespace ?? '', m.metadata.name ?? '', { status: { conditions } });
  }
}
