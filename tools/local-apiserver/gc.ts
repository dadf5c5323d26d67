/** The garbage collector: ownerReference indexes, background/foreground/orphan propagation, dangling owners. */
import type { Core } from './core.js';
import type { ResourceDef } from './resources.js';
import { grKey } from './resources.js';
import type { Entry } from './store.js';

type Obj = Record<string, unknown>;

/** Finalizer of a foreground deletion. */
export const FINALIZER_FOREGROUND = 'foregroundDeletion';
/** Finalizer of an orphaning deletion. */
export const FINALIZER_ORPHAN = 'orphan';

/** Tracks owners and dependents and acts like kube-controller-manager's garbage collector, asynchronously. */
export class GarbageCollector {
  /** owner uid -> dependents (gr + key). */
  private dependents = new Map<string, Set<string>>();
  /** uid -> gr + key, for owner lookups. */
  private byUid = new Map<string, string>();
  private queue = new Set<string>();
  private scheduled = false;

  constructor(private core: Core) {}

  /** Entries of each index (for /metrics and tests: they must follow the live objects, not the deleted ones). */
  sizes(): { owners: number; uids: number; queued: number } {
    return { owners: this.dependents.size, uids: this.byUid.size, queued: this.queue.size };
  }

  /** Indexes a written object (before: its previous state). */
  written(gr: string, key: string, before: Obj | undefined, after: Obj): void {
    const bm = before?.metadata as Obj | undefined;
    const am = after.metadata as Obj;
    // A version that kept its uid and the very owner references of the version before (shared, share.ts: most writes)
    // changes neither index; this ran on every write.
    if (bm !== undefined && bm.uid === am.uid && bm.ownerReferences === am.ownerReferences) return;
    this.byUid.set(String(am.uid), `${gr}|${key}`);
    this.indexOwners(gr, key, before, after);
  }

  /** Un-indexes a removed object and wakes whoever waits on it. */
  removed(gr: string, key: string, finalObj: Obj): void {
    this.indexOwners(gr, key, finalObj, undefined);
    const uid = (finalObj.metadata as Obj).uid as string | undefined;
    if (uid) this.byUid.delete(uid);
    if (uid && this.dependents.has(uid)) this.enqueue(uid);
    // An owner waiting in foreground deletion re-checks once a dependent is gone.
    for (const r of ((finalObj.metadata as Obj).ownerReferences as Obj[] | undefined) ?? []) {
      const owner = this.findOwnerAnywhere(String(r.uid));
      if (owner && (owner.entry.obj.metadata as Obj).deletionTimestamp) this.enqueue(String(r.uid));
    }
  }

  private indexOwners(gr: string, key: string, before: Obj | undefined, after: Obj | undefined): void {
    const owners = (o: Obj | undefined): string[] => {
      const refs = o ? ((o.metadata as Obj | undefined)?.ownerReferences as Obj[] | undefined) : undefined;
      return Array.isArray(refs) ? refs.map((r) => String(r.uid)) : [];
    };
    const b = owners(before);
    const a = owners(after);
    if (!b.length && !a.length) return;
    const id = `${gr}|${key}`;
    for (const u of b)
      if (!a.includes(u)) {
        const s = this.dependents.get(u);
        s?.delete(id);
        if (s && s.size === 0) this.dependents.delete(u);
      }
    for (const u of a) {
      let s = this.dependents.get(u);
      if (!s) {
        s = new Set();
        this.dependents.set(u, s);
      }
      s.add(id);
    }
    if (after && a.some((u) => !b.includes(u))) for (const u of a) this.enqueue(u);
  }

