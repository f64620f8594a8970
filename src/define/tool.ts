// Tools: a named, schema-typed action the agent can take, plus the policies that guard each call.
import { MAX_TIMER_MS } from '../util/timer.js';
import type { RetryRule } from '../errors/categories.js';
import type { Classifier } from '../errors/failure.js';
import { IssueList } from '../errors/definition-error.js';
import { isSchema, type Schema, type SchemaInput, type SchemaOutput } from './schema.js';
import { z } from 'zod';
import { fn, integer, optionIssues, retryRule, timerMs } from './options.js';

/** What a tool does to the world: drives confirmation and idempotency. */
export type ToolEffect = 'read' | 'write' | 'destructive';

/**
 * Per-tool rate limit (fixed windows): at most `limit` attempts start per `intervalMs`, for the
 * whole tool (`per: 'global'`) or separately per key (`key`, or `per: 'user'`). Give `per` or `key`.
 *
 * @example
 * ```ts
 * rateLimit: { limit: 100, intervalMs: 60_000, per: 'user' } // per context.userId
 * rateLimit: { limit: 1000, intervalMs: 60_000, key: (call) => String(call.context.tenantId ?? '') } // per tenant
 * ```
 */
export interface RateLimitSpec {
  limit: number;
  intervalMs: number;
  /**
   * `'global'`: one limit for the tool; `'user'`: one per
   * `context.userId` (sugar for `key: (call) => call.context.userId`).
   */
  per?: 'global' | 'user';
  /**
   * One limit per key this returns for a call (instead of `per`). A call it gives no non-empty
   * string for (or that it throws for) shares the key `'anonymous'` with every such call.
   * Keys come from the trusted context, never the model-chosen input, so a model cannot step around a limit.
   */
  key?: (call: RateLimitKeyCall) => string | undefined;
  maxConcurrent?: number;
  /** Calls allowed to wait for a slot (default 50); more fail at once with `queue_full`. */
  maxQueue?: number;
}

/** A static hint about which tool usually comes next. */
export interface ToolSuggestion {
  tool: string;
  reason: string;
}

/** What a tool's `idempotencyKey` function sees of the call besides its input. */
export interface IdempotencyKeyCall {
  readonly tool: string;
  readonly runId: string;
  /** The chain step's id, or the tool's name for `runner.invoke`. */
  readonly step: string;
  readonly sessionId?: string;
  /** The trusted context (e.g. `userId`). */
  readonly context: Readonly<Record<string, unknown>>;
}

/** What a rate limit's `key` function sees of the call: the same as an idempotency key function. */
export type RateLimitKeyCall = IdempotencyKeyCall;

/**
 * What `defineTool` takes. `input` and `output` are zod 4 schemas (from the app's own zod, classic
 * or `zod/mini`) or any Standard Schema (valibot, arktype, …): see {@link Schema}.
 */
export interface ToolSpec<I extends Schema, O extends Schema, N extends string = string> {
  /** Matches `/^[A-Za-z][\w.-]{0,63}$/`. Its literal type names the tool in typed invokers. */
  name: N;
  description: string;
  input: I;
  output: O;
  /** Default `'write'`. */
  effect?: ToolEffect;
  /**
   * The tool honours `ToolCall.idempotencyKey` (the same key never takes effect twice), so a
   * write/destructive attempt whose outcome is unknown (it timed out) may be retried. Default `false`.
   */
  idempotent?: boolean;
  /**
   * Derives the idempotency key of a write/destructive call from its content instead of the default
   * `${runId}:${stepId}`, so a second identical request within `idempotencyTtlMs` gets the first
   * one's result (`cached`) instead of acting again. A step's `idempotencyKey` or the call's
   * `idempotencyKey` option still wins. Throwing or returning no non-empty string uses the default.
   */
  idempotencyKey?: (input: SchemaOutput<I>, call: IdempotencyKeyCall) => string;
  /** How long a result kept under this tool's idempotency keys counts (default: the store's, 24 h). */
  idempotencyTtlMs?: number;
  /** Per attempt, default 10 000 ms. */
  timeoutMs?: number;
  /** Prior for timing estimates. */
  expectedDurationMs?: number;
  rateLimit?: RateLimitSpec;
  /**
   * Overrides the retry rule of the transient categories (internal, unavailable, network), or `false` for no retries.
   */
  retry?: Partial<RetryRule> | false;
  suggests?: readonly ToolSuggestion[];
  /** Tools or chains (by name) that can do the same job: offered as alternatives when this one fails. */
  alternatives?: readonly string[];
  /**
   * How this tool's backend names its failures: classifiers tried first on what it throws and on
   * its in-band error results (`{ status: 'error', error: code }`), before the runner's and the
   * built-in ones. A domain's own error codes go here, e.g.
   * `classifiers: [codeClassifier({ card_declined: 'invalid_input' })]`.
   */
  classifiers?: readonly Classifier[];
}

