// Turns anything a tool throws or returns as an error into a category and code (API.md §4).
import { ERROR_CATEGORIES, type ErrorCategory } from './categories.js';
import { describeValue } from '../observe/redact.js';

/** The classifier's verdict on one failure, before step/tool/attempt details are added. */
export interface Classified {
  category: ErrorCategory;
  code: string;
  message: string;
  retryAfterMs?: number;
}

/** A classifier returns a verdict, or `undefined` to let the next one decide. */
export type Classifier = (error: unknown) => Classified | undefined;

/**
 * A failure that already carries its classification. Thrown inside the call pipeline so retry
 * logic (p-retry) sees a real `Error`, whatever the tool threw.
 */
export class ToolFailure extends Error {
  override readonly name = 'ToolFailure';
  readonly info: Classified;
  constructor(info: Classified) {
    // Control flow, never shown with a stack: capturing one would dominate the cost of a retry.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(info.message);
    Error.stackTraceLimit = limit;
    this.info = info;
  }
}

/** Why a run's signal was aborted; identity-checked by the classifier. */
export class RunAbortReason {
  constructor(readonly kind: 'deadline' | 'cancelled' | 'closed', readonly message: string) {}
}

const STATUS: Record<number, ErrorCategory> = {
  400: 'invalid_input', 401: 'authentication_required', 403: 'permission_denied', 404: 'not_found',
  408: 'timeout', 409: 'conflict', 422: 'invalid_input', 429: 'rate_limited', 500: 'internal',
  502: 'unavailable', 503: 'unavailable', 504: 'timeout',
};

const NODE_CODES: Record<string, ErrorCategory> = {
  ECONNREFUSED: 'network', ECONNRESET: 'network', ENOTFOUND: 'network', EAI_AGAIN: 'network',
  EPIPE: 'network', UND_ERR_SOCKET: 'network', ECONNABORTED: 'network', EHOSTUNREACH: 'network',
  ENETUNREACH: 'network', ETIMEDOUT: 'timeout', UND_ERR_CONNECT_TIMEOUT: 'timeout',
};

/** In-band error codes returned by tools as `{ status: 'error', error: code }`. */
export const IN_BAND_CODES: Record<string, ErrorCategory> = {
  invalid_task_id: 'not_found', not_found: 'not_found', database_error: 'internal',
  service_unavailable: 'unavailable', rate_limit_exceeded: 'rate_limited',
  permission_denied: 'permission_denied', authentication_required: 'authentication_required',
  invalid_input: 'invalid_input', conflict: 'conflict', timeout: 'timeout',
};

const PATTERNS: [RegExp, ErrorCategory][] = [
  [/timed? ?out/i, 'timeout'],
  [/not found|no such|does not exist/i, 'not_found'],
  [/permission|forbidden|access denied/i, 'permission_denied'],
  [/syntax|malformed|invalid argument/i, 'invalid_input'],
  [/ECONNREFUSED|network|DNS/i, 'network'],
  [/out of memory|quota|resource exhausted/i, 'unavailable'],
];

type Bag = Record<string, unknown>;
const isBag = (v: unknown): v is Bag => typeof v === 'object' && v !== null;

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  if (isBag(error) && typeof error.message === 'string') return error.message;
  return '';
}

/**
 * Retry-After as milliseconds, from seconds (number or string) or an HTTP date.
 *
 * @example
 * ```ts
 * parseRetryAfter('7'); // 7000
 * parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT'); // ms until then
 * ```
 */
export function parseRetryAfter(value: unknown, now: number = Date.now()): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.round(value * 1000);
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function retryAfterOf(error: Bag): number | undefined {
  if (typeof error.retryAfterMs === 'number') return error.retryAfterMs;
  const direct = parseRetryAfter(error.retry_after ?? error.retryAfter);
  if (direct !== undefined) return direct;
  const headers = error.headers;
  if (isBag(headers)) {
    const h = typeof (headers as { get?: unknown }).get === 'function'
      ? (headers as unknown as Headers).get('retry-after')
      : (headers['retry-after'] ?? headers['Retry-After']);
    return parseRetryAfter(h);
  }
  return undefined;
}

