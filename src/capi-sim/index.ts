// Cluster API simulator: fixture CRDs, a demo/test inventory, and a controller standing in for CAPI's controllers.
export * from './crds.js';
