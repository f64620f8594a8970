// Turns anything a tool throws or returns as an error into a category and code (docs/guides/policies.md, Errors).
import { ERROR_CATEGORIES, type ErrorCategory } from './categories.js';
import { describeValue } from '../util/redact.js';
import { retryAfterOf } from './retry-after.js';
import { RunAbortReason, ToolFailure, type Classified, type Classifier } from './failure.js';

// Every table keyed by outside data is a Map: a code like `constructor` must not find Object's own.
const STATUS: ReadonlyMap<number, ErrorCategory> = new Map<number, ErrorCategory>([
  [400, 'invalid_input'],
  [401, 'authentication_required'],
  [403, 'permission_denied'],
  [404, 'not_found'],
  [408, 'timeout'],
  [409, 'conflict'],
  [422, 'invalid_input'],
  [429, 'rate_limited'],
  [500, 'internal'],
  [502, 'unavailable'],
  [503, 'unavailable'],
  [504, 'timeout'],
]);

const NODE_CODES: ReadonlyMap<string, ErrorCategory> = new Map<string, ErrorCategory>([
  ['ECONNREFUSED', 'network'],
  ['ECONNRESET', 'network'],
  ['ENOTFOUND', 'network'],
  ['EAI_AGAIN', 'network'],
  ['EPIPE', 'network'],
  ['UND_ERR_SOCKET', 'network'],
  ['ECONNABORTED', 'network'],
  ['EHOSTUNREACH', 'network'],
  ['ENETUNREACH', 'network'],
  ['ETIMEDOUT', 'timeout'],
  ['UND_ERR_CONNECT_TIMEOUT', 'timeout'],
]);

/**
 * In-band error codes any service may return as `{ status: 'error', error: code }`. A domain's own
 * codes (the task domain's `invalid_task_id`, yours) are not here: its tools carry them as a
 * {@link codeClassifier} in their `classifiers`.
 */
const IN_BAND_CODES: ReadonlyMap<string, ErrorCategory> = new Map<string, ErrorCategory>([
  ['not_found', 'not_found'],
  ['database_error', 'internal'],
  ['service_unavailable', 'unavailable'],
  ['rate_limit_exceeded', 'rate_limited'],
  ['permission_denied', 'permission_denied'],
  ['authentication_required', 'authentication_required'],
  ['invalid_input', 'invalid_input'],
  ['malformed_input', 'invalid_input'],
  ['conflict', 'conflict'],
  ['timeout', 'timeout'],
]);

const CATEGORIES: ReadonlySet<string> = new Set(ERROR_CATEGORIES);

/** Whether a value is one of the {@link ErrorCategory} names (own data only, never a prototype name). */
function isErrorCategory(value: unknown): value is ErrorCategory {
  return typeof value === 'string' && CATEGORIES.has(value);
}

// Words match at a word start ("runtime output" is no timeout). A status number counts only as a
// whole token: "HTTP 404" and "404 Not Found" match, an id like 4041, a-404-b or v1.404.2 does not.
/** The message patterns of docs/guides/policies.md (Errors), in order; first match wins. */
const PATTERNS: readonly (readonly [RegExp, ErrorCategory])[] = [
  [/\btime[ds]?[ -]?out|\bdeadline[ _]exceeded|\bETIMEDOUT\b/i, 'timeout'],
  // A missing dependency (before not_found: "module not found" is no missing item).
  [/\bno module named\b|\bmodule not found\b|\bcannot find module\b/i, 'unavailable'],
  [/\bnot found\b|\bno such\b|\bdoes not exist|\bunknown tool\b|(?<![\w.-])404(?![\w-]|\.\w)/i, 'not_found'],
  [/\bunauthori[sz]ed\b|\bunauthenticated\b|(?<![\w.-])401(?![\w-]|\.\w)/i, 'authentication_required'],
  [/\bpermission|\bforbidden\b|\baccess denied\b|(?<![\w.-])403(?![\w-]|\.\w)/i, 'permission_denied'],
  [
    /\bsyntax|\bmalformed\b|\binvalid argument|\bmissing required\b|\bunexpected token\b|\bparse error/i,
    'invalid_input',
  ],
  [/\bECONNREFUSED\b|\bconnection refused\b|\bECONNRESET\b|\bENOTFOUND\b/i, 'network'],
  [/\bconnection (?:was )?reset\b|\bnetwork|\bDNS\b|\bcould not resolve\b/i, 'network'],
  [/\bout of memory\b|\bquota|\bresource[ _]exhausted\b|\bno space left\b|\bdisk (?:is )?full\b/i, 'unavailable'],
  // Something this tool depends on failed: transient from the caller's side.
  [
    /\bdependenc(?:y|ies)\b[^.;\n]{0,120}?\b(?:fail|unavailable|down\b|error|unreachable)|\bfailed dependency\b/i,
    'unavailable',
  ],
];

