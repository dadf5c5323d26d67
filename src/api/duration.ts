// Go's time.ParseDuration: CAPI users write Go durations (the MHC annotation `in-place-update-timeout`, maintenance windows).

/** Thrown for a string that is not a Go duration. */
export class InvalidDurationError extends Error {
  constructor(
    readonly value: string,
    why: string,
  ) {
    super(`parse duration ${JSON.stringify(value)}: ${why}`);
    this.name = 'InvalidDurationError';
  }
}

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go duration (`30m`, `1h30m`, `90s`, `1.5h`, `-2s`, `0`) into milliseconds. */
export function parseGoDuration(value: string): number {
  let s = value;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s.startsWith('-') ? -1 : 1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new InvalidDurationError(value, 'empty');
  let total = 0;
  const re = /^(\d*)(?:\.(\d*))?([a-zµμ]+)/;
  while (s !== '') {
    const m = re.exec(s);
    if (!m) throw new InvalidDurationError(value, /^[\d.]/.test(s) ? 'missing unit' : 'expected a number');
    const [all, whole = '', frac] = m;
    if (whole === '' && (frac === undefined || frac === '')) throw new InvalidDurationError(value, 'expected a number');
    const unit = m[3] ?? '';
    const factor = UNIT_MS[unit];
    if (factor === undefined) throw new InvalidDurationError(value, `unknown unit ${JSON.stringify(unit)}`);
    total += Number(`${whole || '0'}.${frac || '0'}`) * factor;
    s = s.slice(all.length);
  }
  return sign * total;
}
