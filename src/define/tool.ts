// Tools: a named, schema-typed action the agent can take, plus the policies that guard each call.
import { z } from 'zod';
import type { RetryRule } from '../errors/categories.js';
import { IssueList } from '../errors/definition-error.js';

/** What a tool does to the world: drives confirmation and idempotency. */
export type ToolEffect = 'read' | 'write' | 'destructive';

/** Per-tool rate limit (fixed windows): at most `limit` attempts start per `intervalMs`. */
export interface RateLimitSpec {
  limit: number;
  intervalMs: number;
  per: 'global' | 'user';
  maxConcurrent?: number;
  maxQueue?: number;
}

/** A static hint about which tool usually comes next. */
export interface ToolSuggestion {
  tool: string;
  reason: string;
}

/** What `defineTool` takes. */
export interface ToolSpec<I extends z.ZodType, O extends z.ZodType> {
  /** Matches `/^[A-Za-z][\w.-]{0,63}$/`. */
  name: string;
  description: string;
  input: I;
  output: O;
  /** Default `'write'`. */
  effect?: ToolEffect;
  /** Per attempt, default 10 000 ms. */
  timeoutMs?: number;
  /** Prior for timing estimates. */
  expectedDurationMs?: number;
  rateLimit?: RateLimitSpec;
  /** Overrides the retry rule of the transient categories (internal, unavailable, network), or `false` for no retries. */
  retry?: Partial<RetryRule> | false;
  suggests?: readonly ToolSuggestion[];
  /** Tools or chains (by name) that can do the same job: offered as alternatives when this one fails. */
  alternatives?: readonly string[];
}

/** A defined tool; its zod schemas carry the input and output types. */
export interface Tool<I = any, O = any> {
  readonly kind: 'tool';
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<I>;
  readonly output: z.ZodType<O>;
  readonly effect: ToolEffect;
  readonly timeoutMs: number;
  readonly expectedDurationMs?: number;
  readonly rateLimit?: Readonly<RateLimitSpec>;
  readonly retry?: Readonly<Partial<RetryRule>> | false;
  readonly suggests: readonly ToolSuggestion[];
  readonly alternatives: readonly string[];
}

/** The input type of a tool. */
export type ToolInput<T> = T extends Tool<infer I, any> ? I : never;
/** The output type of a tool. */
export type ToolOutput<T> = T extends Tool<any, infer O> ? O : never;

export const TOOL_NAME = /^[A-Za-z][\w.-]{0,63}$/;
export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;

/** True for zod v4 schemas. */
export function isSchema(value: unknown): value is z.ZodType {
  return value instanceof z.ZodType;
}

const positive = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v > 0;
const nonNegative = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** Checks a retry override; shared by tools and steps. */
export function checkRetry(retry: unknown, path: string, issues: IssueList): void {
  if (retry === undefined || retry === false) return;
  if (typeof retry !== 'object' || retry === null) {
    issues.add(path, 'Expected `retry` to be an object or false.');
    return;
  }
  const r = retry as Record<string, unknown>;
  if (r.retries !== undefined && !(nonNegative(r.retries) && Number.isInteger(r.retries))) issues.add(`${path}.retries`, 'Expected `retries` to be a non-negative integer.');
  if (r.minDelayMs !== undefined && !nonNegative(r.minDelayMs)) issues.add(`${path}.minDelayMs`, 'Expected `minDelayMs` to be a non-negative number.');
  if (r.maxDelayMs !== undefined && !nonNegative(r.maxDelayMs)) issues.add(`${path}.maxDelayMs`, 'Expected `maxDelayMs` to be a non-negative number.');
  if (r.factor !== undefined && !(nonNegative(r.factor) && (r.factor as number) >= 1)) issues.add(`${path}.factor`, 'Expected `factor` to be a number ≥ 1.');
}

