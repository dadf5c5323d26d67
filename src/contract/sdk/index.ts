// The updater SDK's entry point (docs/contract.md "Writing an updater"): defineUpdater and the handler results, the
// pure contract (task accessors, rules) and the runtime types an updater's code names. It loads the API client and
// the controller runtime, so only updaters (and the CLI that runs them) import it, never a decision module.
export * from '../sdk.js';
export * from '../index.js';
export type { KubeClient, Logger, PolicyRule } from '../../runtime/pure/types.js';
