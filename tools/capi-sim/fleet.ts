// A fleet inventory: many clusters of different shapes in one namespace (the campaign demo, tests and benchmark).
// Each cluster is an ordinary buildInventory cluster; the fleet adds labels to its Cluster so that a campaign's
// selector and priority key can pick it.
import type { KubeObject } from '../../src/api/index.js';
import { buildInventory } from './inventory.js';

/** Shapes a fleet cluster may have. */
export type FleetShape = 'single-node' | 'three-node' | 'with-workers';

/** One cluster of a fleet. */
export interface FleetCluster {
  name: string;
  shape: FleetShape;
  /** Labels on the Cluster object (besides cluster.x-k8s.io/cluster-name). */
  labels?: Record<string, string>;
  /** Workers of a with-workers cluster (default 2). */
  workers?: number;
  /** Control-plane machines, overriding the shape's (1 or 3). */
  controlPlaneReplicas?: number;
  /** maxUnavailable of a with-workers cluster's MachineDeployment (default 1). */
  maxUnavailable?: number | string;
}

/** Options of buildFleetInventory. */
export interface FleetOptions {
  namespace: string;
  version: string;
  clusters: readonly FleetCluster[];
}

const cpReplicasOf = (c: FleetCluster): number => c.controlPlaneReplicas ?? (c.shape === 'three-node' ? 3 : 1);

/**
 * Builds every object of every cluster: single-node (one control-plane machine), three-node (three control-plane
 * machines) and with-workers (one control-plane machine and one MachineDeployment of `workers`, maxUnavailable 1);
 * controlPlaneReplicas and maxUnavailable override the shape's.
 */
export function buildFleetInventory(opts: FleetOptions): KubeObject[] {
  return opts.clusters.flatMap((c) => {
    const objs = buildInventory({
      namespace: opts.namespace,
      clusterName: c.name,
      version: opts.version,
      controlPlane: { name: `${c.name}-cp`, replicas: cpReplicasOf(c) },
      ...(c.shape === 'with-workers'
        ? { machineDeployments: [{ name: `${c.name}-md-0`, replicas: c.workers ?? 2, maxUnavailable: c.maxUnavailable ?? 1 }] }
        : {}),
    });
    for (const o of objs) if (o.kind === 'Cluster') o.metadata.labels = { ...(o.metadata.labels ?? {}), ...(c.labels ?? {}) };
    return objs;
  });
}

/** A fleet of `n` clusters cycling through the three shapes, named `<prefix>-NNN`, each labelled `labels`. */
export function fleetOf(n: number, prefix: string, labels: Record<string, string> = {}): FleetCluster[] {
  const shapes: FleetShape[] = ['single-node', 'three-node', 'with-workers'];
  return Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${String(i).padStart(3, '0')}`, shape: shapes[i % 3]!, labels }));
}
