// Counting a component's API requests as it sends them. api_requests_total moves when the answer reaches the
// component, which on a loaded machine can be after the test has seen the write's effect through its own watch (a real
// server showed one MachineUpdate status write counted of two sent); a request is always sent before its effect can be
// seen, so counts taken here never trail what the test observed.
import { resourceName, type ResourceType } from '../../src/api/index.js';
import type { KubeClient } from '../../src/runtime/index.js';

/** A client that counts its requests, and the counts so far by `verb resource` (the resource's plural, no group). */
export interface CountedClient {
  /** Give this client to the component under test. */
  client: KubeClient;
  /** A copy of the counts so far. */
  counts(): Map<string, number>;
}

/** Wraps `client` so that every request (whatever its answer) is counted when it is made. */
export function countRequests(client: KubeClient): CountedClient {
  const sent = new Map<string, number>();
  const counted = new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'resolve') return value;
      return (...args: unknown[]): unknown => {
        const k = `${String(prop)} ${resourceName(args[0] as ResourceType).split('.')[0]}`;
        sent.set(k, (sent.get(k) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { client: counted, counts: () => new Map(sent) };
}
