// Hides secrets in what chainkit shows: traces, events, logs and error messages.

/**
 * Keys whose values are never shown.
 *
 * @example
 * ```ts
 * SECRET_KEY.test('apiKey'); // true: shown as '[REDACTED]' in traces
 * ```
 */
export const SECRET_KEY = /pass(word)?|secret|token|api[-_]?key|authorization|cookie|credential/i;

/** Extra rule from the runner's `redact` option: return true to hide a key's value. */
export type RedactRule = (key: string, value: unknown) => boolean;

export const REDACTED = '[REDACTED]';

/**
 * A copy of `value` with secret-looking keys replaced by `'[REDACTED]'`. Cycles become
 * `'[Circular]'`; depth is capped so a huge value cannot stall a run.
 *
 * @example
 * ```ts
 * redact({ user: 'a', apiKey: 'k' }); // { user: 'a', apiKey: '[REDACTED]' }
 * ```
 */
export function redact(value: unknown, rule?: RedactRule): unknown {
  return walk(value, rule, 0, new WeakSet());
}

function walk(value: unknown, rule: RedactRule | undefined, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '[Circular]';
  if (depth > 12) return '[Truncated]';
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((v) => walk(v, rule, depth + 1, seen));
  } else if (value instanceof Date) {
    out = value.toISOString();
  } else if (value instanceof Error) {
    out = { name: value.name, message: value.message };
  } else {
    const o: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key];
      o[key] = SECRET_KEY.test(key) || hides(rule, key, v) ? REDACTED : walk(v, rule, depth + 1, seen);
    }
    out = o;
  }
  seen.delete(value);
  return out;
}

/** A short, redacted, single-line description of any value, for error messages. */
export function describeValue(value: unknown, rule?: RedactRule, max = 300): string {
  let text: string;
  try {
    text = JSON.stringify(redact(value, rule)) ?? String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A caller's rule that throws hides the value: failing closed is the safe side. */
function hides(rule: RedactRule | undefined, key: string, value: unknown): boolean {
  if (!rule) return false;
  try {
    return rule(key, value);
  } catch {
    return true;
  }
}
