// The controller runtime's public surface. Controllers import from here only.
export * from './pure/types.js';
export {
  KubeApiError,
  TerminalError,
  RetryableError,
  ConflictError,
  isNotFound,
  isConflict,
  isAlreadyExists,
  isRetryable,
  apiErrorCode,
  type StatusBody,
} from './pure/errors.js';
export {
  createClient,
  loadKubeConfig,
  resourcePath,
  resourceName,
  type ClientOptions,
  type RestClient,
  type RequestInfo,
} from './client.js';
export {
  parseSelector,
  matchesSelector,
  matchesRequirements,
  formatLabelSelector,
  labelSelectorMatches,
  LabelSelectorError,
  type LabelRequirement,
  type LabelSelector,
  type LabelOperator,
} from './pure/labels.js';
export { parsePointer, encodePointer, getPointer, setPointer, isPointer, JsonPointerError } from './pure/jsonpointer.js';
export { MemoryStore, keyOf, objectKey } from './store.js';
export {
  SharedInformer,
  createInformer,
  type InformerOptions,
  type ChangeHandler,
  type ChangeType,
  type RestartReason,
} from './informer.js';
export { ScopedInformer, type ScopedInformerOptions } from './scoped.js';
export { WorkQueue, type WorkQueueOptions } from './queue.js';
export { ownerMapper, selfMapper, parseKey, formatKey } from './controller.js';
export { createManager, type ManagerOptions, type ManagerLeaderElection, type RuntimeManager } from './manager.js';
export { snapshot, mergePatchDiff, applyMergePatch, computePatches, jsonEqual, type PatchHelper } from './patch.js';
export {
  setCondition,
  setStatusCondition,
  removeCondition,
  getCondition,
  isTrue,
  isFalse,
  isUnknown,
  toKubeTime,
  type ConditionInput,
} from './pure/conditions.js';
export { LeaderElector, toMicroTime, type LeaderElectionOptions, type Lease } from './leader.js';
export { createEventRecorder, type EventRecorderOptions, type FlushableEventRecorder } from './events.js';
export { createMetrics, instrumentClient, type RuntimeMetrics } from './metrics.js';
export { startHealthServer, type HealthServer, type HealthServerOptions } from './health.js';
export { createLogger, noopLogger, errorFields, type LoggerOptions } from './log.js';
export { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
export { forEachLimit } from './parallel.js';
export {
  runtimeRbac,
  providerRules,
  providerProblems,
  parseProvider,
  DEFAULT_PROVIDERS,
  PROVIDER_ROLES,
  type ProviderResource,
  type ProviderRole,
  type ProviderVerbs,
} from './rbac.js';
export { setValuesPatch, verifyValues, SetPathError, type JsonPatchOp, type PointerValue, type ValueMismatch } from './pure/set-patch.js';
