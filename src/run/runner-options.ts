// The runner's options: what they are, how they are checked, and the small pieces built from them.
import type { Chain } from '../define/chain.js';
import { isChain } from '../define/chain.js';
import { z } from 'zod';
import { isTool, type Tool } from '../define/tool.js';
import {
  DEFAULT_RETRY_TABLE,
  ERROR_CATEGORIES,
  type ErrorCategory,
  type RetryRule,
  type RetryTable,
} from '../errors/categories.js';
import { fn, integer, optionIssues, retryRule, timerMs } from '../define/options.js';
import type { Classifier } from '../errors/failure.js';
import { IssueList } from '../errors/definition-error.js';
import type { FallbackRule } from '../guidance/fallback.js';
import type { ToolRegistry } from '../guidance/tiers.js';
import type { Hooks } from '../observe/events.js';
import type { RedactRule } from '../util/redact.js';
import type { BreakerOptions } from '../policies/breaker.js';
import type { LimiterStore } from '../policies/window-limiter.js';
import type { BreakerStore, CheckpointStore, IdempotencyStore, LearningStore } from '../stores/types.js';
import type { RunStore } from '../stores/run-store.js';
import type { ToolInvoker } from '../invokers/types.js';
import type { Logger } from '../observe/logger.js';

const DEFAULT_CONFIRMATION_TTL_MS = 15 * 60_000;

/** Options of {@link createRunner}. */
export interface RunnerOptions {
  /** How tools are really called. Required. */
  invoker: ToolInvoker;
  /** Known tools: for `invoke` by name, timing priors and suggestions. */
  tools?: Tool[];
  /** Known chains: for resume by name and chain suggestions. */
  chains?: Chain[];
  /** Tool tiers for `invoke(…, { tier })` (its tools are known tools too). */
  registry?: ToolRegistry;
  /** Fallback advice rules, merged over the defaults (yours win). */
  fallbacks?: FallbackRule[];
  /**
   * Where state lives; memory stores by default. With `runs`, every run is durable: recorded,
   * journaled step by step, and recoverable by another instance if this one dies
   * ([Durable runs](https://github.com/chainkit-dev/chainkit/blob/main/docs/guides/durable-runs.md)).
   */
  stores?: {
    checkpoints?: CheckpointStore;
    idempotency?: IdempotencyStore;
    breakers?: BreakerStore;
    limiter?: LimiterStore;
    metrics?: LearningStore;
    runs?: RunStore;
  };
  /** Durable runs: how long an owner's silence counts as its death (its lease). Default 30 s. */
  leaseMs?: number;
  /**
   * Durable runs: claim and continue runs whose owner died, every `intervalMs` (at most `limit` per poll, default 100).
   */
  recover?: { intervalMs: number; limit?: number };
  /**
   * Durable runs: how long the run store keeps an ended run (its record, journal, listing entry and
   * events), in ms: `completedMs` for completed and declined runs, `failedMs` for failed ones. Default
   * 24 h each. A run parked at a gate is kept until its resume token expires (`confirmationTtlMs`).
   * Within it, a caller retrying a run id gets the recorded result; after it, the id starts a new run.
   */
  retention?: { completedMs?: number; failedMs?: number };
  /** Circuit-breaker settings for every tool (default: open after 5 transient failures in a row, for 60 s). */
  breaker?: BreakerOptions;
  hooks?: Hooks;
  /** Extra redaction rule: return true to hide a key's value in traces, events and logs. */
  redact?: RedactRule;
  logger?: Logger;
  /** `'full'` keeps (redacted) inputs and outputs in traces. Default `'summary'`. */
  traceDetail?: 'summary' | 'full';
  /**
   * Keep identity fields (`user_id`, `userId`, `email`, `phone`, …) in full
   * traces' inputs and outputs. Default `false`: shown as `'[REDACTED]'`.
   */
  traceIdentity?: boolean;
  /** How long a resume token is valid. Default 15 minutes. */
  confirmationTtlMs?: number;
  /** Signs resume tokens. Share it between instances that resume each other's tokens. Default: random per runner. */
  secret?: string;
  /** Retry rules per category, each merged over the default rule of its category. */
  retry?: Partial<Record<ErrorCategory, Partial<RetryRule>>>;
  /** Classifiers tried before the built-in ones. */
  classifiers?: Classifier[];
  /** Randomness for jitter (tests pass `() => 0`). Default `Math.random`. */
  random?: () => number;
  /** Clock. Default `Date.now`. */
  now?: () => number;
}

