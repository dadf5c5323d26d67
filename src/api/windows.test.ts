import { expect } from 'chai';
import { describeWindowInstant, maintenanceWindowState, validateMaintenanceWindows, type MaintenanceWindowSpec } from './windows.js';

const at = (iso: string): Date => new Date(iso);
const berlinNights: MaintenanceWindowSpec = { days: ['Sat', 'Sun'], start: '22:00', duration: '4h', timeZone: 'Europe/Berlin' };

describe('maintenance windows: state at an instant', () => {
  it('is undefined (always open) without windows', () => {
    expect(maintenanceWindowState([], at('2026-11-25T12:00:00Z'))).to.equal(undefined);
  });

  it('is closed before the window and names the next opening in UTC (Berlin is UTC+1 in winter)', () => {
    // Wednesday 2026-11-25 12:00 UTC: next opening is Saturday 2026-11-28 22:00 CET = 21:00 UTC.
    const s = maintenanceWindowState([berlinNights], at('2026-11-25T12:00:00Z'));
    expect(s).to.deep.equal({ open: false, opensAt: at('2026-11-28T21:00:00Z'), window: 0 });
  });

  it('is open across midnight: a Saturday 22:00 window is still open on Sunday 01:00 local, closing at 02:00', () => {
    const s = maintenanceWindowState([berlinNights], at('2026-11-29T00:00:00Z')); // Sun 01:00 CET
    expect(s).to.deep.equal({ open: true, closesAt: at('2026-11-29T01:00:00Z'), window: 0 });
  });

  it('closes at the end (exclusive) and opens at the start (inclusive)', () => {
    expect(maintenanceWindowState([berlinNights], at('2026-11-28T21:00:00Z'))?.open).to.equal(true);
    const after = maintenanceWindowState([berlinNights], at('2026-11-29T01:00:00Z'));
    expect(after).to.deep.equal({ open: false, opensAt: at('2026-11-29T21:00:00Z'), window: 0 });
  });

  it('follows summer time: the same local 22:00 is 20:00 UTC in July', () => {
    const s = maintenanceWindowState([berlinNights], at('2026-07-01T12:00:00Z')); // Wednesday
    expect(s).to.deep.equal({ open: false, opensAt: at('2026-07-04T20:00:00Z'), window: 0 });
  });

  it('spring forward: a window opening in the skipped hour opens when the clocks jump (02:30 → 03:30 CEST)', () => {
    const w: MaintenanceWindowSpec = { days: ['Sun'], start: '02:30', duration: '1h', timeZone: 'Europe/Berlin' };
    // 2026-03-29: clocks go from 02:00 CET to 03:00 CEST; 03:30 CEST = 01:30 UTC.
    const s = maintenanceWindowState([w], at('2026-03-28T12:00:00Z'));
    expect(s).to.deep.equal({ open: false, opensAt: at('2026-03-29T01:30:00Z'), window: 0 });
  });

  it('spring forward: the duration is elapsed time, so a 22:00+6h window over the change closes at 05:00 local', () => {
    const w: MaintenanceWindowSpec = { days: ['Sat'], start: '22:00', duration: '6h', timeZone: 'Europe/Berlin' };
    const s = maintenanceWindowState([w], at('2026-03-28T23:00:00Z')); // Sun 00:00 CET
    expect(s).to.deep.equal({ open: true, closesAt: at('2026-03-29T03:00:00Z'), window: 0 }); // 05:00 CEST
  });

  it('fall back: a start time passed twice opens at its second pass (02:30 CET, 01:30 UTC)', () => {
    const w: MaintenanceWindowSpec = { days: ['Sun'], start: '02:30', duration: '30m', timeZone: 'Europe/Berlin' };
    const s = maintenanceWindowState([w], at('2026-10-24T12:00:00Z'));
    expect(s).to.deep.equal({ open: false, opensAt: at('2026-10-25T01:30:00Z'), window: 0 });
  });

  it('fall back in New York: a 01:00+2h window on the change day lasts until 02:00 local wall time', () => {
    const w: MaintenanceWindowSpec = { days: ['Sun'], start: '01:00', duration: '2h', timeZone: 'America/New_York' };
    // 2026-11-01: 01:00 happens twice; the second (EST, UTC-5) is 06:00 UTC; two elapsed hours later is 08:00 UTC.
    const s = maintenanceWindowState([w], at('2026-11-01T06:30:00Z'));
    expect(s).to.deep.equal({ open: true, closesAt: at('2026-11-01T08:00:00Z'), window: 0 });
  });

  it('every day when days is empty, and picks the earliest of several windows in different zones', () => {
    const tokyo: MaintenanceWindowSpec = { start: '03:00', duration: '1h', timeZone: 'Asia/Tokyo' }; // 18:00 UTC
    const ny: MaintenanceWindowSpec = { days: ['Wed'], start: '12:00', duration: '1h', timeZone: 'America/New_York' }; // 17:00 UTC
    const s = maintenanceWindowState([tokyo, ny], at('2026-11-25T16:00:00Z'));
    expect(s).to.deep.equal({ open: false, opensAt: at('2026-11-25T17:00:00Z'), window: 1 });
    // New York closes at 18:00 UTC exactly as Tokyo opens: one chained opening until 19:00 UTC.
    const t = maintenanceWindowState([tokyo, ny], at('2026-11-25T17:30:00Z'));
    expect(t).to.deep.equal({ open: true, closesAt: at('2026-11-25T19:00:00Z'), window: 1 });
  });

  it('touching windows chain: open until the last of them closes', () => {
    const a: MaintenanceWindowSpec = { days: ['Mon'], start: '22:00', duration: '2h', timeZone: 'UTC' };
    const b: MaintenanceWindowSpec = { days: ['Tue'], start: '00:00', duration: '3h', timeZone: 'UTC' };
    const s = maintenanceWindowState([a, b], at('2026-11-23T23:00:00Z'));
    expect(s).to.deep.equal({ open: true, closesAt: at('2026-11-24T03:00:00Z'), window: 0 });
  });

  it('a 7-day window on one day is always open (it chains into its next opening)', () => {
    const w: MaintenanceWindowSpec = { days: ['Mon'], start: '00:00', duration: '168h', timeZone: 'UTC' };
    const s = maintenanceWindowState([w], at('2026-11-29T23:59:00Z'));
    expect(s?.open).to.equal(true);
    expect(s?.open && s.closesAt.getTime()).to.be.greaterThan(at('2026-12-06T23:59:00Z').getTime());
  });

  it('describes an instant in the window’s zone', () => {
    expect(describeWindowInstant(berlinNights, at('2026-11-28T21:00:00Z'))).to.equal('Sat 22:00 Europe/Berlin (2026-11-28T21:00:00.000Z)');
  });
});

