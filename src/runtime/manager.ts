// The manager: one client, shared informers, controllers, leader election, events, metrics and probes per process.
import type { KubeObject, ResourceType } from '../api/kube.js';
import { resourceKey, resourceName } from '../api/kube.js';
import { Builder, type ControllerHost, type ControllerImpl } from './controller.js';
import { createEventRecorder, type FlushableEventRecorder } from './events.js';
import { startHealthServer, type HealthServer } from './health.js';
import { kubeMetricsAuthorizer } from './metrics-auth.js';
import { selfSignedCertificate } from './tls.js';
import { SharedInformer, type InformerOptions } from './informer.js';
import { ScopedInformer } from './scoped.js';
import { LeaderElector, type LeaderElectionOptions } from './leader.js';
import { errorFields, noopLogger } from './log.js';
import { createMetrics, instrumentClient, type RuntimeMetrics } from './metrics.js';
import type { WorkQueueOptions } from './queue.js';
import type { ControllerBuilder, Informer, KubeClient, Logger, Manager, ScopedCache } from './pure/types.js';

/** Leader election settings of a manager. */
export interface ManagerLeaderElection extends Pick<
  LeaderElectionOptions,
  'leaseName' | 'leaseNamespace' | 'identity' | 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'
> {
  enabled: boolean;
}

/** Options of `createManager`. */
export interface ManagerOptions {
  client: KubeClient;
  /** Scope every namespaced informer to this namespace (default: all namespaces). */
  namespace?: string;
  /** Component name: logger name, event source, lease holder prefix. */
  name: string;
  /** The events.k8s.io/v1 `action` recorded with each Event reason (default `Reconcile`). */
  eventAction?: (reason: string) => string;
  log?: Logger;
  leaderElection?: ManagerLeaderElection;
  /** Serve /metrics (and the probes) on this port; 0 = any free port. */
  metricsPort?: number;
  /** Serve /healthz, /readyz (and /metrics) on this port; may equal metricsPort. */
  healthPort?: number;
  /**
   * Serve /metrics over HTTPS (self-signed) to callers whose token passes a TokenReview and who may `get /metrics`
   * (SubjectAccessReview), as controller-runtime does; a separate health port then serves the probes only.
   */
  secureMetrics?: boolean;
  /** Address the metrics/health servers bind (default: every interface, as in a pod; 127.0.0.1 for a local demo). */
  bindAddress?: string;
  /** Keys reconciled in parallel per controller unless the builder says otherwise (default 1). */
  defaultConcurrency?: number;
  /** Informer tuning (watchdog, backoff) for every informer of the manager. */
  informer?: Omit<InformerOptions, 'namespace' | 'log' | 'onRestart'>;
  /** Work-queue backoff of every controller (default 5 ms .. 60 s). */
  queue?: Pick<WorkQueueOptions, 'baseDelayMs' | 'maxDelayMs'>;
  /** Metrics registry to use (default a new one per manager). */
  metrics?: RuntimeMetrics;
}

/** A Manager with the runtime's extras (metrics, readiness, bound ports). */
export interface RuntimeManager extends Manager {
  readonly name: string;
  readonly metrics: RuntimeMetrics;
  readonly events: FlushableEventRecorder;
  /** True when leader election is off or this process leads. */
  readonly isLeader: boolean;
  /** True once every informer created so far has synced. */
  readonly ready: boolean;
  /** Ports the health/metrics servers bound (useful with port 0). */
  readonly ports: { metrics?: number; health?: number };
  /** Resolves once every informer created so far has synced. */
  waitForSync(): Promise<void>;
}

/** Creates a manager; nothing runs until `start()`. */
export function createManager(opts: ManagerOptions): RuntimeManager {
  return new ManagerImpl(opts);
}

class ManagerImpl implements RuntimeManager, ControllerHost {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly events: FlushableEventRecorder;
  readonly namespace: string | undefined;
  readonly metrics: RuntimeMetrics;
  readonly name: string;
  readonly defaultConcurrency: number;
  readonly queueOptions: WorkQueueOptions | undefined;
  readonly ports: { metrics?: number; health?: number } = {};
  private readonly informers = new Map<string, SharedInformer>();
  /** Scoped caches by resource and label (runtime/scoped.ts): their scopes start on acquire, not with the manager. */
  private readonly scoped = new Map<string, ScopedInformer>();
  private readonly controllers: ControllerImpl[] = [];
  private readonly servers: HealthServer[] = [];
  private elector: LeaderElector | undefined;
  private started = false;
  private stopped = false;
  private leading = false;
  /** Serialises starting/stopping controllers on leadership changes. */
  private transition: Promise<void> = Promise.resolve();

  constructor(private readonly opts: ManagerOptions) {
    this.name = opts.name;
    this.namespace = opts.namespace;
    this.log = (opts.log ?? noopLogger).child({ manager: opts.name });
    this.metrics = opts.metrics ?? createMetrics();
    this.client = instrumentClient(opts.client, this.metrics);
    this.events = createEventRecorder(this.client, {
      component: opts.name,
      log: this.log,
      ...(opts.eventAction ? { eventAction: opts.eventAction } : {}),
    });
    this.defaultConcurrency = opts.defaultConcurrency ?? 1;
    this.queueOptions = opts.queue;
  }

