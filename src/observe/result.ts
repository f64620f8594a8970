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
) & RunResultBase;

/** The outcome of `invoke`. */
export type InvokeResult<O = unknown> = (
  | { status: 'completed'; output: O }
  | { status: 'failed'; error: ChainErrorInfo }
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
export interface NextToolSuggestion { tool: string; reason: string; estimatedDurationMs: number }
/** A chain (preset) relevant to what the agent is doing. */
export interface ChainSuggestion { chain: string; description: string; estimatedDurationMs: number }

/** What every `run`, `resume` and `invoke` result carries besides its outcome. */
export interface ResponseMetadata {
  timing: TimingMetadata;
  suggestions: { nextTools: NextToolSuggestion[]; relevantChains: ChainSuggestion[] };
  advice: string[];
  context: {
    chain?: string;
    tool?: string;
    /** A chain's tool steps; for `invoke(…, { tier })`, the tools the tier offers (simple 0 by default, medium its list, complex all). */
    toolCount?: number;
    /** The tier of an `invoke(…, { tier })` that offered the tool (or the one asked for, when none did). */
    tier?: string;
    wasEscalated?: boolean;
    originalTier?: string;
  };
}
