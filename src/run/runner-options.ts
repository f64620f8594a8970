// The runner's options: what they are, how they are checked, and the small pieces built from them.
import type { Chain } from '../define/chain.js';
import { isChain } from '../define/chain.js';
import { checkMs, checkRetry, isTool, type Tool } from '../define/tool.js';
import { DEFAULT_RETRY_TABLE, ERROR_CATEGORIES, type ErrorCategory, type RetryRule, type RetryTable } from '../errors/categories.js';
import type { Classifier } from '../errors/classify.js';
import { IssueList } from '../errors/definition-error.js';
import type { FallbackRule } from '../guidance/fallback.js';
import type { ToolRegistry } from '../guidance/tiers.js';
import type { Hooks } from '../observe/events.js';
import type { RedactRule } from '../observe/redact.js';
import type { BreakerOptions } from '../policies/breaker.js';
import type { LimiterStore } from '../policies/rate-limit.js';
import type { BreakerStore, CheckpointStore, IdempotencyStore, LearningStore } from '../stores/types.js';
import type { ToolInvoker } from './pipeline.js';
import type { Logger } from './types.js';

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
  /** Where state lives; memory stores by default. */
  stores?: { checkpoints?: CheckpointStore; idempotency?: IdempotencyStore; breakers?: BreakerStore; limiter?: LimiterStore; metrics?: LearningStore };
  /** Circuit-breaker settings for every tool (default: open after 5 transient failures in a row, for 60 s). */
  breaker?: BreakerOptions;
  hooks?: Hooks;
  /** Extra redaction rule: return true to hide a key's value in traces, events and logs. */
  redact?: RedactRule;
  logger?: Logger;
  /** `'full'` keeps (redacted) inputs and outputs in traces. Default `'summary'`. */
  traceDetail?: 'summary' | 'full';
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

/** The checked options: known tools and chains by name, and the resolved numbers. Throws `DefinitionError` listing every problem. */
export function checkRunnerOptions(options: RunnerOptions): { tools: Map<string, Tool>; chains: Map<string, Chain>; ttl: number; threshold: number; openMs: number } {
const issues = new IssueList();
if (typeof options !== 'object' || options === null) throw new TypeError('Expected runner options with an `invoker`.');
if (typeof options.invoker !== 'function') issues.add('invoker', 'Expected `invoker` to be a function (call: ToolCall) => Promise<unknown>, e.g. functionInvoker({...}).');
const ttl = options.confirmationTtlMs ?? DEFAULT_CONFIRMATION_TTL_MS;
checkMs(ttl, 'confirmationTtlMs', 'confirmationTtlMs', issues);
if (options.traceDetail !== undefined && options.traceDetail !== 'summary' && options.traceDetail !== 'full') issues.add('traceDetail', "Expected `traceDetail` to be 'summary' or 'full'.");
for (const k of ['random', 'now', 'redact'] as const) {
  if (options[k] !== undefined && typeof options[k] !== 'function') issues.add(k, `Expected \`${k}\` to be a function.`);
}
const threshold = options.breaker?.threshold ?? 5;
const openMs = options.breaker?.openMs ?? 60_000;
if (!(Number.isSafeInteger(threshold) && threshold > 0)) issues.add('breaker.threshold', 'Expected `threshold` to be a positive integer.');
checkMs(openMs, 'breaker.openMs', 'openMs', issues);
if (options.retry !== undefined) {
  if (typeof options.retry !== 'object' || options.retry === null) issues.add('retry', 'Expected `retry` to be a table { [category]: { retries, minDelayMs, factor, maxDelayMs } }.');
  else for (const [category, rule] of Object.entries(options.retry)) {
    if (!ERROR_CATEGORIES.includes(category as ErrorCategory)) issues.add(`retry.${category}`, `Unknown error category '${category}'.`);
    else checkRetry(rule, `retry.${category}`, issues);
  }
}
if (options.secret !== undefined && (typeof options.secret !== 'string' || options.secret.length < 16)) issues.add('secret', 'Expected `secret` to be a string of at least 16 characters.');
const tools = new Map<string, Tool>();
[...(options.tools ?? []), ...(options.registry?.tools ?? []).filter((t) => !(options.tools ?? []).includes(t))].forEach((t, i) => {
  if (!isTool(t)) issues.add(`tools[${i}]`, 'Expected a tool made by defineTool().');
  else if (tools.has(t.name)) issues.add(`tools[${i}]`, `Duplicate tool name '${t.name}'.`);
  else tools.set(t.name, t);
});
const chains = new Map<string, Chain>();
(options.chains ?? []).forEach((c, i) => {
  if (!isChain(c)) issues.add(`chains[${i}]`, 'Expected a chain made by defineChain().');
  else chains.set(c.name, c);
});
issues.throwIfAny('runner options');
  return { tools, chains, ttl, threshold, openMs };
}

/** A logger whose failures cannot reach a run: logging is never worth a broken run. */
export function safeLogger(logger: Logger): Logger {
  const wrap = (level: keyof Logger) => (obj: object, msg?: string): void => {
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
    table[category] = { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0, ...DEFAULT_RETRY_TABLE[category], ...rule };
  }
  return table;
}