/** Checks a rate-limit spec. */
export function checkRateLimit(rl: unknown, path: string, issues: IssueList): void {
  if (rl === undefined) return;
  if (typeof rl !== 'object' || rl === null) {
    issues.add(path, 'Expected `rateLimit` to be an object { limit, intervalMs, per }.');
    return;
  }
  const r = rl as Record<string, unknown>;
  if (!(positive(r.limit) && Number.isInteger(r.limit))) issues.add(`${path}.limit`, 'Expected `limit` to be a positive integer.');
  if (!positive(r.intervalMs)) issues.add(`${path}.intervalMs`, 'Expected `intervalMs` to be a positive number.');
  if (r.per !== 'global' && r.per !== 'user') issues.add(`${path}.per`, "Expected `per` to be 'global' or 'user'.");
  if (r.maxConcurrent !== undefined && !(positive(r.maxConcurrent) && Number.isInteger(r.maxConcurrent))) issues.add(`${path}.maxConcurrent`, 'Expected `maxConcurrent` to be a positive integer.');
  if (r.maxQueue !== undefined && !(nonNegative(r.maxQueue) && Number.isInteger(r.maxQueue))) issues.add(`${path}.maxQueue`, 'Expected `maxQueue` to be a non-negative integer.');
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
export function defineTool<I extends z.ZodType, O extends z.ZodType>(spec: ToolSpec<I, O>): Tool<z.infer<I>, z.infer<O>> {
  const issues = new IssueList();
  if (typeof spec !== 'object' || spec === null) throw new TypeError('Expected a tool spec object.');
  if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name)) issues.add('name', `Expected a name matching ${TOOL_NAME}, got ${JSON.stringify(spec.name)}.`);
  if (typeof spec.description !== 'string' || spec.description.trim() === '') issues.add('description', 'Expected a non-empty description (models choose tools by it).');
  if (!isSchema(spec.input)) issues.add('input', 'Expected `input` to be a zod schema.');
  if (!isSchema(spec.output)) issues.add('output', 'Expected `output` to be a zod schema.');
  if (spec.effect !== undefined && !['read', 'write', 'destructive'].includes(spec.effect)) issues.add('effect', "Expected `effect` to be 'read', 'write' or 'destructive'.");
  if (spec.timeoutMs !== undefined && !positive(spec.timeoutMs)) issues.add('timeoutMs', 'Expected `timeoutMs` to be a positive number.');
  if (spec.expectedDurationMs !== undefined && !nonNegative(spec.expectedDurationMs)) issues.add('expectedDurationMs', 'Expected `expectedDurationMs` to be a non-negative number.');
  checkRetry(spec.retry, 'retry', issues);
  checkRateLimit(spec.rateLimit, 'rateLimit', issues);
  if (spec.suggests !== undefined) {
    if (!Array.isArray(spec.suggests)) issues.add('suggests', 'Expected `suggests` to be an array of { tool, reason }.');
    else spec.suggests.forEach((s, i) => {
      if (typeof s?.tool !== 'string' || typeof s?.reason !== 'string') issues.add(`suggests[${i}]`, 'Expected { tool: string, reason: string }.');
    });
  }
  if (spec.alternatives !== undefined && !(Array.isArray(spec.alternatives) && spec.alternatives.every((a) => typeof a === 'string' && a !== ''))) {
    issues.add('alternatives', 'Expected `alternatives` to be an array of tool or chain names.');
  }
  issues.throwIfAny(`tool '${String(spec.name)}'`);
  return Object.freeze({
    kind: 'tool' as const,
    name: spec.name,
    description: spec.description,
    input: spec.input,
    output: spec.output,
    effect: spec.effect ?? 'write',
    timeoutMs: spec.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    ...(spec.expectedDurationMs !== undefined && { expectedDurationMs: spec.expectedDurationMs }),
    ...(spec.rateLimit !== undefined && { rateLimit: Object.freeze({ ...spec.rateLimit }) }),
    ...(spec.retry !== undefined && { retry: spec.retry === false ? false : Object.freeze({ ...spec.retry }) }),
    suggests: Object.freeze((spec.suggests ?? []).map((s) => Object.freeze({ ...s }))),
    alternatives: Object.freeze([...(spec.alternatives ?? [])]),
  }) as unknown as Tool<z.infer<I>, z.infer<O>>;
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
  return typeof value === 'object' && value !== null && (value as Tool).kind === 'tool' && isSchema((value as Tool).input);
}
