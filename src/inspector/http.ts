// The inspector's HTTP answers: security headers on every response, JSON bodies, and the checks of
// what a request sends (its JSON body, bounded; whether it comes from another site).
const JSON_TYPE = 'application/json; charset=utf-8';
/** Most an action's JSON body may hold (actions are small). */
export const MAX_BODY = 64 * 1024;

/** Strict: scripts and styles from this origin only (no inline script or style), no frames, no other origin. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

export function respond(
  body: ConstructorParameters<typeof Response>[0],
  status: number,
  type: string | undefined,
  extra: Record<string, string> = {},
): Response {
  const headers = new Headers(SECURITY_HEADERS);
  headers.set('cache-control', 'no-store');
  if (type) headers.set('content-type', type);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return new Response(body, { status, headers });
}
export const json = (value: unknown, status = 200): Response => respond(JSON.stringify(value), status, JSON_TYPE);
export const problem = (status: number, message: string): Response => json({ error: message }, status);

/** The JSON object a request sends (`undefined`: not JSON, too large, or not an object). */
export async function readBody(request: Request): Promise<Record<string, unknown> | undefined> {
  const type = request.headers.get('content-type') ?? '';
  if (!type.toLowerCase().startsWith('application/json')) return undefined;
  const text = await boundedText(request);
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The body as text, read only up to {@link MAX_BODY} bytes: a larger one is cancelled there
 * (`undefined`), so a huge body is never held in memory.
 */
async function boundedText(request: Request): Promise<string | undefined> {
  if (Number(request.headers.get('content-length')) > MAX_BODY || request.body === null) return undefined;
  const reader = request.body.getReader();
  const decoder = new TextDecoder(); // web-standard: the handler also runs where there is no Buffer
  let text = '';
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY) {
      // Not awaited: the body may be a clone's branch, whose cancel settles only once the other branch's does.
      reader.cancel().catch(() => undefined);
      return undefined;
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Whether the request comes from another site (Fetch metadata or Origin); absent headers are left to the CSRF token.
 */
export function crossSite(request: Request, url: URL): boolean {
  const site = request.headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin' && site !== 'none') return true;
  const origin = request.headers.get('origin');
  if (origin === null) return false;
  try {
    return new URL(origin).host !== url.host;
  } catch {
    return true;
  }
}
