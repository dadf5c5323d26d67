import { expect } from 'chai';
import { backoffDelay, sleep } from './backoff.js';

describe('backoff', () => {
  it('doubles per attempt up to the cap', () => {
    const top = (n: number): number => backoffDelay(n, { baseMs: 100, maxMs: 1000, random: () => 0.999999 });
    expect([1, 2, 3, 4, 5, 6].map(top)).to.deep.equal([100, 200, 400, 800, 1000, 1000]);
  });

  it('jitters each delay into the upper half of its range', () => {
    expect(backoffDelay(3, { baseMs: 100, maxMs: 1000, random: () => 0 })).to.equal(200);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 1000, random: () => 0.5 })).to.equal(300);
  });

  it('sleeps until aborted', async () => {
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal);
    ac.abort();
    await p;
  });
});
