// The conformance kit (issue 7): runConformance + formatReport, and the scratch helpers it uses.
export {
  runConformance,
  formatReport,
  statusManagers,
  type ConformanceOptions,
  type ConformanceReport,
  type RuleReport,
  type RuleOutcome,
  type ScenarioReport,
} from './kit.js';
export { parseResponsibility } from './specs.js';
export { RUN_LABEL, TARGET_VERSION, TARGET_IMAGE, SCRATCH_VERSION, defaultResponsibilities } from './scratch.js';
export { resolveTaskKind } from './resolve.js';
export {
  CONFORMANCE_OPTIONS,
  CONFORMANCE_HELP,
  ConformanceSetupError,
  ConformanceUsageError,
  conformanceRequest,
  resolveKindArg,
  runConformanceCommand,
  type ApiCall,
  type ConformanceArgValues,
  type ConformanceIo,
  type ConformanceRequest,
} from './command.js';
export { conformanceMain, connectKube, CONFORMANCE_MAIN_HELP } from './main.js';
