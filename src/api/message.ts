// Bounded human messages. Status and Event messages are often built from unbounded input (names of missing
// objects, an updater's own failure text, one line per failed machine); the API server rejects a whole status
// write when one message is over its schema's maxLength, so every such message is cut to a budget here. Pure.

/** metav1.Condition message maxLength (characters); the CRDs carry the same limit. */
export const CONDITION_MESSAGE_MAX = 32768;

/** Budgets this project keeps messages under. Bytes of UTF-8, so they also hold for maxLength in characters. */
export const MessageBudget = {
  /** A condition message: well under the 32 KiB limit so that several conditions still fit one object. */
  condition: 8192,
  /** A status.message or one status.targets[] row message. */
  status: 4096,
  /** An Event message: kube's events.k8s.io note is limited to 1 KiB. */
  event: 1024,
  /** One item of a summarised list (a name, or `machine: why`). */
  item: 512,
} as const;

const utf8 = new TextEncoder();

/** UTF-8 length of `s` in bytes. */
export const byteLength = (s: string): number => utf8.encode(s).length;

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes that does not split a code point. */
function prefixBytes(s: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  // Fast path: at most 4 bytes per code point, so a string this short always fits.
  if (s.length * 3 <= maxBytes) return s;
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + n > maxBytes) break;
    bytes += n;
    end += ch.length;
  }
  return s.slice(0, end);
}

/**
 * `message` if it fits `maxBytes` (UTF-8), else its longest prefix that does, ending in
 * `... (N more bytes)` so that a reader knows it was cut. Never splits a code point.
 */
export function boundMessage(message: string, maxBytes: number = MessageBudget.condition): string {
  if (message.length * 3 <= maxBytes) return message;
  const total = byteLength(message);
  if (total <= maxBytes) return message;
  // The suffix's digit count can only shrink as the kept part grows, so one estimate with the total is safe.
  const suffixFor = (rest: number): string => `... (${rest} more bytes)`;
  const room = maxBytes - byteLength(suffixFor(total));
  if (room <= 0) return prefixBytes(message, maxBytes);
  const kept = prefixBytes(message, room);
  return `${kept}${suffixFor(total - byteLength(kept))}`;
}

/** Options of {@link summarizeList}. */
export interface SummaryOptions {
  /** Budget of the whole summary in UTF-8 bytes (default {@link MessageBudget.condition}). */
  maxBytes?: number;
  /** Budget of one item; longer items are cut with {@link boundMessage} (default {@link MessageBudget.item}). */
  itemMaxBytes?: number;
  /** Between items (default `'; '`). */
  separator?: string;
}

/**
 * Joins `items` under a byte budget: as many items as fit, in order, each cut to `itemMaxBytes`, then
 * `... and N more` naming how many were left out. The first item is always named (cut if it must be).
 */
export function summarizeList(items: readonly string[], opts: SummaryOptions = {}): string {
  const maxBytes = opts.maxBytes ?? MessageBudget.condition;
  const itemMax = Math.min(opts.itemMaxBytes ?? MessageBudget.item, maxBytes);
  const sep = opts.separator ?? '; ';
  const sepBytes = byteLength(sep);
  const more = (n: number): string => `${sep}... and ${n} more`;
  const parts: string[] = [];
  let used = 0;
  for (let i = 0; i < items.length; i++) {
    const item = boundMessage(items[i]!, itemMax);
    const cost = (parts.length ? sepBytes : 0) + byteLength(item);
    const left = items.length - i - 1;
    // Keep room for the "and N more" tail unless this is the last item.
    const tail = left > 0 ? byteLength(more(left)) : 0;
    if (used + cost + tail > maxBytes) {
      if (parts.length === 0) {
        const tailNow = byteLength(more(items.length - 1));
        parts.push(boundMessage(item, Math.max(0, maxBytes - tailNow)));
        return boundMessage(`${parts[0]}${items.length > 1 ? more(items.length - 1) : ''}`, maxBytes);
      }
      return `${parts.join(sep)}${more(items.length - i)}`;
    }
    parts.push(item);
    used += cost;
  }
  return parts.join(sep);
}
