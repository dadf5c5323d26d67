// kube-apiserver keeps core/v1 and events.k8s.io/v1 Events in one storage: an Event written through either API is
// read through the other, which is how `kubectl describe` and `kubectl events` (core/v1 readers) show the Events
// that modern recorders (client-go tools/events, controller-runtime v0.23) write through events.k8s.io/v1.
import type { FieldError } from './errors.js';

type Obj = Record<string, unknown>;

/** Storage key of the core/v1 Events both APIs share. */
export const CORE_EVENTS_GR = '/events';

/** Fields named differently in the two APIs: [core/v1, events.k8s.io/v1]; every other field keeps its name. */
const RENAMED: readonly (readonly [string, string])[] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
  ['reportingComponent', 'reportingController'],
];
const SAME = ['metadata', 'eventTime', 'series', 'related', 'action', 'reason', 'type', 'reportingInstance'];

function rename(o: Obj, from: 0 | 1, apiVersion: string): Obj {
  const out: Obj = { apiVersion, kind: 'Event' };
  for (const k of SAME) if (o[k] !== undefined) out[k] = o[k];
  for (const pair of RENAMED) {
    const v = o[pair[from]];
    // The deprecated core fields are zero values for events.k8s.io writers; the real server omits them then.
    if (v !== undefined && v !== null && v !== '' && !(pair[0] === 'count' && v === 0)) out[pair[1 - from]!] = v;
  }
  return out;
}

/** A stored (core/v1) Event as events.k8s.io/v1 shows it. */
export function coreToEventsV1(o: Obj): Obj {
  return rename(o, 0, 'events.k8s.io/v1');
}

/** An events.k8s.io/v1 Event in its stored (core/v1) form. */
export function eventsV1ToCore(o: Obj): Obj {
  return rename(o, 1, 'v1');
}

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_PART_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/** apimachinery's IsQualifiedName messages (an optional DNS subdomain prefix and '/', then a name part). */
function qualifiedNameErrors(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  if (parts.length > 2)
    return [`a qualified name ${NAME_PART_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  const name = parts[parts.length - 1]!;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (!prefix) errs.push('prefix part must be non-empty');
    else {
      if (prefix.length > 253) errs.push('prefix part must be no more than 253 characters');
      if (!DNS1123_SUBDOMAIN.test(prefix))
        errs.push(
          "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        );
    }
  }
  if (!name) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (!NAME_PART.test(name)) errs.push(`name part ${NAME_PART_MSG}`);
  return errs;
}
const NOTE_LIMIT = 1024;
const SHORT_LIMIT = 128;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const required = (field: string): FieldError => ({ type: 'FieldValueRequired', field, detail: '' });
/** Upstream reports these with an empty value: `Invalid value: "": …`. */
const invalidEmpty = (field: string, detail: string): FieldError => ({
  type: 'FieldValueInvalid',
  field,
  value: '',
  hasValue: true,
  detail,
});

/**
 * What the real server checks on every Event write, through either API, on its internal (core) form
 * (`legacyValidateEvent`): an Event without `eventTime` only has its namespaces compared; one with `eventTime` (a
 * "new" Event) needs a reporting controller (named `reportingComponent` on a core/v1 request), instance, action and
 * reason. Paths are the internal field names (`message`, `involvedObject`) whatever the request's API.
 */
function legacyErrors(ev: Obj, namespace: string, controllerField: string): FieldError[] {
  const errs: FieldError[] = [];
  const involvedNs = str((ev.involvedObject as Obj | undefined)?.namespace);
  const mismatch = (): void =>
    void errs.push({
      type: 'FieldValueInvalid',
      field: 'involvedObject.namespace',
      value: involvedNs,
      hasValue: true,
      detail: 'does not match event.namespace',
    });
  if (!ev.eventTime) {
    if (!involvedNs ? namespace !== '' && namespace !== 'default' : namespace !== involvedNs) mismatch();
    return errs;
  }
  if (!involvedNs && namespace !== 'default' && namespace !== 'kube-system') mismatch();
  const controller = str(ev.reportingComponent);
  if (!controller) errs.push(required(controllerField));
  for (const msg of qualifiedNameErrors(controller))
    errs.push({ type: 'FieldValueInvalid', field: controllerField, value: controller, hasValue: true, detail: msg });
  const short: [string, unknown][] = [
    ['reportingInstance', ev.reportingInstance],
    ['action', ev.action],
    ['reason', ev.reason],
  ];
  for (const [f, v] of short) {
    if (!str(v)) errs.push(required(f));
    if (Buffer.byteLength(str(v)) > SHORT_LIMIT) errs.push(invalidEmpty(f, `can have at most ${SHORT_LIMIT} characters`));
  }
  if (Buffer.byteLength(str(ev.message)) > NOTE_LIMIT) errs.push(invalidEmpty('message', `can have at most ${NOTE_LIMIT} characters`));
  return errs;
}

/** A series needs at least two occurrences and the last one's time (`validateV1EventSeries`). */
function seriesErrors(series: unknown): FieldError[] {
  if (!series || typeof series !== 'object') return [];
  const s = series as Obj;
  const errs: FieldError[] = [];
  if (typeof s.count !== 'number' || s.count < 2) errs.push(invalidEmpty('series.count', 'should be at least 2'));
  if (!s.lastObservedTime) errs.push(required('series.lastObservedTime'));
  return errs;
}

/**
 * What the real server refuses in an events.k8s.io/v1 write (ValidateEventCreate/Update for that API): the legacy
 * checks on the converted Event, then on a create the strict ones (`eventTime` required, `type` Normal or Warning,
 * the deprecated fields unset) and the series. Immutable fields on an update are not checked here.
 */
export function validateEventsV1(o: Obj, namespace: string, create: boolean): FieldError[] {
  const errs = legacyErrors(eventsV1ToCore(o), namespace, 'reportingController');
  errs.push(...seriesErrors(o.series));
  if (!create) return errs;
  if (!o.eventTime) errs.push(required('eventTime'));
  if (o.type !== 'Normal' && o.type !== 'Warning') errs.push(invalidEmpty('type', `has invalid value: ${str(o.type)}`));
  if (o.deprecatedFirstTimestamp) errs.push(invalidEmpty('firstTimestamp', 'needs to be unset'));
  if (o.deprecatedLastTimestamp) errs.push(invalidEmpty('lastTimestamp', 'needs to be unset'));
  if (typeof o.deprecatedCount === 'number' && o.deprecatedCount !== 0) errs.push(invalidEmpty('count', 'needs to be unset'));
  const source = o.deprecatedSource as Obj | undefined;
  if (str(source?.component) || str(source?.host)) errs.push(invalidEmpty('source', 'needs to be unset'));
  return errs;
}

/** What the real server refuses in a core/v1 Event write: the legacy checks only (backwards compatibility). */
export function validateCoreEvent(o: Obj, namespace: string): FieldError[] {
  return legacyErrors(o, namespace, 'reportingComponent');
}
