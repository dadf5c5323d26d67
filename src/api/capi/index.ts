// Cluster API v1beta2 object shapes, typed read accessors and IntOrString arithmetic: the one home every controller,
// the CAPI simulator and the preview use. Pure (no I/O); not re-exported by src/api's barrel, whose names are the
// platform's own kinds.
export * from './types.js';
export * from './accessors.js';
export * from './intstr.js';
