// What runs, direct calls and undos leave behind, recorded in one place: trace entries and traces,
// the run's events, its log lines, and what each call teaches. Every event payload is built only
// when someone listens.
import { learn, type CallLesson, type Learners } from '../guidance/learn.js';
import { buildMetadata, type MetadataInput } from '../guidance/metadata.js';
import type { GuidanceSources } from '../guidance/suggest.js';
import { listening, safeEmit, type RunnerEmitter } from '../observe/events.js';
import type { Logger } from '../observe/logger.js';
import { secretMask } from '../observe/redact.js';
import { redact, type RedactRule } from '../util/redact.js';
import type { ResponseMetadata, RunResult } from '../observe/result.js';
import { IDENTITY_KEY, type ToolTransition, type TraceStep } from '../observe/trace.js';
import type { TransitionTracker } from '../observe/transitions.js';
import type { Classified } from '../errors/failure.js';
import type { CallContext } from '../policies/types.js';
import type { StoredRun } from '../stores/run-store.js';
import { journaledSteps } from './journal.js';
import type { RunEventHub } from './events-log.js';
import type { RecordSite } from './trace-entry.js';
import { logFields } from './run-log.js';

const IGNORE_PROGRESS = (): void => undefined;

/** What a {@link Recorder} records to. */
export interface RecorderOptions {
  events: RunnerEmitter;
  logger: Logger | undefined;
  /** `'full'` keeps (redacted) inputs and outputs in traces. */
  traceDetail: 'summary' | 'full';
  redact: RedactRule | undefined;
  /** Keep identity fields (user ids, emails) in traces' inputs and outputs; hidden by default. */
  traceIdentity?: boolean | undefined;
  learners: Learners;
  /** Which tool followed which, per session. */
  transitions: TransitionTracker;
  /** For result metadata. */
  guidance: GuidanceSources;
}

/** Records what runs, direct calls and undos do: events, logs, learning, metadata. One per runner. */
export class Recorder {
  readonly events: RunnerEmitter;
  readonly logger: Logger | undefined;
  readonly traceDetail: 'summary' | 'full';
  readonly redact: RedactRule | undefined;
  readonly transitions: TransitionTracker;
  readonly learners: Learners;
  readonly guidance: GuidanceSources;
  /** What traces and step logs hide: the `redact` rule, and identity keys unless opted in. */
  private readonly traceRule: RedactRule | undefined;
  /** The run events' way to the run store (`stores.runs.events`); absent, no run records events. */
  runEvents: RunEventHub | undefined = undefined;

  constructor(options: RecorderOptions) {
    this.events = options.events;
    this.logger = options.logger;
    this.traceDetail = options.traceDetail;
    this.redact = options.redact;
    const rule = options.redact;
    this.traceRule = options.traceIdentity
      ? rule
      : (key, value) => IDENTITY_KEY.test(key) || (rule !== undefined && rule(key, value));
    this.transitions = options.transitions;
    this.learners = options.learners;
    this.guidance = options.guidance;
  }

  /** The transition from the session's previous call to this one, recorded for the session. */
  transition(
    sessionId: string,
    tool: string,
    started: number,
    ended: number,
    success: boolean,
  ): ToolTransition | undefined {
    return this.transitions.record(sessionId, tool, started, ended, success);
  }

  /** The tools a session used lately, for chain suggestions. */
  sessionTools(sessionId: string): readonly string[] {
    return this.transitions.recent(sessionId);
  }

  /** Fallback advice for what `session` should do after `tool`. */
  advice(session: string, tool: string): string[] {
    return this.learners.advisor.advice(session, tool);
  }

  /** Forgets a session that is over (a run or call without a session id is its own). */
  forget(session: string): void {
    this.learners.advisor.forget(session);
  }

  /** The `metadata` of a result. */
  metadata(input: MetadataInput): ResponseMetadata {
    return buildMetadata(this.guidance, input);
  }

  /** A copy of `value` for a full trace or a log line: secret-named keys hidden, and identity keys unless opted in. */
  redacted(value: unknown): unknown {
    return redact(value, this.traceRule);
  }

  /** `chain:start` and the log line of a run (or a resumed one) starting. */
  chainStarted(site: RecordSite, resumed: boolean): void {
    if (listening(this.events, 'chain:start')) {
      safeEmit(this.events, 'chain:start', {
        runId: site.runId,
        traceId: site.traceId,
        chain: site.chain!,
        ...(site.sessionId !== undefined && { sessionId: site.sessionId }),
        resumed,
      });
    }
    this.logger?.info(logFields(site, { resumed }), `chain ${site.chain} ${resumed ? 'resumed' : 'started'}`);
    this.runEvents?.writers.get(site.runId)?.push('run:start', undefined, { chain: site.chain!, resumed });
  }

