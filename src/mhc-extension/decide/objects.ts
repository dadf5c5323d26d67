// The objects the MHC extension decides on, typed. The lowest module of the folder: the decisions (decide/, decide.ts)
// and the snapshot (scope.ts) both import these types from here, so neither imports the other.
import type { KubeObject, MachineUpdate as MachineUpdateBody } from '../../api/index.js';

export type { Machine, MachineHealthCheck } from '../../api/capi/index.js';

/** A MachineUpdate with its metadata. */
export type MachineUpdate = KubeObject & MachineUpdateBody;
