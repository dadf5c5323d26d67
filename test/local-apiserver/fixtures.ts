/* eslint-disable @typescript-eslint/no-explicit-any -- raw API JSON is asserted structurally, as a client sees it */
// A CRD that exercises every structural-schema feature the local API server implements.
import { TEST_LABEL } from '../support/env.js';
/** API group of the conformance CRD. */
export const GROUP = 'conformance.inplace.dev';
/** Its plural resource name. */
export const PLURAL = 'widgets';
/** Its CRD name. */
export const CRD_NAME = `${PLURAL}.${GROUP}`;

const widgetSchema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      required: ['size'],
      'x-kubernetes-validations': [
        { rule: 'self.color == oldSelf.color', message: 'color is immutable' },
        { rule: "!has(self.mode) || self.mode in ['fast', 'slow']", message: 'mode must be fast or slow' },
        { rule: '!has(self.parts) || self.parts.all(p, p.count >= 0)', message: 'part counts are never negative' },
      ],
      properties: {
        size: { type: 'integer', minimum: 1, maximum: 10 },
        color: { type: 'string', enum: ['red', 'green', 'blue'], default: 'red' },
        mode: { type: 'string' },
        code: { type: 'string', pattern: '^[a-z]{2,4}$', maxLength: 4 },
        when: { type: 'string', format: 'date-time' },
        port: { 'x-kubernetes-int-or-string': true },
        note: { type: 'string', nullable: true },
        extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
        tags: { type: 'array', maxItems: 3, items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
        nested: {
          type: 'object',
          default: {},
          properties: { level: { type: 'string', default: 'info' }, depth: { type: 'integer', default: 3 } },
        },
        parts: {
          type: 'array',
          // Bounds (maxItems here, maxLength on phase) keep the rules' estimated cost within a real server's budget.
          maxItems: 16,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: {
            type: 'object',
            required: ['name'],
            properties: {
              name: { type: 'string', minLength: 1 },
              count: { type: 'integer', default: 1 },
              phase: {
                type: 'string',
                maxLength: 32,
                'x-kubernetes-validations': [{ rule: "self == oldSelf || oldSelf == 'new'", message: 'a part leaves phase new only once' }],
              },
            },
          },
        },
      },
    },
    status: {
      type: 'object',
      properties: {
        phase: { type: 'string' },
        observedGeneration: { type: 'integer' },
        conditions: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['type'],
          items: {
            type: 'object',
            required: ['type', 'status'],
            properties: { type: { type: 'string' }, status: { type: 'string' }, reason: { type: 'string' } },
          },
        },
      },
    },
  },
};

const columns = [
  { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

/** The Widget CRD: v1 (storage) and v1beta1 (served), status subresource, printer columns. */
export function widgetCrd(): any {
  return structuredClone({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    // Labelled like every CRD the tests create, so scripts/test-real.ts can remove it should a suite not get to.
    metadata: { name: CRD_NAME, labels: { [TEST_LABEL]: 'true' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        plural: PLURAL,
        singular: 'widget',
        kind: 'Widget',
        listKind: 'WidgetList',
        shortNames: ['wd'],
        categories: ['conformance'],
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: widgetSchema },
          subresources: { status: {} },
          additionalPrinterColumns: columns,
        },
        {
          name: 'v1beta1',
          served: true,
          storage: false,
          schema: { openAPIV3Schema: widgetSchema },
          subresources: { status: {} },
          additionalPrinterColumns: columns,
        },
      ],
    },
  });
}

/** A minimal valid Widget. */
export function widget(ns: string, name: string, spec: Record<string, unknown> = {}, version = 'v1'): any {
  return { apiVersion: `${GROUP}/${version}`, kind: 'Widget', metadata: { name, namespace: ns }, spec: { size: 2, ...spec } };
}

/** Path of the Widget collection or one Widget. */
export function widgetPath(ns: string, name?: string, sub?: string, version = 'v1'): string {
  return `/apis/${GROUP}/${version}/namespaces/${ns}/${PLURAL}${name ? `/${name}` : ''}${sub ? `/${sub}` : ''}`;
}
