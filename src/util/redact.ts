// Secret-named keys and redacted copies of values: the dependency-free core of redaction, shared by
// errors (describing a thrown value) and observe/redact.ts (masking texts, failures and traces).

// The key pattern works on a key's segments (camelCase, snake_case, kebab-case, dots), so that
// `max_tokens`, `passenger` or `sessionId` stay readable while `refreshToken` or `DB_PASS` do not.
// One form per segment: `[Tt]oken` (camel or lower) or `TOKEN` (upper); `(?![a-z])` ends a segment.
const START = '(?:^|(?<=[^A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]))';
const LAST = '(?=[^A-Za-z]*$)';

/** One word of the pattern: its segments, whether a plural `s` may follow, where it may stand. */
function word(segments: string, opts: { plural?: boolean; start?: boolean; last?: boolean } = {}): string {
  const parts = segments.split(' ');
  const body = parts.map((seg, i) => {
    const end = i === parts.length - 1;
    const lowerEnd = end ? `${opts.plural ? 's?' : ''}(?![a-z])` : '';
    const lower = `[${seg[0]!.toUpperCase()}${seg[0]}]${seg.slice(1)}${lowerEnd}`;
    const upper = `${seg.toUpperCase()}${end ? `${opts.plural ? 'S?' : ''}(?![A-Za-z])` : ''}`;
    return `(?:${lower}|${upper})`;
  });
  return `${opts.start ? START : ''}${body.join('[-_.]?')}${opts.last ? LAST : ''}`;
}

/**
 * Keys whose values are never shown: passwords, secrets, tokens, API/private/access keys,
 * authorization, cookies, credentials, JWTs, sessions, signatures, DSNs, bearer values, one-time
 * passwords and connection strings, matched on whole segments of the key.
 * `sessionId`/`session_id` is not hidden: it names a conversation (as chainkit's own `sessionId`
 * does); session credentials are `session`, `session_token`, `session_key`, `session_cookie`.
 * `token` counts only as a key's last segment, so `max_tokens`, `token_count` stay visible.
 *
 * @example
 * ```ts
 * SECRET_KEY.test('apiKey'); // true: shown as '[REDACTED]' in traces
 * SECRET_KEY.test('max_tokens'); // false
 * ```
 */
export const SECRET_KEY = new RegExp(
  [
    // Long words are hidden wherever they stand, also run together (`userpassword`, `clientsecret`).
    word('password', { plural: true }),
    word('passwd'),
    word('passphrase', { plural: true }),
    word('secret', { plural: true }),
    word('credential', { plural: true }),
    word('authorization'),
    word('api key', { plural: true }),
    word('private key', { plural: true }),
    word('access key', { plural: true }),
    word('signing key', { plural: true }),
    word('encryption key', { plural: true }),
    word('session key', { plural: true }),
    word('connection string'),
    word('token', { last: true }),
    word('otp', { last: true }),
    // Plural tokens only after a credential word: `access_tokens` hidden, `tokens` / `max_tokens` (counts) shown.
    word('access token', { plural: true }),
    word('refresh token', { plural: true }),
    word('auth token', { plural: true }),
    word('id token', { plural: true }),
    word('session token', { plural: true }),
    word('bearer token', { plural: true }),
    word('api token', { plural: true }),
    // Short words only as a whole segment: `pass` but not `passenger` or `bypass`.
    word('cookie', { plural: true, start: true }),
    word('bearer', { start: true }),
    word('pass', { start: true, last: true }),
    word('pwd', { start: true, last: true }),
    word('auth', { start: true, last: true }),
    word('jwt', { start: true, last: true }),
    word('dsn', { start: true, last: true }),
    word('session', { start: true, last: true }),
    word('signature', { start: true, last: true }),
  ].join('|'),
);

// Most keys hold none of the words: one cheap scan rules them out before the segment-aware pattern.
const STEMS = /pass|pwd|secret|credential|authori|key|string|token|otp|cookie|bearer|auth|jwt|dsn|session|signature/i;

/** Whether `key` names a secret by the default pattern ({@link SECRET_KEY}), quickly. */
export function isSecretKey(key: string): boolean {
  return STEMS.test(key) && SECRET_KEY.test(key);
}

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
  return walk(value, rule, 0, new WeakSet(), undefined);
}

/** The copy {@link redact} makes; `text`, when given, also masks every string (observe/redact.ts). */
export function walk(
  value: unknown,
  rule: RedactRule | undefined,
  depth: number,
  seen: WeakSet<object>,
  text: ((s: string) => string) | undefined,
): unknown {
  if (typeof value !== 'object' || value === null) return text && typeof value === 'string' ? text(value) : value;
  if (seen.has(value)) return '[Circular]';
  if (depth > 12) return '[Truncated]';
  seen.add(value);
  let out: unknown;
  // A getter that throws or a hostile Proxy: what cannot be read is shown as such, never thrown from
  // here (a copy is made while a failure is reported, and must not fail in turn).
  try {
    if (Array.isArray(value)) {
      out = value.map((v) => walk(v, rule, depth + 1, seen, text));
    } else if (value instanceof Date) {
      out = value.toISOString();
    } else if (value instanceof Error) {
      out = { name: value.name, message: text ? text(value.message) : value.message };
    } else {
      const o: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        let v: unknown;
        try {
          v = (value as Record<string, unknown>)[key];
        } catch {
          o[key] = UNREADABLE;
          continue;
        }
        o[key] = isSecretKey(key) || hides(rule, key, v) ? REDACTED : walk(v, rule, depth + 1, seen, text);
      }
      out = o;
    }
  } catch {
    out = UNREADABLE;
  }
  seen.delete(value);
  return out;
}

/** What {@link walk} shows for a value it cannot read (a throwing getter, a revoked Proxy). */
const UNREADABLE = '[Unreadable]';

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
export function hides(rule: RedactRule | undefined, key: string, value: unknown): boolean {
  if (!rule) return false;
  try {
    return rule(key, value);
  } catch {
    return true;
  }
}
