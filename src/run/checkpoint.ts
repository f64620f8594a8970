// Resume tokens: HMAC-signed, carrying the checkpoint id and expiry, so tampering and expiry are
// detected without the store, and the store only has to answer "taken, used or missing".
import { newId } from './ids.js';
import { BoundedLru } from '../util/lru.js';
import { equalConstantTime, fromBase64Url, hmacSha256, sha256, toBase64Url, toHex, utf8 } from '../util/sha256.js';

/** Why a token was refused. */
export type TokenProblem = 'invalid_token' | 'expired';

/**
 * Signs `{ id, expiresAt }` into a token: `base64url(json).base64url(hmac-sha256)`.
 *
 * @example
 * ```ts
 * const token = signToken(checkpoint.id, checkpoint.expiresAt, secret);
 * ```
 */
export function signToken(id: string, expiresAt: number, secret: string): string {
  const payload = toBase64Url(utf8(JSON.stringify({ i: id, e: expiresAt })));
  return `${payload}.${mac(payload, secret)}`;
}

// A token is exactly `payload.mac`, both unpadded base64url; the mac is 32 bytes, so 43 characters.
const TOKEN = /^([A-Za-z0-9_-]{1,960})\.([A-Za-z0-9_-]{43})$/;

/**
 * Verifies a token; returns its contents, or the problem with it. Strict: anything but the exact
 * canonical form signToken produces (padding, `+`/`/`, whitespace, stray trailing bits, extra
 * segments) is `invalid_token`, and the signature is compared as text in constant time, so no
 * second spelling of a valid token exists.
 *
 * @example
 * ```ts
 * const v = verifyToken(token, secret, Date.now());
 * if ('problem' in v) refuse(v.problem); else load(v.id);
 * ```
 */
