// Anti-CSRF for the inspector's actions: a double-submit token bound to the handler's secret. The
// page's GET sets a random nonce in an HttpOnly, SameSite=Strict cookie and embeds
// `nonce.HMAC(secret, nonce)` in the page; an action must send that token in a header, and its nonce
// must be the cookie's. Another site can neither read the page (same-origin policy) nor forge the
// HMAC, and a custom header cannot be sent cross-origin without a preflight nobody answers.
import { equalConstantTime, hmacSha256, toBase64Url } from '../util/sha256.js';

/** The header an action carries its token in. */
export const CSRF_HEADER = 'x-chainkit-csrf';
/** The cookie holding the nonce. */
const CSRF_COOKIE = 'chainkit_inspector_csrf';

/** A fresh random nonce (128 bits, base64url). */
export function newNonce(): string {
  return toBase64Url(crypto.getRandomValues(new Uint8Array(16)));
}

/**
 * The token of `nonce` under `secret`: `nonce.mac`.
 *
 * @example
 * ```ts
 * const token = csrfToken(secret, nonce); // embedded in the page, sent back in `x-chainkit-csrf`
 * ```
 */
export function csrfToken(secret: string, nonce: string): string {
  return `${nonce}.${toBase64Url(hmacSha256(secret, `chainkit-inspector:${nonce}`))}`;
}

/** The nonce in the request's cookie, if any (and well formed). */
export function cookieNonce(cookieHeader: string | null): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== CSRF_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    if (/^[A-Za-z0-9_-]{16,64}$/.test(value)) return value;
  }
  return undefined;
}

/** Whether `token` (from the header) is the token of the cookie's nonce under `secret`. */
export function checkCsrf(secret: string, token: string | null, cookieHeader: string | null): boolean {
  const nonce = cookieNonce(cookieHeader);
  if (!nonce || typeof token !== 'string' || token.length > 200) return false;
  return equalConstantTime(token, csrfToken(secret, nonce));
}

/** The Set-Cookie header value for `nonce`, scoped to the inspector's path. */
export function csrfCookie(nonce: string, path: string, secure: boolean): string {
  const cookiePath = path === '' ? '/' : path;
  return `${CSRF_COOKIE}=${nonce}; Path=${cookiePath}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