  /** `chain:end` of a run's result (already masked). */
  chainEnded(site: RecordSite, result: RunResult): void {
    if (!listening(this.events, 'chain:end')) return;
    const trace = result.trace;
    safeEmit(this.events, 'chain:end', {
      runId: site.runId,
      traceId: site.traceId,
      chain: site.chain!,
      ...(site.sessionId !== undefined && { sessionId: site.sessionId }),
      status: result.status,
      durationMs: trace.totalLatencyMs,
      ...(result.status === 'failed' && { error: result.error }),
      trace,
    });
  }

  /** `step:start` of a step or a direct call (no `chain` for one). */
  stepStarted(site: RecordSite, step: string, tool: string | undefined, stepNumber: number): void {
    this.runEvents?.writers
      .get(site.runId)
      ?.push('step:start', step, tool === undefined ? { stepNumber } : { tool, stepNumber });
    if (!listening(this.events, 'step:start')) return;
    const { runId, traceId, chain } = site;
    safeEmit(
      this.events,
      'step:start',
      chain === undefined
        ? { runId, traceId, step, ...(tool && { tool }), stepNumber }
        : tool
          ? { runId, traceId, chain, step, tool, stepNumber }
          : { runId, traceId, chain, step, stepNumber },
    );
  }

  /** `step:end` of a step, a direct call or an undo, from its finished trace entry. */
  stepEnded(site: RecordSite, entry: TraceStep): void {
    const writer = this.runEvents?.writers.get(site.runId);
    if (writer) {
      const { tool, status, attempts, latencyMs, error } = entry;
      // The common shapes as literals (a spread of a conditional object allocates it first).
      writer.push(
        'step:end',
        entry.id,
        error
          ? { ...(tool !== undefined && { tool }), status, attempts, latencyMs, error }
          : tool !== undefined
            ? { tool, status, attempts, latencyMs }
            : { status, attempts, latencyMs },
      );
    }
    if (!listening(this.events, 'step:end')) return;
    const { runId, traceId, chain } = site;
    const { id: step, tool, status, attempts, latencyMs, error } = entry;
    safeEmit(
      this.events,
      'step:end',
      chain === undefined || error
        ? chain === undefined
          ? { runId, traceId, step, ...(tool && { tool }), status, attempts, latencyMs, ...(error && { error }) }
          : { runId, traceId, chain, step, ...(tool && { tool }), status, attempts, latencyMs, ...(error && { error }) }
        : tool
          ? { runId, traceId, chain, step, tool, status, attempts, latencyMs }
          : { runId, traceId, chain, step, status, attempts, latencyMs },
    );
  }

  /** `confirmation:requested`: a gate asked in-process, or a run parked at one. */
  confirmationRequested(site: RecordSite, step: string, tool: string, prompt: string, expiresAt: string): void {
    this.runEvents?.writers.get(site.runId)?.push('confirmation:requested', step, { tool, prompt, expiresAt });
    if (listening(this.events, 'confirmation:requested')) {
      safeEmit(this.events, 'confirmation:requested', {
        runId: site.runId,
        traceId: site.traceId,
        chain: site.chain!,
        step,
        tool,
        prompt,
        expiresAt,
      });
    }
  }

  /**
   * A step's `call.progress`: the shared no-op unless its run records
   * events; then each call is a `step:progress` event, `data` redacted.
   */
  progressOf(runId: string, step: string | undefined): (data: unknown) => void {
    const writer = this.runEvents?.writers.get(runId);
    if (!writer || step === undefined) return IGNORE_PROGRESS;
    return (data: unknown) => {
      try {
        writer.push('step:progress', step, this.redacted(data));
      } catch {
        // Reporting progress observes the call: whatever it meets, the tool goes on.
      }
    };
  }

  /**
   * Set by the durable side of a runner with a run store that marks retry waits: told of each retry
   * wait of a call (its run and length), it returns what to call when the wait ends (or `undefined`).
   */
  retryWait: ((runId: string, delayMs: number) => (() => void) | undefined) | undefined = undefined;

