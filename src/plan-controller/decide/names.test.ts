import { expect } from 'chai';
import { MAX_NAME, machineUpdateName } from './names.js';

describe('MachineUpdate names', () => {
  it('are unique per (plan, machine) where joining the names is not', () => {
    expect(machineUpdateName('p', 'c1-md-a-0')).to.not.equal(machineUpdateName('p-c1', 'md-a-0'));
  });
  it('are deterministic and readable', () => {
    expect(machineUpdateName('p', 'm')).to.equal(machineUpdateName('p', 'm'));
    expect(machineUpdateName('p', 'm')).to.match(/^p-m-[0-9a-f]{8}$/);
  });
  it('stay at most 253 characters and unique for long names', () => {
    const long = 'm'.repeat(250);
    expect(machineUpdateName('p', long).length).to.be.at.most(MAX_NAME);
    expect(machineUpdateName('p', `${long}a`)).to.not.equal(machineUpdateName('p', `${long}b`));
  });
});
