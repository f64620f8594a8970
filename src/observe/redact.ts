// Hides secrets in what chainkit shows: traces, events, logs, error messages and model results.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { TraceStep } from './trace.js';

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
    const lower = `[${seg[0]!.toUpperCase()}${seg[0]}]${seg.slice(1)}${end ? `${opts.plural ? 's?' : ''}(?![a-z])` : ''}`;
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
    word('password', { plural: true }), word('passwd'), word('passphrase', { plural: true }),
    word('secret', { plural: true }), word('credential', { plural: true }), word('authorization'),
    word('api key', { plural: true }), word('private key', { plural: true }), word('access key', { plural: true }),
    word('signing key', { plural: true }), word('encryption key', { plural: true }), word('session key', { plural: true }),
    word('connection string'),
    word('token', { last: true }), word('otp', { last: true }),
    // Plural tokens only after a credential word: `access_tokens` hidden, `tokens` / `max_tokens` (counts) shown.
    word('access token', { plural: true }), word('refresh token', { plural: true }), word('auth token', { plural: true }),
    word('id token', { plural: true }), word('session token', { plural: true }), word('bearer token', { plural: true }), word('api token', { plural: true }),
    // Short words only as a whole segment: `pass` but not `passenger` or `bypass`.
    word('cookie', { plural: true, start: true }), word('bearer', { start: true }),
    word('pass', { start: true, last: true }), word('pwd', { start: true, last: true }), word('auth', { start: true, last: true }),
    word('jwt', { start: true, last: true }), word('dsn', { start: true, last: true }),
    word('session', { start: true, last: true }), word('signature', { start: true, last: true }),
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

function walk(value: unknown, rule: RedactRule | undefined, depth: number, seen: WeakSet<object>, text: ((s: string) => string) | undefined): unknown {
  if (typeof value !== 'object' || value === null) return text && typeof value === 'string' ? text(value) : value;
  if (seen.has(value)) return '[Circular]';
  if (depth > 12) return '[Truncated]';
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((v) => walk(v, rule, depth + 1, seen, text));
  } else if (value instanceof Date) {
    out = value.toISOString();
  } else if (value instanceof Error) {
    out = { name: value.name, message: text ? text(value.message) : value.message };
  } else {
    const o: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key];
      o[key] = isSecretKey(key) || hides(rule, key, v) ? REDACTED : walk(v, rule, depth + 1, seen, text);
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

