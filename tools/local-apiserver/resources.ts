/** Resource descriptors: the built-in kinds served schemaless, and CRD-defined kinds. */
import type { Schema } from './schema.js';
import { humanDuration } from './duration.js';
import type { FieldError } from './errors.js';
import { CORE_EVENTS_GR, coreToEventsV1, eventsV1ToCore, validateEventsV1 } from './events.js';

type Obj = Record<string, unknown>;

/** A CRD additionalPrinterColumn (or a built-in column). */
export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
  cell?: (obj: Record<string, unknown>) => unknown;
}

/** One served version of a resource. */
export interface VersionDef {
  name: string;
  served: boolean;
  storage: boolean;
  schema?: Schema;
  columns: PrinterColumn[];
  deprecated?: boolean;
  deprecationWarning?: string;
}

/** Everything the server needs to serve one group/resource. */
export interface ResourceDef {
  group: string;
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  versions: VersionDef[];
  storageVersion: string;
  statusSubresource: boolean;
  /** The CRD scale subresource's paths (JSONPath-like `.spec.replicas`), when declared. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /** Built-ins are stored schemaless; CRDs are pruned, defaulted and validated. */
  builtin: boolean;
  /** Whether metadata.generation is maintained. */
  hasGeneration: boolean;
  /** Whether status is dropped on create (status subresource semantics). */
  clearStatusOnCreate: boolean;
  /** Strategic merge patch is accepted (built-ins only). */
  strategicMerge: boolean;
  /** Name of the CRD that defines this resource, if any. */
  crdName?: string;
  /** Top-level fields of a built-in kind (others are unknown: dropped, warned about or rejected per fieldValidation). */
  topLevelFields?: string[];
  /** Served from another resource's storage, as events.k8s.io/v1 Events are core/v1 Events in kube-apiserver. */
  sharedStorage?: SharedStorage;
}

/** How a resource is converted to and from the storage it shares with another resource. */
export interface SharedStorage {
  /** Storage key (grKey) of the resource that owns the objects. */
  gr: string;
  /** A stored object as this resource shows it. */
  read(stored: Obj): Obj;
  /** A body written through this resource in its stored form. */
  write(body: Obj): Obj;
  /** What the real server refuses in a body written through this resource. */
  validate(body: Obj, namespace: string, create: boolean): FieldError[];
}

/** Storage key of a group/resource. */
export function grKey(group: string, plural: string): string {
  return `${group}/${plural}`;
}

/** apiVersion string for a group and version. */
export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

function countData(o: Record<string, unknown>): number {
  const d = o.data as Record<string, unknown> | undefined;
  const b = o.binaryData as Record<string, unknown> | undefined;
  return (d ? Object.keys(d).length : 0) + (b ? Object.keys(b).length : 0);
}

function lastSeen(o: Record<string, unknown>): string | null {
  const m = (o.metadata ?? {}) as Record<string, unknown>;
  const ts = (o.lastTimestamp ?? o.eventTime ?? m.creationTimestamp) as string | undefined;
  const t = ts ? Date.parse(ts) : NaN;
  return Number.isNaN(t) ? null : humanDuration(Date.now() - t);
}

const AGE: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
};

function builtin(
  p: Partial<ResourceDef> & Pick<ResourceDef, 'group' | 'plural' | 'singular' | 'kind' | 'namespaced'>,
  version: string,
  columns: PrinterColumn[] = [AGE],
): ResourceDef {
  return {
    listKind: `${p.kind}List`,
    shortNames: [],
    categories: [],
    statusSubresource: false,
    builtin: true,
    hasGeneration: false,
    clearStatusOnCreate: false,
    strategicMerge: true,
    ...p,
    versions: [{ name: version, served: true, storage: true, columns }],
    storageVersion: version,
  };
}

