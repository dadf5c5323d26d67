// Maintenance windows: recurring local-time windows in an IANA time zone, the only times a plan may start a machine.
// Calendar arithmetic (time zones, daylight-saving gaps and overlaps) is luxon's; this module only enumerates
// occurrences and answers "open now, until when" or "closed, opens when". Pure: the caller passes `now`.
import { DateTime } from 'luxon';
import { InvalidDurationError, parseGoDuration } from './duration.js';

/** Days of the week as plans spell them (ISO order: Monday is 1). */
export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;

/** A day of the week as plans spell it. */
export type Weekday = (typeof WEEKDAYS)[number];

/** One recurring window as written in a spec (strings, unvalidated). */
export interface MaintenanceWindowSpec {
  /** Local days on which the window opens; absent or empty means every day. */
  days?: readonly string[];
  /** Local opening time `HH:MM` (24 h). */
  start: string;
  /** Go duration of elapsed time the window stays open (1m to 168h); a window may cross midnight. */
  duration: string;
  /** IANA time zone, e.g. `Europe/Berlin`. */
  timeZone: string;
}

/** Shortest window: anything shorter cannot fit one machine's start. */
export const WINDOW_MIN_MS = 60_000;
/** Longest window: a week; a longer one would overlap its own next occurrence. */
export const WINDOW_MAX_MS = 7 * 24 * 3_600_000;
/** At most this many windows per plan (bounds validation and every state computation). */
export const WINDOWS_MAX = 32;

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** A validated window: what `occurrences` needs. */
interface Window {
  readonly index: number;
  readonly isoDays: ReadonlySet<number>;
  readonly hour: number;
  readonly minute: number;
  readonly durationMs: number;
  readonly zone: string;
}

/** One opening of one window, in UTC instants. */
export interface WindowOccurrence {
  /** Index of the window in the spec's list. */
  readonly window: number;
  /** When it opens. */
  readonly start: Date;
  /** When it closes (exclusive). */
  readonly end: Date;
}

/** Where `now` falls: inside a window (closing when), or outside (next opening when). */
export type WindowState =
  | { readonly open: true; readonly closesAt: Date; readonly window: number }
  | { readonly open: false; readonly opensAt: Date; readonly window: number };

/** Problems with one window, each prefixed with its path (`maintenanceWindows[1].timeZone: …`). */
function windowProblems(w: MaintenanceWindowSpec, path: string): string[] {
  const problems: string[] = [];
  if (!HHMM.test(w.start))
    problems.push(`${path}.start: ${JSON.stringify(w.start).slice(0, 40)} is not a local time HH:MM (00:00 to 23:59)`);
  try {
    const ms = parseGoDuration(w.duration);
    if (ms < WINDOW_MIN_MS || ms > WINDOW_MAX_MS)
      problems.push(`${path}.duration: ${w.duration} is outside 1m..168h (a window must be open at least a minute and at most 7 days)`);
  } catch (e) {
    if (!(e instanceof InvalidDurationError)) throw e;
    problems.push(`${path}.duration: ${e.message.slice(0, 120)} (a Go duration such as 4h or 90m)`);
  }
  if (!DateTime.now().setZone(w.timeZone).isValid)
    problems.push(
      `${path}.timeZone: ${JSON.stringify(w.timeZone).slice(0, 80)} is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)`,
    );
  const seen = new Set<string>();
  for (const d of w.days ?? []) {
    if (!(WEEKDAYS as readonly string[]).includes(d))
      problems.push(`${path}.days: ${JSON.stringify(d).slice(0, 40)} is not one of ${WEEKDAYS.join(', ')}`);
    else if (seen.has(d)) problems.push(`${path}.days: ${d} is listed twice`);
    seen.add(d);
  }
  return problems;
}

/** The window in the form the calendar code reads; call only after `windowProblems` found nothing. */
function parseWindow(w: MaintenanceWindowSpec, index: number): Window {
  const [hour, minute] = w.start.split(':').map(Number) as [number, number];
  const days = w.days && w.days.length > 0 ? w.days : WEEKDAYS;
  return {
    index,
    isoDays: new Set(days.map((d) => (WEEKDAYS as readonly string[]).indexOf(d) + 1)),
    hour,
    minute,
    durationMs: parseGoDuration(w.duration),
    zone: w.timeZone,
  };
}

/**
 * Openings of `w` that start in [from, to). A start time the clocks skip (spring forward) opens when the clocks
 * reach it after the jump (02:30 becomes 03:30); one they pass twice (fall back) opens at the second pass (luxon's
 * rule for ambiguous local times). The duration is elapsed time, so a window over a change is an hour longer or
 * shorter on the wall clock.
 */
