// Cluster API simulator: fixture CRDs, a demo/test inventory, and a controller standing in for CAPI's controllers.
export * from './crds.js';
export * from '../../src/api/capi/types.js';
export {
  DevMachineTemplates,
  KubeadmConfigTemplates,
  nodeNameFor,
  defaultImage,
  stableSuffix,
  NODE_MACHINE_ANNOTATION,
} from './builders.js';
export * from './inventory.js';
export * from './fleet.js';
export * from './operator.js';
export { startCapiSimulator, type CapiSimulator, type CapiSimulatorOptions, type SimulatorStats } from './simulator.js';
export * from './decisions.js';
export * from './rollout.js';
export * from './extension-client.js';
export {
  PENDING_HOOKS_ANNOTATION,
  PENDING_ACKNOWLEDGE_MOVE_ANNOTATION,
  MOVE_MACHINES_TO_ANNOTATION,
  RECEIVE_MACHINES_FROM_ANNOTATION,
  ACKNOWLEDGED_MOVE_ANNOTATION,
  UPDATING_CONDITION,
  UPDATE_MACHINE_FAILED_MESSAGE,
} from './inplace.js';
