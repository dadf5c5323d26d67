/** Optional persistence: a snapshot line followed by an append log of puts/deletes, compacted on start and as it grows. */
import { createWriteStream, existsSync, readFileSync, renameSync, writeFileSync, type WriteStream } from 'node:fs';
import type { Core, PersistOp } from './core.js';

type Obj = Record<string, unknown>;

interface Snapshot {
  t: 'snapshot';
  rv: number;
  objects: Array<{ gr: string; obj: Obj }>;
}

/** Loads state from `file` into `core` and keeps appending every mutation to it. */
export class Persistence {
  private stream: WriteStream | undefined;
  private appended = 0;
  private compacting = false;

  constructor(
    private file: string,
    private core: Core,
  ) {}

  /** Replays the file (if any), restores the resourceVersion counter, compacts, and starts the append log. */
  load(): void {
    if (existsSync(this.file)) {
      const text = readFileSync(this.file, 'utf8');
      const state = new Map<string, Map<string, Obj>>();
      let rv = 0;
      for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        let rec: Snapshot | PersistOp;
        try {
          rec = JSON.parse(line) as Snapshot | PersistOp;
        } catch {
          // A torn final line (crash mid-write) is dropped; everything before it is intact.
          continue;
        }
        if ('t' in rec && rec.t === 'snapshot') {
          state.clear();
          for (const o of rec.objects) {
            const m = state.get(o.gr) ?? new Map<string, Obj>();
            const meta = o.obj.metadata as Obj;
            m.set(meta.namespace ? `${String(meta.namespace)}/${String(meta.name)}` : String(meta.name), o.obj);
            state.set(o.gr, m);
          }
          rv = Math.max(rv, rec.rv);
        } else if ('op' in rec) {
          const m = state.get(rec.gr) ?? new Map<string, Obj>();
          if (rec.op === 'put') m.set(rec.key, rec.obj);
          else m.delete(rec.key);
          state.set(rec.gr, m);
          rv = Math.max(rv, rec.rv);
        }
      }
      for (const [gr, objs] of state) {
        const s = this.core.store(gr);
        for (const o of objs.values()) {
          const meta = o.metadata as Obj;
          s.restore(String(meta.namespace ?? ''), String(meta.name), o, Number(meta.resourceVersion));
          rv = Math.max(rv, Number(meta.resourceVersion));
        }
      }
      this.core.rv = Math.max(this.core.rv, rv);
      // History before the restart is gone, as after a kube-apiserver restart with a compacted etcd.
      this.core.historyFrom = this.core.rv;
      for (const s of this.core.stores.values()) s.floor = this.core.rv;
      this.core.reindex();
      this.core.registerStoredCrds();
    }
    this.compact();
  }

  /** Records one mutation. */
  append(op: PersistOp): void {
    if (!this.stream) return;
    if (op.op === 'put' && op.json !== undefined) {
      this.stream.write(`{"op":"put","gr":${JSON.stringify(op.gr)},"key":${JSON.stringify(op.key)},"rv":${op.rv},"obj":${op.json}}\n`);
    } else this.stream.write(`${JSON.stringify(op)}\n`);
    this.appended++;
    let total = 0;
    if (this.appended > 50000) {
      for (const s of this.core.stores.values()) total += s.objects.size;
      if (this.appended > Math.max(50000, total * 2)) this.compact();
    }
  }

  /** Writes a fresh snapshot atomically and restarts the log after it. */
  compact(): void {
    if (this.compacting) return;
    this.compacting = true;
    try {
      const old = this.stream;
      this.stream = undefined;
      old?.end();
      const objects: Array<{ gr: string; obj: Obj }> = [];
      for (const [gr, s] of this.core.stores) for (const e of s.objects.values()) objects.push({ gr, obj: e.obj });
      const snap: Snapshot = { t: 'snapshot', rv: this.core.rv, objects };
      const tmp = `${this.file}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(snap)}\n`);
      renameSync(tmp, this.file);
      this.stream = createWriteStream(this.file, { flags: 'a' });
      // A failing disk must not take the hosting process down; the in-memory state stays authoritative.
      this.stream.on('error', (e) => process.stderr.write(`local-apiserver: persistence to ${this.file} failed: ${e.message}\n`));
      this.appended = 0;
    } finally {
      this.compacting = false;
    }
  }

  /** Flushes and closes the log. */
  async close(): Promise<void> {
    const s = this.stream;
    this.stream = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => s.end(resolve));
  }
}
