// The trace of one run: what ran, in which order, how long it took, and what failed.
import type { ChainErrorInfo } from '../errors/categories.js';

/** Status of one step in a trace. */
export type TraceStepStatus = 'success' | 'error' | 'skipped' | 'cached' | 'awaiting_confirmation' | 'declined' | 'compensated';

/** One step (or one `invoke` call) in a trace. */
export interface TraceStep {
  stepNumber: number;
  id: string;
  tool?: string;
  status: TraceStepStatus;
  attempts: number;
  latencyMs: number;
  startedAt: string;
  /** Only with `traceDetail: 'full'`, redacted. */
  input?: unknown;
  /** Only with `traceDetail: 'full'`, redacted. */
  output?: unknown;
  error?: ChainErrorInfo;
}

/** The whole trace of a run, a resume or an invoke. */
export interface Trace {
  traceId: string;
  runId: string;
  chain: string;
  sessionId?: string;
  startedAt: string;
  endedAt: string;
  totalLatencyMs: number;
  status: 'completed' | 'awaiting_confirmation' | 'declined' | 'failed';
  steps: TraceStep[];
  /** The tool tier of an `invoke(…, { tier })`: the tier that offered the tool (or the one asked for, when none did). */
  tier?: string;
  /** How many tools that tier offers (simple 0 by default, medium its list, complex all). */
  toolCount?: number;
}

/** A move from one tool to the next within a session (for learning which tool follows which). */
export interface ToolTransition {
  fromTool: string;
  toTool: string;
  sessionId: string;
  success: boolean;
  timestamp: number;
  gapMs: number;
}