// What each option must be, with the message that says so. `null` means "the default" where the
// option has one (`?? default` below).
const RUNNER_OPTIONS = z.object({
  invoker: fn('invoker', 'a function (call: ToolCall) => Promise<unknown>, e.g. functionInvoker({...})'),
  confirmationTtlMs: timerMs('confirmationTtlMs').nullish(),
  traceDetail: z.enum(['summary', 'full'], "Expected `traceDetail` to be 'summary' or 'full'.").optional(),
  traceIdentity: z.boolean('Expected `traceIdentity` to be true or false.').optional(),
  random: fn('random').optional(),
  now: fn('now').optional(),
  redact: fn('redact').optional(),
  breaker: z
    .object(
      { threshold: integer('threshold', 1).nullish(), openMs: timerMs('openMs').nullish() },
      { error: 'Expected `breaker` to be an object { threshold?, openMs? }.' },
    )
    .nullish(),
  retry: z
    .object(Object.fromEntries(ERROR_CATEGORIES.map((c) => [c, retryRule])), {
      error: 'Expected `retry` to be a table { [category]: { retries, minDelayMs, factor, maxDelayMs } }.',
    })
    .catchall(z.custom(() => false, { error: (issue) => `Unknown error category '${String(issue.path?.at(-1))}'.` }))
    .optional(),
  leaseMs: timerMs('leaseMs').optional(),
  recover: z
    .object(
      { intervalMs: timerMs('intervalMs'), limit: integer('limit', 1).optional() },
      { error: 'Expected `recover` to be an object { intervalMs, limit? }.' },
    )
    .optional(),
  secret: z
    .custom<string>(
      (v) => typeof v === 'string' && v.length >= 16,
      'Expected `secret` to be a string of at least 16 characters.',
    )
    .optional(),
  retention: z
    .object(
      { completedMs: integer('completedMs', 1).optional(), failedMs: integer('failedMs', 1).optional() },
      { error: 'Expected `retention` to be an object { completedMs?, failedMs? } (ms).' },
    )
    .optional(),
});

/**
 * The checked options: known tools and chains by name, and the
 * resolved numbers. Throws `DefinitionError` listing every problem.
 */
export function checkRunnerOptions(options: RunnerOptions): {
  tools: Map<string, Tool>;
  chains: Map<string, Chain>;
  ttl: number;
  threshold: number;
  openMs: number;
} {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('Expected runner options with an `invoker`.');
  const issues = new IssueList();
  for (const i of optionIssues(RUNNER_OPTIONS, options)) issues.add(i.path, i.message);
  // Tools and chains are checked by what made them, and by name across the list.
  const tools = new Map<string, Tool>();
  [
    ...(options.tools ?? []),
    ...(options.registry?.tools ?? []).filter((t) => !(options.tools ?? []).includes(t)),
  ].forEach((t, i) => {
    if (!isTool(t)) issues.add(`tools[${i}]`, 'Expected a tool made by defineTool().');
    else if (tools.has(t.name)) issues.add(`tools[${i}]`, `Duplicate tool name '${t.name}'.`);
    else tools.set(t.name, t);
  });
  const chains = new Map<string, Chain>();
  (options.chains ?? []).forEach((c, i) => {
    if (!isChain(c)) issues.add(`chains[${i}]`, 'Expected a chain made by defineChain().');
    else chains.set(c.name, c);
  });
  const runs = options.stores?.runs;
  if (
    runs !== undefined &&
    (typeof runs !== 'object' ||
      runs === null ||
      typeof runs.create !== 'function' ||
      typeof runs.claimExpired !== 'function')
  )
    issues.add(
      'stores.runs',
      'Expected a run store, e.g. redisStores(redis, { prefix }).runs or postgresStores(pool).runs.',
    );
  if (runs === undefined && options.retention !== undefined)
    issues.add(
      'retention',
      'Retention applies to durable runs: ' +
        'it needs `stores.runs` (memoryRunStore(), redisStores(...) or postgresStores(...)).',
    );
  if (runs === undefined && (options.recover !== undefined || options.leaseMs !== undefined))
    issues.add(
      options.recover !== undefined ? 'recover' : 'leaseMs',
      'Durable runs need `stores.runs` ' +
        '(redisStores(...) or postgresStores(...) from chainkit/redis, chainkit/postgres).',
    );
  issues.throwIfAny('runner options');
  return {
    tools,
    chains,
    ttl: options.confirmationTtlMs ?? DEFAULT_CONFIRMATION_TTL_MS,
    threshold: options.breaker?.threshold ?? 5,
    openMs: options.breaker?.openMs ?? 60_000,
  };
}

/** A logger whose failures cannot reach a run: logging is never worth a broken run. */
export function safeLogger(logger: Logger): Logger {
  const wrap =
    (level: keyof Logger) =>
    (obj: object, msg?: string): void => {
      try {
        logger[level](obj, msg);
      } catch {
        // swallowed on purpose
      }
    };
  return { debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error') };
}

/** The runner's retry table: each given rule completes the default of its category (or no waits). */
export function mergeRetryTable(overrides: Partial<Record<ErrorCategory, Partial<RetryRule>>>): RetryTable {
  const table: RetryTable = { ...DEFAULT_RETRY_TABLE };
  for (const [category, rule] of Object.entries(overrides) as [ErrorCategory, Partial<RetryRule>][]) {
    table[category] = {
      retries: 0,
      minDelayMs: 0,
      factor: 1,
      maxDelayMs: 0,
      ...DEFAULT_RETRY_TABLE[category],
      ...rule,
    };
  }
  return table;
}
