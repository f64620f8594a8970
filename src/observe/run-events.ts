// Run events: what `runner.watch` and `runner.stream` deliver, from a run's event log in the run
// store (docs/guides/watching-runs.md). Each carries a `seq`, strictly increasing per run.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { TraceStepStatus } from './trace.js';

/** The fields every {@link RunEvent} has. */
export interface RunEventBase {
  /** Strictly increasing per run, from 1: `watch(runId, { after: seq })` goes on after it. */
  seq: number;
  runId: string;
  /** Epoch ms the event happened. */
  at: number;
}
/** A run (or the part of it after a gate, or a recovered run) started. */
export interface RunStartRunEvent extends RunEventBase {
  type: 'run:start';
  step?: undefined;
  data: { chain: string; resumed: boolean };
}
/** A step started. */
export interface StepStartRunEvent extends RunEventBase {
  type: 'step:start';
  step: string;
  data: { tool?: string; stepNumber: number };
}
/** A tool reported progress with `call.progress(data)`; `data` is what it passed (redacted). */
export interface StepProgressRunEvent extends RunEventBase {
  type: 'step:progress';
  step: string;
  data: unknown;
}
/** A failed attempt of a step's tool will be retried after `delayMs` (the run is `retrying` meanwhile). */
export interface StepRetryRunEvent extends RunEventBase {
  type: 'step:retry';
  step: string;
  data: { tool: string; attempt: number; delayMs: number; category: string; code: string; message: string };
}
/** A step ended. */
export interface StepEndRunEvent extends RunEventBase {
  type: 'step:end';
  step: string;
  data: { tool?: string; status: TraceStepStatus; attempts: number; latencyMs: number; error?: ChainErrorInfo };
}
/** The run stopped at a confirmation gate and waits for `resume` or `decide`. */
export interface ConfirmationRequestedRunEvent extends RunEventBase {
  type: 'confirmation:requested';
  step: string;
  data: { tool: string; prompt: string; expiresAt: string };
}
/** How a run ended (or parked at a gate), as `run:end` tells it: never a resume token. */
export type RunEndData =
  | { status: 'completed'; output: unknown }
  | { status: 'failed'; error: ChainErrorInfo }
  | { status: 'declined'; step: string }
  | { status: 'awaiting_confirmation'; confirmation: { step: string; tool: string; prompt: string; expiresAt: string } }
  | { status: 'in_doubt'; step: string }
  | { status: 'waiting'; waiting: { step: string; until?: number; signal?: string } };
/** The run ended or parked at a gate: the last event of a watch. */
/** A `forEach` item ended (§12): `step` is the forEach step, `data.index` the element's index. */
export interface ItemEndRunEvent extends RunEventBase {
  type: 'item:end';
  step: string;
  data: { index: number; status: TraceStepStatus; latencyMs: number; error?: ChainErrorInfo };
}
/**
 * A waiting run took the signal its `waitFor` step waited for (§12): `step` is that step; the payload is its result.
 */
export interface SignalReceivedRunEvent extends RunEventBase {
  type: 'signal:received';
  step: string;
  data: { signal: string };
}
export interface RunEndRunEvent extends RunEventBase {
  type: 'run:end';
  step?: undefined;
  data: RunEndData;
}

/**
 * One event of a run, as `runner.watch` and `runner.stream` deliver it: a union discriminated by `type`.
 *
 * @example
 * ```ts
 * for await (const e of runner.watch(runId)) {
 *   if (e.type === 'step:progress') console.log(e.step, e.data);
 *   if (e.type === 'run:end') console.log(e.data.status);
 * }
 * ```
 */
export type RunEvent =
  | RunStartRunEvent
  | StepStartRunEvent
  | StepProgressRunEvent
  | StepRetryRunEvent
  | StepEndRunEvent
  | ConfirmationRequestedRunEvent
  | RunEndRunEvent
  | ItemEndRunEvent
  | SignalReceivedRunEvent;

/** The name of a run event. */
export type RunEventType = RunEvent['type'];

/** A run event before the store numbers it (the store assigns `seq` and `runId` is the log's). */
export type RunEventDraft = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, 'seq' | 'runId'> : never) : never;