function occurrences(w: Window, from: Date, to: Date): WindowOccurrence[] {
  const out: WindowOccurrence[] = [];
  // Start a day early in local terms so a window opening just before `from` on the previous local date is seen.
  let day = DateTime.fromJSDate(from, { zone: w.zone }).startOf('day').minus({ days: 1 });
  const last = DateTime.fromJSDate(to, { zone: w.zone }).startOf('day').plus({ days: 1 });
  while (day <= last) {
    if (w.isoDays.has(day.weekday)) {
      const start = DateTime.fromObject(
        { year: day.year, month: day.month, day: day.day, hour: w.hour, minute: w.minute },
        { zone: w.zone },
      ).toJSDate();
      if (start >= from && start < to) out.push({ window: w.index, start, end: new Date(start.getTime() + w.durationMs) });
    }
    day = day.plus({ days: 1 });
  }
  return out;
}

/** Every opening of every window starting in [from, to), sorted by start. */
function allOccurrences(ws: readonly Window[], from: Date, to: Date): WindowOccurrence[] {
  return ws.flatMap((w) => occurrences(w, from, to)).sort((a, b) => a.start.getTime() - b.start.getTime() || a.window - b.window);
}

/**
 * Every problem with a plan's windows, bounded: each window's fields, too many windows, and windows that overlap
 * (checked over the year after `now`, so overlaps that only daylight-saving shifts create are found too). Windows
 * that touch (one closes as the next opens) do not overlap. The overlaps of the valid windows are listed next to the
 * problems of the invalid ones: the operator learns of both at once, not of the overlap only after fixing the rest.
 */
export function validateMaintenanceWindows(specs: readonly MaintenanceWindowSpec[], now: Date, path = 'spec.maintenanceWindows'): string[] {
  if (specs.length > WINDOWS_MAX) return [`${path}: ${specs.length} windows; at most ${WINDOWS_MAX} are allowed`];
  const problems: string[] = [];
  const ws: Window[] = [];
  specs.forEach((w, i) => {
    const own = windowProblems(w, `${path}[${i}]`);
    problems.push(...own);
    if (own.length === 0) ws.push(parseWindow(w, i));
  });
  const year = allOccurrences(ws, now, new Date(now.getTime() + 366 * 24 * 3_600_000));
  const pairs = new Set<string>();
  for (let i = 0; i < year.length; i++) {
    const a = year[i]!;
    for (let j = i + 1; j < year.length && year[j]!.start < a.end; j++) {
      const b = year[j]!;
      const key = `${Math.min(a.window, b.window)}/${Math.max(a.window, b.window)}`;
      if (pairs.has(key)) continue;
      pairs.add(key);
      problems.push(
        a.window === b.window
          ? `${path}[${a.window}]: overlaps its own next opening (${b.start.toISOString()}); shorten its duration`
          : `${path}[${a.window}] and ${path}[${b.window}] overlap (both open at ${b.start.toISOString()}); merge them or make them disjoint`,
      );
    }
  }
  return problems;
}

/**
 * Whether `now` is inside a window. Open: until the window closes, extended through windows that open exactly as
 * the previous closes (a window set that never closes reports an instant at least a week away). Closed: when the
 * next window opens. Undefined when no windows are set (always open). The
 * specs must have passed `validateMaintenanceWindows`.
 */
export function maintenanceWindowState(specs: readonly MaintenanceWindowSpec[], now: Date): WindowState | undefined {
  if (specs.length === 0) return undefined;
  const ws = specs.map(parseWindow);
  const day = 24 * 3_600_000;
  // A window lasts at most 7 days, so any opening that contains `now` started within the 8 days before it, and with
  // at least one day a week every window opens again within 8 days.
  const occ = allOccurrences(ws, new Date(now.getTime() - 8 * day), new Date(now.getTime() + 9 * day));
  const current = occ.find((o) => o.start <= now && now < o.end);
  if (current) {
    let closesAt = current.end;
    for (const o of occ) if (o.start > now && o.start <= closesAt && o.end > closesAt) closesAt = o.end;
    return { open: true, closesAt, window: current.window };
  }
  const next = occ.find((o) => o.start > now);
  if (!next) throw new Error('maintenanceWindowState: no opening within 9 days (specs not validated)');
  return { open: false, opensAt: next.start, window: next.window };
}

/** "Tue 22:00 Europe/Berlin (2026-11-24T21:00:00.000Z)": an instant in the window's own zone, for messages. */
export function describeWindowInstant(spec: MaintenanceWindowSpec, at: Date): string {
  const local = DateTime.fromJSDate(at, { zone: spec.timeZone });
  return `${WEEKDAYS[local.weekday - 1]} ${local.toFormat('HH:mm')} ${spec.timeZone} (${at.toISOString()})`;
}
