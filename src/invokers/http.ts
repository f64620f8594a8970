// Tools behind an HTTP API: POST {baseUrl}/tools/{name} with the input as JSON.
import type { Tool } from '../define/tool.js';
import { parseRetryAfter } from '../errors/retry-after.js';
import { checkOptions, fn, integer } from '../define/options.js';
import { z } from 'zod';
import { servedNames } from './serves.js';
import type { ToolCall, ToolInvoker } from './types.js';

/** Options of {@link httpInvoker}. */
export interface HttpInvokerOptions {
  /** e.g. `https://tools.internal/api` (no trailing slash needed). */
  baseUrl: string;
  /** Extra headers, or a function of the call (e.g. per-user auth from the trusted context). */
  headers?: Record<string, string> | ((call: ToolCall) => Record<string, string>);
  /** A fetch implementation. Default: the global `fetch`. It is called with `redirect: 'manual'`. */
  fetch?: typeof fetch;
  /**
   * Largest response body read, in bytes. Default 10 MiB. A larger answer (by `Content-Length`, or
   * counted while streaming) fails with `validation` / `response_too_large` without being read whole.
   */
  maxBodyBytes?: number;
  /**
   * The tools this API serves (tools or their names). Given, the invoker declares them
   * (`ToolInvoker.serves`): a runner refuses a chain with any other tool before its first step.
   * Default: not declared, every tool is tried.
   */
  tools?: readonly (Tool | string)[];
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
  constructor(
    message: string,
    readonly status: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/**
 * An answer chainkit refused to use: a redirect it will not follow (`redirect_refused`) or a body
 * over `maxBodyBytes` (`response_too_large`). Category `validation`: the tool's answer is not
 * usable, and asking again gets the same answer, so it is not retried.
 *
 * @example
 * ```ts
 * if (result.status === 'failed' && result.error.code === 'redirect_refused') alertOps(result.error.message);
 * ```
 */
export class HttpResponseRefused extends Error {
  override readonly name = 'HttpResponseRefused';
  readonly category = 'validation';
  constructor(
    readonly code: 'redirect_refused' | 'response_too_large',
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const MAX_DETAIL = 300;
const DEFAULT_MAX_BODY = 10 * 1024 * 1024;
/** Of an error answer only the first bytes are read: the status says what happened, the text only adds detail. */
const MAX_ERROR_BODY = 64 * 1024;
const MAX_REDIRECTS = 5;

const HTTP_INVOKER_OPTIONS = z.object(
  {
    baseUrl: z.custom<string>(
      (v) => typeof v === 'string' && /^https?:\/\//.test(v),
      'Expected `baseUrl` to be an http(s) URL.',
    ),
    maxBodyBytes: integer('maxBodyBytes', 1).optional(),
    fetch: fn('fetch').optional(),
    tools: z
      .custom<readonly unknown[]>((v) => Array.isArray(v), 'Expected `tools` to be an array of tools or tool names.')
      .optional(),
  },
  { error: 'Expected httpInvoker options { baseUrl, … }.' },
);

/**
 * An invoker that POSTs each call to `{baseUrl}/tools/{name}` as JSON, with `Idempotency-Key` for
 * write/destructive calls and the call's `signal` (so timeouts and cancels abort the request).
 * A 2xx JSON body is the output (a non-JSON 2xx body is returned as text); other statuses fail
 * with `status` (classified as in the error table) and `retryAfterMs` from `Retry-After`
 * (seconds or an HTTP date); network errors keep their Node codes (`ECONNREFUSED`, …).
 * Redirects: a 307/308 to the same origin is followed (at most 5 hops) with the same method, body
 * and headers; any other redirect — to another origin, or a 301/302/303 that would turn the POST
 * into a GET — fails with `validation` / `redirect_refused`, so the body, the auth headers and the
 * idempotency key never leave for a host you did not configure. Bodies are capped by `maxBodyBytes`.
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
  checkOptions('httpInvoker options', HTTP_INVOKER_OPTIONS, options);
  const base = options.baseUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  const doFetch = options.fetch ?? fetch;
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const served = options.tools === undefined ? undefined : servedNames(options.tools);
  const invoker: ToolInvoker = async (call) => {
    const extra = typeof options.headers === 'function' ? options.headers(call) : options.headers;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'x-chainkit-run-id': call.runId,
      ...extra,
    };
    if (call.idempotencyKey !== undefined) headers['idempotency-key'] = call.idempotencyKey;
    const body = JSON.stringify(call.input);
    let url = `${base}/tools/${encodeURIComponent(call.tool)}`;
    let res: Response;
    for (let hops = 0; ; hops++) {
      // 'manual': fetch would otherwise send the body and headers to any origin, and turn a 303 into a GET.
      res = await doFetch(url, { method: 'POST', headers, body, signal: call.signal, redirect: 'manual' });
      if (res.type === 'opaqueredirect')
        throw new HttpResponseRefused(
          'redirect_refused',
          `${call.tool}: redirect refused (an opaque redirect cannot be checked).`,
          res.status,
        );
      if (res.status < 300 || res.status > 399) break;
      url = nextHop(call.tool, res, url, origin, hops);
    }
    if (res.ok) {
      const text = await readCapped(call.tool, res, maxBody, true);
      const json = parseJson(text);
      return json === undefined ? text : json;
    }
    const text = await readCapped(call.tool, res, Math.min(maxBody, MAX_ERROR_BODY), false);
    const json = parseJson(text);
    const detail = errorDetail(json) ?? text.trim().slice(0, MAX_DETAIL);
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after') ?? undefined);
    throw new HttpToolError(
      `${call.tool}: HTTP ${res.status}${detail ? ` — ${detail}` : ''}`,
      res.status,
      retryAfterMs,
    );
  };
  if (served) invoker.serves = (tool) => served.has(tool);
  return invoker;
}

/** Where a 3xx answer may lead: the next URL, or a refusal. The refused answer's body is discarded. */
function nextHop(tool: string, res: Response, url: string, origin: string, hops: number): string {
  const refuse = (why: string): never => {
    void res.body?.cancel().catch(() => undefined);
    throw new HttpResponseRefused(
      'redirect_refused',
      `${tool}: HTTP ${res.status} redirect refused: ${why}`,
      res.status,
    );
  };
  const location = res.headers.get('location');
  if (location === null) return refuse('no Location to follow.');
  let next: URL;
  try {
    next = new URL(location, url);
  } catch {
    return refuse('the Location is not a URL.');
  }
  if (next.origin !== origin)
    return refuse(`it points to another origin (${next.origin}); the request and its headers were not sent there.`);
  if (res.status !== 307 && res.status !== 308)
    return refuse('only a 307/308 keeps the POST; following this one would turn the write into a GET.');
  if (hops >= MAX_REDIRECTS) return refuse(`more than ${MAX_REDIRECTS} redirects.`);
  void res.body?.cancel().catch(() => undefined);
  return next.href;
}

/**
 * Reads a body as text, at most `max` bytes. Past it: a refusal (`strict`, for an output) or the
 * bytes read so far (for an error answer's detail). The rest of the stream is cancelled, not read.
 */
async function readCapped(tool: string, res: Response, max: number, strict: boolean): Promise<string> {
  const tooLarge = (what: string): HttpResponseRefused =>
    new HttpResponseRefused(
      'response_too_large',
      `${tool}: the response body (${what}) is larger than the ${max} bytes allowed (maxBodyBytes).`,
      res.status,
    );
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) {
    void res.body?.cancel().catch(() => undefined);
    if (strict) throw tooLarge(`Content-Length ${declared}`);
    return '';
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > max) {
      void reader.cancel().catch(() => undefined);
      if (strict) throw tooLarge(`over ${max} bytes read`);
      chunks.push(value.subarray(0, max - size));
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return concatUtf8(chunks);
}

/**
 * Decodes the chunks read as one UTF-8 text (streaming, so a character
 * split across chunks survives); no `Buffer`, so it runs on any runtime.
 */
function concatUtf8(chunks: readonly Uint8Array[]): string {
  const decoder = new TextDecoder();
  let text = '';
  for (const chunk of chunks) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
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
  const own = (key: string): unknown => (Object.hasOwn(b, key) ? b[key] : undefined);
  const detail = [own('error'), own('message')].filter((x) => typeof x === 'string').join(': ');
  return detail ? detail.slice(0, MAX_DETAIL) : undefined;
}
