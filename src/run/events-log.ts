// Run events on their way to the run store's event log (docs/guides/watching-runs.md). The recorder
// hands each event of a run this runner owns to its writer; nobody watching, the events wait in the
// writer and go with the run's end (in the end's own write where the store has finishWithEvents, else
// in one append after it); watched — by a `watch` here or an announce from any instance — they go as
// they happen, one append in flight.
import type { RunEndData, RunEventDraft } from '../observe/run-events.js';
import type { Logger } from '../observe/logger.js';
import type { RunResult } from '../observe/result.js';
import { RunAbortReason } from '../errors/failure.js';
import { AbortScope } from '../policies/abort.js';
import { callStore } from '../stores/guard.js';
import { encodeRunValue } from '../stores/run-codec.js';
import type { LastEvents, RunEventLog } from '../stores/run-event-log.js';
import { STORE_WAIT_MS } from '../util/timer.js';

/**
 * Announces that cancel a run start with this (run ids have no control characters), then the reason's length, the
 * reason, the run id.
 */
const CANCEL = '\u0001cancel:';

/**
 * The announce that cancels `runId` on whichever instance owns it.
 *
 * @example
 * ```ts
 * await log.announce(cancelAnnounce(runId, 'the user left'));
 * ```
 */
export function cancelAnnounce(runId: string, reason: string | undefined): string {
  const why = reason ?? '';
  return `${CANCEL}${why.length}:${why}${runId}`;
}

/** Events buffered for one append, unwatched: a chatty run still writes in batches this big. */
const BATCH = 256;
/** Events a writer holds at most while its store lags; past it the oldest are dropped. */
const MAX_BUFFERED = 10_000;

/** The events of one run this runner owns, on their way to the log. */
export class RunEventWriter {
  private buffer: string[] = [];
  private inFlight: Promise<void> | undefined;
  private again = false;
  private stop: AbortScope | undefined;
  watched: boolean;

  constructor(
    private readonly hub: RunEventHub,
    readonly runId: string,
    watched: boolean,
  ) {
    this.watched = watched;
  }

  /** The scope a cancel aborts; the owner may abort it too (a lost lease), one stop for both. */
  get stopper(): AbortScope {
    return (this.stop ??= new AbortScope());
  }

  /** Cancels the run: its tools' signals abort, no later step starts, compensation runs. */
  cancel(reason: string | undefined): void {
    const message = `The run was cancelled${reason ? `: ${reason}` : ''}.`;
    (this.stop ??= new AbortScope()).abort(new RunAbortReason('cancelled', message, 'run_cancelled'));
  }

  /** Adds an event (`data` already redacted); what cannot be encoded is left out (and logged). */
  push(type: RunEventDraft['type'], step: string | undefined, data: unknown): void {
    const { hub } = this;
    const text = this.encode(type, step, data);
    if (text === undefined) return;
    if (hub.log.local) {
      // In-process: appending costs nothing, so every event is in the log at once.
      hub.log
        .append(this.runId, [text])
        .catch((error: unknown) => hub.warn(error, `run ${this.runId}: an event could not be recorded`));
      return;
    }
    this.buffer.push(text);
    if (this.buffer.length > MAX_BUFFERED) this.buffer.splice(0, this.buffer.length - MAX_BUFFERED);
    if (this.watched || this.buffer.length >= BATCH) this.flush();
  }

  private encode(type: RunEventDraft['type'], step: string | undefined, data: unknown): string | undefined {
    const { hub } = this;
    try {
      return encodeRunValue(step === undefined ? { at: hub.now(), type, data } : { at: hub.now(), type, step, data });
    } catch (error) {
      hub.warn(error, `run ${this.runId}: a ${type} event could not be encoded; it was left out`);
      return undefined;
    }
  }

  /**
   * The events not sent yet, `run:end` last, for the run store to append with the run's end; `undefined`
   * while an append is in flight (the rest must follow it) or when appending costs nothing (in-process).
   */
  drain(end: RunEndData): string[] | undefined {
    if (this.inFlight || this.hub.log.local) return undefined;
    const last = this.encode('run:end', undefined, end);
    if (last === undefined) return undefined;
    const batch = this.buffer;
    this.buffer = [];
    batch.push(last);
    return batch;
  }

  /** Sends what is buffered: one append in flight at a time, the next batch after it. */
  flush(): void {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.inFlight = this.hub.append(this.runId, batch, undefined).then(() => {
      this.inFlight = undefined;
      if (this.again || this.watched) {
        this.again = false;
        this.flush();
      }
    });
  }

  /**
   * Sends the rest, `end` last, keeping the log `keepMs` (the run ended or parked); an interrupted run
   * keeps it open, and a run parked until taken (`Infinity`: waiting, in doubt) keeps it as long as
   * it stays parked. Gives up at `until` (the run's deadline): a silent store never holds the caller past it.
   */
  async close(end: RunEndData | undefined, keepMs: number | undefined, until: number): Promise<void> {
    if (end) this.push('run:end', undefined, end);
    try {
      while (this.inFlight) await callStore(() => this.inFlight!, until, this.hub.now, 'run (events)');
    } catch (error) {
      return this.hub.warn(error, `run ${this.runId}: its last events could not be recorded`);
    }
    if (this.hub.log.local) {
      if (keepMs !== undefined) await this.hub.append(this.runId, [], keepMs, until);
      return;
    }
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length > 0 || keepMs !== undefined) await this.hub.append(this.runId, batch, keepMs, until);
  }
}

