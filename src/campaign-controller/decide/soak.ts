// Phase 6 of decideCampaign: the soak after the last wave: soakSeconds since its last plan completed before the next
// wave starts.
import type { CampaignDecision } from './types.js';
import type { OutcomeInput } from './stance.js';
import { waveLabel } from './rules.js';

/** Soaking until the last wave's soak ends, when clusters are left to start; otherwise undefined. */
export function soakOutcome(x: OutcomeInput): CampaignDecision | undefined {
  const { currentWave, eligible, waitingRows, waves } = x.waves;
  if (currentWave === undefined || x.soakMs <= 0 || (eligible.size === 0 && waitingRows.length === 0)) return undefined;
  const last = (waves.get(currentWave) ?? [])
    .map((p) => p.completionTime)
    .filter((t): t is string => !!t)
    .sort()
    .pop();
  if (!last) return undefined;
  const until = Date.parse(last) + x.soakMs;
  const now = Date.parse(x.snap.now);
  if (now >= until) return undefined;
  const soakUntil = new Date(until).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    ...x.base,
    create: [],
    phase: 'Soaking',
    updateStatus: 'updating',
    soakUntil,
    requeueAfterMs: until - now,
    message: `soaking after ${waveLabel(currentWave)} until ${soakUntil}`,
  };
}