describe('maintenance windows: validation lists every problem', () => {
  const now = at('2026-11-25T12:00:00Z');

  it('accepts valid, touching and DST-spanning windows', () => {
    expect(validateMaintenanceWindows([berlinNights], now)).to.deep.equal([]);
    const a: MaintenanceWindowSpec = { days: ['Mon'], start: '22:00', duration: '2h', timeZone: 'UTC' };
    const b: MaintenanceWindowSpec = { days: ['Tue'], start: '00:00', duration: '3h', timeZone: 'UTC' };
    expect(validateMaintenanceWindows([a, b], now)).to.deep.equal([]);
  });

  it('names each bad field with its path', () => {
    const problems = validateMaintenanceWindows(
      [
        { days: ['Mon', 'Funday', 'Mon'], start: '24:00', duration: '0s', timeZone: 'Mars/Olympus' },
        { start: '01:00', duration: '169h', timeZone: 'UTC' },
        { start: '01:00', duration: 'soon', timeZone: 'UTC' },
      ],
      now,
    );
    expect(problems).to.have.length(7);
    expect(problems.join('\n')).to.match(/\[0\]\.start: "24:00" is not a local time/);
    expect(problems.join('\n')).to.match(/\[0\]\.duration: 0s is outside 1m\.\.168h/);
    expect(problems.join('\n')).to.match(/\[0\]\.timeZone: "Mars\/Olympus" is not an IANA time zone/);
    expect(problems.join('\n')).to.match(/\[0\]\.days: "Funday" is not one of Mon/);
    expect(problems.join('\n')).to.match(/\[0\]\.days: Mon is listed twice/);
    expect(problems.join('\n')).to.match(/\[1\]\.duration: 169h is outside/);
    expect(problems.join('\n')).to.match(/\[2\]\.duration: parse duration "soon"/);
  });

  it('finds overlapping windows, including a window overlapping its own next day', () => {
    const a: MaintenanceWindowSpec = { days: ['Sat'], start: '20:00', duration: '3h', timeZone: 'UTC' };
    const b: MaintenanceWindowSpec = { days: ['Sat'], start: '22:00', duration: '1h', timeZone: 'UTC' };
    expect(validateMaintenanceWindows([a, b], now)).to.deep.equal([
      'spec.maintenanceWindows[0] and spec.maintenanceWindows[1] overlap (both open at 2026-11-28T22:00:00.000Z); merge them or make them disjoint',
    ]);
    const daily: MaintenanceWindowSpec = { start: '20:00', duration: '25h', timeZone: 'UTC' };
    expect(validateMaintenanceWindows([daily], now)[0]).to.match(/\[0\]: overlaps its own next opening/);
  });

  it('lists the overlap of two valid windows next to the problems of an invalid one (every problem at once)', () => {
    const a: MaintenanceWindowSpec = { days: ['Sat'], start: '20:00', duration: '3h', timeZone: 'UTC' };
    const b: MaintenanceWindowSpec = { days: ['Sat'], start: '22:00', duration: '1h', timeZone: 'UTC' };
    const overlap =
      'spec.maintenanceWindows[0] and spec.maintenanceWindows[2] overlap (both open at 2026-11-28T22:00:00.000Z); merge them or make them disjoint';
    const bad: [string, MaintenanceWindowSpec, RegExp][] = [
      ['zone', { start: '01:00', duration: '1h', timeZone: 'Mars/Olympus' }, /^spec\.maintenanceWindows\[1\]\.timeZone: /],
      ['duration', { start: '01:00', duration: 'soon', timeZone: 'UTC' }, /^spec\.maintenanceWindows\[1\]\.duration: /],
      ['start', { start: '25:00', duration: '1h', timeZone: 'UTC' }, /^spec\.maintenanceWindows\[1\]\.start: /],
    ];
    for (const [what, w, problem] of bad) {
      const problems = validateMaintenanceWindows([a, w, b], now);
      expect(problems, what).to.have.length(2);
      expect(problems[0], what).to.match(problem);
      expect(problems[1], what).to.equal(overlap);
    }
    // An invalid window takes part in no overlap: its times are not known.
    expect(validateMaintenanceWindows([a, { ...a, timeZone: 'Nowhere/Land' }], now)).to.have.length(1);
  });

  it('finds an overlap that only a daylight-saving change creates (same UTC hour in winter, apart in summer)', () => {
    // London 23:00 (UTC+0 in winter, +1 in summer) vs UTC 22:00+1h: touch in summer, overlap never… but
    // UTC 22:30+1h overlaps London 23:00 only in winter (23:00 UTC) and not in summer (22:00 UTC, ends before 22:30).
    const london: MaintenanceWindowSpec = { days: ['Wed'], start: '23:00', duration: '30m', timeZone: 'Europe/London' };
    const utc: MaintenanceWindowSpec = { days: ['Wed'], start: '22:45', duration: '30m', timeZone: 'UTC' };
    const summer = at('2026-04-01T00:00:00Z');
    // In winter London 23:00 = 23:00 UTC, inside 22:45–23:15 UTC; the check covers a year, so it is found in summer too.
    expect(validateMaintenanceWindows([london, utc], summer)).to.have.length(1);
  });

  it('refuses more than 32 windows in one line', () => {
    const many = Array.from({ length: 33 }, () => berlinNights);
    expect(validateMaintenanceWindows(many, now)).to.deep.equal(['spec.maintenanceWindows: 33 windows; at most 32 are allowed']);
  });
});
