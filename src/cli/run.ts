// `inplace run [component ...]`: one process, one manager, the named controllers (all when none is named).
import { hostname } from 'node:os';
import type { Component } from '../runtime/pure/types.js';
import { createLogger, createManager, type ManagerOptions } from '../runtime/index.js';
import { InPlaceUpdatePlans } from '../api/index.js';
import { COMPONENTS, componentsTaking, type ComponentRunOptions } from '../components.js';
import { call, connect, explainApiError } from './kube.js';
import { stopRequested } from './procs.js';
import { loadWritePolicy } from './write-policy.js';
import { loadAlertGatePolicy } from './alert-gate-policy.js';
import { applyHeapGrowing, heapGrowingOption } from './heap.js';
import { parseGoDuration } from '../api/duration.js';
import { eventAction } from '../api/event-actions.js';
import {
  CliError,
  concurrencyOption,
  ExitCode,
  flag,
  KUBE_OPTIONS_HELP,
  kubeOptions,
  portOption,
  str,
  UsageError,
  type ParsedArgs,
  type Verb,
} from './verb.js';

export type { ComponentRunOptions } from '../components.js';

/** Longest --unreported-task-timeout and --abort-grace-period: a day (a timer beyond ~24.8 days does not fire, and no updater is that slow). */
const MAX_TASK_DURATION_MS = 86_400_000;

/**
 * A machine-task-controller duration flag (1s..24h, Go syntax), refused when no named component takes it: a tuning
 * flag that silently does nothing would mislead whoever sets it.
 */
function durationOption(args: Parameters<typeof str>[0], option: string, names: readonly string[]): number | undefined {
  const raw = str(args, option);
  if (raw === undefined) return undefined;
  let ms: number;
  try {
    ms = parseGoDuration(raw);
  } catch {
    ms = NaN;
  }
  if (!(ms >= 1000) || ms > MAX_TASK_DURATION_MS)
    throw new UsageError(`--${option} must be a duration between 1s and 24h such as 90s or 5m, got "${raw}"`);
  if (!names.includes('machine-task-controller'))
    throw new UsageError(
      `--${option} applies to machine-task-controller; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take it`,
    );
  return ms;
}

/**
 * How far (percent) V8 lets a controller's heap grow beyond its live data after a full collection
 * (`--heap-growing-percent`); 0 = V8's own factor. With a heap limit of 2 GiB or more V8's own reaches 300 %: over 20
 * plans at 1,003 machines the plan controller's RSS swung 142 → 302 MiB (worst 210 with 100, 177 with 20). Not the
 * default: at 10,003 machines the plan controller used 32.2 CPU-s with 20 and 34.2 with 100 against 27.4–28.9 with
 * V8's own (bench/results/SCALING.md, "Controllers' memory"), and its CPU per reconcile sets the plan's cycle.
 */
export const DEFAULT_RUN_HEAP_GROWING_PERCENT = 0;

/** The controller components `run` knows, loaded on demand (from the one component list, src/components.ts). */
export const COMPONENT_LOADERS: Readonly<Record<string, (opts?: ComponentRunOptions) => Promise<Component>>> = Object.fromEntries(
  COMPONENTS.map((c) => [c.name, c.load]),
);

/** The components whose concurrency `--concurrency` sets (the others' setup takes no such option yet). */
export const CONCURRENCY_COMPONENTS: readonly string[] = componentsTaking('concurrency');
/** The components that enforce the write policy: validation (plan-controller) and the commit (machine-task-controller). */
export const WRITE_POLICY_COMPONENTS: readonly string[] = componentsTaking('writePolicy');
/** The components that enforce the alert-gate policy: plan validation and the call out (plan-controller), campaigns. */
export const ALERT_GATE_POLICY_COMPONENTS: readonly string[] = componentsTaking('alertGatePolicy');

