// The updater contract's pure core (docs/contract.md): the rules, the typed task accessors the platform uses, task
// names and labels, and which task kinds may be created. No I/O and nothing of src/runtime: decision modules import
// it freely. The updater SDK is src/contract/sdk/index.ts; the conformance kit is src/contract/conformance/index.ts.
export * from './rules.js';
export * from './accessors.js';
export * from './task-kinds.js';