/**
 * A defined tool; its zod schemas carry the input and output types. `N` is its name as written,
 * `In` what its input schema accepts (fields with a `.default()` may be left out).
 */
export interface Tool<I = any, O = any, N extends string = string, In = I> {
  readonly kind: 'tool';
  readonly name: N;
  readonly description: string;
  readonly input: Schema<I, In>;
  readonly output: Schema<O>;
  readonly effect: ToolEffect;
  /** The tool honours `ToolCall.idempotencyKey`: a timed-out write may be retried. */
  readonly idempotent: boolean;
  /**
   * The key of a write/destructive call (never throws: falls back
   * to `${runId}:${step}`); see {@link ToolSpec.idempotencyKey}.
   */
  readonly idempotencyKey?: (input: I, call: IdempotencyKeyCall) => string;
  readonly idempotencyTtlMs?: number;
  readonly timeoutMs: number;
  readonly expectedDurationMs?: number;
  readonly rateLimit?: Readonly<RateLimitSpec>;
  readonly retry?: Readonly<Partial<RetryRule>> | false;
  readonly suggests: readonly ToolSuggestion[];
  readonly alternatives: readonly string[];
  /** This tool's own classifiers (see {@link ToolSpec.classifiers}). */
  readonly classifiers?: readonly Classifier[];
}

/** The input type of a tool. */
export type ToolInput<T> = T extends Tool<infer I, any, any, any> ? I : never;
/** The output type of a tool. */
export type ToolOutput<T> = T extends Tool<any, infer O, any, any> ? O : never;

const TOOL_NAME = /^[A-Za-z][\w.-]{0,63}$/;
const DEFAULT_TOOL_TIMEOUT_MS = 10_000;

/** A duration that can be handed to a timer: `> 0` (or `>= 0` with `allowZero`) and below 2^31 ms. */
export function isTimerMs(v: unknown, allowZero = false): v is number {
  return typeof v === 'number' && (allowZero ? v >= 0 : v > 0) && v <= MAX_TIMER_MS; // false for NaN and ±Infinity
}

/** Adds an issue unless `value` is a usable timer duration; shared by tools, steps, chains and the runner. */
export function checkMs(value: unknown, path: string, field: string, issues: IssueList, allowZero = false): void {
  for (const i of optionIssues(timerMs(field, allowZero), value, path)) issues.add(i.path, i.message);
}

/** Checks a retry override (the {@link retryRule} schema); shared by tools, steps and the runner's table. */
export function checkRetry(retry: unknown, path: string, issues: IssueList): void {
  for (const i of optionIssues(retryRule, retry, path)) issues.add(i.path, i.message);
}

const RATE_LIMIT = z.object(
  {
    limit: integer('limit', 1),
    intervalMs: timerMs('intervalMs'),
    key: fn('key', 'a function (call) => string | undefined').optional(),
    maxConcurrent: integer('maxConcurrent', 1).optional(),
    maxQueue: integer('maxQueue', 0).optional(),
  },
  { error: 'Expected `rateLimit` to be an object { limit, intervalMs, per }.' },
);

/** Checks a rate-limit spec: its fields by schema, then `per` and `key`, which decide together. */
function checkRateLimit(rl: unknown, path: string, issues: IssueList): void {
  if (rl === undefined) return;
  for (const i of optionIssues(RATE_LIMIT, rl, path)) issues.add(i.path, i.message);
  if (typeof rl !== 'object' || rl === null || Array.isArray(rl)) return; // said above: not an object at all
  const { per, key } = rl as Record<string, unknown>;
  if (key === undefined && per !== 'global' && per !== 'user')
    issues.add(`${path}.per`, "Expected `per` to be 'global' or 'user'.");
  if (key !== undefined && per !== undefined)
    issues.add(
      `${path}.per`,
      "Give either `per` or `key`, not both: `per: 'user'` is `key: (call) => call.context.userId`.",
    );
}

// The key only dedupes: a broken key function must neither fail the write nor make `invoke` throw.
function safeKey(
  fn: (input: any, call: IdempotencyKeyCall) => string,
): (input: unknown, call: IdempotencyKeyCall) => string {
  return (input, call) => {
    try {
      const key = fn(input, call);
      if (typeof key === 'string' && key !== '') return key;
    } catch {
      // fall through to the default key
    }
    return `${call.runId}:${call.step}`;
  };
}

/**
 * Defines a tool. Throws {@link DefinitionError} listing every problem in the spec.
 *
 * @example
 * ```ts
 * const getWeather = defineTool({
 *   name: 'get_weather',
 *   description: 'Current weather for a city',
 *   input: z.object({ city: z.string() }),
 *   output: z.object({ celsius: z.number() }),
 *   effect: 'read',
 *   timeoutMs: 2000,
 * });
 * ```
 */
