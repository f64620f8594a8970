// What the executor's parts share: the execution segment, step outcomes, and the local step kinds
// (select, compute) that need nothing but the scope.
import type { Chain, ComputeStep, SelectStep } from '../define/chain.js';
import type { Scope } from '../define/ref.js';
import { parseSchema } from '../define/schema.js';
import type { PlannedStep } from '../define/validate.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Classified } from '../errors/classify.js';
import type { TraceStep } from '../observe/trace.js';
import { schemaFailure } from './pipeline.js';
import type { RunOptions } from './types.js';

/** One execution segment of a chain: a fresh run, or the part after a resumed gate. */
export interface Execution {
  chain: Chain;
  runId: string;
  traceId: string;
  sessionId?: string;
  input: unknown;
  context: Record<string, unknown>;
  /** Results of steps completed earlier (on resume). */
  results: Record<string, unknown>;
  /** Ids of steps completed or skipped earlier (on resume). */
  done: readonly string[];
  priorTrace: readonly TraceStep[];
  /** Epoch ms the run first started (kept across a resume). */
  startedAt: number;
  /** The gate the user approved (on resume). */
  approvedGate?: string;
  confirm?: RunOptions['confirm'];
  signal?: AbortSignal;
  resumed: boolean;
  /** When this segment's deadline clock started (a resume counts its store reads); default: now. */
  segmentStart?: number;
}

export type Stopped = Exclude<StepOutcome, { kind: 'ok' }>;
export type StepOutcome =
  | { kind: 'ok'; value: unknown; skipped: boolean }
  | { kind: 'failed'; error: ChainErrorInfo }
  | { kind: 'gate'; prompt: string; details: unknown }
  | { kind: 'declined' };

export const PENDING = 0;
export const RUNNING = 1;
export const DONE = 2;

// Steps of a run mostly start within the same millisecond: formatting each date once is enough.
let lastMs = Number.NaN;
let lastIso = '';
export const iso = (ms: number): string => (ms === lastMs ? lastIso : ((lastMs = ms), (lastIso = new Date(ms).toISOString())));
export const ok = (value: unknown): StepOutcome => ({ kind: 'ok', value, skipped: false });
export const describeThrown = (error: unknown): string => (error instanceof Error ? error.message : String(error));
export const SKIPPED: StepOutcome = Object.freeze({ kind: 'ok', value: undefined, skipped: true });
export const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof v === 'object' && v !== null && typeof (v as PromiseLike<unknown>).then === 'function';

/** The tools of a run's steps that were not skipped (a run without a session is its own session). */
export function toolsRun(steps: readonly TraceStep[]): string[] {
  const tools: string[] = [];
  for (const t of steps) if (t.tool !== undefined && t.status !== 'skipped' && !tools.includes(t.tool)) tools.push(t.tool);
  return tools;
}

/** A failure raised inside a step, already classified. */
export class StepError extends Error {
  constructor(readonly failure: Classified, readonly extra: { candidates?: unknown[]; userMessage?: string } = {}) {
    super(failure.message);
  }
}

/** A select step: the items of `from` that match, as `expect` says; no match and several-for-one are failures. */
export function selectItems(p: PlannedStep, step: SelectStep, scope: Scope): StepOutcome {
  const { from, expect } = step.select;
  const items = from.resolve(scope);
  if (!Array.isArray(items)) throw new StepError({ category: 'validation', code: 'not_an_array', message: `Step ${p.id}: ${from} is not an array.` });
  const matches = items.filter(p.matcher!(scope));
  if (matches.length === 0) {
    throw new StepError({ category: 'not_found', code: 'no_match', message: `Step ${p.id}: none of the ${items.length} item(s) in ${from} matched.` });
  }
  if (expect === 'one' && matches.length > 1) {
    throw new StepError(
      { category: 'ambiguous', code: 'ambiguous', message: `Step ${p.id}: ${matches.length} items in ${from} matched; expected one.` },
      { candidates: matches, userMessage: `${matches.length} items match. Which one did you mean?` },
    );
  }
  return { kind: 'ok', value: expect === 'all' ? matches : matches[0], skipped: false };
}

/** A compute step's value, checked against its `output` schema when it has one. */
export function computedValue(p: PlannedStep, step: ComputeStep, value: unknown): StepOutcome {
  if (step.output) {
    const parsed = parseSchema(step.output, value);
    if (!parsed.success) throw new StepError(schemaFailure('invalid_output', `Step ${p.id} computed a value that does not match its output schema`, parsed.error.issues));
    value = parsed.data;
  }
  return { kind: 'ok', value, skipped: false };
}
