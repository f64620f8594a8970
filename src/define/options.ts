// Options stated as zod schemas whose leaves carry chainkit's own messages ("Expected `x` to be …"),
// and the issues they find as definition issues with readable paths (`retry.internal.factor`, `tools[2]`).
// Every option check (runner, tools, steps, stores) goes through here, so each reports every problem at once.
import { z } from 'zod';
import { DefinitionError } from '../errors/definition-error.js';
import { MAX_TIMER_MS } from '../util/timer.js';

/** One problem found in an option object: where, and what was expected. */
export interface OptionIssue {
  path: string;
  message: string;
}

// One predicate and one message per leaf: zod's built-in checks would report a bad value several
// times (1.5 is neither an integer nor ≥ 1) and in their own words.
const leaf = <T>(accepts: (v: unknown) => boolean, message: string): z.ZodType<T> => z.custom<T>(accepts, message);

/**
 * A duration a timer can hold: `> 0` (or `>= 0` with `allowZero`) and at most 2^31 − 1 ms.
 *
 * @example
 * ```ts
 * z.object({ openMs: timerMs('openMs').optional() });
 * ```
 */
export function timerMs(field: string, allowZero = false): z.ZodType<number> {
  return leaf(
    (v) => typeof v === 'number' && (allowZero ? v >= 0 : v > 0) && v <= MAX_TIMER_MS,
    `Expected \`${field}\` to be a ${allowZero ? 'non-negative' : 'positive'} number of ms below 2^31.`,
  );
}

/**
 * A safe integer of at least `min` (1: "a positive integer", 0: "a non-negative integer").
 *
 * @example
 * ```ts
 * z.object({ limit: integer('limit', 1) });
 * ```
 */
export function integer(field: string, min: 0 | 1): z.ZodType<number> {
  return leaf(
    (v) => Number.isSafeInteger(v) && (v as number) >= min,
    `Expected \`${field}\` to be a ${min === 1 ? 'positive' : 'non-negative'} integer.`,
  );
}

/**
 * A duration a store keeps rather than a timer: a positive, finite number of ms.
 *
 * @example
 * ```ts
 * z.object({ ttlMs: finiteMs('ttlMs').optional() });
 * ```
 */
export function finiteMs(field: string): z.ZodType<number> {
  return leaf(
    (v) => typeof v === 'number' && Number.isFinite(v) && v > 0,
    `Expected \`${field}\` to be a positive, finite number of ms.`,
  );
}

/**
 * A duration a database keeps as an integer (Redis `PX`, PostgreSQL intervals): a positive safe integer of ms.
 *
 * @example
 * ```ts
 * z.object({ idempotencyTtlMs: integerMs('idempotencyTtlMs').optional() });
 * ```
 */
export function integerMs(field: string): z.ZodType<number> {
  return leaf(
    (v) => Number.isSafeInteger(v) && (v as number) > 0,
    `Expected \`${field}\` to be a positive integer number of ms.`,
  );
}

/**
 * A non-empty string.
 *
 * @example
 * ```ts
 * z.object({ prefix: nonEmpty('prefix') });
 * ```
 */
export function nonEmpty(field: string): z.ZodType<string> {
  return leaf((v) => typeof v === 'string' && v !== '', `Expected a non-empty \`${field}\`.`);
}

/**
 * A function, with what it should look like in the message (default: just "a function").
 *
 * @example
 * ```ts
 * z.object({ now: fn('now').optional() });
 * ```
 */
export function fn<T = (...args: never[]) => unknown>(field: string, shape = 'a function'): z.ZodType<T> {
  return leaf((v) => typeof v === 'function', `Expected \`${field}\` to be ${shape}.`);
}

/**
 * A retry rule override (tools, steps and the runner's table): an object of optional fields, or
 * `false` (no retries).
 *
 * @example
 * ```ts
 * optionIssues(retryRule, { retries: -1 });
 * // [{ path: 'retries', message: 'Expected `retries` to be a non-negative integer.' }]
 * ```
 */
export const retryRule = z.preprocess(
  (v) => (v === false ? undefined : v),
  z
    .object(
      {
        retries: integer('retries', 0).optional(),
        minDelayMs: timerMs('minDelayMs', true).optional(),
        maxDelayMs: timerMs('maxDelayMs', true).optional(),
        factor: leaf<number>(
          (v) => typeof v === 'number' && Number.isFinite(v) && v >= 1,
          'Expected `factor` to be a finite number ≥ 1.',
        ).optional(),
      },
      { error: 'Expected `retry` to be an object or false.' },
    )
    .optional(),
);

/** `prefix.path` as chainkit writes paths: `a.b`, `a[0]`, `[0]`. */
function joinPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`;
  return out;
}

/**
 * What `schema` finds wrong with `value`, each issue at its path under `prefix`; `[]` when valid.
 *
 * @example
 * ```ts
 * for (const i of optionIssues(retryRule, spec.retry, 'retry')) issues.add(i.path, i.message);
 * ```
 */
export function optionIssues(schema: z.ZodType, value: unknown, prefix = ''): OptionIssue[] {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => ({ path: joinPath(prefix, i.path), message: i.message }));
}

/**
 * Checks an options object against `schema` and throws one `DefinitionError` that lists every
 * problem, each with its path: the one way chainkit checks the options of its runner and stores.
 *
 * @example
 * ```ts
 * const OPTIONS = z.object(
 *   { maxEntries: integer('maxEntries', 1).optional() },
 *   { error: 'Expected an options object.' },
 * );
 * checkOptions('memoryCheckpointStore options', OPTIONS, options); // throws DefinitionError listing each bad field
 * ```
 */
export function checkOptions(subject: string, schema: z.ZodType, value: unknown): void {
  const issues = optionIssues(schema, value);
  if (issues.length > 0) throw new DefinitionError(subject, issues);
}
