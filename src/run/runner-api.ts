// The runner's public face: what `createRunner` returns (its methods documented here, built in runner.ts).
import type { Chain, ChainOutput } from '../define/chain.js';
import type { Tool } from '../define/tool.js';
import type { InvokeResult, ResponseMetadata, RunResult } from '../observe/result.js';
import type { MetricsCollector } from '../guidance/metrics.js';
import type { ToolRegistry } from '../guidance/tiers.js';
import type { TierLevel } from '../guidance/intent.js';
import type { TimingModel } from '../guidance/timing.js';
import type { RunnerEmitter } from '../observe/events.js';
import type { ListRunsFilter, RunPage } from '../stores/run-list.js';
import type { RunInfo } from './durable.js';
import type { WatchOptions } from './watch.js';
import type { RunEvent } from '../observe/run-events.js';
import type { SignalResult } from './signal.js';
import type {
  DecideResult,
  InvokeOptions,
  ResumedOutput,
  ResumeOptions,
  RunDecision,
  RunOptionsArgs,
} from './types.js';
import type { RunWatchError } from './watch.js';
import type { Rerun, RerunRefusal } from './rerun.js';
import type { TypeText } from '../util/type-text.js';

/** What `runner.stream` hands back at once: the run's id, its events as they happen, and its result. */
export interface RunStream<O> {
  /** The run's id (`options.runId`, or a new one). */
  runId: string;
  /** The run's events from its first, ending after `run:end`; each iteration reads from the start. */
  events: AsyncIterable<RunEvent>;
  /** The run's result, typed from the chain, as `run` returns it. */
  result: Promise<RunResult<O>>;
}

/**
 * Runs chains and single tool calls with the same policies. `Chains` are the chains it was given
 * (`createRunner({ chains })`): a `resume` or `decide` without `chain` is typed by their outputs.
 */
