// The upgrade rules' old path, kept only for src/cli (another branch's files at the time of the move): their home is
// src/rules/upgrade-rules.ts. Remove once src/cli imports src/rules directly.
export { compareVersions, parseVersion, upgradeProblems } from '../rules/upgrade-rules.js';
