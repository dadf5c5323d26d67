// The pure runtime: what decisions, validation and status code may use. Nothing under src/runtime/pure/ does I/O or
// loads a module that does (the client, pino, prom-client); eslint.config.js and test/architecture/pure-modules.test.ts
// enforce it for every file in this folder. The runtime barrel (src/runtime/index.ts) re-exports all of it.
export * from './types.js';
export * from './errors.js';
export * from './labels.js';
export * from './jsonpointer.js';
export * from './conditions.js';
export * from './set-patch.js';
export * from './merge-patch.js';
export * from './freeze.js';