export type Bag = Record<string, unknown>;
export const isBag = (v: unknown): v is Bag => typeof v === 'object' && v !== null;

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  if (isBag(error) && typeof error.message === 'string') return error.message;
  return '';
}

/** Category of an in-band or thrown code: own entries only, so `constructor` is just unknown. */
export const inBandCategory = (code: string): ErrorCategory | undefined => IN_BAND_CODES.get(code);

// An error that names its own category (e.g. McpToolError, or a user's own error class) is taken at its word.
const byDeclaredCategory: Classifier = (error) => {
  if (!isBag(error) || !isErrorCategory(error.category)) return undefined;
  const retryAfterMs = retryAfterOf(error);
  return {
    category: error.category,
    code: typeof error.code === 'string' ? error.code : error.category,
    message: describe(error),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
  };
};

const byStatus: Classifier = (error) => {
  if (!isBag(error)) return undefined;
  const status = typeof error.status === 'number' ? error.status : error.statusCode;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) return undefined;
  const category = STATUS.get(status) ?? (status >= 500 ? 'internal' : 'invalid_input');
  const retryAfterMs = retryAfterOf(error);
  return {
    category,
    code: `http_${status}`,
    message: describe(error),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
  };
};

const byNodeCode: Classifier = (error) => {
  if (!isBag(error)) return undefined;
  for (const e of [error, error.cause]) {
    const code = isBag(e) ? e.code : undefined;
    const category = typeof code === 'string' ? NODE_CODES.get(code) : undefined;
    if (category) return { category, code: code as string, message: describe(error) };
  }
  return undefined;
};

/** The code an error or in-band result carries: its `code`, else its `error` (a string). */
function codeOf(error: Bag): string | undefined {
  return typeof error.code === 'string' ? error.code : typeof error.error === 'string' ? error.error : undefined;
}

/** The verdict for a code found in a table. */
function byCode(error: Bag, codes: ReadonlyMap<string, ErrorCategory | CodeRule>): Classified | undefined {
  const code = codeOf(error);
  const entry = code === undefined ? undefined : codes.get(code);
  if (!entry) return undefined;
  const retryAfterMs = retryAfterOf(error);
  const category = typeof entry === 'string' ? entry : entry.category;
  const userMessage = typeof entry === 'string' ? undefined : entry.userMessage;
  return {
    category,
    code: code!,
    message: describe(error),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(userMessage !== undefined && { userMessage }),
  };
}

const byInBandCode: Classifier = (error) => (isBag(error) ? byCode(error, IN_BAND_CODES) : undefined);

/** A domain code's category, and the words an end user is shown for it (else the category's). */
export interface CodeRule {
  category: ErrorCategory;
  /** Safe to show an end user: no secrets, no internals. */
  userMessage?: string;
}

/**
 * A classifier for a domain's own error codes: a thrown error's `code` (or `error`), or an in-band
 * result's `error` code, looked up in `codes` (own keys only: `constructor` is just unknown). A code
 * maps to a category, or to `{ category, userMessage }` when the end user should be told something
 * more precise than the category's sentence.
 * Give it to the tools of that domain (`defineTool({ classifiers: [...] })`), or to every call
 * (`createRunner({ classifiers: [...] })`). The task domain's tools carry theirs this way.
 *
 * @example
 * ```ts
 * const billingErrors = codeClassifier({
 *   card_declined: { category: 'invalid_input', userMessage: 'Your card was declined.' },
 *   ledger_locked: 'conflict',
 * });
 * const charge = defineTool({
 *   name: 'charge',
 *   description: 'Charge a card',
 *   input,
 *   output,
 *   classifiers: [billingErrors],
 * });
 * ```
 */
