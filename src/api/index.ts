// The platform's API: generated types, zod schemas, constants, resource descriptors. No I/O.
export * from './generated/index.js';
export * from './kube.js';
export * from './constants.js';
export * from './resources.js';
export * from './schemas.js';
export * from './types.js';
export * from './depth.js';
export * from './write-policy.js';
export * from './alert-gate-policy.js';
export * from './updaters.js';
export * from './limits.js';
export * from './duration.js';
export * from './windows.js';
export * from './skip-remediation.js';
export * from './mhc-protection.js';
