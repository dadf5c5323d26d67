import { expect } from 'chai';
import { evalJsonPath, humanDuration, parseJsonPath } from './table.js';

describe('printer-column JSONPath', function () {
  const obj = {
    spec: { n: 3, list: [{ a: 1 }, { a: 2 }] },
    status: {
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Ok' },
        { type: 'Other', status: 'False' },
      ],
    },
  };
  const cases: Array<[string, unknown[]]> = [
    ['.spec.n', [3]],
    ['.spec.list[1].a', [2]],
    ['.spec.list[*].a', [1, 2]],
    ['.spec.list[-1].a', [2]],
    ['.status.conditions[?(@.type=="Ready")].reason', ['Ok']],
    ['.status.conditions[?(@.status!="True")].type', ['Other']],
    ['{.spec.n}', [3]],
    ['.spec.missing', []],
  ];
  for (const [p, want] of cases) {
    it(`evaluates ${p}`, function () {
      expect(evalJsonPath(parseJsonPath(p), obj)).to.deep.equal(want);
    });
  }
});

describe('human durations (as kubectl prints Age)', function () {
  const cases: Array<[number, string]> = [
    [0, '0s'],
    [59_000, '59s'],
    [119_000, '119s'],
    [150_000, '2m30s'],
    [600_000, '10m'],
    [3 * 3600_000, '3h'],
    [3 * 3600_000 + 60_000, '3h1m'],
    [30 * 3600_000, '30h'],
    [3 * 86400_000 + 3600_000, '3d1h'],
    [20 * 86400_000, '20d'],
    [3 * 365 * 86400_000, '3y'],
  ];
  for (const [ms, want] of cases) {
    it(`${ms}ms -> ${want}`, function () {
      expect(humanDuration(ms)).to.equal(want);
    });
  }
});
