// Lease-based leader election (coordination.k8s.io/v1), client-go semantics: expiry is judged by when this
// process last saw the lease record change (not by comparing clocks), writes use optimistic concurrency.
import { hostname } from 'node:os';
import { Leases, type KubeObject } from '../api/kube.js';
import { sleep } from './backoff.js';
import { isAlreadyExists, isConflict } from './pure/errors.js';
import { errorFields, noopLogger } from './log.js';
import type { KubeClient, Logger } from './pure/types.js';

/** A coordination.k8s.io/v1 Lease. */
export interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Options of a leader elector. */
export interface LeaderElectionOptions {
  leaseName: string;
  leaseNamespace: string;
  /** Unique identity of this candidate (default hostname + random suffix). */
  identity?: string;
  /** How long a lease is valid without renewal (default 15 s). */
  leaseDurationMs?: number;
  /** A leader that could not renew for this long steps down (default 10 s; must be < leaseDuration). */
  renewDeadlineMs?: number;
  /** Period of acquire/renew attempts (default 2 s). */
  retryPeriodMs?: number;
  onStartedLeading?: () => void | Promise<void>;
  onStoppedLeading?: () => void | Promise<void>;
  /** Called when the observed leader changes (including to this process). */
  onNewLeader?: (identity: string) => void;
  log?: Logger;
}

/** metav1.MicroTime format: RFC 3339 with microseconds (`2006-01-02T15:04:05.000000Z`). */
export const toMicroTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** Campaigns for a Lease until stopped; leads while it can renew. */
export class LeaderElector {
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly log: Logger;
  private readonly stopCtl = new AbortController();
  private loop: Promise<void> | undefined;
  private leading = false;
  private lastRenew = 0;
  private observed: { record: string; at: number } | undefined;
  private lastPollAt: number | undefined;
  private lease: Lease | undefined;
  private leader = '';

  constructor(
    private readonly client: KubeClient,
    private readonly opts: LeaderElectionOptions,
  ) {
    this.identity = opts.identity ?? `${hostname()}_${Math.random().toString(36).slice(2, 10)}`;
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (this.renewDeadlineMs >= this.leaseDurationMs)
      throw new Error('leader election: renewDeadlineMs must be shorter than leaseDurationMs');
    this.log = (opts.log ?? noopLogger).child({ lease: `${opts.leaseNamespace}/${opts.leaseName}`, identity: this.identity });
  }

  /** True while this process holds the lease. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** The identity of the current leader as last observed ('' when none). */
  get currentLeader(): string {
    return this.leader;
  }

  /** Starts campaigning in the background. */
  start(): void {
    if (this.loop) return;
    this.log.info({ leaseDurationMs: this.leaseDurationMs, retryPeriodMs: this.retryPeriodMs }, 'campaigning for leadership');
    this.loop = this.run();
  }

  /** Stops campaigning; a leader releases the lease (so another candidate takes over at once) and steps down. */
  async stop(): Promise<void> {
    this.stopCtl.abort();
    await this.loop;
    if (this.leading) {
      await this.release();
      await this.stepDown();
    }
  }

  private async run(): Promise<void> {
    const signal = this.stopCtl.signal;
    while (!signal.aborted) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.log.warn(errorFields(err), 'lease acquire/renew failed');
      }
      if (signal.aborted) break;
      const now = Date.now();
      if (ok) {
        this.lastRenew = now;
        if (!this.leading) {
          this.leading = true;
          this.log.info('became leader');
          await this.callback(this.opts.onStartedLeading);
        }
      } else if (this.leading && now - this.lastRenew > this.renewDeadlineMs) {
        this.log.warn({ sinceRenewMs: now - this.lastRenew }, 'could not renew the lease in time; stepping down');
        await this.stepDown();
      }
      await sleep(this.retryPeriodMs, signal);
    }
  }

  private async stepDown(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    await this.callback(this.opts.onStoppedLeading);
  }

  private async callback(cb: (() => void | Promise<void>) | undefined): Promise<void> {
    try {
      await cb?.();
    } catch (err) {
      this.log.error(errorFields(err), 'leader election callback threw');
    }
  }

  private setLeader(id: string): void {
    if (id && id !== this.leader) {
      this.leader = id;
      this.opts.onNewLeader?.(id);
    } else if (!id) this.leader = '';
  }

  /** One round: true when this process holds the lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { leaseName: name, leaseNamespace: namespace } = this.opts;
    const now = new Date();
    const durationSeconds = Math.max(1, Math.ceil(this.leaseDurationMs / 1000));
    const cur = await this.client.get<Lease>(Leases, namespace, name);
    if (!cur) {
      const lease: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
        spec: {
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: toMicroTime(now),
          renewTime: toMicroTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        this.lease = await this.client.create(Leases, lease);
      } catch (err) {
        if (isAlreadyExists(err)) return false;
        throw err;
      }
      this.setLeader(this.identity);
      return true;
    }
    const spec = cur.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder}|${spec.renewTime ?? ''}|${spec.leaseDurationSeconds ?? ''}`;
    const pollAt = Date.now();
    if (!this.observed || this.observed.record !== record) {
      // The record changed between our previous look and now: trust its renewTime inside that window only, so
      // that a skewed clock can neither shorten nor stretch the lease beyond one retry period.
      const renewed = Date.parse(spec.renewTime ?? '');
      const since = this.lastPollAt ?? pollAt;
      this.observed = { record, at: Number.isFinite(renewed) ? Math.min(pollAt, Math.max(since, renewed)) : pollAt };
    }
    this.lastPollAt = pollAt;
    this.setLeader(holder);
    const durationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    const expired = this.observed.at + durationMs < Date.now();
    if (holder && holder !== this.identity && !expired) return false;

    const next: Lease = structuredClone(cur);
    const isTransition = holder !== this.identity;
    next.spec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: toMicroTime(now),
      acquireTime: isTransition ? toMicroTime(now) : (spec.acquireTime ?? toMicroTime(now)),
      leaseTransitions: (spec.leaseTransitions ?? 0) + (isTransition ? 1 : 0),
    };
    try {
      this.lease = await this.client.update(Leases, next);
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
    if (isTransition) this.log.info({ previous: holder || undefined }, 'acquired the lease');
    this.setLeader(this.identity);
    return true;
  }

  /** Gives the lease up so that another candidate does not wait for it to expire. */
  private async release(): Promise<void> {
    try {
      const cur = await this.client.get<Lease>(Leases, this.opts.leaseNamespace, this.opts.leaseName);
      if (!cur || cur.spec?.holderIdentity !== this.identity) return;
      const next = structuredClone(cur);
      next.spec = { ...cur.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: toMicroTime(new Date()) };
      await this.client.update(Leases, next);
      this.log.info('released the lease');
    } catch (err) {
      this.log.warn(errorFields(err), 'could not release the lease; it will expire');
    }
  }
}
