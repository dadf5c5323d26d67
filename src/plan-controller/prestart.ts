// The pre-start check's old path, kept only for src/cli (another branch's files at the time of the move): its home is
// src/effects/prestart.ts (an effect both controllers perform). Remove once src/cli imports it from there.
export { dryRunCommits } from '../effects/prestart.js';
