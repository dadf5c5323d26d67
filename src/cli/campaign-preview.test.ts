/* eslint-disable no-control-regex -- the cases are control characters */
import { expect } from 'chai';
import { renderCampaignPreview, type CampaignPreview } from './campaign-preview.js';

const preview = (over: Partial<CampaignPreview> = {}): CampaignPreview => ({
  campaign: 'fleet-edge/edge-v1-30-1',
  valid: true,
  problems: [],
  selected: 2,
  rollout: 'canaries 1; waves of at most 1',
  waves: [
    { index: 0, clusters: ['edge-01'], started: false },
    { index: 1, clusters: ['edge-02'], started: false },
  ],
  clusters: [
    {
      cluster: 'edge-01',
      wave: 0,
      valid: true,
      problems: [],
      machines: 1,
      atTarget: 0,
      targets: ['ControlPlane edge-01-cp x1 (seq 1)'],
      changes: ['Machine /spec/version -> v1.30.1 (kubernetes-version)'],
      uncovered: 0,
    },
  ],
  notPreviewed: 0,
  ...over,
});

describe('campaign preview rendering', () => {
  it('prints one line per item (real newlines, never a literal \\n)', () => {
    const out = renderCampaignPreview(preview());
    expect(out).not.to.contain('\\n');
    const lines = out.split('\n');
    expect(lines[0]).to.equal('InPlaceUpdateCampaign fleet-edge/edge-v1-30-1: 2 clusters selected, VALID');
    expect(lines).to.include('Waves (if every cluster succeeds):');
    expect(lines).to.include('  wave 0 (canary): 1 clusters: edge-01');
    expect(lines.some((l) => l.startsWith('  OK     edge-01 (wave 0): 1 machines'))).to.equal(true);
    expect(lines.length).to.be.greaterThan(8);
  });

  it('still neutralises control characters from untrusted text, line by line', () => {
    const out = renderCampaignPreview(
      preview({
        valid: false,
        problems: ['cluster \x1b]0;pwned\x07edge-02: bad\nforged line\r\x1b[2Kover'],
        clusters: [{ ...preview().clusters[0]!, cluster: 'edge-01\u202e', problems: ['failed:\x1b[31m red\x1b[0m'] }],
      }),
    );
    expect(out).not.to.match(/[\x1b\x07\r\u202e]/);
    // A newline inside a value cannot start a line of its own: it stays visible, escaped, on its line.
    expect(out).to.contain('  ✗ cluster edge-02: bad\\nforged line\\rover');
    expect(out).to.contain('edge-01\\u202e (wave 0)');
    expect(out).to.contain('✗ failed: red');
  });
});
