// The runner: holds the invoker, policies and stores, and runs, resumes and invokes.
import { toHex } from './sha256.js';
import { newId } from './ids.js';
import type { Chain } from '../define/chain.js';
import { isChain } from '../define/chain.js';
import type { Tool } from '../define/tool.js';
import { DEFAULT_RETRY_TABLE, type ChainErrorInfo, type RetryRule, type RetryTable } from '../errors/categories.js';
import { DEFAULT_CLASSIFIERS, RunAbortReason, type Classified, type Classifier } from '../errors/classify.js';
import { toErrorInfo } from '../errors/messages.js';
import { FallbackAdvisor } from '../guidance/fallback.js';
import { buildMetadata, type ResponseMetadata } from '../guidance/metadata.js';
import { MetricsCollector } from '../guidance/metrics.js';
import { nextTools, relevantChains } from '../guidance/suggest.js';
import type { TierLevel, ToolRegistry } from '../guidance/tiers.js';
import { TimingModel } from '../guidance/timing.js';
import { createEmitter, listening, safeEmit, type RunnerEmitter } from '../observe/events.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { Trace, TraceStep } from '../observe/trace.js';
import { TransitionTracker } from '../observe/transitions.js';
import { resolveRetryTable, retryPolicy } from '../policies/retry.js';
import { timeoutPolicy } from '../policies/timeout.js';
import { breakerPolicy } from '../policies/breaker.js';
import { idempotencyPolicy } from '../policies/idempotency.js';
import { rateLimitPolicy } from '../policies/rate-limit.js';
import { memoryBreakerStore, memoryCheckpointStore, memoryIdempotencyStore } from '../stores/memory.js';
import { callStore } from '../stores/guard.js';
import type { Checkpoint, TakeResult } from '../stores/types.js';
import { LearningSync } from '../guidance/persist.js';
import { hashContext, verifyToken } from './checkpoint.js';
import { execute, type Execution } from './executor.js';
import { invokeOne } from './invoke.js';
import { compose, invokeTool, schemaFailure, type CallContext } from './pipeline.js';
import type { Core, InvokeOptions, InvokeResult, ResumedOutput, ResumeOptions, RunOptions, RunOptionsArgs, RunResult } from './types.js';
import { parseSchema } from '../define/schema.js';
import { checkRunnerOptions, mergeRetryTable, safeLogger, type RunnerOptions } from './runner-options.js';

export type { RunnerOptions } from './runner-options.js';

/** Nothing done before: shared by every fresh run (a new empty array each would be kept per run in flight). */
const NONE: readonly never[] = Object.freeze([]);


/** Runs chains and single tool calls with the same policies. */
export interface Runner {
  /** Typed events: `chain:start`, `chain:end`, `step:start`, `step:end`, `step:retry`, `tool:transition`, `confirmation:requested`, `hook:error`. */
  readonly events: RunnerEmitter;
  /** Runs a chain. Never throws for run-time failures: the result says what happened. */
  // Typed from the chain alone (NoInfer): the input is checked against it, never widens it.
  run<I, C, O, In, CIn>(chain: Chain<I, C, O, In, CIn>, input: NoInfer<In>, ...options: RunOptionsArgs<NoInfer<CIn>>): Promise<RunResult<O>>;
  /** Resumes a run stopped at a confirmation gate; a token resumes at most once. The output is typed from `chain`. */
  resume<Ch extends Chain | readonly Chain[]>(token: string, decision: { approved: boolean }, options: ResumeOptions & { chain: Ch }): Promise<RunResult<ResumedOutput<Ch>>>;
  /** Resumes a run stopped at a confirmation gate (the chain found by name); a token resumes at most once. */
  resume<O = unknown>(token: string, decision: { approved: boolean }, options?: ResumeOptions): Promise<RunResult<O>>;
  /** Calls one tool by name through the same pipeline as a chain step. */
  invoke<O = unknown>(tool: string, input: unknown, options?: InvokeOptions): Promise<InvokeResult<O>>;
  /** Aborts runs in flight, writes what was learned, and releases timers, listeners and stores. */
  close(): Promise<void>;
  /** Same as `close()`, so `await using runner = createRunner(...)` closes the runner when the block ends. */
  [Symbol.asyncDispose](): Promise<void>;
  /** Settles when learning data from `stores.learning` is loaded (at once without one). */
  readonly ready: Promise<void>;
  /** What the runner learned about which tool follows which, and call counters. */
  readonly metrics: MetricsCollector;
  /** What the runner learned about durations: `estimate`, `export`, `import`. */
  readonly timing: TimingModel;
  /** Next tools after `tool`, and chains that fit the session (and `goal`). */
  suggest(tool: string, options?: { sessionId?: string; goal?: string }): ResponseMetadata['suggestions'];
  /** The tools of a tier that can be offered right now: those whose circuit breaker is not open. */
  toolsFor(registry: ToolRegistry, level: TierLevel): Promise<Tool[]>;
}

