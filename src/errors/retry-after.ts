// How long a failure asks to be waited on before a retry: Retry-After in its forms (seconds, an HTTP date, headers).
type Bag = Record<string, unknown>;
const isBag = (v: unknown): v is Bag => typeof v === 'object' && v !== null;

/**
 * Retry-After as milliseconds, from seconds (number or string) or an HTTP date.
 *
 * @example
 * ```ts
 * parseRetryAfter('7'); // 7000
 * parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT'); // ms until then
 * ```
 */
export function parseRetryAfter(value: unknown, now: number = Date.now()): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.round(value * 1000);
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

// A usable wait only: NaN, negative or infinite values from a tool are ignored, not slept on.
const delayOrUndefined = (ms: number): number | undefined => (Number.isFinite(ms) && ms >= 0 ? ms : undefined);

/** The wait an error asks for: `retryAfterMs`, `retry_after`/`retryAfter`, or a Retry-After header. */
export function retryAfterOf(error: Bag): number | undefined {
  if (typeof error.retryAfterMs === 'number') return delayOrUndefined(error.retryAfterMs);
  const direct = parseRetryAfter(error.retry_after ?? error.retryAfter);
  if (direct !== undefined) return direct;
  const headers = error.headers;
  if (isBag(headers)) {
    const h =
      typeof (headers as { get?: unknown }).get === 'function'
        ? (headers as unknown as Headers).get('retry-after')
        : (ownValue(headers, 'retry-after') ?? ownValue(headers, 'Retry-After'));
    return parseRetryAfter(h);
  }
  return undefined;
}

const ownValue = (bag: Bag, key: string): unknown => (Object.hasOwn(bag, key) ? bag[key] : undefined);