export interface Runner<Chains extends readonly Chain[] = Chain[]> {
  /**
   * Typed events: `chain:start`, `chain:end`, `step:start`, `step:end`,
   * `step:retry`, `tool:transition`, `confirmation:requested`, `hook:error`.
   */
  readonly events: RunnerEmitter;
  /** Runs a chain. Never throws for run-time failures: the result says what happened. */
  // Typed from the chain alone (NoInfer): the input is checked against it, never widens it.
  run<I, C, O, In, CIn>(
    chain: Chain<I, C, O, In, CIn>,
    input: NoInfer<In>,
    ...options: RunOptionsArgs<NoInfer<CIn>>
  ): Promise<RunResult<O>>;
  /**
   * Not a way to call it: `run(chain, input)` of a chain that declares a context is
   * refused by this signature, with a type error naming the context and its type.
   */
  run<I, C, O, In, CIn>(
    chain: Chain<I, C, O, In, CIn>,
    input: ContextRequired<CIn>,
    ...noContext: undefined extends CIn ? [never, never] : []
  ): Promise<RunResult<O>>;
  /** Resumes a run stopped at a confirmation gate; a token resumes at most once. The output is typed from `chain`. */
  resume<Ch extends Chain | readonly Chain[]>(
    token: string,
    decision: { approved: boolean },
    options: ResumeOptions & { chain: Ch },
  ): Promise<RunResult<ResumedOutput<Ch>>>;
  /**
   * Resumes a run stopped at a confirmation gate (the chain found by name); a token resumes at most
   * once. The output is typed as one of the runner's `chains` (`unknown` when it was given none).
   */
  resume<O = OutputOfChains<Chains>>(
    token: string,
    decision: { approved: boolean },
    options?: ResumeOptions,
  ): Promise<RunResult<O>>;
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
  /**
   * Durable runs (`stores.runs`): claims the runs whose owner died (lease expired), continues each
   * from its journal and resolves with their results (at most `recover.limit`, default 100, per call).
   */
  recover(): Promise<RunResult[]>;
  /**
   * Durable runs (`stores.runs`): what the run store holds of a run, or `undefined`. With
   * `{ context }`, only a run started with that trusted context (as its chain's context schema gives
   * it), so a request can be shown its own user's runs and no other: `undefined` for the rest.
   *
   * @example
   * ```ts
   * const run = await runner.getRun(runId, { context: { userId: session.userId } });
   * if (!run) return res.writeHead(404).end();
   * ```
   */
  getRun(runId: string, options?: { context?: object }): Promise<RunInfo | undefined>;
  /**
   * The events of a run (`stores.runs`), from any instance sharing the stores: those after
   * `options.after` (a seq), in order, each once, ending after `run:end`. A reader that falls so far
   * behind that the log dropped what it had not read is cut off with a {@link RunWatchError}
   * (`fell_behind`, with `lastSeq` to resume from); a run the store does not know, `not_found`.
   * With `{ context }`, only a run started with that trusted context is watched: any other fails
   * `not_found` as an unknown run does (after the same wait), and none of its events is read.
   * `runner.close()` ends the runner's watches (without a `run:end`).
   *
   * @example
   * ```ts
   * for await (const e of runner.watch(runId, { after: lastSeen })) {
   *   lastSeen = e.seq;
   *   if (e.type === 'step:progress') console.log(e.step, e.data);
   * }
   * ```
   */
  watch(runId: string, options?: WatchOptions): AsyncIterable<RunEvent>;
  /**
   * Starts a run (`stores.runs`) and hands back at once its id, its events and its result.
   *
   * @example
   * ```ts
   * const { runId, events, result } = runner.stream(chain, input, { context });
   * for await (const e of events) send(e);
   * const r = await result; // RunResult typed from the chain
   * ```
   */
  stream<I, C, O, In, CIn>(
    chain: Chain<I, C, O, In, CIn>,
    input: NoInfer<In>,
    ...options: RunOptionsArgs<NoInfer<CIn>>
  ): RunStream<O>;
  /**
   * Not a way to call it: `stream(chain, input)` of a chain that declares a context
   * is refused by this signature, with a type error naming the context and its type.
   */
  stream<I, C, O, In, CIn>(
    chain: Chain<I, C, O, In, CIn>,
    input: ContextRequired<CIn>,
    ...noContext: undefined extends CIn ? [never, never] : []
  ): RunStream<O>;
  /**
   * Cancels a run in flight (`stores.runs`), from any instance sharing the stores: the owner's
   * running tool sees `call.signal` abort, no later step starts, completed steps with `compensate`
   * are undone, and the run ends `failed` with category `cancelled`, code `run_cancelled`. Resolves
   * once the run has ended (or after 3 s if a tool ignores its signal): `'cancelled'`; `'ended'`
   * for a run that had ended already, or that ended otherwise before the cancel took (it completed
   * first: nothing was undone); `'not_found'` for one the store does not know. A run parked at a gate
   * that this runner cannot take (no such chain here, or its confirmation expired) throws, untouched.
   * With `{ context }` (the signed-in user's), only a run started with it is cancelled: another's is
   * `'not_found'`, untouched, as {@link Runner.watch} and {@link Runner.getRun} take it.
   *
   * @example
   * ```ts
   * await runner.cancel(runId, { reason: 'the user closed the page', context: { userId } }); // 'cancelled'
   * ```
   */
  cancel(runId: string, options?: { reason?: string; context?: object }): Promise<'cancelled' | 'not_found' | 'ended'>;
  /**
   * Decides the gate of a run parked at it (`stores.runs`), by run id, for someone other than the
   * token holder (an operator): exactly once across instances, through the same atomic take as
   * `resume` (a decision racing a `resume` of the same token: one wins, the other gets
   * `already_used`). Approved, the run goes on durably as `resume` would, with the context it was
   * started with; declined, it ends `declined`. `by` is kept on the gate's trace entry
   * (`decidedBy`) and in `getRun(runId).decidedBy`.
   *
   * Resolves with the decided run's {@link RunResult} (or the refusal, e.g. `already_used`),
   * `'not_found'` for a run id the store does not know, `'not_parked'` for a run that is running or
   * has ended. Without a run store there is no record to find a run by its id: it throws a
   * `TypeError` (use `resume` with the token there).
   *
   * A run parked `in_doubt` (a plain write was in flight when its runner died or lost its lease,
   * so it may have taken effect) is decided with `{ retry, by }`, also exactly once across
   * instances: `retry: true` calls the step once more with the same idempotency key and continues
   * the run durably; `retry: false` ends it `failed`, code `outcome_unknown`, undoing the steps
   * completed before it. `by` is kept in the run's journal and `getRun(runId).decidedBy`. The form
   * must match what the run waits for: a `TypeError` otherwise.
   *
   * @example
   * ```ts
   * const r = await runner.decide(runId, { approved: true, by: 'ops:alice' });
   * // a run in doubt, after checking the payment provider: the refund did not go through
   * await runner.decide(doubtfulRunId, { retry: true, by: 'ops:alice' });
   * if (r === 'not_found' || r === 'not_parked') reply(404);
   * else if (r.status === 'completed') reply(200, r.output);
   * ```
   */
  decide<O = OutputOfChains<Chains>>(runId: string, decision: RunDecision): Promise<DecideResult<O>>;
  /**
   * Sends signal `name` with `payload` to a run parked `waiting` at a `waitFor` step (API.md §12),
   * from any instance sharing the run store. The payload is validated by the step's schema: refused,
   * it rejects with a `SignalRefused` (`invalid_input`, code `invalid_signal`, its `issues`) and the
   * run keeps waiting. Accepted, the run is taken exactly once (a signal sent twice is taken once),
   * the payload journaled as the step's result, and the run continues here: resolves with its
   * {@link RunResult}. `'not_found'` for an unknown run id; `'not_waiting'` when the run does not
   * wait for this signal (it runs, ended, waits for another, timed out, or another signal took it).
   * With `context` (a user's request), a run started with another context is `'not_found'`, its
   * payload unchecked, as for `getRun`; without it, any run may be signalled (an operator's or the
   * app's own call).
   *
   * @example
   * ```ts
   * const r = await runner.signal(runId, 'review', { ok: true }, { context: { userId: session.userId } });
   * if (r !== 'not_found' && r !== 'not_waiting' && r.status === 'completed') console.log(r.output);
   * ```
   */
  signal<O = OutputOfChains<Chains>>(
    runId: string,
    name: string,
    payload: unknown,
    options?: { context?: object },
  ): Promise<SignalResult<O>>;
  /**
   * Lists durable runs (`stores.runs`), newest first (by start time, ties by run id), from any
   * instance sharing the stores: by status (one or several), chain and start time, a page at a time
   * (pass the page's `cursor` for the next). A summary carries no input, output or token; the
   * question of a parked gate is redacted as traces are. The approvals inbox is
   * `listRuns({ status: 'awaiting_confirmation' })`. Rejects with a `TypeError` for a malformed
   * filter or cursor, or a run store without `listRuns`.
   *
   * @example
   * ```ts
   * const inbox = await runner.listRuns({ status: 'awaiting_confirmation' });
   * for (const run of inbox.runs) console.log(run.runId, run.awaiting?.step, run.awaiting?.question);
   * if (inbox.cursor) await runner.listRuns({ status: 'awaiting_confirmation', cursor: inbox.cursor });
   * ```
   */
  listRuns(filter?: ListRunsFilter): Promise<RunPage>;
  /**
   * Re-runs a failed durable run (`stores.runs`) from its first failed step: a new run, id
   * `<runId>~rerun1` (a re-run of that is `~rerun2`), with the old run's input and context, whose
   * journal starts with the old run's completed steps (not those its compensation undid), so they
   * are not called again. Resolves once the new run is recorded, with its id and its `result`;
   * exactly once: re-running the same run again answers the same new run. `'not_found'`,
   * `'not_failed'` (running, parked, completed or declined), or `'unknown_chain'` (this runner has
   * no chain of that name, or another definition of it).
   *
   * @example
   * ```ts
   * const r = await runner.rerun('order-7');
   * if (typeof r !== 'string') console.log(r.runId, (await r.result).status); // 'order-7~rerun1' 'completed'
   * ```
   */
  rerun(runId: string): Promise<Rerun | RerunRefusal>;
}

/**
 * What `run(chain, input)` gets in place of the input when the chain declares a context and none is
 * given: a message naming the context and its type, so the type error says what is missing.
 *
 * @example
 * ```ts
 * type M = ContextRequired<{ userId: string }>;
 * // 'context { userId: string } is required: run(chain, input, { context })'
 * ```
 */
type ContextRequired<CIn> = `context ${TypeText<CIn>} is required: run(chain, input, { context })`;

/**
 * The output of a run of one of `Chains` (a union), or `unknown` when they are not known by type.
 *
 * @example
 * ```ts
 * type O = OutputOfChains<[typeof findAndDelete, typeof addTask]>; // the union of their outputs
 * ```
 */
type OutputOfChains<Chains extends readonly Chain[]> =
  ChainOutput<Chains[number]> extends infer O
    ? 0 extends 1 & O
      ? unknown
      : [O] extends [never]
        ? unknown
        : O
    : unknown;
