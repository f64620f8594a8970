// Tools behind an HTTP API: POST {baseUrl}/tools/{name} with the input as JSON.
import { parseRetryAfter } from '../errors/classify.js';
import type { ToolCall, ToolInvoker } from '../run/pipeline.js';

/** Options of {@link httpInvoker}. */
export interface HttpInvokerOptions {
  /** e.g. `https://tools.internal/api` (no trailing slash needed). */
  baseUrl: string;
  /** Extra headers, or a function of the call (e.g. per-user auth from the trusted context). */
  headers?: Record<string, string> | ((call: ToolCall) => Record<string, string>);
  /** A fetch implementation. Default: the global `fetch`. */
  fetch?: typeof fetch;
}

/**
 * A non-2xx answer: `status` and `retryAfterMs` drive classification and retries.
 *
 * @example
 * ```ts
 * if (error instanceof HttpToolError && error.status === 429) console.log(error.retryAfterMs);
 * ```
 */
export class HttpToolError extends Error {
  override readonly name = 'HttpToolError';
  constructor(message: string, readonly status: number, readonly retryAfterMs?: number) {
    super(message);
  }
}

const MAX_DETAIL = 300;

/**
 * An invoker that POSTs each call to `{baseUrl}/tools/{name}` as JSON, with `Idempotency-Key` for
 * write/destructive calls and the call's `signal` (so timeouts and cancels abort the request).
 * A 2xx JSON body is the output (a non-JSON 2xx body is returned as text); other statuses fail
 * with `status` (classified as in the error table) and `retryAfterMs` from `Retry-After`
 * (seconds or an HTTP date); network errors keep their Node codes (`ECONNREFUSED`, …).
 *
 * @example
 * ```ts
 * const invoker = httpInvoker({
 *   baseUrl: 'https://tools.internal/api',
 *   headers: (call) => ({ authorization: `Bearer ${tokenFor(call.context.userId)}` }),
 * });
 * ```
 */
export function httpInvoker(options: HttpInvokerOptions): ToolInvoker {
  if (typeof options?.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) throw new TypeError('Expected `baseUrl` to be an http(s) URL.');
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  return async (call) => {
    const extra = typeof options.headers === 'function' ? options.headers(call) : options.headers;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', 'x-chainkit-run-id': call.runId, ...extra };
    if (call.idempotencyKey !== undefined) headers['idempotency-key'] = call.idempotencyKey;
    const res = await doFetch(`${base}/tools/${encodeURIComponent(call.tool)}`, { method: 'POST', headers, body: JSON.stringify(call.input), signal: call.signal });
    const text = await res.text();
    const json = parseJson(text);
    if (res.ok) return json === undefined ? text : json;
    const detail = errorDetail(json) ?? text.trim().slice(0, MAX_DETAIL);
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after') ?? undefined);
    throw new HttpToolError(`${call.tool}: HTTP ${res.status}${detail ? ` — ${detail}` : ''}`, res.status, retryAfterMs);
  };
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function errorDetail(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as Record<string, unknown>;
  const detail = [b.error, b.message].filter((x) => typeof x === 'string').join(': ');
  return detail ? detail.slice(0, MAX_DETAIL) : undefined;
}
