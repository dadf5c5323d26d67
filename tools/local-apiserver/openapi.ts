/** OpenAPI v3 documents (root index and per group-version) built from CRD schemas, for kubectl explain/apply. */
import { createHash } from 'node:crypto';
import type { Core } from './core.js';
import { apiVersionOf, type ResourceDef } from './resources.js';
import type { Schema } from './schema.js';

type Obj = Record<string, unknown>;

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';

/** Definition name of a kind, e.g. io.x-k8s.cluster.v1beta2.Machine. */
export function definitionName(group: string, version: string, kind: string): string {
  const g = group ? group.split('.').reverse().join('.') : 'io.k8s.api.core';
  return `${g}.${version}.${kind}`;
}

function metaSchemas(): Record<string, Obj> {
  const str = (description: string): Obj => ({ type: 'string', description });
  const time = {
    type: 'string',
    format: 'date-time',
    description: 'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.',
  };
  return {
    [`${META}.Time`]: time,
    [`${META}.FieldsV1`]: {
      type: 'object',
      description: 'FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.',
    },
    [`${META}.ManagedFieldsEntry`]: {
      type: 'object',
      description: 'ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.',
      properties: {
        apiVersion: str('APIVersion defines the version of this resource that this field set applies to.'),
        fieldsType: str('FieldsType is the discriminator for the different fields format and version.'),
        fieldsV1: {
          allOf: [{ $ref: `#/components/schemas/${META}.FieldsV1` }],
          description: 'FieldsV1 holds the first JSON version format.',
        },
        manager: str('Manager is an identifier of the workflow managing these fields.'),
        operation: str('Operation is the type of operation which lead to this ManagedFieldsEntry being created.'),
        subresource: str('Subresource is the name of the subresource used to update that object.'),
        time: {
          allOf: [{ $ref: `#/components/schemas/${META}.Time` }],
          description: 'Time is the timestamp of when the ManagedFields entry was added.',
        },
      },
    },
    [`${META}.OwnerReference`]: {
      type: 'object',
      description: 'OwnerReference contains enough information to let you identify an owning object.',
      required: ['apiVersion', 'kind', 'name', 'uid'],
      properties: {
        apiVersion: str('API version of the referent.'),
        blockOwnerDeletion: {
          type: 'boolean',
          description:
            'If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed.',
        },
        controller: { type: 'boolean', description: 'If true, this reference points to the managing controller.' },
        kind: str('Kind of the referent.'),
        name: str('Name of the referent.'),
        uid: str('UID of the referent.'),
      },
      'x-kubernetes-map-type': 'atomic',
    },
    [`${META}.ObjectMeta`]: {
      type: 'object',
      description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
      properties: {
        annotations: {
          type: 'object',
          additionalProperties: { type: 'string', default: '' },
          description: 'Annotations is an unstructured key value map stored with a resource.',
        },
        creationTimestamp: {
          allOf: [{ $ref: `#/components/schemas/${META}.Time` }],
          description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
        },
        deletionGracePeriodSeconds: {
          type: 'integer',
          format: 'int64',
          description: 'Number of seconds allowed for this object to gracefully terminate.',
        },
        deletionTimestamp: {
          allOf: [{ $ref: `#/components/schemas/${META}.Time` }],
          description: 'DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted.',
        },
        finalizers: {
          type: 'array',
          items: { type: 'string', default: '' },
          'x-kubernetes-list-type': 'set',
          'x-kubernetes-patch-strategy': 'merge',
          description: 'Must be empty before the object is deleted from the registry.',
        },
        generateName: str('GenerateName is an optional prefix, used by the server, to generate a unique name.'),
        generation: {
          type: 'integer',
          format: 'int64',
          description: 'A sequence number representing a specific generation of the desired state.',
        },
        labels: {
          type: 'object',
          additionalProperties: { type: 'string', default: '' },
          description: 'Map of string keys and values that can be used to organize and categorize objects.',
        },
        managedFields: {
          type: 'array',
          items: { default: {}, allOf: [{ $ref: `#/components/schemas/${META}.ManagedFieldsEntry` }] },
          'x-kubernetes-list-type': 'atomic',
          description: 'ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.',
        },
        name: str('Name must be unique within a namespace.'),
        namespace: str('Namespace defines the space within which each name must be unique.'),
        ownerReferences: {
          type: 'array',
          items: { default: {}, allOf: [{ $ref: `#/components/schemas/${META}.OwnerReference` }] },
          'x-kubernetes-list-map-keys': ['uid'],
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-patch-merge-key': 'uid',
          'x-kubernetes-patch-strategy': 'merge',
          description: 'List of objects depended by this object.',
        },
        resourceVersion: str('An opaque value that represents the internal version of this object.'),
        selfLink: str('Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
        uid: str('UID is the unique in time and space value for this object.'),
      },
    },
    [`${META}.ListMeta`]: {
      type: 'object',
      description: 'ListMeta describes metadata that synthetic resources must have, including lists and various status objects.',
      properties: {
        continue: str('continue may be set if the user set a limit on the number of items returned.'),
        remainingItemCount: {
          type: 'integer',
          format: 'int64',
          description: 'remainingItemCount is the number of subsequent items in the list which are not included in this list response.',
        },
        resourceVersion: str("String that identifies the server's internal version of this object."),
        selfLink: str('Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
      },
    },
  };
}

function kindSchema(def: ResourceDef, version: string, schema: Schema | undefined): Obj {
  const s = (schema ? JSON.parse(JSON.stringify(schema)) : { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) as Obj;
  const props = { ...((s.properties as Obj | undefined) ?? {}) };
  props.apiVersion = { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' };
  props.kind = { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' };
  props.metadata = {
    description:
      "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    allOf: [{ $ref: `#/components/schemas/${META}.ObjectMeta` }],
  };
  return { ...s, type: 'object', properties: props, 'x-kubernetes-group-version-kind': [{ group: def.group, kind: def.kind, version }] };
}

/** The per group-version OpenAPI v3 document. */
export function groupVersionDoc(core: Core, group: string, version: string): Obj | undefined {
  const defs = core.servedVersions().get(apiVersionOf(group, version));
  if (!defs) return undefined;
  const schemas: Record<string, Obj> = metaSchemas();
  const paths: Record<string, Obj> = {};
  const prefix = group ? `/apis/${group}/${version}` : `/api/${version}`;
  for (const def of defs.values()) {
    const v = def.versions.find((x) => x.name === version);
    const name = definitionName(group, version, def.kind);
    schemas[name] = kindSchema(def, version, v?.schema);
    schemas[`${name}List`] = {
      type: 'object',
      required: ['items'],
      description: `${def.kind}List is a list of ${def.kind}`,
      properties: {
        apiVersion: { type: 'string' },
        items: { type: 'array', items: { $ref: `#/components/schemas/${name}` } },
        kind: { type: 'string' },
        metadata: { allOf: [{ $ref: `#/components/schemas/${META}.ListMeta` }] },
      },
      'x-kubernetes-group-version-kind': [{ group: def.group, kind: def.listKind, version }],
    };
    const gvk = { group: def.group, version, kind: def.kind };
    const q = (name: string, description: string): Obj => ({
      name,
      in: 'query',
      description,
      schema: { type: 'string', uniqueItems: true },
    });
    const writeParams = [
      q('dryRun', 'When present, indicates that modifications should not be persisted.'),
      q('fieldManager', 'fieldManager is a name associated with the actor or entity that is making these changes.'),
      q(
        'fieldValidation',
        'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.',
      ),
    ];
    const patchParams = [
      ...writeParams,
      {
        name: 'force',
        in: 'query',
        description: 'Force is going to "force" Apply requests.',
        schema: { type: 'boolean', uniqueItems: true },
      },
    ];
    const ok = (ref: string): Obj => ({
      '200': { description: 'OK', content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } },
      '401': { description: 'Unauthorized' },
    });
    const item = def.namespaced ? `${prefix}/namespaces/{namespace}/${def.plural}/{name}` : `${prefix}/${def.plural}/{name}`;
    const coll = def.namespaced ? `${prefix}/namespaces/{namespace}/${def.plural}` : `${prefix}/${def.plural}`;
    paths[coll] = {
      get: {
        description: `list objects of kind ${def.kind}`,
        responses: ok(`${name}List`),
        'x-kubernetes-action': 'list',
        'x-kubernetes-group-version-kind': gvk,
      },
      post: {
        description: `create a ${def.kind}`,
        parameters: writeParams,
        responses: ok(name),
        'x-kubernetes-action': 'post',
        'x-kubernetes-group-version-kind': gvk,
      },
    };
    paths[item] = {
      get: {
        description: `read the specified ${def.kind}`,
        responses: ok(name),
        'x-kubernetes-action': 'get',
        'x-kubernetes-group-version-kind': gvk,
      },
      put: {
        description: `replace the specified ${def.kind}`,
        parameters: writeParams,
        responses: ok(name),
        'x-kubernetes-action': 'put',
        'x-kubernetes-group-version-kind': gvk,
      },
      patch: {
        description: `partially update the specified ${def.kind}`,
        parameters: patchParams,
        responses: ok(name),
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': gvk,
      },
      delete: {
        description: `delete a ${def.kind}`,
        responses: ok(name),
        'x-kubernetes-action': 'delete',
        'x-kubernetes-group-version-kind': gvk,
      },
    };
    if (def.statusSubresource)
      paths[`${item}/status`] = {
        get: {
          description: `read status of the specified ${def.kind}`,
          responses: ok(name),
          'x-kubernetes-action': 'get',
          'x-kubernetes-group-version-kind': gvk,
        },
      };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes CRD Swagger', version: 'v0.1.0' }, paths, components: { schemas } };
}

/** sha512 hex (upper case), as used in the serverRelativeURL hash parameter and ETag. */
export function docHash(body: string): string {
  return createHash('sha512').update(body).digest('hex').toUpperCase();
}

/** The /openapi/v3 index of every served group-version. */
export function openapiRoot(core: Core, hashOf: (path: string) => string): Obj {
  const paths: Record<string, Obj> = {};
  for (const [av, defs] of [...core.servedVersions()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!defs.size) continue;
    const p = av.includes('/') ? `apis/${av}` : `api/${av}`;
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${hashOf(p)}` };
  }
  return { paths };
}
