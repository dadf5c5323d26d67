/** Watch streams: initial events, replay from the retained window, live fan-out, bookmarks, timeouts, 410 Gone. */
import type { ServerResponse } from 'node:http';
import type { Core } from './core.js';
import { ApiError, expired } from './errors.js';
import { apiVersionOf, type ResourceDef } from './resources.js';
import type { FieldSelector, LabelSelector } from './selectors.js';
import type { Watcher, WatchEvent } from './store.js';
import { toTable } from './table.js';

type Obj = Record<string, unknown>;

/** Parameters of one watch request. */
export interface WatchParams {
  def: ResourceDef;
  version: string;
  ns: string | undefined;
  resourceVersion: string | undefined;
  label: LabelSelector;
  field: FieldSelector;
  bookmarks: boolean;
  sendInitialEvents: boolean;
  timeoutSeconds: number;
  bookmarkIntervalMs: number;
  table?: { includeObject: string };
}

const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;
/** Queued watch lines are written at once beyond this size (an initial list of thousands of objects goes in pieces). */
const FLUSH_AT_CHARS = 256 * 1024;

/** Live watches, so faults can drop them and close() can end them. */
export const activeWatches = new Set<ServerResponse>();

/** Serves a watch on `res`; returns once the stream is set up (it ends on timeout, client close or drop). */
export function serveWatch(core: Core, p: WatchParams, res: ServerResponse): void {
  const { def, version } = p;
  const store = core.storeOf(def);
  const av = apiVersionOf(def.group, version);
  // A resource served from another's storage (events.k8s.io Events) is converted per event, never cached as stored.
  const view = def.sharedStorage?.read;
  const filtering = !p.label.empty || !p.field.empty;
  const matches = (o: Obj): boolean =>
    p.label.matches((o.metadata as Obj).labels as Record<string, string> | undefined) && p.field.matches(view ? view(o) : o);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
  res.flushHeaders();
  activeWatches.add(res);

  const objJson = (ev: WatchEvent): string => {
    if (view) return JSON.stringify(view(ev.obj));
    if (!ev.json) ev.json = new Map();
    // A replayed sealed event knows its apiVersion without parsing its object.
    const key = (ev.apiVersion ?? ev.obj.apiVersion) === av ? '' : version;
    let j = ev.json.get(key);
    if (j === undefined) {
      j = key === '' ? JSON.stringify(ev.obj) : JSON.stringify({ ...ev.obj, apiVersion: av });
      ev.json.set(key, j);
    }
    return j;
  };
  const line = (type: string, ev: WatchEvent): string => {
    if (p.table) {
      const o = view ? view(ev.obj) : ev.obj.apiVersion === av ? ev.obj : { ...ev.obj, apiVersion: av };
      return `{"type":"${type}","object":${JSON.stringify(toTable(def, version, [o], { resourceVersion: String((ev.obj.metadata as Obj).resourceVersion) }, p.table.includeObject))}}\n`;
    }
    return `{"type":"${type}","object":${objJson(ev)}}\n`;
  };
  const send = (ev: WatchEvent): void => {
    let type: string = ev.type;
    if (filtering) {
      const now = matches(ev.obj);
      if (ev.type === 'MODIFIED' && ev.prev) {
        const before = matches(ev.prev);
        if (now && !before) type = 'ADDED';
        else if (!now && before) type = 'DELETED';
        else if (!now) return;
      } else if (!now) return;
    }
    queue(line(type, ev));
  };
  // Lines wait for the end of the event loop's turn and go out in one write: each write is a TLS record and a
  // syscall (on loopback the kernel runs the reader's receive path in it), 36 % of the server's CPU when every event
  // was written on its own. Events of the requests served in one turn now share a write; their order is kept.
  let pending = '';
  let flushScheduled = false;
  const flush = (): void => {
    flushScheduled = false;
    if (pending === '') return;
    const data = pending;
    pending = '';
    if (res.destroyed || res.writableEnded) return;
    res.write(data);
    // A watcher that stops reading is cut off instead of buffering without bound (kube-apiserver closes it too).
    if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
  };
  const queue = (s: string): void => {
    pending += s;
    if (pending.length >= FLUSH_AT_CHARS) flush();
    else if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };
  const bookmark = (extra?: Obj): void => {
    queue(
      `{"type":"BOOKMARK","object":${JSON.stringify({ apiVersion: av, kind: def.kind, metadata: { resourceVersion: String(core.rv), ...(extra ?? {}) } })}}\n`,
    );
  };

  const rvParam = p.resourceVersion;
  const initial = p.sendInitialEvents || rvParam === undefined || rvParam === '' || rvParam === '0';
  if (initial) {
    const keys = store.sortedKeys(def.namespaced ? p.ns : undefined);
    for (const k of keys) {
      const e = store.objects.get(k);
      if (!e || (filtering && !matches(e.obj))) continue;
      queue(line('ADDED', { type: 'ADDED', rv: e.rv, obj: e.obj, ns: '' }));
    }
    if (p.sendInitialEvents && p.bookmarks) bookmark({ annotations: { 'k8s.io/initial-events-end': 'true' } });
  } else {
    const rv = Number(rvParam);
    if (!Number.isInteger(rv) || rv < 0) {
      const err = new ApiError(400, 'BadRequest', `invalid resource version: ${rvParam}`);
      res.end(`{"type":"ERROR","object":${JSON.stringify(err.toStatus())}}\n`);
      activeWatches.delete(res);
      return;
    }
    const events = store.eventsSince(rv);
    if (!events) {
      const err = expired(`too old resource version: ${rv} (${store.oldestAvailable()})`);
      res.end(`{"type":"ERROR","object":${JSON.stringify(err.toStatus())}}\n`);
      activeWatches.delete(res);
      return;
    }
    for (const ev of events) if (p.ns === undefined || !def.namespaced || ev.ns === p.ns) send(ev);
  }

  const watcher: Watcher = {
    ns: def.namespaced ? p.ns : undefined,
    label: p.label.equal,
    deliver: send,
    stop: () => {
      flush();
      finish();
      res.end();
    },
  };
  store.addWatcher(watcher);
  let bookmarkTimer: NodeJS.Timeout | undefined;
  if (p.bookmarks) bookmarkTimer = setInterval(() => bookmark(), p.bookmarkIntervalMs);
  const finish = (): void => {
    store.removeWatcher(watcher);
    if (bookmarkTimer) clearInterval(bookmarkTimer);
    clearTimeout(timeout);
    activeWatches.delete(res);
  };
  const timeout = setTimeout(() => {
    if (p.bookmarks) bookmark();
    flush();
    finish();
    res.end();
  }, p.timeoutSeconds * 1000);
  res.on('close', finish);
}