/** The built-in resources this server serves (schemaless storage). */
export function builtinResources(): ResourceDef[] {
  return [
    builtin(
      {
        group: '',
        plural: 'namespaces',
        singular: 'namespace',
        kind: 'Namespace',
        topLevelFields: ['spec', 'status'],
        namespaced: false,
        shortNames: ['ns'],
        statusSubresource: true,
      },
      'v1',
      [{ name: 'Status', type: 'string', jsonPath: '.status.phase', description: 'The status of the namespace' }, AGE],
    ),
    builtin(
      {
        group: '',
        plural: 'configmaps',
        singular: 'configmap',
        kind: 'ConfigMap',
        topLevelFields: ['data', 'binaryData', 'immutable'],
        namespaced: true,
        shortNames: ['cm'],
      },
      'v1',
      [{ name: 'Data', type: 'integer', jsonPath: '.data', description: 'Number of entries in data', cell: countData }, AGE],
    ),
    builtin(
      {
        group: '',
        plural: 'secrets',
        singular: 'secret',
        kind: 'Secret',
        topLevelFields: ['data', 'stringData', 'type', 'immutable'],
        namespaced: true,
      },
      'v1',
      [
        { name: 'Type', type: 'string', jsonPath: '.type', description: 'The type of the secret' },
        { name: 'Data', type: 'integer', jsonPath: '.data', description: 'Number of entries in data', cell: countData },
        AGE,
      ],
    ),
    builtin(
      {
        group: '',
        plural: 'events',
        singular: 'event',
        kind: 'Event',
        namespaced: true,
        shortNames: ['ev'],
        topLevelFields: [
          'involvedObject',
          'reason',
          'message',
          'source',
          'firstTimestamp',
          'lastTimestamp',
          'count',
          'type',
          'eventTime',
          'series',
          'action',
          'related',
          'reportingComponent',
          'reportingInstance',
        ],
      },
      'v1',
      [
        { name: 'Last Seen', type: 'string', jsonPath: '.lastTimestamp', description: 'Time of the last occurrence', cell: lastSeen },
        { name: 'Type', type: 'string', jsonPath: '.type', description: 'Type of this event' },
        { name: 'Reason', type: 'string', jsonPath: '.reason', description: 'Short, machine understandable string' },
        {
          name: 'Object',
          type: 'string',
          jsonPath: '.involvedObject.name',
          description: 'The object this event is about',
          cell: (o) => {
            const r = (o.involvedObject ?? {}) as Record<string, unknown>;
            return `${String(r.kind ?? '').toLowerCase()}/${String(r.name ?? '')}`;
          },
        },
        { name: 'Message', type: 'string', jsonPath: '.message', description: 'A human-readable description' },
      ],
    ),
    builtin(
      {
        group: '',
        plural: 'serviceaccounts',
        singular: 'serviceaccount',
        kind: 'ServiceAccount',
        topLevelFields: ['secrets', 'imagePullSecrets', 'automountServiceAccountToken'],
        namespaced: true,
        shortNames: ['sa'],
      },
      'v1',
    ),
    builtin(
      {
        group: '',
        plural: 'nodes',
        singular: 'node',
        kind: 'Node',
        topLevelFields: ['spec', 'status'],
        namespaced: false,
        shortNames: ['no'],
        statusSubresource: true,
      },
      'v1',
    ),
    builtin(
      { group: 'coordination.k8s.io', plural: 'leases', singular: 'lease', kind: 'Lease', topLevelFields: ['spec'], namespaced: true },
      'v1',
      [{ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity', description: 'The current holder of the lease' }, AGE],
    ),
    builtin(
      {
        group: 'events.k8s.io',
        plural: 'events',
        singular: 'event',
        kind: 'Event',
        namespaced: true,
        shortNames: ['ev'],
        topLevelFields: [
          'eventTime',
          'series',
          'reportingController',
          'reportingInstance',
          'action',
          'reason',
          'regarding',
          'related',
          'note',
          'type',
          'deprecatedSource',
          'deprecatedFirstTimestamp',
          'deprecatedLastTimestamp',
          'deprecatedCount',
        ],
        sharedStorage: { gr: CORE_EVENTS_GR, read: coreToEventsV1, write: eventsV1ToCore, validate: validateEventsV1 },
      },
      'v1',
      [
        { name: 'Reason', type: 'string', jsonPath: '.reason', description: 'Short, machine understandable string' },
        { name: 'Note', type: 'string', jsonPath: '.note', description: 'A human-readable description' },
        AGE,
      ],
    ),
    builtin(
      {
        group: 'batch',
        plural: 'jobs',
        singular: 'job',
        kind: 'Job',
        topLevelFields: ['spec', 'status'],
        namespaced: true,
        categories: ['all'],
        statusSubresource: true,
        hasGeneration: true,
        clearStatusOnCreate: true,
      },
      'v1',
      [
        { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.status=="True")].type', description: 'Status of the job' },
        { name: 'Completions', type: 'string', jsonPath: '.status.succeeded', description: 'Succeeded pods' },
        AGE,
      ],
    ),
    builtin(
      {
        group: 'apiextensions.k8s.io',
        plural: 'customresourcedefinitions',
        singular: 'customresourcedefinition',
        kind: 'CustomResourceDefinition',
        topLevelFields: ['spec', 'status'],
        namespaced: false,
        shortNames: ['crd', 'crds'],
        statusSubresource: true,
        hasGeneration: true,
        clearStatusOnCreate: true,
        strategicMerge: true,
      },
      'v1',
      [
        {
          name: 'Created At',
          type: 'string',
          format: 'date-time',
          jsonPath: '.metadata.creationTimestamp',
          description: 'When the CRD was created',
        },
      ],
    ),
  ];
}
