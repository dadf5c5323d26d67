import { expect } from 'chai';
import { InvalidDurationError, parseGoDuration } from './duration.js';

describe('mhc-extension parseGoDuration', () => {
  const valid: Array<[string, number]> = [
    ['30m', 30 * 60_000],
    ['1h30m', 90 * 60_000],
    ['90s', 90_000],
    ['2s', 2000],
    ['1.5h', 90 * 60_000],
    ['500ms', 500],
    ['0', 0],
    ['-2s', -2000],
    ['+1m', 60_000],
    ['1h0m0s', 3_600_000],
    ['.5s', 500],
    ['1.s', 1000],
    ['1500us', 1.5],
    ['1µs', 0.001],
    ['2000000ns', 2],
  ];
  for (const [s, ms] of valid) it(`reads ${JSON.stringify(s)} as ${ms} ms`, () => expect(parseGoDuration(s)).to.be.closeTo(ms, 1e-9));

  const invalid = ['', '30', 'm', '1d', '1h 30m', 'abc', '.s', '1m-2s', '30M', ' 1m', '-'];
  for (const s of invalid) it(`rejects ${JSON.stringify(s)}`, () => expect(() => parseGoDuration(s)).to.throw(InvalidDurationError));
});