  get isLeader(): boolean {
    return !this.opts.leaderElection?.enabled || this.leading;
  }

  get ready(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced);
  }

  async waitForSync(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.synced()));
  }

  informer<T extends KubeObject = KubeObject>(res: ResourceType): Informer<T> & SharedInformer<T> {
    const rk = resourceKey(res);
    let inf = this.informers.get(rk);
    if (!inf) {
      inf = new SharedInformer(this.client, res, {
        ...this.opts.informer,
        ...(this.namespace ? { namespace: this.namespace } : {}),
        log: this.log,
        onRestart: (reason) => this.metrics.watchRestarts.inc({ resource: resourceName(res), reason }),
      });
      this.informers.set(rk, inf);
      if (this.started && !this.stopped) inf.start();
    }
    return inf as unknown as SharedInformer<T>;
  }

  scopedInformer<T extends KubeObject = KubeObject>(res: ResourceType, labelKey: string): ScopedCache<T> {
    const k = `${resourceKey(res)}#${labelKey}`;
    let inf = this.scoped.get(k);
    if (!inf) {
      inf = new ScopedInformer(this.client, res, labelKey, {
        ...this.opts.informer,
        log: this.log,
        onRestart: (reason) => this.metrics.watchRestarts.inc({ resource: resourceName(res), reason }),
      });
      this.scoped.set(k, inf);
    }
    return inf as unknown as ScopedCache<T>;
  }

  controller<T extends KubeObject = KubeObject>(name: string): ControllerBuilder<T> {
    if (this.controllers.some((c) => c.name === name)) throw new Error(`manager ${this.name}: a controller named ${name} already exists`);
    return new Builder<T>(name, this);
  }

  register(c: ControllerImpl): void {
    this.controllers.push(c);
    if (this.started && !this.stopped && this.isLeader) this.startController(c);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.startServers();
    // Caches warm up before leadership, as in controller-runtime, so a new leader starts from synced state.
    for (const inf of this.informers.values()) inf.start();
    const le = this.opts.leaderElection;
    if (le?.enabled) {
      this.elector = new LeaderElector(this.client, {
        leaseName: le.leaseName,
        leaseNamespace: le.leaseNamespace,
        identity: le.identity ?? `${this.name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
        ...(le.leaseDurationMs !== undefined ? { leaseDurationMs: le.leaseDurationMs } : {}),
        ...(le.renewDeadlineMs !== undefined ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
        ...(le.retryPeriodMs !== undefined ? { retryPeriodMs: le.retryPeriodMs } : {}),
        log: this.log,
        onStartedLeading: () => {
          this.leading = true;
          this.metrics.leader.set(1);
          this.transition = this.transition.then(() => {
            if (!this.stopped) for (const c of this.controllers) this.startController(c);
          });
          return this.transition;
        },
        onStoppedLeading: () => {
          this.leading = false;
          this.metrics.leader.set(0);
          this.transition = this.transition.then(() => Promise.all(this.controllers.map((c) => c.stop())).then(() => undefined));
          return this.transition;
        },
      });
      this.elector.start();
    } else {
      for (const c of this.controllers) this.startController(c);
    }
    this.log.info(
      { namespace: this.namespace ?? '(all)', controllers: this.controllers.map((c) => c.name), leaderElection: !!le?.enabled },
      'manager started',
    );
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.elector?.stop();
    await this.transition;
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.all([...this.informers.values(), ...this.scoped.values()].map((i) => i.stop()));
    await this.events.flush();
    await Promise.all(this.servers.map((s) => s.close()));
    this.log.info('manager stopped');
  }

  private startController(c: ControllerImpl): void {
    void c.start().catch((err: unknown) => this.log.error({ ...errorFields(err), controller: c.name }, 'controller failed to start'));
  }

  private async startServers(): Promise<void> {
    const { metricsPort, healthPort, bindAddress } = this.opts;
    const isReady = (): boolean => this.ready;
    // The kubelet probes without credentials: authenticated metrics need a probe port of their own.
    if (this.opts.secureMetrics && (metricsPort === undefined || metricsPort === healthPort))
      throw new Error('secureMetrics needs a metrics port apart from the health port');
    const secure = this.opts.secureMetrics === true;
    const host = bindAddress !== undefined ? { host: bindAddress } : {};
    if (metricsPort !== undefined) {
      const auth = secure
        ? { tls: await selfSignedCertificate(this.opts.name), authorizeMetrics: kubeMetricsAuthorizer(this.opts.client) }
        : {};
      const s = await startHealthServer({ port: metricsPort, registry: this.metrics.registry, isReady, ...auth, ...host });
      this.servers.push(s);
      this.ports.metrics = s.port;
      if (healthPort === metricsPort) this.ports.health = s.port;
    }
    if (healthPort !== undefined && healthPort !== metricsPort) {
      // With secure metrics the metrics live behind authentication only: the probe port does not serve them.
      const s = await startHealthServer({ port: healthPort, ...(secure ? {} : { registry: this.metrics.registry }), isReady, ...host });
      this.servers.push(s);
      this.ports.health = s.port;
    }
  }
}
