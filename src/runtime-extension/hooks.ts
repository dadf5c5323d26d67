// The wire types of Cluster API's Runtime SDK hooks this component serves (hooks.runtime.cluster.x-k8s.io/v1alpha1:
// Discovery, CanUpdateMachine, CanUpdateMachineSet, UpdateMachine), written from upstream's Go types
// (api/runtime/hooks/v1alpha1/{common,discovery,inplaceupdate}_types.go). Requests are validated loosely (objects are
// runtime.RawExtension: any JSON object); responses are built by decide.ts. Pure.
import { z } from 'zod';

/** API group and version of the hooks. */
export const HOOKS_API_VERSION = 'hooks.runtime.cluster.x-k8s.io/v1alpha1';

/** The hooks served, by their Go names (the Runtime SDK URL uses them lower-cased). */
export const Hooks = {
  discovery: 'Discovery',
  canUpdateMachine: 'CanUpdateMachine',
  canUpdateMachineSet: 'CanUpdateMachineSet',
  updateMachine: 'UpdateMachine',
} as const;
/** One of the hooks served. */
export type HookName = (typeof Hooks)[keyof typeof Hooks];

/** Handler names announced by discovery (the last URL segment; CAPI prefixes them with the ExtensionConfig name). */
export const HandlerNames = {
  CanUpdateMachine: 'can-update-machine',
  CanUpdateMachineSet: 'can-update-machineset',
  UpdateMachine: 'update-machine',
} as const;

/** ResponseStatus: Success or Failure. */
export type ResponseStatus = 'Success' | 'Failure';
/** FailurePolicy of a handler: Ignore or Fail. */
export type FailurePolicy = 'Ignore' | 'Fail';
/** PatchType of a hook patch: RFC 6902 JSON patch or RFC 7386 JSON merge patch. */
export type PatchType = 'JSONPatch' | 'JSONMergePatch';

/** A runtime.RawExtension holding a Kubernetes object (absent or empty when the caller had none). */
const rawObject = z.record(z.string(), z.unknown());
/** Settings of the ExtensionConfig (CommonRequest). */
const settings = z.record(z.string(), z.string()).optional();

/** The objects of a CanUpdateMachine / UpdateMachine request side. */
export const MachineObjectsSchema = z.object({
  machine: rawObject.optional(),
  infrastructureMachine: rawObject.optional(),
  bootstrapConfig: rawObject.optional(),
});
/** The objects of a CanUpdateMachineSet request side. */
export const MachineSetObjectsSchema = z.object({
  machineSet: rawObject.optional(),
  infrastructureMachineTemplate: rawObject.optional(),
  bootstrapConfigTemplate: rawObject.optional(),
});

/** CanUpdateMachineRequest. */
export const CanUpdateMachineRequestSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  settings,
  current: MachineObjectsSchema.default({}),
  desired: MachineObjectsSchema.default({}),
});
/** CanUpdateMachineSetRequest. */
export const CanUpdateMachineSetRequestSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  settings,
  current: MachineSetObjectsSchema.default({}),
  desired: MachineSetObjectsSchema.default({}),
});
/** UpdateMachineRequest. */
export const UpdateMachineRequestSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  settings,
  desired: MachineObjectsSchema.default({}),
});
/** DiscoveryRequest (no fields besides TypeMeta). */
export const DiscoveryRequestSchema = z.object({ apiVersion: z.string().optional(), kind: z.string().optional() });

/** A parsed CanUpdateMachineRequest. */
export type CanUpdateMachineRequest = z.infer<typeof CanUpdateMachineRequestSchema>;
/** A parsed CanUpdateMachineSetRequest. */
export type CanUpdateMachineSetRequest = z.infer<typeof CanUpdateMachineSetRequestSchema>;
/** A parsed UpdateMachineRequest. */
export type UpdateMachineRequest = z.infer<typeof UpdateMachineRequestSchema>;
/** One side (current or desired) of a CanUpdateMachine request. */
export type MachineObjects = z.infer<typeof MachineObjectsSchema>;
/** One side of a CanUpdateMachineSet request. */
export type MachineSetObjects = z.infer<typeof MachineSetObjectsSchema>;

/** A hook patch as Go marshals it: `patch` is []byte, i.e. base64 in JSON. */
export interface HookPatch {
  patchType: PatchType;
  patch: string;
}

/** CommonResponse. */
export interface CommonResponse {
  apiVersion: typeof HOOKS_API_VERSION;
  kind: string;
  status: ResponseStatus;
  message?: string;
}

/** CanUpdateMachineResponse. */
export interface CanUpdateMachineResponse extends CommonResponse {
  machinePatch?: HookPatch;
  infrastructureMachinePatch?: HookPatch;
  bootstrapConfigPatch?: HookPatch;
  /** Whether the update may disrupt the machine (Cluster API v1.15+; absent means true). */
  affectsAvailability?: boolean;
}
/** CanUpdateMachineSetResponse. */
export interface CanUpdateMachineSetResponse extends CommonResponse {
  machineSetPatch?: HookPatch;
  infrastructureMachineTemplatePatch?: HookPatch;
  bootstrapConfigTemplatePatch?: HookPatch;
  /** Whether the update may disrupt the machine (Cluster API v1.15+; absent means true). */
  affectsAvailability?: boolean;
}
/** UpdateMachineResponse (CommonRetryResponse: retryAfterSeconds is always written, 0 when done). */
export interface UpdateMachineResponse extends CommonResponse {
  retryAfterSeconds: number;
}

/** One handler announced by discovery. */
export interface ExtensionHandler {
  name: string;
  requestHook: { apiVersion: string; hook: string };
  timeoutSeconds?: number;
  failurePolicy?: FailurePolicy;
}
/** DiscoveryResponse. */
export interface DiscoveryResponse extends CommonResponse {
  handlers: ExtensionHandler[];
}

/** The schema of the response objects for tests replaying upstream-shaped JSON (patch bytes base64, as Go writes them). */
export const HookPatchSchema = z.object({ patchType: z.enum(['JSONPatch', 'JSONMergePatch']), patch: z.base64() });

/** A JSON patch as bytes the Go side decodes: base64 of the JSON text. */
export const encodePatchBytes = (ops: unknown): string => Buffer.from(JSON.stringify(ops), 'utf8').toString('base64');
/** The JSON value of a base64-encoded patch (tests, and the simulator side). */
export const decodePatchBytes = (b64: string): unknown => JSON.parse(Buffer.from(b64, 'base64').toString('utf8')) as unknown;

/** The Runtime SDK path of a hook handler: /hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook lower-cased>/<handler>. */
export const hookPath = (hook: HookName, handler?: string): string =>
  `/${HOOKS_API_VERSION}/${hook.toLowerCase()}${handler ? `/${handler}` : ''}`;