// `key=value`, `key: value`, `"key": "value"`: found key first, so a non-secret key never swallows
// the pair after it ("Error: password=x"). A quoted key needs a quoted or numeric value, which keeps
// chainkit's own "at 'password': Invalid input" readable.
const PAIR_KEY = /(?<![\w.-])(["']?)([A-Za-z_][\w.-]{0,63})\1[ \t]*[:=][ \t]*/g;
const PAIR_VALUE = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|(?:Bearer|Basic|Token|Digest)[ \t]+[^\s,;&"'<>(){}[\]]{1,1024}|[^\s,;&"'<>(){}[\]]{1,1024}/y;
const BEARER = /\b(Bearer[ \t]+)[A-Za-z0-9\-._~+/]{8,}=*/g;
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:/?#@]{1,256}:)[^\s/?#@]{1,256}@/gi;
// Text longer than this is cut before masking: a tool's 10 MB error message is no message.
const MAX_TEXT = 20_000;
const MIN_SECRET = 4;
const MAX_SECRETS = 200;
const MAX_NODES = 5000;

function capped(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}… (${text.length - MAX_TEXT} more characters)` : text;
}

function maskPairs(text: string, rule: RedactRule | undefined): string {
  if (!text.includes('=') && !text.includes(':')) return text;
  let out = '';
  let from = 0;
  PAIR_KEY.lastIndex = 0;
  for (let m = PAIR_KEY.exec(text); m; m = PAIR_KEY.exec(text)) {
    const key = m[2]!;
    const named = isSecretKey(key);
    if (!named && !rule) continue; // the common case: no value is read
    PAIR_VALUE.lastIndex = PAIR_KEY.lastIndex;
    const value = PAIR_VALUE.exec(text)?.[0];
    if (!value || value.startsWith(REDACTED)) continue;
    const quote = value[0] === '"' || value[0] === "'" ? value[0] : '';
    if (m[1] && !quote && !/^-?\d[\d.]*$/.test(value)) continue;
    if (!named && !hides(rule, key, quote ? value.slice(1, -1) : value)) continue;
    out += `${text.slice(from, PAIR_KEY.lastIndex)}${quote}${REDACTED}${quote}`;
    from = PAIR_KEY.lastIndex + value.length;
    PAIR_KEY.lastIndex = from;
  }
  return from === 0 ? text : out + text.slice(from);
}

/**
 * `text` with the values of secret-named keys (`password=…`, `"token": "…"`, `Authorization: …`),
 * bearer tokens and URL passwords replaced by `'[REDACTED]'`; `rule` names more keys.
 *
 * @example
 * ```ts
 * maskText('login failed: password=hunter2'); // 'login failed: password=[REDACTED]'
 * ```
 */
export function maskText(text: string, rule?: RedactRule): string {
  const out = maskPairs(capped(text), rule);
  return out.replace(BEARER, `$1${REDACTED}`).replace(URL_PASSWORD, `$1${REDACTED}@`);
}

/** Hides secrets in text and data: by key, and by the literal secret values it was built from. */
export interface SecretMask {
  /** Text with secret values and `key=value` secrets masked. */
  text(text: string): string;
  /** A redacted copy of data whose strings are masked as by {@link SecretMask.text}. */
  data(value: unknown): unknown;
}

/**
 * A mask built from the values of secret-named fields (the default pattern and `rule`) found in
 * `sources` (a call's input, the chain's input and context). Only failure paths build one:
 * collecting walks the sources, which a successful call never pays for.
 *
 * @example
 * ```ts
 * secretMask(undefined, { api_key: 'sk-live-abcdef' }).text('bad key sk-live-abcdef'); // 'bad key [REDACTED]'
 * ```
 */
export function secretMask(rule: RedactRule | undefined, ...sources: unknown[]): SecretMask {
  const found = new Set<string>();
  const budget = { nodes: MAX_NODES };
  for (const source of sources) {
    try {
      collect(source, rule, false, 0, found, budget);
    } catch {
      // A revoked Proxy or a hostile getter: a failure report must still be built.
    }
  }
  // Also as they appear inside JSON or a URL; longest first, so a secret containing another goes whole.
  const values = new Set<string>();
  for (const s of found) {
    values.add(s);
    const json = JSON.stringify(s).slice(1, -1);
    if (json !== s) values.add(json);
    const encoded = encodeURIComponent(s);
    if (encoded !== s) values.add(encoded);
  }
  const literals = [...values].sort((a, b) => b.length - a.length);
  const text = (s: string): string => {
    if (typeof s !== 'string') return s; // a custom classifier's message may be anything
    let out = capped(s);
    for (const v of literals) if (out.includes(v)) out = out.split(v).join(REDACTED);
    return maskText(out, rule);
  };
  return { text, data: (value) => walk(value, rule, 0, new WeakSet(), text) };
}

/** Gathers the primitive values under secret-named keys (all of a secret key's subtree). */
function collect(value: unknown, rule: RedactRule | undefined, secret: boolean, depth: number, found: Set<string>, budget: { nodes: number }): void {
  if (found.size >= MAX_SECRETS || --budget.nodes < 0) return;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') {
    const s = String(value);
    if (secret && s.length >= MIN_SECRET) found.add(s);
    return;
  }
  if (typeof value !== 'object' || value === null || depth > 12) return;
  if (Array.isArray(value)) {
    for (const v of value) collect(v, rule, secret, depth + 1, found, budget);
    return;
  }
  let keys: string[];
  try {
    keys = Object.keys(value);
  } catch {
    return; // a hostile Proxy: nothing to collect rather than a broken failure report
  }
  for (const key of keys) {
    let v: unknown;
    try {
      v = (value as Record<string, unknown>)[key];
    } catch {
      continue;
    }
    collect(v, rule, secret || isSecretKey(key) || hides(rule, key, v), depth + 1, found, budget);
  }
}

/**
 * The original error of a failure as a logger receives it (pino's `err`): its type, code, and
 * message and stack masked — a log line is text that leaves, so it gets the same masking.
 *
 * @example
 * ```ts
 * logger.error({ err: maskedErr(result.error.cause, mask) }, 'chain failed');
 * ```
 */
export function maskedErr(cause: unknown, mask: SecretMask): unknown {
  try {
    if (!(cause instanceof Error)) return mask.data(cause);
    const err = new Error(mask.text(String(cause.message)));
    err.name = String(cause.name);
    err.stack = mask.text(String(cause.stack ?? ''));
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') Object.assign(err, { code });
    return err;
  } catch {
    return { message: '[an error whose fields could not be read]' }; // a throwing getter must not break the run's end
  }
}

/**
 * Masks a failure in place: its `message`, `userMessage` and `candidates` (secret-named fields
 * hidden, strings masked). Returns `info`.
 *
 * @example
 * ```ts
 * maskError(info, secretMask(core.redact, ctx.input, chainInput, context));
 * ```
 */
export function maskError(info: ChainErrorInfo, mask: SecretMask): ChainErrorInfo {
  info.message = mask.text(info.message);
  info.userMessage = mask.text(info.userMessage);
  if (info.candidates !== undefined) info.candidates = mask.data(info.candidates) as unknown[];
  return info;
}

/**
 * Masks what a failed run wrote: its error, the trace's step errors, inputs and outputs, and
 * failed compensations. In place; for failures only (it walks the whole trace).
 *
 * @example
 * ```ts
 * if (result.status === 'failed') maskFailedRun(result, secretMask(core.redact, input, context));
 * ```
 */
export function maskFailedRun(result: { error: ChainErrorInfo; trace: { steps: TraceStep[] }; compensationFailures?: { error: ChainErrorInfo }[] }, mask: SecretMask): void {
  const done = new Set<ChainErrorInfo>([maskError(result.error, mask)]);
  for (const f of result.compensationFailures ?? []) if (!done.has(f.error)) done.add(maskError(f.error, mask));
  for (const step of result.trace.steps) {
    if (step.error && !done.has(step.error)) done.add(maskError(step.error, mask));
    if (step.input !== undefined) step.input = mask.data(step.input);
    if (step.output !== undefined) step.output = mask.data(step.output);
  }
}
