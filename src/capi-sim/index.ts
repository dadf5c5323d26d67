// Cluster API simulator: fixture CRDs, a demo/test inventory, and a controller standing in for CAPI's controllers.
export * from './crds.js';
export * from '../api/capi/types.js';
export {
  DevMachineTemplates,
  KubeadmConfigTemplates,
  nodeNameFor,
  defaultImage,
  stableSuffix,
  NODE_MACHINE_ANNOTATION,
} from './builders.js';
export * from './inventory.js';
export { startCapiSimulator, type CapiSimulator, type CapiSimulatorOptions } from './simulator.js';
export * from './decisions.js';
export * from './rollout.js';
