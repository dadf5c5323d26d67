// Shared pieces of the runtime's integration tests.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject, ResourceType } from '../../src/api/index.js';

/** The test CRD file. */
export const WIDGET_CRD = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'widgets.yaml');

/** The Widget resource of the test CRD. */
export const Widgets: ResourceType = {
  group: 'runtime-test.inplace.cluster.x-k8s.io',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
};

/** A Widget object. */
export interface Widget extends KubeObject {
  spec: { size?: number; color?: string };
  status?: { observedSize?: number; conditions?: unknown[] };
}

/** A new Widget in `namespace`. */
export const widget = (namespace: string, name: string, size = 1, labels?: Record<string, string>): Widget => ({
  apiVersion: 'runtime-test.inplace.cluster.x-k8s.io/v1',
  kind: 'Widget',
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  spec: { size },
});