export function verifyToken(
  token: unknown,
  secret: string,
  now: number,
): { id: string; expiresAt: number } | { problem: TokenProblem } {
  if (typeof token !== 'string' || token.length > 1024) return INVALID;
  const parts = TOKEN.exec(token);
  if (!parts) return INVALID;
  const payload = parts[1]!;
  // Decoding ignores bits past the last byte: only a payload that re-encodes to itself is canonical.
  const bytes = fromBase64Url(payload);
  if (!bytes || toBase64Url(bytes) !== payload) return INVALID;
  if (!equalConstantTime(parts[2]!, mac(payload, secret))) return INVALID;
  let data: unknown;
  try {
    data = JSON.parse(decoder.decode(bytes));
  } catch {
    return INVALID;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return INVALID;
  const i = Object.hasOwn(data, 'i') ? (data as { i: unknown }).i : undefined;
  const e = Object.hasOwn(data, 'e') ? (data as { e: unknown }).e : undefined;
  if (typeof i !== 'string' || i === '' || typeof e !== 'number' || !Number.isFinite(e)) return INVALID;
  if (e <= now) return { problem: 'expired' };
  return { id: i, expiresAt: e };
}

const INVALID: { problem: TokenProblem } = Object.freeze({ problem: 'invalid_token' });
// fatal: a payload that is not valid UTF-8 is refused rather than read with replacement characters.
const decoder = new TextDecoder('utf-8', { fatal: true });

function mac(payload: string, secret: string): string {
  return toBase64Url(hmacSha256(secret, payload));
}

// Hashes by context text, bounded, for short texts only.
const hashes = new BoundedLru<string, string>(1_000);
const CACHED_TEXT_MAX = 1_024;

/**
 * A stable hash of a context (the SHA-256 of its {@link stableStringify} text): what binds an
 * idempotency key, a durable run id and a checkpoint to their caller. Equal data gives the same hash
 * in any process; objects that are not plain data (class instances) are scoped per object. Kept by
 * text for short contexts: SHA-256 in plain JS costs ~10 µs, the text under 1 µs, and each run
 * validates a new object for the same user.
 *
 * @example
 * ```ts
 * hashContext({ userId: 'alice' }) === hashContext({ userId: 'alice', org: undefined }); // true
 * ```
 */
export function hashContext(context: unknown): string {
  const text = (typeof context === 'object' && context !== null && flatText(context)) || stableStringify(context);
  if (text.length > CACHED_TEXT_MAX) return toHex(sha256(text));
  return hashes.get(text) ?? hashes.set(text, toHex(sha256(text)));
}

/**
 * `stableStringify(context)` for the common context, a plain object of a few strings, numbers or
 * booleans (a user id, a tenant), made without its general walk's arrays; `undefined` for any other.
 */
function flatText(context: object): string | undefined {
  if (Object.getPrototypeOf(context) !== Object.prototype) return undefined;
  const keys = Object.keys(context);
  if (keys.length > FLAT_KEYS_MAX) return undefined;
  if (keys.length > 1) keys.sort();
  let text = '{';
  for (const key of keys) {
    const value = (context as Record<string, unknown>)[key];
    if (value === undefined) continue;
    if (
      typeof value !== 'string' &&
      typeof value !== 'boolean' &&
      !(typeof value === 'number' && Number.isFinite(value))
    )
      return undefined;
    text += `${text.length > 1 ? ',' : ''}${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  return `${text}}`;
}
const FLAT_KEYS_MAX = 8;

// One random tag per process, so an object's identity never matches another process's object in a shared store.
// Made on first use: workerd refuses random values in a module's global scope.
let processTag: string | undefined;
const identities = new WeakMap<object, string>();
let nextIdentity = 0;

/** The identity token of an object that is not plain data: unique to this object (and this process). */
function identityOf(value: object): string {
  let id = identities.get(value);
  if (id === undefined) identities.set(value, (id = `#${(processTag ??= newId())}.${++nextIdentity}`));
  return id;
}

/**
 * The canonical text a context is hashed by: plain data as JSON with object keys sorted, so equal
 * contexts give equal text whatever their key order; keys whose value is `undefined` are left out
 * (`{ org: undefined }` is the caller without an org). Forms JSON has no spelling for are written as
 * text that is not JSON, so they never match a string or an object: `1n`, `NaN`, `Date(ms)`,
 * `Map{…}` and `Set{…}` (entries sorted by their text, as object keys are: a Map is compared as
 * a lookup table, not a sequence), and for any other object — a class instance, whose private fields
 * cannot be read — an identity token: such a context hashes per object (the same instance, the same
 * hash; an equal copy, another). Such objects cannot be stored, so a durable context (plain data,
 * Dates, BigInts) hashes the same in every process. Cycles hash as a marker.
 *
 * @example
 * ```ts
 * stableStringify({ b: 1, a: [2n], c: undefined }); // '{"a":[2n],"b":1}'
 * ```
 */
export function stableStringify(value: unknown, ancestors: object[] = []): string {
  switch (typeof value) {
    case 'bigint':
      return `${value}n`; // not valid JSON, so it cannot collide with a string
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : String(value); // NaN is not null
    case 'undefined':
      return 'undefined';
    case 'function':
      return identityOf(value);
    case 'symbol':
      return `Symbol(${JSON.stringify(value.description ?? '')})`;
    case 'object':
      break;
    default:
      return JSON.stringify(value);
  }
  if (value === null) return 'null';
  if (value instanceof Date) return `Date(${value.getTime()})`;
  // A cycle (possible only through a schema that passes objects through) hashes as a marker, not a stack overflow.
  if (ancestors.includes(value) || ancestors.length > 256) return '"[Circular]"';
  const proto = Object.getPrototypeOf(value) as unknown;
  // Exact prototypes only: a subclass of Map may hold private state its entries do not show.
  if (
    proto !== Object.prototype &&
    proto !== null &&
    proto !== Array.prototype &&
    proto !== Map.prototype &&
    proto !== Set.prototype
  )
    return identityOf(value);
  ancestors.push(value);
  let text: string;
  if (Array.isArray(value)) text = `[${value.map((v) => stableStringify(v, ancestors)).join(',')}]`;
  else if (value instanceof Map)
    text = `Map{${[...value]
      .map(([k, v]) => `${stableStringify(k, ancestors)}:${stableStringify(v, ancestors)}`)
      .sort()
      .join(',')}}`;
  else if (value instanceof Set)
    text = `Set{${[...value]
      .map((v) => stableStringify(v, ancestors))
      .sort()
      .join(',')}}`;
  else {
    const parts: string[] = [];
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) parts.push(`${JSON.stringify(k)}:${stableStringify(v, ancestors)}`);
    }
    text = `{${parts.join(',')}}`;
  }
  ancestors.pop();
  return text;
}
