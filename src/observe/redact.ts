// Hides secrets in what chainkit shows: traces, events, logs, error messages and model results.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { TraceStep } from './trace.js';
import { hides, isSecretKey, REDACTED, walk, type RedactRule } from '../util/redact.js';

// `key=value`, `key: value`, `"key": "value"`: found key first, so a non-secret key never swallows
// the pair after it ("Error: password=x"). A quoted key needs a quoted or numeric value, which keeps
// chainkit's own "at 'password': Invalid input" readable.
const PAIR_KEY = /(?<![\w.-])(["']?)([A-Za-z_][\w.-]{0,63})\1[ \t]*[:=][ \t]*/g;
const PAIR_VALUE = new RegExp(
  String.raw`"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|(?:Bearer|Basic|Token|Digest)[ \t]+[^\s,;&"'<>(){}[\]]{1,1024}` +
    String.raw`|[^\s,;&"'<>(){}[\]]{1,1024}`,
  'y',
);
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
function collect(
  value: unknown,
  rule: RedactRule | undefined,
  secret: boolean,
  depth: number,
  found: Set<string>,
  budget: { nodes: number },
): void {
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
 * maskError(info, secretMask(calls.redact, ctx.input, chainInput, context));
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
 * if (result.status === 'failed') maskFailedRun(result, secretMask(calls.redact, input, context));
 * ```
 */
export function maskFailedRun(
  result: { error: ChainErrorInfo; trace: { steps: TraceStep[] }; compensationFailures?: { error: ChainErrorInfo }[] },
  mask: SecretMask,
): void {
  const done = new Set<ChainErrorInfo>([maskError(result.error, mask)]);
  for (const f of result.compensationFailures ?? []) if (!done.has(f.error)) done.add(maskError(f.error, mask));
  for (const step of result.trace.steps) {
    if (step.error && !done.has(step.error)) done.add(maskError(step.error, mask));
    if (step.input !== undefined) step.input = mask.data(step.input);
    if (step.output !== undefined) step.output = mask.data(step.output);
  }
}
