// Resume tokens: HMAC-signed, carrying the checkpoint id and expiry, so tampering and expiry are
// detected without the store, and the store only has to answer "taken, used or missing".
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** Why a token was refused. */
export type TokenProblem = 'invalid_token' | 'expired';

/** Signs `{ id, expiresAt }` into a token. */
export function signToken(id: string, expiresAt: number, secret: string): string {
  const payload = Buffer.from(JSON.stringify({ i: id, e: expiresAt })).toString('base64url');
  return `${payload}.${mac(payload, secret)}`;
}

/** Verifies a token; returns its contents, or the problem with it. */
export function verifyToken(token: unknown, secret: string, now: number): { id: string; expiresAt: number } | { problem: TokenProblem } {
  if (typeof token !== 'string' || token.length > 1024) return { problem: 'invalid_token' };
  const dot = token.indexOf('.');
  if (dot <= 0) return { problem: 'invalid_token' };
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = Buffer.from(mac(payload, secret), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { problem: 'invalid_token' };
  let data: { i?: unknown; e?: unknown };
  try {
    data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { problem: 'invalid_token' };
  }
  if (typeof data.i !== 'string' || typeof data.e !== 'number') return { problem: 'invalid_token' };
  if (data.e <= now) return { problem: 'expired' };
  return { id: data.i, expiresAt: data.e };
}

function mac(payload: string, secret: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

/** A stable hash of a context object (keys sorted), to detect a resume under another identity. */
export function hashContext(context: unknown): string {
  return createHash('sha256').update(stableStringify(context)).digest('hex');
}

function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify((value as Record<string, unknown>)[k])}`).join(',')}}`;
}
