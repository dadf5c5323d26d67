import { expect } from 'chai';
import { MAX_JSON_DEPTH, jsonTextTooDeep, valueTooDeep } from './depth.js';

describe('local-apiserver nesting limits', () => {
  const text = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

  it('finds the first opening character past the limit, iteratively, at any depth', () => {
    expect(jsonTextTooDeep(text(MAX_JSON_DEPTH))).to.equal(undefined);
    expect(jsonTextTooDeep(text(MAX_JSON_DEPTH + 1))).to.equal('{');
    expect(jsonTextTooDeep('['.repeat(1_000_000))).to.equal('[');
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonTextTooDeep(`{"a":"${'{['.repeat(5000)}\\"${'{'.repeat(10)}"}`, 2)).to.equal(undefined);
    expect(jsonTextTooDeep('{"a":{"b":{}}}', 2)).to.equal('{');
    // A quote after an even run of backslashes ends its string; after an odd run it is part of it.
    expect(jsonTextTooDeep('{"a":"\\\\","b":"{{{"}', 2)).to.equal(undefined);
    expect(jsonTextTooDeep('{"a":"\\\\","b":{"c":{}}}', 2)).to.equal('{');
    expect(jsonTextTooDeep('{"a":"\\\\\\",{{{"}', 2)).to.equal(undefined);
    expect(jsonTextTooDeep('{"a":"x{{{', 2)).to.equal(undefined);
  });

  it('measures parsed values (YAML, protobuf, patch results) the same way', () => {
    let v: unknown = 1;
    for (let i = 0; i < 100_000; i++) v = [v];
    expect(valueTooDeep(v)).to.equal(true);
    expect(valueTooDeep(JSON.parse(text(MAX_JSON_DEPTH)))).to.equal(false);
    expect(valueTooDeep(JSON.parse(text(MAX_JSON_DEPTH + 1)))).to.equal(true);
    expect(valueTooDeep('scalar', 0)).to.equal(false);
    expect(valueTooDeep({}, 0)).to.equal(true);
  });
});