// An error that names its own category (e.g. McpToolError, or a user's own error class) is taken at its word.
const byDeclaredCategory: Classifier = (error) => {
  if (!isBag(error) || typeof error.category !== 'string' || !(ERROR_CATEGORIES as readonly string[]).includes(error.category)) return undefined;
  const retryAfterMs = retryAfterOf(error);
  return { category: error.category as ErrorCategory, code: typeof error.code === 'string' ? error.code : error.category, message: describe(error), ...(retryAfterMs !== undefined && { retryAfterMs }) };
};

const byStatus: Classifier = (error) => {
  if (!isBag(error)) return undefined;
  const status = typeof error.status === 'number' ? error.status : error.statusCode;
  if (typeof status !== 'number' || status < 400) return undefined;
  const category = STATUS[status] ?? (status >= 500 ? 'internal' : 'invalid_input');
  return { category, code: `http_${status}`, message: describe(error), retryAfterMs: retryAfterOf(error) };
};

const byNodeCode: Classifier = (error) => {
  if (!isBag(error)) return undefined;
  for (const e of [error, error.cause]) {
    if (isBag(e) && typeof e.code === 'string' && NODE_CODES[e.code]) {
      return { category: NODE_CODES[e.code]!, code: e.code, message: describe(error) };
    }
  }
  return undefined;
};

const byInBandCode: Classifier = (error) => {
  if (!isBag(error)) return undefined;
  const code = typeof error.code === 'string' ? error.code : typeof error.error === 'string' ? error.error : undefined;
  if (code === undefined || !IN_BAND_CODES[code]) return undefined;
  return { category: IN_BAND_CODES[code]!, code, message: describe(error), retryAfterMs: retryAfterOf(error) };
};

const byMessage: Classifier = (error) => {
  const text = messageOf(error);
  if (!text) return undefined;
  for (const [pattern, category] of PATTERNS) {
    if (pattern.test(text)) return { category, code: category, message: describe(error) };
  }
  return undefined;
};

/**
 * The built-in classifiers, in the order of API.md §4, after errors that declare their `category`.
 *
 * @example
 * ```ts
 * createRunner({ invoker, classifiers: [myClassifier, ...DEFAULT_CLASSIFIERS] });
 * ```
 */
export const DEFAULT_CLASSIFIERS: readonly Classifier[] = [byDeclaredCategory, byStatus, byNodeCode, byInBandCode, byMessage];

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  if (error === undefined) return 'The tool failed with undefined (no error value).';
  if (typeof error === 'string') return error;
  return describeValue(error);
}

/**
 * Classifies a thrown value (or an in-band error result). First matching classifier wins;
 * anything unrecognised is `unknown`. Never throws, whatever it is given.
 *
 * @example
 * ```ts
 * classifyError(Object.assign(new Error('busy'), { status: 503 })).category; // 'unavailable'
 * ```
 */
export function classifyError(error: unknown, classifiers: readonly Classifier[] = DEFAULT_CLASSIFIERS): Classified {
  if (error instanceof ToolFailure) return error.info;
  if (error instanceof RunAbortReason) {
    return error.kind === 'deadline'
      ? { category: 'timeout', code: 'deadline_exceeded', message: error.message }
      : { category: 'cancelled', code: error.kind === 'closed' ? 'runner_closed' : 'cancelled', message: error.message };
  }
  for (const classify of classifiers) {
    try {
      const verdict = classify(error);
      if (verdict) return verdict;
    } catch {
      // A broken custom classifier must not break the run; the next one decides.
    }
  }
  return { category: 'unknown', code: 'unknown', message: describe(error) };
}

/** Builds the failure for an in-band error result `{ status: 'error', error, message?, retry_after? }`. */
export function inBandFailure(result: Bag, classifiers?: readonly Classifier[]): Classified {
  const code = String(result.error);
  const known = IN_BAND_CODES[code];
  const text = typeof result.message === 'string' ? result.message : code;
  const category = known ?? classifyError(new Error(text), classifiers).category;
  const retryAfterMs = retryAfterOf(result);
  return { category, code, message: `${code}: ${text}`, ...(retryAfterMs !== undefined && { retryAfterMs }) };
}

/** Whether a tool output is an in-band error result. */
export function isInBandError(output: unknown): output is Bag {
  return isBag(output) && output.status === 'error' && typeof output.error === 'string';
}
