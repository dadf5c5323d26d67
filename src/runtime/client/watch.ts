// A watch over the REST client's transport: one long-running GET whose newline-delimited JSON events are handed to
// the caller as they arrive; the handle is returned before the response so that a quiet watch can still be aborted.
import type http from 'node:http';
import { resourceName, type KubeObject, type ResourceType } from '../../api/kube.js';
import { KubeApiError } from '../pure/errors.js';
import type { WatchEvent, WatchHandle, WatchOptions } from '../pure/types.js';
import { parseStatus, type Agents, type Auth, type Transport } from './transport.js';

/** What a watch asks for. */
export interface WatchRequest<T extends KubeObject> {
  res: ResourceType;
  namespace: string | undefined;
  /** The collection path of `res` in `namespace`. */
  path: string;
  opts: WatchOptions;
  onEvent: (e: WatchEvent<T>) => void;
}

/** The query string of a watch. */
function watchQuery(opts: WatchOptions): URLSearchParams {
  const q = new URLSearchParams({ watch: 'true' });
  if (opts.resourceVersion !== undefined) q.set('resourceVersion', opts.resourceVersion);
  if (opts.labelSelector) q.set('labelSelector', opts.labelSelector);
  if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector);
  if (opts.allowWatchBookmarks) q.set('allowWatchBookmarks', 'true');
  if (opts.timeoutSeconds !== undefined) q.set('timeoutSeconds', String(opts.timeoutSeconds));
  return q;
}

/**
 * Starts a watch. Running watches are kept in `running` (so that the client's close() aborts them); the handle's
 * `done` settles once when the stream ends, fails, or is aborted.
 */
export async function openWatch<T extends KubeObject>(
  t: Transport,
  running: Set<http.ClientRequest>,
  w: WatchRequest<T>,
): Promise<WatchHandle> {
  const operation = `watch ${resourceName(w.res)}${w.namespace && w.res.namespaced ? ` in ${w.namespace}` : ''}`;
  const started = performance.now();
  let a: Agents;
  let au: Auth;
  try {
    [a, au] = await Promise.all([t.getAgents(), t.getAuth()]);
  } catch (err) {
    throw new KubeApiError(operation, 0, undefined, err);
  }
  const req = t.mod.request(t.target(`${w.path}?${watchQuery(w.opts).toString()}`, au.base, a.watch, 'GET'));
  running.add(req);
  const state = new WatchState(operation, req, () => running.delete(req));
  req.on('error', (err) => state.finish(err));
  // The handle is returned before the response arrives: a server may hold back the headers of a quiet
  // watch, and the caller must be able to abort (or time out) such a watch all the same.
  req.on('response', (stream) => {
    const code = stream.statusCode ?? 0;
    t.onRequest?.({ verb: 'watch', resource: resourceName(w.res), code, durationMs: performance.now() - started });
    if (code !== 200) failWith(state, stream, code);
    else streamEvents(state, stream, w.onEvent);
  });
  req.end();
  return { abort: () => state.abort(), done: state.done };
}

/** The settle-once outcome of one watch. */
class WatchState {
  aborted = false;
  settled = false;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private rejectDone!: (e: unknown) => void;

  constructor(
    readonly operation: string,
    readonly req: http.ClientRequest,
    private readonly forget: () => void,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // The caller may attach its handler later; an early failure must not count as an unhandled rejection.
    this.done.catch(() => undefined);
  }

  finish(err?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.forget();
    if (err && !this.aborted) this.rejectDone(err instanceof KubeApiError ? err : new KubeApiError(this.operation, 0, undefined, err));
    else this.resolveDone();
  }

  abort(): void {
    if (this.settled) return;
    this.aborted = true;
    this.req.destroy();
    this.finish();
  }
}

/** A refused watch: its Status body becomes the error. */
function failWith(state: WatchState, stream: http.IncomingMessage, code: number): void {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => state.finish(new KubeApiError(state.operation, code, parseStatus(Buffer.concat(chunks).toString('utf8'), code))));
  stream.on('error', (err) => state.finish(err));
}

/** Feeds each event line of an accepted watch to `onEvent`; a malformed line or a throwing handler ends the watch. */
function streamEvents<T extends KubeObject>(state: WatchState, stream: http.IncomingMessage, onEvent: (e: WatchEvent<T>) => void): void {
  const handle = (text: string): boolean => {
    const line = text.trim();
    if (!line) return true;
    let ev: WatchEvent<T>;
    try {
      ev = JSON.parse(line) as WatchEvent<T>;
    } catch (err) {
      state.finish(new Error(`malformed watch event: ${String(err)}`));
      state.req.destroy();
      return false;
    }
    try {
      onEvent(ev);
    } catch (err) {
      state.finish(err);
      state.req.destroy();
      return false;
    }
    return true;
  };
  // setEncoding keeps a multi-byte character split across chunks whole.
  stream.setEncoding('utf8');
  const onChunk = lineSplitter(handle, () => state.settled);
  stream.on('data', (chunk: string) => {
    if (!state.settled) onChunk(chunk);
  });
  stream.on('end', () => state.finish());
  stream.on('error', (err) => state.finish(err));
  stream.on('close', () => state.finish(stream.complete ? undefined : new Error('watch connection closed')));
}

/**
 * Splits chunks into lines for `handle` (which returns false to stop). A line split across chunks waits in
 * `pending` (pieces, joined once its newline arrives); a chunk is scanned by index, one slice per line.
 */
function lineSplitter(handle: (line: string) => boolean, stopped: () => boolean): (chunk: string) => void {
  const pending: string[] = [];
  return (chunk) => {
    let nl = chunk.indexOf('\n');
    if (nl < 0) {
      pending.push(chunk);
      return;
    }
    let start = 0;
    if (pending.length > 0) {
      pending.push(chunk.slice(0, nl));
      const line = pending.join('');
      pending.length = 0;
      if (!handle(line)) return;
      start = nl + 1;
      nl = chunk.indexOf('\n', start);
    }
    while (nl >= 0) {
      if (stopped() || !handle(chunk.slice(start, nl))) return;
      start = nl + 1;
      nl = chunk.indexOf('\n', start);
    }
    if (start < chunk.length) pending.push(start === 0 ? chunk : chunk.slice(start));
  };
}
