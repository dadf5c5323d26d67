// The plan controller's fleet-wide caches (task CRDs and provider kinds that failed, by kind) are bounded: plans may
// name any kind, a typo included, and those caches are not dropped with a plan.
import { expect } from 'chai';
import { MAX_KINDS_CACHED, remember } from './reader.js';

describe('plan controller: fleet-wide caches by kind (snapshot/reader.ts)', () => {
  it('keep at most MAX_KINDS_CACHED kinds, forgetting the least recently set', () => {
    const cache = new Map<string, number>();
    for (let i = 0; i < MAX_KINDS_CACHED + 10; i++) remember(cache, `Kind${i}.example.com`, i);
    expect(cache.size).to.equal(MAX_KINDS_CACHED);
    expect(cache.has('Kind0.example.com')).to.equal(false);
    // Set again: the newest, kept when the next kinds come.
    remember(cache, 'Kind10.example.com', 0);
    remember(cache, 'Other.example.com', 0);
    expect(cache.has('Kind10.example.com')).to.equal(true);
    expect(cache.has('Kind11.example.com')).to.equal(false);
  });
});
