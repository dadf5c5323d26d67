import { expect } from 'chai';
import { MAX_PLAN_VALUE_BYTES, planValueSizeProblems } from './limits.js';

describe('plan value size limit', () => {
  // A JSON string's quotes count: a string of n characters is n + 2 bytes.
  const sized = (bytes: number): string => 'x'.repeat(bytes - 2);

  it('accepts a value of exactly MAX_PLAN_VALUE_BYTES and refuses one byte more, naming the limit', () => {
    expect(planValueSizeProblems(sized(MAX_PLAN_VALUE_BYTES), 'r')).to.deep.equal([]);
    expect(planValueSizeProblems(sized(MAX_PLAN_VALUE_BYTES + 1), 'r')).to.deep.equal([
      'r has a 65 KiB value, more than the 64 KiB a plan value may have',
    ]);
  });

  it('measures any JSON value in UTF-8 bytes (objects, multi-byte characters)', () => {
    expect(planValueSizeProblems({ a: 'é'.repeat(MAX_PLAN_VALUE_BYTES / 2) }, 'r')).to.have.length(1);
    expect(planValueSizeProblems({ a: 'é'.repeat(MAX_PLAN_VALUE_BYTES / 4) }, 'r')).to.deep.equal([]);
    expect(planValueSizeProblems(null, 'r')).to.deep.equal([]);
  });
});