/** `inplace run`. */
export const runVerb: Verb = {
  name: 'run',
  summary: 'Run controllers against a cluster',
  // From the one component list: a component added there is in the usage without anyone remembering to add it here.
  help: `Usage: inplace run [${COMPONENTS.map((c) => c.name).join('|')} ...] [options]

Runs the named controllers in this process (all but ${COMPONENTS.filter((c) => c.optIn)
    .map((c) => c.name)
    .join(', ')} when none is named) against the cluster of
the kubeconfig, until SIGINT/SIGTERM. In a cluster each component runs in its own Deployment
(see npm run synth).

Options:
  -n, --namespace NS      watch only this namespace (default: all namespaces)
  --leader-elect          take part in Lease leader election; only the leader reconciles
  --lease-namespace NS    namespace of the Lease (default: $POD_NAMESPACE, else --namespace, else default)
  --metrics-port N        serve Prometheus /metrics on this port (0 = any free port; default: off)
  --health-port N         serve /healthz and /readyz on this port (default: off)
  --metrics-secure        serve /metrics over HTTPS (self-signed) to callers allowed to get /metrics
                          (TokenReview + SubjectAccessReview, as controller-runtime); needs its own --health-port
  --bind-address ADDR     address the metrics and health servers listen on (default: every interface)
  --log-level LEVEL       debug, info, warn, error (default: $LOG_LEVEL or info)
  --concurrency N         MachineUpdates the machine-task-controller reconciles in parallel (default 32);
                          the plan-controller and mhc-extension do not take it
  --write-policy FILE     which JSON pointers plans may write (YAML: allow/deny prefixes per selectResource),
                          for the plan-controller and machine-task-controller; default: below /spec outside the
                          never-list, no labels or annotations (docs/operations.md)
  --alert-gate-policy FILE
                          which alert endpoints plans may call and which Secrets they may send there (YAML:
                          endpoints: [{url, secrets: [namespace/name]}]), for the plan-controller and
                          campaign-controller; default: none, every spec.alertGate is refused (docs/operations.md)
  --unreported-task-timeout DURATION
                          machine-task-controller: how long a task may go without a first status from any
                          updater before its MachineUpdate (and plan) says no updater reports on it, e.g.
                          90s, 5m (default 2m); nothing fails or commits meanwhile
  --abort-grace-period DURATION
                          machine-task-controller: how long an updater has to end a task it was asked to abort
                          (abort, plan deletion, supersede) before the platform gives up on it: the machine ends
                          aborted (AbortTimedOut) and the plan's status.givenUp names it (default 5m, 1s..24h)
  --finished-plans-per-cluster N
                          plan-controller: finished plans per cluster that keep their MachineUpdates and tasks;
                          older plans' records are deleted, the plans stay with their status (default 3)
  --prune-finished-plans  plan-controller: delete the plans beyond that limit too (default: a plan is deleted
                          only by its own spec.ttlSecondsAfterFinished, or when a campaign created it)
  --heap-growing-percent N
                          let V8's heap grow N % beyond the live data after a full collection (default
                          ${DEFAULT_RUN_HEAP_GROWING_PERCENT} = V8's own factor, up to 300 % when the heap limit is 2 GiB or more;
                          100 bounds the RSS at about twice the live data, at some CPU)
  --extension-port N      runtime-extension: HTTPS port of Cluster API's in-place update hooks (default 9443)
  --cert-dir DIR          runtime-extension: tls.crt and tls.key to serve (default: a self-signed certificate)
${KUBE_OPTIONS_HELP}`,
  options: {
    ...kubeOptions,
    namespace: { type: 'string', short: 'n' },
    'leader-elect': { type: 'boolean' },
    'lease-namespace': { type: 'string' },
    'metrics-port': { type: 'string' },
    'health-port': { type: 'string' },
    'metrics-secure': { type: 'boolean' },
    'bind-address': { type: 'string' },
    'log-level': { type: 'string' },
    concurrency: { type: 'string' },
    'write-policy': { type: 'string' },
    'alert-gate-policy': { type: 'string' },
    'finished-plans-per-cluster': { type: 'string' },
    'prune-finished-plans': { type: 'boolean' },
    'unreported-task-timeout': { type: 'string' },
    'abort-grace-period': { type: 'string' },
    'heap-growing-percent': { type: 'string' },
    'extension-port': { type: 'string' },
    'cert-dir': { type: 'string' },
  },
  async run(args, io) {
    const names = args.positionals.length > 0 ? [...new Set(args.positionals)] : COMPONENTS.filter((c) => !c.optIn).map((c) => c.name);
    const unknown = names.filter((n) => !(n in COMPONENT_LOADERS));
    if (unknown.length > 0)
      throw new UsageError(`unknown component "${unknown[0]}"; components are ${Object.keys(COMPONENT_LOADERS).join(', ')}`);
    const metricsPort = portOption(args, 'metrics-port');
    const healthPort = portOption(args, 'health-port');
    // The kubelet probes without credentials: authenticated metrics need a probe port of their own.
    if (flag(args, 'metrics-secure') && (metricsPort === undefined || healthPort === undefined || metricsPort === healthPort)) {
      throw new UsageError('--metrics-secure needs --metrics-port and a different --health-port');
    }
    const runOpts = componentRunOptions(args, names);
    const { concurrency } = runOpts;
    const heapGrowing = heapGrowingOption(str(args, 'heap-growing-percent')) ?? DEFAULT_RUN_HEAP_GROWING_PERCENT;
    applyHeapGrowing(heapGrowing);
    const conn = connect(args, `inplace-${names.length === 1 ? names[0] : 'controllers'}`);
    const name = names.length === 1 ? names[0]! : 'inplace-controllers';
    const namespace = str(args, 'namespace');
    const log = createLogger({ name, ...(str(args, 'log-level') ? { level: str(args, 'log-level') } : {}) });
    const components = await Promise.all(names.map((n) => COMPONENT_LOADERS[n]!(runOpts)));
    const mgr = createManager({
      client: conn.client,
      name,
      eventAction,
      log,
      ...(namespace ? { namespace } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
      ...(healthPort !== undefined ? { healthPort } : {}),
      ...(flag(args, 'metrics-secure') ? { secureMetrics: true } : {}),
      ...(str(args, 'bind-address') ? { bindAddress: str(args, 'bind-address') } : {}),
      ...leaderElectionOf(args, name, namespace),
    });
    // Fail fast with a clear message rather than retrying forever against a wrong or empty cluster.
    await call(conn, InPlaceUpdatePlans, () => conn.client.list(InPlaceUpdatePlans, namespace, { limit: 1 }));
    try {
      for (const c of components) await c.setup(mgr);
      await mgr.start();
    } catch (e) {
      await mgr.stop().catch(() => undefined);
      for (const c of components) await (c as { close?: () => Promise<void> }).close?.().catch(() => undefined);
      conn.client.close();
      const explained = explainApiError(e, conn);
      if (explained instanceof CliError) throw explained;
      throw new CliError(`starting ${names.join(', ')} failed: ${(e as Error).message}`);
    }
    log.info(
      {
        components: names,
        ...(concurrency !== undefined ? { concurrency } : {}),
        namespace: namespace ?? '(all)',
        server: conn.client.server,
        ports: mgr.ports,
        leaderElection: flag(args, 'leader-elect'),
      },
      'started',
    );
    const why = await stopRequested(io.signal);
    log.info({ reason: why }, 'stopping');
    await mgr.stop();
    for (const c of components) await (c as { close?: () => Promise<void> }).close?.();
    conn.client.close();
    return ExitCode.ok;
  },
};

/** The components' options from the flags; a flag none of `names` takes is refused (it would silently do nothing). */
function componentRunOptions(args: ParsedArgs, names: readonly string[]): ComponentRunOptions {
  const concurrency = concurrencyOption(args);
  // A tuning flag that silently does nothing would mislead whoever sizes the deployment.
  if (concurrency !== undefined && !names.some((n) => CONCURRENCY_COMPONENTS.includes(n))) {
    throw new UsageError(
      `--concurrency applies to ${CONCURRENCY_COMPONENTS.join(', ')}; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take it`,
    );
  }
  const policyFile = str(args, 'write-policy');
  if (policyFile !== undefined && !names.some((n) => WRITE_POLICY_COMPONENTS.includes(n))) {
    throw new UsageError(
      `--write-policy applies to ${WRITE_POLICY_COMPONENTS.join(', ')}; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take it`,
    );
  }
  const writePolicy = policyFile !== undefined ? loadWritePolicy(policyFile) : undefined;
  const gatePolicyFile = str(args, 'alert-gate-policy');
  if (gatePolicyFile !== undefined && !names.some((n) => ALERT_GATE_POLICY_COMPONENTS.includes(n))) {
    throw new UsageError(
      `--alert-gate-policy applies to ${ALERT_GATE_POLICY_COMPONENTS.join(', ')}; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take it`,
    );
  }
  const alertGatePolicy = gatePolicyFile !== undefined ? loadAlertGatePolicy(gatePolicyFile) : undefined;
  const keep = str(args, 'finished-plans-per-cluster');
  const finishedPlansPerCluster = keep === undefined ? undefined : /^[0-9]+$/.test(keep) ? Number(keep) : NaN;
  if (finishedPlansPerCluster !== undefined && !Number.isSafeInteger(finishedPlansPerCluster))
    throw new UsageError(`--finished-plans-per-cluster must be a number of plans (0 or more), got "${keep}"`);
  if (finishedPlansPerCluster !== undefined && !names.includes('plan-controller'))
    throw new UsageError(
      `--finished-plans-per-cluster applies to plan-controller; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take it`,
    );
  const pruneFinishedPlans = flag(args, 'prune-finished-plans');
  if (pruneFinishedPlans && !names.includes('plan-controller'))
    throw new UsageError(
      `--prune-finished-plans applies to plan-controller; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take it`,
    );
  const unreportedTaskMs = durationOption(args, 'unreported-task-timeout', names);
  const abortGraceMs = durationOption(args, 'abort-grace-period', names);
  const extensionPort = portOption(args, 'extension-port');
  const certDir = str(args, 'cert-dir');
  if ((extensionPort !== undefined || certDir !== undefined) && !names.includes('runtime-extension'))
    throw new UsageError(
      `--extension-port and --cert-dir apply to runtime-extension; ${names.join(', ')} do${names.length === 1 ? 'es' : ''} not take them`,
    );
  return {
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(writePolicy ? { writePolicy } : {}),
    ...(alertGatePolicy ? { alertGatePolicy } : {}),
    ...(finishedPlansPerCluster !== undefined ? { finishedPlansPerCluster } : {}),
    ...(pruneFinishedPlans ? { pruneFinishedPlans } : {}),
    ...(unreportedTaskMs !== undefined ? { unreportedTaskMs } : {}),
    ...(abortGraceMs !== undefined ? { abortGraceMs } : {}),
    ...(extensionPort !== undefined ? { extensionPort } : {}),
    ...(certDir !== undefined ? { certDir } : {}),
    ...(str(args, 'bind-address') ? { bindAddress: str(args, 'bind-address') } : {}),
  };
}

/** The manager's leader election with --leader-elect: one Lease per component set, one identity per process. */
function leaderElectionOf(args: ParsedArgs, name: string, namespace: string | undefined): Pick<ManagerOptions, 'leaderElection'> {
  if (!flag(args, 'leader-elect')) return {};
  const leaseNamespace = str(args, 'lease-namespace') ?? process.env['POD_NAMESPACE'] ?? namespace ?? 'default';
  return {
    leaderElection: {
      enabled: true,
      leaseName: `inplace-${name}`.replace(/^inplace-inplace-/, 'inplace-'),
      leaseNamespace,
      identity: `${process.env['POD_NAME'] ?? hostname()}_${process.pid}`,
    },
  };
}
