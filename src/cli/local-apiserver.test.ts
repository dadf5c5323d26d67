import { expect } from 'chai';
import type { LocalApiServerStats } from '../../tools/local-apiserver/index.js';
import { runCli } from './cli.js';
import { apiserverRegistry, eventTtlOption, heapGrowingOption } from './local-apiserver.js';
import { UsageError, type Io } from './verb.js';

describe('inplace local-apiserver options and metrics', function () {
  it('--event-ttl takes a positive Go duration and rejects anything else as a usage error', function () {
    expect(eventTtlOption(undefined)).to.equal(undefined);
    expect(eventTtlOption('10m')).to.equal(600_000);
    expect(eventTtlOption('1h30m')).to.equal(5_400_000);
    for (const bad of ['soon', '0', '-1h', '10']) expect(() => eventTtlOption(bad), bad).to.throw(UsageError);
  });

  it('--heap-growing-percent takes an integer from 0 to 1000 and rejects anything else as a usage error', function () {
    expect(heapGrowingOption(undefined)).to.equal(undefined);
    expect(heapGrowingOption('0')).to.equal(0);
    expect(heapGrowingOption('20')).to.equal(20);
    for (const bad of ['', '-1', '1.5', '1001', 'x', '20%']) expect(() => heapGrowingOption(bad), bad).to.throw(UsageError);
  });

  it('exits 2 with the reason for a bad --event-ttl, before starting anything', async function () {
    let err = '';
    const io: Io = { out: () => undefined, err: (s) => void (err += s), isTTY: false, columns: 120, signal: new AbortController().signal };
    expect(await runCli(['local-apiserver', '--event-ttl', 'soon'], io)).to.equal(2);
    expect(err).to.contain('--event-ttl must be a duration');
  });

  it('exports what the stores hold per resource, with kube-apiserver resource names, and the V8 heap', async function () {
    const stats: LocalApiServerStats = {
      resources: [
        { resource: 'cluster.x-k8s.io/machines', objects: 3, watchEvents: 7, watchers: 2 },
        { resource: '/events', objects: 5, watchEvents: 1, watchers: 0 },
      ],
      eventTtlTracked: 5,
      gc: { owners: 1, uids: 8, queued: 0 },
      watchStreams: 2,
      connections: 4,
    };
    const text = await apiserverRegistry(() => stats).metrics();
    expect(text).to.contain('apiserver_storage_objects{resource="machines.cluster.x-k8s.io"} 3');
    expect(text).to.contain('apiserver_storage_objects{resource="events"} 5');
    expect(text).to.contain('inplace_apiserver_watch_events{resource="machines.cluster.x-k8s.io"} 7');
    expect(text).to.contain('inplace_apiserver_watchers{resource="machines.cluster.x-k8s.io"} 2');
    expect(text).to.contain('inplace_apiserver_event_ttl_tracked 5');
    expect(text).to.contain('inplace_apiserver_gc_uids 8');
    expect(text).to.contain('inplace_apiserver_watch_streams 2');
    expect(text).to.match(/^inplace_nodejs_heap_size_used_bytes \d+/m);
    expect(text).to.match(/^inplace_nodejs_heap_used_after_major_gc_bytes \d+/m);
  });
});
