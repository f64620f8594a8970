// What a runner is made of, built once from its options: the call pipeline (the policies around
// the invoker), the recorder, the gates' stores, and what guidance learns.
import type { Chain } from '../define/chain.js';
import type { Tool } from '../define/tool.js';
import { DEFAULT_RETRY_TABLE, type RetryRule, type RetryTable } from '../errors/categories.js';
import { DEFAULT_CLASSIFIERS } from '../errors/classify.js';
import { type Classified, type Classifier } from '../errors/failure.js';
import { FallbackAdvisor } from '../guidance/fallback.js';
import { MetricsCollector } from '../guidance/metrics.js';
import { LearningSync } from '../guidance/persist.js';
import type { GuidanceSources } from '../guidance/suggest.js';
import { TimingModel } from '../guidance/timing.js';
import { createEmitter, type RunnerEmitter } from '../observe/events.js';
import type { Logger } from '../observe/logger.js';
import { TransitionTracker } from '../observe/transitions.js';
import { breakerPolicy } from '../policies/breaker.js';
import { idempotencyPolicy } from '../policies/idempotency.js';
import { rateLimitPolicy } from '../policies/rate-limit.js';
import { resolveRetryTable, retryPolicy } from '../policies/retry.js';
import { timeoutPolicy } from '../policies/timeout.js';
import type { Call, CallContext } from '../policies/types.js';
import { memoryBreakerStore, memoryCheckpointStore, memoryIdempotencyStore } from '../stores/memory.js';
import type { BreakerStore } from '../stores/types.js';
import { toHex } from '../util/sha256.js';
import type { Calls } from './call-context.js';
import type { DirectCallParts } from './direct-call.js';
import { compose, invokeTool } from './pipeline.js';
import { Recorder } from './recorder.js';
import { checkRunnerOptions, mergeRetryTable, safeLogger, type RunnerOptions } from './runner-options.js';
import type { ExecutorParts, Gates } from './step-host.js';

/** Everything a runner holds; each part of the run gets the narrow view it needs (ExecutorParts, DirectCallParts). */
export interface RunnerParts extends ExecutorParts, DirectCallParts {
  readonly options: RunnerOptions;
  /** Known chains by name, for resume (the latest definition run under a name wins). */
  readonly chains: Map<string, Chain>;
  readonly events: RunnerEmitter;
  readonly logger: Logger | undefined;
  readonly metrics: MetricsCollector;
  readonly timing: TimingModel;
  readonly breakers: BreakerStore;
  readonly learning: LearningSync | undefined;
  /** Releases the rate limiter's timers and store. */
  closeRateLimits(): unknown;
}

/**
 * Checks the options (a `DefinitionError` lists every problem) and builds a runner's parts.
 *
 * @example
 * ```ts
 * const parts = runnerParts({ invoker, tools });
 * const result = await execute(parts, execution);
 * ```
 */
