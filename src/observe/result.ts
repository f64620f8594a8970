// What a run shows: its result (a union on `status`) and the metadata every result carries.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Trace } from './trace.js';

/** What a confirmation gate asks. */
export interface ConfirmationRequest {
  step: string;
  tool: string;
  prompt: string;
  details?: unknown;
  expiresAt: string;
}

/**
 * A plain write (a write or destructive tool not declared `idempotent: true`) that was in flight
 * when its runner died or lost its lease: it may have taken effect, so it is not called again
 * until someone decides (`runner.decide(runId, { retry, by })`).
 */
export interface InDoubtStep {
  step: string;
  tool: string;
  /** The step's input, redacted as in traces. */
  input?: unknown;
  /** When the write was started (epoch ms). */
  startedAt: number;
}

/** Fields every run result has. */
export interface RunResultBase {
  runId: string;
  chain: string;
  trace: Trace;
  metadata: ResponseMetadata;
}

/** The outcome of `run` and `resume`: a discriminated union on `status`. */
export type RunResult<O = unknown> = (
  | { status: 'completed'; output: O }
  | { status: 'awaiting_confirmation'; resumeToken: string; confirmation: ConfirmationRequest }
  | { status: 'declined'; step: string }
  | {
      status: 'failed';
      error: ChainErrorInfo;
      completed: Record<string, unknown>;
      /** Steps undone by their `compensate`, newest first. */
      compensated: string[];
      /** Undos that failed (or could not run): the side effects they leave need attention. */
      compensationFailures?: { step: string; error: ChainErrorInfo }[];
    }
  | {
      /** Parked: a plain write's outcome is unknown (API.md §10); `runner.decide(runId, { retry, by })` settles it. */
      status: 'in_doubt';
      /** The (first) step whose write is in doubt. */
      step: string;
      /** Every write in doubt (usually one; steps that ran side by side may leave several). */
      inDoubt: InDoubtStep[];
    }
  | {
      /**
       * Parked (API.md §12): a `sleep` until `until`, or a `waitFor` for `signal` (until `until`, its
       * timeout, if any). Its end comes through `watch`, `getRun` and the `run:end` event.
       */
      status: 'waiting';
      waiting: RunWaiting;
    }
) &
  RunResultBase;

/** What a run parked `waiting` waits for: the step, the wake-up or timeout (epoch ms), the signal. */
export interface RunWaiting {
  step: string;
  /** Epoch ms: a sleep's wake-up, or a waitFor's timeout (absent: no timeout). */
  until?: number;
  /** A waitFor's signal name (absent for a sleep). */
  signal?: string;
}

/** The outcome of `invoke`. */
export type InvokeResult<O = unknown> = (
  { status: 'completed'; output: O } | { status: 'failed'; error: ChainErrorInfo }
) & { tool: string; trace: Trace; metadata: ResponseMetadata };

/** Timing of a result, estimated and actual. */
export interface TimingMetadata {
  estimatedDurationMs: number;
  actualDurationMs: number;
  confidence: 'high' | 'medium' | 'low';
  /**
   * Where the estimate came from: `learned` (recorded calls), `declared` (`expectedDurationMs`) or
   * `default` (nothing known: 15 s per tool). For a chain, the weakest source among its tool steps.
   */
  source: 'learned' | 'declared' | 'default';
  willTimeout: boolean;
  timeoutMs: number;
}

/** A tool worth calling next. */
export interface NextToolSuggestion {
  tool: string;
  reason: string;
  estimatedDurationMs: number;
}
/** A chain (preset) relevant to what the agent is doing. */
export interface ChainSuggestion {
  chain: string;
  description: string;
  estimatedDurationMs: number;
}

/** What every `run`, `resume` and `invoke` result carries besides its outcome. */
export interface ResponseMetadata {
  timing: TimingMetadata;
  suggestions: { nextTools: readonly NextToolSuggestion[]; relevantChains: readonly ChainSuggestion[] };
  advice: readonly string[];
  context: {
    chain?: string;
    tool?: string;
    /**
     * A chain's tool steps; for `invoke(…, { tier })`, the tools the
     * tier offers (simple 0 by default, medium its list, complex all).
     */
    toolCount?: number;
    /** The tier of an `invoke(…, { tier })` that offered the tool (or the one asked for, when none did). */
    tier?: string;
    wasEscalated?: boolean;
    originalTier?: string;
  };
}