export function defineTool<I extends Schema, O extends Schema, N extends string = string>(
  spec: ToolSpec<I, O, N>,
): Tool<SchemaOutput<I>, SchemaOutput<O>, N, SchemaInput<I>> {
  const issues = new IssueList();
  if (typeof spec !== 'object' || spec === null) throw new TypeError('Expected a tool spec object.');
  if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name))
    issues.add('name', `Expected a name matching ${TOOL_NAME}, got ${JSON.stringify(spec.name)}.`);
  if (typeof spec.description !== 'string' || spec.description.trim() === '')
    issues.add('description', 'Expected a non-empty description (models choose tools by it).');
  if (!isSchema(spec.input)) issues.add('input', 'Expected `input` to be a zod schema or another Standard Schema.');
  if (!isSchema(spec.output)) issues.add('output', 'Expected `output` to be a zod schema or another Standard Schema.');
  if (spec.effect !== undefined && !['read', 'write', 'destructive'].includes(spec.effect))
    issues.add('effect', "Expected `effect` to be 'read', 'write' or 'destructive'.");
  if (spec.idempotent !== undefined && typeof spec.idempotent !== 'boolean')
    issues.add('idempotent', 'Expected `idempotent` to be a boolean.');
  if (spec.idempotencyKey !== undefined && typeof spec.idempotencyKey !== 'function')
    issues.add('idempotencyKey', 'Expected `idempotencyKey` to be a function (input, call) => string.');
  if (spec.idempotencyKey !== undefined && spec.effect === 'read')
    issues.add(
      'idempotencyKey',
      'Read tools carry no idempotency key: drop `idempotencyKey` or make the tool a write.',
    );
  if (spec.idempotencyTtlMs !== undefined)
    checkMs(spec.idempotencyTtlMs, 'idempotencyTtlMs', 'idempotencyTtlMs', issues);
  if (spec.timeoutMs !== undefined) checkMs(spec.timeoutMs, 'timeoutMs', 'timeoutMs', issues);
  if (spec.expectedDurationMs !== undefined)
    checkMs(spec.expectedDurationMs, 'expectedDurationMs', 'expectedDurationMs', issues, true);
  checkRetry(spec.retry, 'retry', issues);
  checkRateLimit(spec.rateLimit, 'rateLimit', issues);
  if (spec.suggests !== undefined) {
    if (!Array.isArray(spec.suggests))
      issues.add('suggests', 'Expected `suggests` to be an array of { tool, reason }.');
    else
      spec.suggests.forEach((s, i) => {
        if (typeof s?.tool !== 'string' || typeof s?.reason !== 'string')
          issues.add(`suggests[${i}]`, 'Expected { tool: string, reason: string }.');
      });
  }
  if (
    spec.alternatives !== undefined &&
    !(Array.isArray(spec.alternatives) && spec.alternatives.every((a) => typeof a === 'string' && a !== ''))
  ) {
    issues.add('alternatives', 'Expected `alternatives` to be an array of tool or chain names.');
  }
  if (
    spec.classifiers !== undefined &&
    !(Array.isArray(spec.classifiers) && spec.classifiers.every((c) => typeof c === 'function'))
  ) {
    issues.add('classifiers', 'Expected `classifiers` to be an array of functions (error) => Classified | undefined.');
  }
  issues.throwIfAny(`tool '${String(spec.name)}'`);
  return Object.freeze({
    kind: 'tool' as const,
    name: spec.name,
    description: spec.description,
    input: spec.input,
    output: spec.output,
    effect: spec.effect ?? 'write',
    idempotent: spec.idempotent ?? false,
    ...(typeof spec.idempotencyKey === 'function' && { idempotencyKey: safeKey(spec.idempotencyKey) }),
    ...(spec.idempotencyTtlMs !== undefined && { idempotencyTtlMs: spec.idempotencyTtlMs }),
    timeoutMs: spec.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    ...(spec.expectedDurationMs !== undefined && { expectedDurationMs: spec.expectedDurationMs }),
    ...(spec.rateLimit !== undefined && { rateLimit: Object.freeze({ ...spec.rateLimit }) }),
    ...(spec.retry !== undefined && { retry: spec.retry === false ? false : Object.freeze({ ...spec.retry }) }),
    suggests: Object.freeze((spec.suggests ?? []).map((s) => Object.freeze({ ...s }))),
    alternatives: Object.freeze([...(spec.alternatives ?? [])]),
    ...(spec.classifiers !== undefined &&
      spec.classifiers.length > 0 && { classifiers: Object.freeze([...spec.classifiers]) }),
  }) as unknown as Tool<SchemaOutput<I>, SchemaOutput<O>, N, SchemaInput<I>>;
}

/**
 * Type guard for tools made by {@link defineTool}.
 *
 * @example
 * ```ts
 * if (!isTool(candidate)) throw new TypeError('not a tool');
 * ```
 */
export function isTool(value: unknown): value is Tool {
  return (
    typeof value === 'object' && value !== null && (value as Tool).kind === 'tool' && isSchema((value as Tool).input)
  );
}
