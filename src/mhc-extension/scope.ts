// The slices of the objects the MHC extension reads: CAPI's v1beta2 Machine and MachineHealthCheck, and the
// platform's MachineUpdate. Typed here (not in src/api) because only this component reads CAPI health fields.
import type { Condition, KubeObject, MachineUpdate as MachineUpdateBody } from '../api/index.js';

/** A CAPI v1beta2 Machine as far as health checking goes. */
export interface Machine extends KubeObject {
  spec: { clusterName: string };
  status?: {
    nodeRef?: { name: string };
    initialization?: { infrastructureProvisioned?: boolean; bootstrapDataSecretCreated?: boolean };
    conditions?: Condition[];
  };
}

/** A CAPI v1beta2 MachineHealthCheck as far as the extension reads it. */
export interface MachineHealthCheck extends KubeObject {
  spec: {
    clusterName: string;
    selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[] };
    checks?: { nodeStartupTimeoutSeconds?: number };
    remediation?: { triggerIf?: { unhealthyLessThanOrEqualTo?: number | string; unhealthyInRange?: string } };
  };
}

/** A MachineUpdate with its metadata. */
export type MachineUpdate = KubeObject & MachineUpdateBody;