/** How long a checkpoint store may take to answer. */
const STORE_WAIT_MS = 10_000;
/** How long `close()` waits for each store to flush and release. */
const CLOSE_WAIT_MS = 5_000;

/**
 * Creates a runner.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker: functionInvoker({ get_weather: async ({ city }) => ({ celsius: 21 }) }), tools: [getWeather] });
 * const result = await runner.run(chain, { city: 'Oslo' }, { context: { userId } });
 * if (result.status === 'completed') console.log(result.output);
 * await runner.close();
 * ```
 */
export function createRunner(options: RunnerOptions): Runner {
  const { tools, chains, ttl, threshold, openMs } = checkRunnerOptions(options);

  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const classifiers: readonly Classifier[] = options.classifiers ? [...options.classifiers, ...DEFAULT_CLASSIFIERS] : DEFAULT_CLASSIFIERS;
  const retryTable: Readonly<RetryTable> = options.retry ? mergeRetryTable(options.retry) : DEFAULT_RETRY_TABLE;
  const events = createEmitter(options.hooks);
  const logger = options.logger && safeLogger(options.logger);
  const retryCache = new WeakMap<object, Map<unknown, Readonly<RetryTable>>>();
  const metrics = new MetricsCollector();
  const timing = new TimingModel(tools);
  const advisor = new FallbackAdvisor(options.fallbacks ?? []);
  const breakers = options.stores?.breakers ?? memoryBreakerStore();
  const learning = options.stores?.metrics
    ? new LearningSync(options.stores.metrics, metrics, timing, (error) => logger?.warn({ error: error instanceof Error ? error.message : String(error) }, 'learning store unavailable'))
    : undefined;

  const onRetry = (ctx: CallContext, failure: Classified, delayMs: number): void => {
    if (listening(events, 'step:retry')) {
      safeEmit(events, 'step:retry', {
        runId: ctx.runId, traceId: ctx.traceId, ...(ctx.chain && { chain: ctx.chain }), ...(ctx.step && { step: ctx.step }),
        tool: ctx.tool.name, attempt: ctx.attempt, delayMs, category: failure.category, code: failure.code,
        message: secretMask(options.redact, ctx.input, ctx.context).text(failure.message), // API.md §6
      });
    }
    logger?.warn({ runId: ctx.runId, traceId: ctx.traceId, chain: ctx.chain, step: ctx.step, tool: ctx.tool.name, attempt: ctx.attempt, delayMs, category: failure.category, code: failure.code }, `retrying ${ctx.tool.name} after ${failure.category} in ${delayMs} ms`);
  };

  const onBreakerChange = (tool: string, change: 'opened' | 'closed', ctx: CallContext): void => {
    const state = change === 'opened' ? 'open' : 'closed';
    if (listening(events, 'breaker:change')) safeEmit(events, 'breaker:change', { tool, state, at: now() });
    logger?.warn({ runId: ctx.runId, traceId: ctx.traceId, chain: ctx.chain, step: ctx.step, tool, breaker: state }, `circuit breaker of ${tool} ${change}`);
  };

  const rateLimits = rateLimitPolicy({
    now,
    ...(options.stores?.limiter && { store: options.stores.limiter }),
    onWait: (ctx) => logger?.warn({ runId: ctx.runId, traceId: ctx.traceId, chain: ctx.chain, step: ctx.step, tool: ctx.tool.name }, `waiting for a ${ctx.tool.name} rate-limit slot`),
  });
  // The call pipeline of API.md §6: idempotency → retry → [per attempt: breaker → rate limit → timeout] → invoker.
  const call = compose(
    [
      idempotencyPolicy(options.stores?.idempotency ?? memoryIdempotencyStore({ now }), now),
      retryPolicy({ random, now, classifiers, onRetry }),
      breakerPolicy({ store: breakers, now, threshold, openMs, classifiers, onChange: onBreakerChange }),
      rateLimits.policy,
      timeoutPolicy(now),
    ],
    invokeTool(options.invoker, classifiers, options.hooks?.wrapInvoke),
  );

  const core: Core = {
    call,
    events,
    now,
    retryTable,
    retryFor(tool: Tool, stepRetry?: Partial<RetryRule> | false) {
      let perTool = retryCache.get(tool);
      if (!perTool) retryCache.set(tool, (perTool = new Map()));
      let table = perTool.get(stepRetry);
      if (!table) perTool.set(stepRetry, (table = resolveRetryTable(retryTable, tool.retry, stepRetry)));
      return table;
    },
    traceDetail: options.traceDetail ?? 'summary',
    ...(options.redact && { redact: options.redact }),
    ...(logger && { logger }),
    checkpoints: options.stores?.checkpoints ?? memoryCheckpointStore({ now }),
    secret: options.secret ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
    confirmationTtlMs: ttl,
    transitions: new TransitionTracker(),
    classifiers,
    tools,
    metrics,
    timing,
    advisor,
    guidance: { tools, chains, metrics, timing },
    ...(options.registry && { registry: options.registry }),
    ...(learning && { learning }),
    active: new Set(),
  };
  let closed = false;

  const closedError = (): Error => new Error('This runner is closed; create a new one with createRunner().');
  const assertOpen = (): void => {
    if (closed) throw closedError();
  };

  /** A result decided before any step ran (bad input, bad token, declined). */
  const settled = <O>(chain: string, runId: string, traceId: string, body: Record<string, unknown>, priorTrace: readonly TraceStep[] = [], startedAt = now(), sessionId?: string, chainDef?: Chain): RunResult<O> => {
    const ended = now();
    const trace: Trace = {
      traceId, runId, chain, ...(sessionId !== undefined && { sessionId }),
      startedAt: new Date(startedAt).toISOString(), endedAt: new Date(ended).toISOString(),
      totalLatencyMs: ended - startedAt, status: body.status as Trace['status'], steps: [...priorTrace],
    };
    const metadata = buildMetadata(core.guidance, { ...(chainDef && { chain: chainDef }), actualDurationMs: 0, sessionTools: sessionId ? core.transitions.recent(sessionId) : [], advice: [] });
    const result = { ...body, runId, chain, trace, metadata } as RunResult<O>;
    if (listening(events, 'chain:end')) {
      safeEmit(events, 'chain:end', {
        runId, traceId, chain, ...(sessionId !== undefined && { sessionId }), status: trace.status, durationMs: trace.totalLatencyMs,
        ...(result.status === 'failed' && { error: result.error }), trace,
      });
    }
    return result;
  };
  const failure = (category: ChainErrorInfo['category'], code: string, message: string, userMessage?: string): { status: 'failed'; error: ChainErrorInfo; completed: Record<string, unknown>; compensated: string[] } => ({
    status: 'failed',
    // Early failures quote outside text (a getter's error, a store's answer): masked by key pattern.
    error: maskError(toErrorInfo({ category, code, message }, userMessage ? { userMessage } : {}, retryTable), secretMask(options.redact)),
    completed: {},
    compensated: [],
  });

  /** How long a resume may wait for the checkpoint store before its chain is known. */
  const resumeBudget = (given: ResumeOptions['chain']): number => {
    if (given !== undefined && !Array.isArray(given)) return (given as Chain).timeoutMs;
    let longest = 0;
    for (const c of Array.isArray(given) ? (given as readonly Chain[]) : chains.values()) longest = Math.max(longest, c.timeoutMs);
    return longest > 0 ? longest : STORE_WAIT_MS;
  };

  const validateContext = (chain: Chain, context: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } => {
    if (!chain.context) return { ok: true, value: (context ?? {}) as Record<string, unknown> };
    const parsed = parseSchema(chain.context, context ?? {});
    if (parsed.success) return { ok: true, value: parsed.data as Record<string, unknown> };
    return { ok: false, message: schemaFailure('invalid_context', `The context does not match chain ${chain.name}'s context schema`, parsed.error.issues).message };
  };

  /** `run` once the chain is known; throws only on input or options that cannot be read. */
  const start = <I, C, O>(chain: Chain<I, C, O>, input: I, opts: RunOptions<C>): Promise<RunResult<O>> => {
    chains.set(chain.name, chain); // one definition per name: the latest run wins for resume
    const runId = opts.runId ?? newId();
    const traceId = newId();
    const parsed = parseSchema(chain.input, input);
    if (!parsed.success) {
      const f = schemaFailure('invalid_input', `The input does not match chain ${chain.name}'s input schema`, parsed.error.issues, 'invalid_input');
      const body = failure('invalid_input', 'invalid_input', f.message);
      (body.error as ChainErrorInfo & { issues?: unknown }).issues = parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message }));
      return Promise.resolve(settled<O>(chain.name, runId, traceId, body, [], now(), opts.sessionId, chain));
    }
    const context = validateContext(chain, opts.context);
    if (!context.ok) {
      return Promise.resolve(settled<O>(chain.name, runId, traceId, failure('invalid_input', 'invalid_context', context.message, 'Your session could not be verified. Please sign in again.'), [], now(), opts.sessionId, chain));
    }
    const x: Execution = {
      // Step ids come from definitions but are looked up by name: results keep no prototype.
      chain, runId, traceId, input: parsed.data, context: context.value, results: Object.create(null) as Record<string, unknown>, done: NONE, priorTrace: NONE,
      startedAt: now(), resumed: false,
      ...(opts.sessionId !== undefined && { sessionId: opts.sessionId }),
      ...(opts.confirm && { confirm: opts.confirm }),
      ...(opts.signal && { signal: opts.signal }),
    };
    return execute<O>(core, x);
  };

  const runner: Runner = {
    events,

    // Not async: an async wrapper would stay suspended for the whole run, for every run in flight.
    run<O>(chain: Chain<any, any, O>, input: unknown, opts: RunOptions<any> = {}): Promise<RunResult<O>> {
      if (closed) return Promise.reject(closedError());
      let known: boolean;
      try {
        known = isChain(chain);
      } catch {
        known = false; // a Proxy whose traps throw is no chain either
      }
      if (!known) return Promise.reject(new TypeError('Expected a chain made by defineChain().'));
      try {
        return start(chain, input, opts);
      } catch (error) {
        // A throwing getter or a hostile Proxy in the input or options: a result, never a throw.
        const message = `The input or options of chain ${chain.name} could not be read: ${error instanceof Error ? error.message : String(error)}`;
        return Promise.resolve(settled<O>(chain.name, newId(), newId(), failure('invalid_input', 'unreadable_input', message), [], now(), undefined, chain));
      }
    },

    async resume<O = unknown>(token: string, decision: { approved: boolean }, opts: ResumeOptions = {}): Promise<RunResult<O>> {
      assertOpen();
      if (typeof decision?.approved !== 'boolean') throw new TypeError('Expected a decision { approved: boolean }.');
      const traceId = newId();
      const resumeStart = now();
      // The resumed segment's deadline counts from here, store reads included. Until the checkpoint
      // names its chain, the reads are bounded by the chain given (or the longest known one).
      let waitUntil = resumeStart + Math.min(STORE_WAIT_MS, resumeBudget(opts.chain));
      const refuse = (code: string, message: string, cp?: { chain: string; runId: string; sessionId?: string }): RunResult<O> =>
        settled<O>(cp?.chain ?? '', cp?.runId ?? '', traceId, failure('confirmation', code, message), [], now(), cp?.sessionId);

      const verified = verifyToken(token, core.secret, now());
      if ('problem' in verified) {
        return refuse(verified.problem, verified.problem === 'expired' ? 'The resume token has expired.' : 'The resume token is not valid (tampered, truncated or from another deployment).');
      }
      // Check the request against the checkpoint first, then take it atomically: a refused request
      // never touches it, so it cannot get in the way of the rightful resume.
      const read = async (op: 'peek' | 'take'): Promise<Checkpoint | RunResult<O>> => {
        let found: TakeResult;
        try {
          found = await callStore(() => core.checkpoints[op](verified.id), waitUntil, now, 'checkpoint');
        } catch (error) {
          return settled<O>('', '', traceId, failure('unavailable', 'store_unavailable', error instanceof Error ? error.message : String(error)));
        }
        if (found.status === 'used') return refuse('already_used', 'This resume token has already been used.');
        if (found.status === 'missing') return refuse('invalid_token', 'No checkpoint exists for this resume token.');
        return found.checkpoint;
      };
      const peeked = await read('peek');
      if ('status' in peeked) return peeked;
      const given = opts.chain;
      const chain: Chain | undefined = Array.isArray(given)
        ? ((given as readonly Chain[]).find((c) => c.name === peeked.chain) ?? chains.get(peeked.chain))
        : ((given as Chain | undefined) ?? chains.get(peeked.chain));
      if (!chain || chain.name !== peeked.chain) return refuse('unknown_chain', `This runner has no chain named '${peeked.chain}'; pass it in \`chains\` or \`resume(..., { chain })\`.`, peeked);
      waitUntil = resumeStart + chain.timeoutMs;
      if (chain.fingerprint !== peeked.fingerprint) return refuse('chain_changed', `Chain ${peeked.chain} changed since the token was issued; start the action again.`, peeked);
      const context = validateContext(chain, opts.context);
      if (!context.ok || hashContext(context.value) !== peeked.contextHash) return refuse('context_mismatch', 'The resume was attempted with a different trusted context than the original run.', peeked);
      const cp = await read('take');
      if ('status' in cp) return cp;
      if (!decision.approved) {
        const declinedStep: TraceStep = { stepNumber: chain.plan.findIndex((p) => p.id === cp.gate) + 1, id: cp.gate, status: 'declined', attempts: 0, latencyMs: 0, startedAt: new Date(now()).toISOString() };
        const tool = chain.plan.find((p) => p.id === cp.gate)?.tool;
        if (tool) declinedStep.tool = tool.name;
        return settled<O>(chain.name, cp.runId, cp.traceId, { status: 'declined', step: cp.gate }, [...cp.trace, declinedStep], cp.startedAt, cp.sessionId, chain);
      }
      return execute<O>(core, {
        chain, runId: cp.runId, traceId: cp.traceId, input: cp.input, context: context.value,
        results: Object.assign(Object.create(null) as Record<string, unknown>, cp.results),
        done: cp.done, priorTrace: cp.trace, startedAt: cp.startedAt, approvedGate: cp.gate, resumed: true, segmentStart: resumeStart,
        ...(cp.sessionId !== undefined && { sessionId: cp.sessionId }),
        ...(opts.signal && { signal: opts.signal }),
      });
    },

    invoke<O = unknown>(name: string, input: unknown, opts: InvokeOptions = {}): Promise<InvokeResult<O>> {
      assertOpen();
      return invokeOne<O>(core, name, input, opts);
    },

    metrics,
    timing,
    ready: learning ? learning.ready : Promise.resolve(),

    suggest(tool, { sessionId, goal } = {}) {
      return { nextTools: nextTools(core.guidance, tool), relevantChains: relevantChains(core.guidance, sessionId ? core.transitions.recent(sessionId) : [], goal) };
    },

    async toolsFor(registry, level) {
      const offered = registry.forComplexity(level);
      const open = await Promise.all(offered.map((t) => breakers.isOpen(t.name, now())));
      return offered.filter((_, i) => !open[i]);
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      const reason = new RunAbortReason('closed', 'The runner was closed.');
      for (const c of core.active) c.abort(reason);
      core.active.clear();
      core.transitions.clear();
      // Each release is bounded: a hung store (Redis not answering) must not hang close().
      const release = async (what: string, fn: () => unknown): Promise<void> => {
        try {
          await callStore(fn, now() + CLOSE_WAIT_MS, now, what);
        } catch (error) {
          logger?.warn({ err: error, store: what }, `close(): the ${what} store did not finish in time`);
        }
      };
      await release('rate-limit', () => rateLimits.close());
      if (learning) await release('learning', () => learning.ready.then(() => learning.flush()));
      if (options.stores?.metrics?.close) await release('learning', () => options.stores!.metrics!.close!());
      if (core.checkpoints.close) await release('checkpoint', () => core.checkpoints.close!());
      events.removeAllListeners();
    },

    [Symbol.asyncDispose](): Promise<void> {
      return runner.close();
    },
  };
  return runner;
}
