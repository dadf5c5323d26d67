import { expect } from 'chai';
import { forEachLimit } from './parallel.js';

describe('forEachLimit', () => {
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('visits every item once, never more than `limit` in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const seen: number[] = [];
    await forEachLimit([...Array(50).keys()], 4, async (x) => {
      peak = Math.max(peak, ++inFlight);
      await tick();
      seen.push(x);
      inFlight--;
    });
    expect([...seen].sort((a, b) => a - b)).to.deep.equal([...Array(50).keys()]);
    expect(peak).to.equal(4);
  });

  it('does nothing for no items', async () => {
    await forEachLimit([], 3, () => Promise.reject(new Error('called')));
  });

  it('stops starting items after a failure, lets the ones in flight finish, and throws the first error', async () => {
    const started: number[] = [];
    const finished: number[] = [];
    const err = await forEachLimit([0, 1, 2, 3, 4, 5, 6, 7], 2, async (x) => {
      started.push(x);
      await tick();
      if (x === 1) throw new Error('boom 1');
      if (x === 2) throw new Error('boom 2');
      finished.push(x);
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.equal('boom 1');
    expect(started).to.deep.equal([0, 1, 2]);
    expect(finished).to.deep.equal([0]);
  });

  it('rejects a limit that is not a positive integer', async () => {
    for (const bad of [0, -1, 1.5, NaN]) {
      const err = await forEachLimit([1], bad, async () => undefined).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(RangeError);
    }
  });
});