  /**
   * A call's failed attempt will be retried after `delayMs`: the
   * `step:retry` run event and event (its message masked), and a warning.
   */
  stepRetried(ctx: CallContext, failure: Classified, delayMs: number): void {
    const writer = this.runEvents?.writers.get(ctx.runId);
    const heard = listening(this.events, 'step:retry');
    const tool = ctx.tool.name;
    const { category, code } = failure;
    if ((writer && ctx.step !== undefined) || heard) {
      // docs/ARCHITECTURE.md, Secrets: the call's input and context leave in no text.
      const message = secretMask(this.redact, ctx.input, ctx.context).text(failure.message);
      if (writer && ctx.step !== undefined)
        writer.push('step:retry', ctx.step, { tool, attempt: ctx.attempt, delayMs, category, code, message });
      if (heard)
        safeEmit(this.events, 'step:retry', {
          runId: ctx.runId,
          traceId: ctx.traceId,
          ...(ctx.chain && { chain: ctx.chain }),
          ...(ctx.step && { step: ctx.step }),
          tool,
          attempt: ctx.attempt,
          delayMs,
          category,
          code,
          message,
        });
    }
    this.logger?.warn(
      {
        runId: ctx.runId,
        traceId: ctx.traceId,
        chain: ctx.chain,
        step: ctx.step,
        tool,
        attempt: ctx.attempt,
        delayMs,
        category,
        code,
      },
      `retrying ${tool} after ${category} in ${delayMs} ms`,
    );
  }

  /** A tool's circuit breaker opened or closed (seen by the call `ctx`): `breaker:change`, and a warning. */
  breakerChanged(tool: string, change: 'opened' | 'closed', ctx: CallContext, at: number): void {
    const state = change === 'opened' ? 'open' : 'closed';
    if (listening(this.events, 'breaker:change')) safeEmit(this.events, 'breaker:change', { tool, state, at });
    this.logger?.warn(
      { runId: ctx.runId, traceId: ctx.traceId, chain: ctx.chain, step: ctx.step, tool, breaker: state },
      `circuit breaker of ${tool} ${change}`,
    );
  }

  /** A durable run was taken over from `previousOwner` and continues from its journal: `run:recovered`. */
  runRecovered(run: StoredRun, previousOwner: string, owner: string): void {
    if (!listening(this.events, 'run:recovered')) return;
    safeEmit(this.events, 'run:recovered', {
      runId: run.runId,
      traceId: run.traceId,
      chain: run.chain,
      ...(run.sessionId !== undefined && { sessionId: run.sessionId }),
      previousOwner,
      owner,
      journaled: journaledSteps(run),
    });
  }

  /**
   * A durable run's end the executor did not announce (a recovered run's, a decided or cancelled
   * parked run's, one whose end could not be recorded): `run:end`, with `recovered`.
   */
  durableRunEnded(result: RunResult, recovered: boolean): void {
    if (!listening(this.events, 'run:end')) return;
    safeEmit(this.events, 'run:end', {
      runId: result.runId,
      traceId: result.trace.traceId,
      chain: result.chain,
      ...(result.trace.sessionId !== undefined && { sessionId: result.trace.sessionId }),
      status: result.status,
      recovered,
      result,
    });
  }

  /** A waiting run took its signal at `step`: the `signal:received` run event. */
  signalReceived(runId: string, step: string, signal: string): void {
    this.runEvents?.writers.get(runId)?.push('signal:received', step, { signal });
  }

  /** What one finished tool call teaches (see guidance/learn.ts), and its `tool:transition`. */
  learn(lesson: CallLesson): void {
    learn(this.learners, lesson);
    if (lesson.transition && listening(this.events, 'tool:transition'))
      safeEmit(this.events, 'tool:transition', lesson.transition);
  }

  /** `runner.invoke(…, { tier })` found the tool only in a higher tier. */
  tierEscalated(runId: string, tool: string, from: string, to: string): void {
    if (listening(this.events, 'tier:escalation')) safeEmit(this.events, 'tier:escalation', { tool, from, to });
    this.logger?.info({ runId, tool, from, to }, `tool ${tool} escalated from tier ${from} to ${to}`);
  }

  /** A `forEach` item ended: the `item:end` event (and run event), from the item's trace entry. */
  itemEnded(site: RecordSite, step: string, index: number, entry: TraceStep): void {
    const { status, latencyMs, error } = entry;
    this.runEvents?.writers
      .get(site.runId)
      ?.push('item:end', step, { index, status, latencyMs, ...(error && { error }) });
    if (!listening(this.events, 'item:end')) return;
    safeEmit(this.events, 'item:end', {
      runId: site.runId,
      traceId: site.traceId,
      chain: site.chain!,
      step,
      index,
      status,
      latencyMs,
      ...(error && { error }),
    });
  }
}
