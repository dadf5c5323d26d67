// The reconcile cycle's clock: every phase observed once per reconcile, the wait only between two reconciles of the
// same plan and only while it is part of a cycle.
import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { Logger } from '../runtime/pure/types.js';
import { ReconcileTiming } from './timing.js';

const quiet = { debug: () => undefined, info: () => undefined, child: () => quiet } as unknown as Logger;

async function counts(registry: Registry): Promise<Record<string, number>> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === 'inplace_plan_controller_reconcile_phase_seconds');
  const out: Record<string, number> = {};
  for (const v of m?.values ?? [])
    if ((v as { metricName?: string }).metricName?.endsWith('_count')) out[String(v.labels['phase'])] = v.value;
  return out;
}

describe('plan-controller reconcile timing', () => {
  it('observes each phase per reconcile, and the wait and cooldown from the second reconcile of a plan on', async () => {
    const registry = new Registry();
    const timing = new ReconcileTiming(registry, quiet);
    const run = (): void => {
      const c = timing.start('ns/p1');
      c.mark('snapshot');
      c.mark('decide');
      c.mark('status');
      c.end(quiet);
    };
    run();
    expect(await counts(registry)).to.deep.equal({ snapshot: 1, decide: 1, status: 1 });
    timing.cooldown('ns/p1', 5);
    run();
    expect(await counts(registry)).to.deep.equal({ wait: 1, cooldown: 1, snapshot: 2, decide: 2, status: 2 });
    // Another plan has its own first reconcile; a dropped plan starts over.
    timing.drop('ns/p1');
    run();
    expect((await counts(registry))['wait']).to.equal(1);
  });
});
