import { expect } from 'chai';
import { nestedDeeperThan } from './depth.js';

describe('api nestedDeeperThan', () => {
  const nest = (n: number): unknown => {
    let v: unknown = 'leaf';
    for (let i = 0; i < n; i++) v = i % 2 ? [v] : { a: v };
    return v;
  };
  const table: Array<[string, unknown, number, boolean]> = [
    ['a scalar is depth 0', 'x', 0, false],
    ['null is depth 0', null, 0, false],
    ['an empty object is depth 1', {}, 0, true],
    ['exactly at the limit', nest(64), 64, false],
    ['one past the limit', nest(65), 64, true],
    ['a wide shallow value', { a: Array.from({ length: 10_000 }, (_, i) => ({ i })) }, 3, false],
    ['200,000 levels, without overflowing the stack', nest(200_000), 64, true],
  ];
  for (const [name, v, max, want] of table) it(name, () => expect(nestedDeeperThan(v, max)).to.equal(want));
});