export function runnerParts(options: RunnerOptions): RunnerParts {
  const { tools, chains, ttl, threshold, openMs } = checkRunnerOptions(options);
  const now = options.now ?? Date.now;
  const classifiers: readonly Classifier[] = options.classifiers
    ? [...options.classifiers, ...DEFAULT_CLASSIFIERS]
    : DEFAULT_CLASSIFIERS;
  const retryTable: Readonly<RetryTable> = options.retry ? mergeRetryTable(options.retry) : DEFAULT_RETRY_TABLE;
  const events = createEmitter(options.hooks);
  const logger = options.logger && safeLogger(options.logger);
  const metrics = new MetricsCollector();
  const timing = new TimingModel(tools);
  const advisor = new FallbackAdvisor(options.fallbacks ?? []);
  const breakers = options.stores?.breakers ?? memoryBreakerStore();
  const learning = options.stores?.metrics
    ? new LearningSync(options.stores.metrics, metrics, timing, (error) =>
        logger?.warn({ error: error instanceof Error ? error.message : String(error) }, 'learning store unavailable'),
      )
    : undefined;
  const guidance: GuidanceSources = { tools, chains, metrics, timing };
  // Late-bound: the recorder is made after the pipeline, and both are called only once the runner exists.
  const { call, closeRateLimits } = callPipeline(options, {
    now,
    classifiers,
    events,
    logger,
    breakers,
    threshold,
    openMs,
    recorder: () => recorder,
  });

  const retryCache = new WeakMap<object, Map<unknown, Readonly<RetryTable>>>();
  const calls: Calls = {
    call,
    now,
    retryTable,
    retryFor(tool: Tool, stepRetry?: Partial<RetryRule> | false) {
      let perTool = retryCache.get(tool);
      if (!perTool) retryCache.set(tool, (perTool = new Map()));
      let table = perTool.get(stepRetry);
      if (!table) perTool.set(stepRetry, (table = resolveRetryTable(retryTable, tool.retry, stepRetry)));
      return table;
    },
    classifiers,
    redact: options.redact,
    guidance,
    active: new Set(),
  };
  const recorder = new Recorder({
    events,
    logger,
    traceDetail: options.traceDetail ?? 'summary',
    redact: options.redact,
    traceIdentity: options.traceIdentity,
    learners: { metrics, timing, advisor, learning, logger },
    transitions: new TransitionTracker(),
    guidance,
  });
  const gates: Gates = {
    checkpoints: options.stores?.checkpoints ?? memoryCheckpointStore({ now }),
    secret: options.secret ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
    confirmationTtlMs: ttl,
  };
  return {
    options,
    calls,
    recorder,
    gates,
    tools,
    chains,
    registry: options.registry,
    events,
    logger,
    metrics,
    timing,
    breakers,
    learning,
    closeRateLimits,
  };
}

interface PipelineParts {
  now: () => number;
  classifiers: readonly Classifier[];
  events: RunnerEmitter;
  logger: Logger | undefined;
  breakers: BreakerStore;
  threshold: number;
  openMs: number;
  recorder: () => Recorder;
}

/**
 * The call pipeline (docs/guides/policies.md): idempotency → retry
 * → [per attempt: breaker → rate limit → timeout] → invoker.
 */
function callPipeline(
  options: RunnerOptions,
  { now, classifiers, events, logger, breakers, threshold, openMs, recorder }: PipelineParts,
): { call: Call; closeRateLimits: () => unknown } {
  const onRetry = (ctx: CallContext, failure: Classified, delayMs: number): void =>
    recorder().stepRetried(ctx, failure, delayMs);
  const onBreakerChange = (tool: string, change: 'opened' | 'closed', ctx: CallContext): void =>
    recorder().breakerChanged(tool, change, ctx, now());
  const rateLimits = rateLimitPolicy({
    now,
    ...(options.stores?.limiter && { store: options.stores.limiter }),
    onWait: (ctx) =>
      logger?.warn(
        { runId: ctx.runId, traceId: ctx.traceId, chain: ctx.chain, step: ctx.step, tool: ctx.tool.name },
        `waiting for a ${ctx.tool.name} rate-limit slot`,
      ),
  });
  const call = compose(
    [
      idempotencyPolicy(options.stores?.idempotency ?? memoryIdempotencyStore({ now }), now, options.redact),
      retryPolicy({
        random: options.random ?? Math.random,
        now,
        classifiers,
        onRetry,
        onWait: (ctx, delayMs) => recorder().retryWait?.(ctx.runId, delayMs),
      }),
      breakerPolicy({ store: breakers, now, threshold, openMs, classifiers, onChange: onBreakerChange }),
      rateLimits.policy,
      timeoutPolicy(now),
    ],
    invokeTool(options.invoker, classifiers, options.hooks?.wrapInvoke, (ctx) =>
      recorder().progressOf(ctx.runId, ctx.step),
    ),
  );
  return { call, closeRateLimits: () => rateLimits.close() };
}