export function codeClassifier(codes: Readonly<Record<string, ErrorCategory | CodeRule>>): Classifier {
  if (typeof codes !== 'object' || codes === null)
    throw new TypeError(
      "Expected an object of error codes and their categories, e.g. { card_declined: 'invalid_input' }.",
    );
  const table = new Map<string, ErrorCategory | CodeRule>();
  for (const [code, entry] of Object.entries(codes)) {
    const category: unknown = typeof entry === 'object' && entry !== null ? entry.category : entry;
    if (!isErrorCategory(category))
      throw new TypeError(
        `Expected the category of code '${code}' to be one of ${ERROR_CATEGORIES.join(', ')}; got ${String(category)}.`,
      );
    if (typeof entry === 'object' && entry.userMessage !== undefined && typeof entry.userMessage !== 'string')
      throw new TypeError(`Expected the userMessage of code '${code}' to be a string.`);
    table.set(
      code,
      typeof entry === 'object'
        ? { category, ...(entry.userMessage !== undefined && { userMessage: entry.userMessage }) }
        : category,
    );
  }
  return (error) => (isBag(error) ? byCode(error, table) : undefined);
}

const MAX_CLASSIFIED_TEXT = 4096;

/** The category the message patterns give a text, if any. */
function categoryOfText(text: string): ErrorCategory | undefined {
  // What says what went wrong comes first; a tool's megabyte of text must not cost seconds of regex.
  const head = text.length > MAX_CLASSIFIED_TEXT ? text.slice(0, MAX_CLASSIFIED_TEXT) : text;
  for (const [pattern, category] of PATTERNS) if (pattern.test(head)) return category;
  return undefined;
}

const byMessage: Classifier = (error) => {
  const text = messageOf(error);
  const category = text ? categoryOfText(text) : undefined;
  return category && { category, code: category, message: describe(error) };
};

/** The words of a code (`user_not_found` → "user not found") read with the message patterns. */
export const wordsOf = (code: string): ErrorCategory | undefined => categoryOfText(code.replace(/_/g, ' '));

// Last: a code no table knows may still say what happened in its words, as in-band codes do.
const byCodeWords: Classifier = (error) => {
  const code = isBag(error) ? codeOf(error) : undefined;
  const category = code === undefined ? undefined : wordsOf(code);
  return category && { category, code: code!, message: describe(error) };
};

/**
 * The built-in classifiers, in the order the
 * [policies guide](https://github.com/chainkit-dev/chainkit/blob/main/docs/guides/policies.md) gives under Errors,
 * after errors that declare their `category`; last, the words of an unknown code
 * (`user_not_found` → not_found), as for in-band codes.
 *
 * @example
 * ```ts
 * createRunner({ invoker, classifiers: [myClassifier, ...DEFAULT_CLASSIFIERS] });
 * ```
 */
export const DEFAULT_CLASSIFIERS: readonly Classifier[] = [
  byDeclaredCategory,
  byStatus,
  byNodeCode,
  byInBandCode,
  byMessage,
  byCodeWords,
];
export const BUILT_IN: ReadonlySet<Classifier> = new Set(DEFAULT_CLASSIFIERS);

function describe(error: unknown): string {
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    if (error === undefined) return 'The tool failed with undefined (no error value).';
    if (typeof error === 'string') return error;
    return describeValue(error);
  } catch {
    return 'The tool failed with a value that could not be read.'; // a throwing getter or a hostile Proxy
  }
}

/** A verdict is used only if it is well formed: a known category and a string code and message. */
export const wellFormed = (v: Classified | undefined): v is Classified =>
  typeof v === 'object' &&
  v !== null &&
  isErrorCategory(v.category) &&
  typeof v.code === 'string' &&
  typeof v.message === 'string';

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
  try {
    if (error instanceof ToolFailure) return error.info;
    if (error instanceof RunAbortReason) {
      return error.kind === 'deadline'
        ? { category: 'timeout', code: 'deadline_exceeded', message: error.message }
        : {
            category: 'cancelled',
            code: error.code ?? (error.kind === 'closed' ? 'runner_closed' : 'cancelled'),
            message: error.message,
          };
    }
  } catch {
    // `instanceof` on a hostile Proxy can throw: it is then neither, and the classifiers decide.
  }
  for (const classify of classifiers) {
    try {
      const verdict = classify(error);
      if (wellFormed(verdict)) return verdict;
    } catch {
      // A broken custom classifier (or a value whose getters throw) must not break the run; the next one decides.
    }
  }
  return { category: 'unknown', code: 'unknown', message: describe(error) };
}