  /** Schedules a GC pass around an owner uid (batched). */
  enqueue(uid: string): void {
    this.queue.add(uid);
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      const uids = [...this.queue];
      this.queue.clear();
      if (this.core.closed) return;
      for (const u of uids) this.core.safely(() => this.collect(u));
    }, 5).unref();
  }

  private findByUid(uid: string, ref?: Obj, dependentNs?: string): { def: ResourceDef; entry: Entry; ns: string } | undefined {
    if (!ref) return undefined;
    const def = this.core.resolveKind(String(ref.apiVersion), String(ref.kind));
    if (!def) return undefined;
    const ns = def.namespaced ? (dependentNs ?? '') : '';
    const e = this.core.store(grKey(def.group, def.plural)).get(ns, String(ref.name));
    if (!e || (e.obj.metadata as Obj).uid !== uid) return undefined;
    return { def, entry: e, ns };
  }

  /** Garbage-collects around one owner uid: dependents of a vanished owner, foreground/orphan finalization. */
  private collect(ownerUid: string): void {
    const deps = [...(this.dependents.get(ownerUid) ?? [])];
    // Find the owner (if it still exists) through any dependent's reference.
    let owner: { def: ResourceDef; entry: Entry; ns: string } | undefined;
    let ownerResolvable = false;
    for (const d of deps) {
      const [gr, key] = d.split('|') as [string, string];
      const e = this.core.store(gr).objects.get(key);
      if (!e) continue;
      const ref = (((e.obj.metadata as Obj).ownerReferences as Obj[] | undefined) ?? []).find((r) => r.uid === ownerUid);
      if (!ref) continue;
      if (this.core.resolveKind(String(ref.apiVersion), String(ref.kind))) ownerResolvable = true;
      owner = this.findByUid(ownerUid, ref, String((e.obj.metadata as Obj).namespace ?? ''));
      break;
    }
    if (!owner) owner = this.findOwnerAnywhere(ownerUid);
    const ownerMeta = owner ? (owner.entry.obj.metadata as Obj) : undefined;
    const ownerFins = (ownerMeta?.finalizers as string[] | undefined) ?? [];
    const orphaning = ownerMeta?.deletionTimestamp && ownerFins.includes(FINALIZER_ORPHAN);
    const foreground = ownerMeta?.deletionTimestamp && ownerFins.includes(FINALIZER_FOREGROUND);
    if (orphaning) {
      for (const d of deps) this.dropOwnerRef(d, ownerUid);
      this.core.removeFinalizer(grKey(owner!.def.group, owner!.def.plural), owner!.ns, String(ownerMeta!.name), FINALIZER_ORPHAN);
      return;
    }
    if (foreground) {
      let blocking = 0;
      for (const d of deps) {
        const [gr, key] = d.split('|') as [string, string];
        const e = this.core.store(gr).objects.get(key);
        const def = this.core.resources.get(gr);
        if (!e || !def) continue;
        const ref = (((e.obj.metadata as Obj).ownerReferences as Obj[] | undefined) ?? []).find((r) => r.uid === ownerUid);
        if (ref?.blockOwnerDeletion === true) blocking++;
        if (!(e.obj.metadata as Obj).deletionTimestamp) {
          const m = e.obj.metadata as Obj;
          if (this.hasOtherLiveOwner(e.obj, ownerUid)) {
            this.dropOwnerRef(d, ownerUid);
            if (ref?.blockOwnerDeletion === true) blocking--;
            continue;
          }
          try {
            this.core.delete(def, String(m.namespace ?? ''), String(m.name), { propagationPolicy: 'Foreground' });
          } catch {
            /* gone */
          }
        }
      }
      if (blocking === 0)
        this.core.removeFinalizer(grKey(owner!.def.group, owner!.def.plural), owner!.ns, String(ownerMeta!.name), FINALIZER_FOREGROUND);
      return;
    }
    if (owner) return;
    if (!ownerResolvable) return;
    for (const d of deps) {
      const [gr, key] = d.split('|') as [string, string];
      const e = this.core.store(gr).objects.get(key);
      const def = this.core.resources.get(gr);
      if (!e || !def) continue;
      if (this.hasOtherLiveOwner(e.obj, ownerUid)) {
        this.dropOwnerRef(d, ownerUid);
        continue;
      }
      const m = e.obj.metadata as Obj;
      if (m.deletionTimestamp) continue;
      try {
        this.core.delete(def, String(m.namespace ?? ''), String(m.name), { propagationPolicy: 'Background' });
      } catch {
        /* gone */
      }
    }
  }

  private findOwnerAnywhere(uid: string): { def: ResourceDef; entry: Entry; ns: string } | undefined {
    const id = this.byUid.get(uid);
    if (!id) return undefined;
    const [gr, key] = id.split('|') as [string, string];
    const def = this.core.resources.get(gr);
    const entry = this.core.store(gr).objects.get(key);
    if (!def || !entry) return undefined;
    return { def, entry, ns: def.namespaced ? String((entry.obj.metadata as Obj).namespace) : '' };
  }

  private hasOtherLiveOwner(obj: Obj, exceptUid: string): boolean {
    const refs = ((obj.metadata as Obj).ownerReferences as Obj[] | undefined) ?? [];
    const ns = String((obj.metadata as Obj).namespace ?? '');
    return refs.some((r) => {
      if (r.uid === exceptUid) return false;
      if (!this.core.resolveKind(String(r.apiVersion), String(r.kind))) return true;
      const o = this.findByUid(String(r.uid), r, ns);
      return !!o && !(o.entry.obj.metadata as Obj).deletionTimestamp;
    });
  }

  private dropOwnerRef(depId: string, ownerUid: string): void {
    const [gr, key] = depId.split('|') as [string, string];
    this.core.dropOwnerRef(gr, key, ownerUid);
  }
}