/**
 * The event side of a runner with a run store that has an event log: the writers of the runs it
 * owns, and which runs are watched here.
 *
 * @example
 * ```ts
 * const hub = new RunEventHub(store.events, now, logger);
 * hub.open(runId)?.push('step:start', 'find', { stepNumber: 1 });
 * ```
 */
export class RunEventHub {
  /** Writers of the runs this runner owns now, by run id (the recorder looks them up). */
  readonly writers = new Map<string, RunEventWriter>();
  private readonly watching = new Map<string, number>();
  private unsubscribe: (() => void) | undefined;
  private shut = false;

  constructor(
    readonly log: RunEventLog,
    readonly now: () => number,
    private readonly logger: Logger | undefined,
  ) {}

  /** Starts recording the events of a run this runner owns from now on. */
  open(runId: string): RunEventWriter {
    // Announces matter only while this runner owns runs: subscribed with the first one (never after shutdown:
    // nothing would end that subscription, and it holds a connection).
    if (!this.shut) this.unsubscribe ??= this.log.onAnnounce((id) => this.announced(id));
    let writer = this.writers.get(runId);
    if (!writer) this.writers.set(runId, (writer = new RunEventWriter(this, runId, this.watching.has(runId))));
    return writer;
  }

  /** Sends the rest of a run's events (`end` last) and stops recording it; gives up at `until`. */
  async close(runId: string, end: RunEndData | undefined, keepMs: number | undefined, until: number): Promise<void> {
    const writer = this.writers.get(runId);
    if (!writer) return;
    this.writers.delete(runId);
    await writer.close(end, keepMs, until);
  }

  /**
   * A run's last events, `end` last, kept `keepMs`, for its run store's `finishWithEvents`; the run's events
   * are no longer recorded here. `undefined` (nothing taken) when they must go as {@link RunEventHub.close}
   * sends them.
   */
  takeEnd(runId: string, end: RunEndData, keepMs: number): LastEvents | undefined {
    const writer = this.writers.get(runId);
    const events = writer?.drain(end);
    if (events === undefined) return undefined;
    this.writers.delete(runId);
    return { events, keepMs, watched: writer!.watched };
  }

  /** A watch of `runId` on this runner began: its events go as they happen. Returns the end of the watch. */
  watch(runId: string): () => void {
    this.watching.set(runId, (this.watching.get(runId) ?? 0) + 1);
    this.announced(runId);
    return () => {
      const n = (this.watching.get(runId) ?? 1) - 1;
      if (n <= 0) this.watching.delete(runId);
      else this.watching.set(runId, n);
    };
  }

  /**
   * Someone (anywhere) watches `runId`, or cancels it: if this runner owns it, its events go as they happen, or it
   * stops.
   */
  private announced(runId: string): void {
    if (runId.startsWith(CANCEL)) {
      const rest = runId.slice(CANCEL.length);
      const colon = rest.indexOf(':');
      const length = Number(rest.slice(0, colon));
      const reason = rest.slice(colon + 1, colon + 1 + length);
      this.writers.get(rest.slice(colon + 1 + length))?.cancel(reason || undefined);
      return;
    }
    const writer = this.writers.get(runId);
    if (writer && !writer.watched) {
      writer.watched = true;
      writer.flush();
    }
  }

  /** One append bounded by STORE_WAIT_MS and `until`; a failure is logged (the events are lost, the run goes on). */
  async append(
    runId: string,
    batch: readonly string[],
    keepMs: number | undefined,
    until = Number.POSITIVE_INFINITY,
  ): Promise<void> {
    const t = this.now();
    // Kept until taken (Infinity) is kept as in flight, with no retention: an earlier one is lifted.
    const keep = keepMs === Infinity ? undefined : keepMs;
    try {
      await callStore(
        () => this.log.append(runId, batch, keep),
        Math.min(t + STORE_WAIT_MS, until),
        this.now,
        'run (events)',
      );
    } catch (error) {
      this.warn(error, `run ${runId}: ${batch.length} event(s) could not be recorded`);
    }
  }

  warn(error: unknown, message: string): void {
    this.logger?.warn({ err: error }, message);
  }

  /** Stops listening for announces. */
  shutdown(): void {
    this.shut = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }
}

/**
 * What `run:end` says of a result: never its resume token; the output redacted like a full trace.
 *
 * @example
 * ```ts
 * writer.push('run:end', undefined, runEndData(result, (v) => recorder.redacted(v)));
 * ```
 */
export function runEndData(result: RunResult, redacted: (value: unknown) => unknown): RunEndData {
  switch (result.status) {
    case 'completed':
      return { status: 'completed', output: redacted(result.output) };
    case 'failed':
      return { status: 'failed', error: result.error };
    case 'declined':
      return { status: 'declined', step: result.step };
    case 'awaiting_confirmation': {
      const { step, tool, prompt, expiresAt } = result.confirmation;
      return { status: 'awaiting_confirmation', confirmation: { step, tool, prompt, expiresAt } };
    }
    case 'in_doubt':
      return { status: 'in_doubt', step: result.step };
    case 'waiting':
      return { status: 'waiting', waiting: { ...result.waiting } };
  }
}
