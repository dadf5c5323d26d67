import { expect } from 'chai';
import { WorkQueue } from './queue.js';

const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('WorkQueue', () => {
  it('a delay beyond what a timer can wait (1000 h) does not hand the key out at once', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 3_600_000_000);
    await tick(50);
    expect(q.depth).to.equal(0);
    q.shutDown();
  });

  it('hands out each waiting key once, in order, however often it was added', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth).to.equal(2);
    expect(await q.get()).to.equal('a');
    expect(await q.get()).to.equal('b');
    expect(q.depth).to.equal(0);
  });

  it('never hands out a key that is in flight, and re-runs it after done when it was added meanwhile', async () => {
    const q = new WorkQueue();
    q.add('a');
    const k = await q.get();
    q.add('a');
    q.add('a');
    expect(q.depth).to.equal(0);
    q.done(k!);
    expect(q.depth).to.equal(1);
    expect(await q.get()).to.equal('a');
    q.done('a');
    expect(q.depth).to.equal(0);
  });

  it('wakes a waiting consumer when a key arrives', async () => {
    const q = new WorkQueue();
    const p = q.get();
    q.add('x');
    expect(await p).to.equal('x');
    expect(q.inFlight).to.equal(1);
  });

  it('delays an add, and the earliest of several delayed adds wins', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 10_000);
    q.addAfter('a', 20);
    q.addAfter('a', 5_000);
    expect(q.depth).to.equal(0);
    expect(q.pendingDelayed).to.equal(1);
    expect(await q.get()).to.equal('a');
    expect(q.pendingDelayed).to.equal(0);
    q.shutDown();
  });

  it('cancels a pending delayed add when the key is handed out earlier', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 30);
    q.add('a');
    expect(await q.get()).to.equal('a');
    expect(q.pendingDelayed).to.equal(0);
    q.done('a');
    await tick(50);
    expect(q.depth).to.equal(0);
  });

  it('backs off exponentially per key up to the cap and resets on forget', () => {
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 100 });
    const delays = [1, 2, 3, 4, 5, 6].map(() => q.addRateLimited('a'));
    expect(delays).to.deep.equal([10, 20, 40, 80, 100, 100]);
    expect(q.addRateLimited('b')).to.equal(10);
    expect(q.retries('a')).to.equal(6);
    q.forget('a');
    expect(q.addRateLimited('a')).to.equal(10);
    q.shutDown();
  });

  it('reports depth changes and retries to its hooks', async () => {
    const depths: number[] = [];
    const retries: [string, number][] = [];
    const q = new WorkQueue({ baseDelayMs: 1, onDepth: (d) => depths.push(d), onRetry: (k, d) => retries.push([k, d]) });
    q.add('a');
    q.add('b');
    await q.get();
    q.addRateLimited('a');
    expect(depths).to.deep.equal([1, 2, 1]);
    expect(retries).to.deep.equal([['a', 1]]);
    q.shutDown();
  });

  it('releases waiting consumers with undefined on shut down and ignores later adds', async () => {
    const q = new WorkQueue();
    const p = q.get();
    q.shutDown();
    expect(await p).to.equal(undefined);
    q.add('a');
    expect(await q.get()).to.equal(undefined);
  });

  describe('cooldown (done with cooldownMs)', () => {
    const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

    it('holds back a key added during its cooldown, collapsing the adds into one run at the end', async () => {
      const q = new WorkQueue();
      q.add('a');
      expect(await q.get()).to.equal('a');
      q.done('a', 60);
      for (let i = 0; i < 5; i++) q.add('a');
      expect(q.depth).to.equal(0);
      expect(q.pendingDelayed).to.equal(1);
      await sleep(80);
      expect(q.depth).to.equal(1);
      expect(await q.get()).to.equal('a');
      q.done('a');
      expect(q.depth).to.equal(0);
      q.shutDown();
    });

    it('re-queues a key added while in flight only once its cooldown is over', async () => {
      const q = new WorkQueue();
      q.add('a');
      await q.get();
      q.add('a');
      q.done('a', 50);
      expect(q.depth).to.equal(0);
      await sleep(70);
      expect(await q.get()).to.equal('a');
      q.shutDown();
    });

    it('leaves other keys alone, and a key without cooldown is handed out at once', async () => {
      const q = new WorkQueue();
      q.add('a');
      q.add('b');
      await q.get();
      await q.get();
      q.done('a', 10_000);
      q.done('b');
      q.add('a');
      q.add('b');
      expect(q.depth).to.equal(1);
      expect(await q.get()).to.equal('b');
      q.shutDown();
    });

    it('hands a key out at once when it is added after its cooldown ended', async () => {
      const q = new WorkQueue();
      q.add('a');
      await q.get();
      q.done('a', 20);
      await sleep(30);
      q.add('a');
      expect(q.depth).to.equal(1);
      q.shutDown();
    });

    it('waits for a delay longer than a timer can hold (2^31 ms) instead of firing at once', async () => {
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(w.name);
      process.on('warning', onWarning);
      const q = new WorkQueue();
      try {
        q.addAfter('mhc', 1000 * 3600 * 1000); // 1000 h: an MHC in-place timeout
        await sleep(50);
        expect(q.depth).to.equal(0);
        expect(q.pendingDelayed).to.equal(1);
        expect(warnings).to.not.include('TimeoutOverflowWarning');
        // An earlier add still wins.
        q.addAfter('mhc', 10);
        expect(await q.get()).to.equal('mhc');
      } finally {
        q.shutDown();
        process.off('warning', onWarning);
      }
    });

    it('forgets the cooldowns of keys never seen again (objects deleted): memory stays flat over many keys', async () => {
      const q = new WorkQueue();
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 200; i++) {
          const key = `plan-${round}-${i}`;
          q.add(key);
          await q.get();
          q.done(key, 1);
        }
        await sleep(10);
      }
      // Only the last round's keys may still be remembered (plus those under the sweep threshold).
      expect(q.coolingDown).to.be.at.most(200 + 64);
      q.shutDown();
    });
  });
});
