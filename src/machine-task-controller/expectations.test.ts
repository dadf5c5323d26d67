import { expect } from 'chai';
import { Expectations } from './expectations.js';

describe('machine-task-controller expectations: wait for the cache to show our own writes', () => {
  const mu = (rv: string) => ({ metadata: { namespace: 'ns', name: 'mu-1', resourceVersion: rv } });
  let now = 0;
  const make = () => new Expectations(5_000, () => now);
  beforeEach(() => {
    now = 1_000;
  });

  it('decides at once when nothing of ours is pending', () => {
    expect(make().waitMs(mu('1'))).to.equal(undefined);
  });

  it('waits while the cache shows an older version than the one we wrote, then not once the watch delivered ours', () => {
    const e = make();
    e.wrote(mu('7'));
    expect(e.waitMs(mu('6'))).to.equal(5_000);
    e.observed(mu('7'));
    expect(e.waitMs(mu('7'))).to.equal(undefined);
    expect(e.size).to.equal(0);
  });

  it('a version written by someone else after ours does not make it wait once ours passed by', () => {
    const e = make();
    e.wrote(mu('7'));
    e.observed(mu('7'));
    e.observed(mu('8'));
    expect(e.waitMs(mu('8'))).to.equal(undefined);
  });

  it('waits for a task it created until the cache has it', () => {
    const e = make();
    e.created('ns', 'mu-1', 'task-a');
    expect(e.waitMs(mu('1'), [])).to.equal(5_000);
    now += 1_000;
    expect(e.waitMs(mu('1'), ['task-a'])).to.equal(undefined);
    expect(e.size).to.equal(0);
  });

  it('says a reconcile waits for a created task only once one returned a wait, and no longer once the task is cached', () => {
    const e = make();
    e.created('ns', 'mu-1', 'task-a');
    expect(e.waiting('ns', 'mu-1'), 'the creating reconcile itself does not wait').to.equal(false);
    expect(e.waitMs(mu('1'), [])).to.equal(5_000);
    expect(e.waiting('ns', 'mu-1')).to.equal(true);
    expect(e.waitMs(mu('1'), ['task-a'])).to.equal(undefined);
    expect(e.waiting('ns', 'mu-1')).to.equal(false);
  });

  it('gives up after the TTL (a watch that skipped our version): decides on what is cached', () => {
    const e = make();
    e.wrote(mu('7'));
    now += 4_000;
    expect(e.waitMs(mu('6'))).to.equal(1_000);
    now += 1_000;
    expect(e.waitMs(mu('6'))).to.equal(undefined);
    expect(e.size).to.equal(0);
  });

  it('forgets a deleted MachineUpdate', () => {
    const e = make();
    e.wrote(mu('7'));
    e.observed(mu('6'), true);
    expect(e.size).to.equal(0);
  });
});
