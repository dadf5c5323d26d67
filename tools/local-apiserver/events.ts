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

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const NOTE_LIMIT = 1024;
const SHORT_LIMIT = 128;

/** What the real server checks on an events.k8s.io/v1 write (ValidateEventCreate/Update for that request version). */
export function validateEventsV1(o: Obj, namespace: string): FieldError[] {
  const errs: FieldError[] = [];
  const required = (field: string): void => void errs.push({ type: 'FieldValueRequired', field, detail: '' });
  const tooLong = (field: string, v: string, max: number): void =>
    void errs.push({ type: 'FieldValueTooLong', field, detail: `may not be more than ${max} bytes`, value: v, hasValue: true });
  if (!o.eventTime) required('eventTime');
  const type = o.type;
  if (type !== 'Normal' && type !== 'Warning')
    errs.push({
      type: 'FieldValueNotSupported',
      field: 'type',
      detail: 'supported values: "Normal", "Warning"',
      value: type ?? '',
      hasValue: true,
    });
  const controller = typeof o.reportingController === 'string' ? o.reportingController : '';
  if (!controller) required('reportingController');
  else if (!QUALIFIED_NAME.test(controller) || controller.length > 316)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'reportingController',
      detail: 'must be a qualified name',
      value: controller,
      hasValue: true,
    });
  for (const f of ['reportingInstance', 'action', 'reason']) {
    const v = typeof o[f] === 'string' ? (o[f] as string) : '';
    if (!v) required(f);
    else if (Buffer.byteLength(v) > SHORT_LIMIT) tooLong(f, v, SHORT_LIMIT);
  }
  if (typeof o.note === 'string' && Buffer.byteLength(o.note) > NOTE_LIMIT) tooLong('note', o.note, NOTE_LIMIT);
  const series = o.series as Obj | undefined;
  if (series) {
    if (typeof series.count !== 'number' || series.count < 2)
      errs.push({
        type: 'FieldValueInvalid',
        field: 'series.count',
        detail: 'should be at least 2',
        value: series.count ?? 0,
        hasValue: true,
      });
    if (!series.lastObservedTime) required('series.lastObservedTime');
  }
  const regarding = o.regarding as Obj | undefined;
  if (regarding?.namespace && regarding.namespace !== namespace)
    errs.push({
      type: 'FieldValueInvalid',
      field: 'regarding.namespace',
      detail: 'does not match event.namespace',
      value: regarding.namespace,
      hasValue: true,
    });
  return errs;
}
