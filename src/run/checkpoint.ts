// Resume tokens: HMAC-signed, carrying the checkpoint id and expiry, so tampering and expiry are
// detected without the store, and the store only has to answer "taken, used or missing".
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
export function verifyToken(token: unknown, secret: string, now: number): { id: string; expiresAt: number } | { problem: TokenProblem } {
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

/** A stable hash of a context object (keys sorted), to detect a resume under another identity. */
export function hashContext(context: unknown): string {
  return toHex(sha256(stableStringify(context)));
}

/**
 * JSON-like text of a value with object keys sorted (BigInts as `1n`, cycles as a marker): the
 * input of {@link hashContext}, equal for equal contexts whatever their key order.
 *
 * @example
 * ```ts
 * stableStringify({ b: 1, a: [2n] }); // '{"a":[2n],"b":1}'
 * ```
 */
export function stableStringify(value: unknown, ancestors: object[] = []): string {
  if (typeof value === 'bigint') return `${value}n`; // JSON.stringify would throw; not valid JSON, so it cannot collide with a string
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  // A cycle (possible only through a schema that passes objects through) hashes as a marker, not a stack overflow.
  if (ancestors.includes(value) || ancestors.length > 256) return '"[Circular]"';
  ancestors.push(value);
  const text = Array.isArray(value)
    ? `[${value.map((v) => stableStringify(v, ancestors)).join(',')}]`
    : `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stableStringify((value as Record<string, unknown>)[k], ancestors)}`).join(',')}}`;
  ancestors.pop();
  return text;
}
