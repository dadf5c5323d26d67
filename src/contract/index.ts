// The updater contract as code (DESIGN §3, docs/contract.md): the rules, typed accessors the platform uses,
// the updater SDK and the conformance kit.
export * from './rules.js';
export * from './accessors.js';
export * from './sdk.js';
export type { KubeClient, Logger, PolicyRule } from '../runtime/index.js';
export * from './conformance/index.js';
export * from './task-kinds.js';
