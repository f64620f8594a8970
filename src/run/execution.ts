// One execution segment of a chain (a fresh run, the part after an approved gate, or a run continued
// from its journal), the outcomes of its steps, and the small helpers the executor's parts share.
import type { Chain } from '../define/chain.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Classified } from '../errors/failure.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import type { CallContext } from '../policies/types.js';
import type { IdempotencyBeginOptions } from '../stores/types.js';
import type { JournalEntry } from '../stores/run-store.js';
import type { AbortScope } from '../policies/abort.js';
import type { RunOptions } from './types.js';

/**
 * Records a step that ended ok (or skipped) before it counts as done. A promise holds the step (and
 * so every step that depends on it) until it settles; throwing, rejecting or answering `false` stops
 * the run as failed, the rejection classified as any failure (a `store_unavailable` passes through).
 */
type Journal = (entry: JournalEntry) => void | boolean | PromiseLike<void | boolean>;

/**
 * Durable runs journal their compensation: its start (the run's failure) before the first undo, and
 * each undo once it ended, so a recovered run finishes the undo instead of running forward. `false`
 * (the lease is lost, the store failed) stops compensating at once: the run's next owner finishes it.
 */
export interface UndoJournal {
  /** Before the first undo: records that the run compensates, failed with `error`, after what `reported` undid. */
  start(error: ChainErrorInfo, reported?: Undone): boolean | Promise<boolean>;
  /** After each undo: records it, with its failure if it failed. */
  undone(step: string, entry: TraceStep, error: ChainErrorInfo | undefined): boolean | Promise<boolean>;
}

/** One execution segment of a chain: a fresh run, the part after an approved gate, or a continued run. */
export interface Execution {
  chain: Chain;
  runId: string;
  traceId: string;
  sessionId?: string;
  input: unknown;
  context: Record<string, unknown>;
  /** Results of steps completed earlier (resume, continued run). */
  results: Record<string, unknown>;
  /** Ids of steps completed or skipped earlier (resume, continued run): not run again. */
  done: readonly string[];
  priorTrace: readonly TraceStep[];
  /** Epoch ms the run first started (kept across a resume). */
  startedAt: number;
  /** The gate the user approved (on resume). */
  approvedGate?: string;
  /** Who approved the gate through `runner.decide`: kept on its trace entry. */
  decidedBy?: string;
  confirm?: RunOptions['confirm'];
  signal?: AbortSignal;
  /**
   * `stream`'s: told once the run store answered whether this run id is this caller's run (`false`: another's, or
   * refused before it was recorded; `'joined'`: its own run in flight elsewhere, this call refused).
   */
  recorded?: (ours: boolean | 'joined') => void;
  /** The durable owner's stop (a lost lease, a cancel from any instance): aborts the run with its reason. */
  stop?: AbortScope;
  /** Continues an earlier segment: preconditions are not checked again, events say `resumed`. */
  resumed: boolean;
  /** The signal that continued this segment (a `waitFor`): its `signal:received` event follows `run:start`. */
  signalled?: { step: string; signal: string };
  /** When this segment's deadline clock started (a resume counts its store reads); default: now. */
  segmentStart?: number;
  /** The segment's deadline (epoch ms); default: `segmentStart` + the chain's `timeoutMs`. */
  deadlineAt?: number;
  /** Called for each step that ends ok or skipped, before any step that depends on it starts. */
  journal?: Journal;
  /**
   * Awaited with the result before it is returned (after compensation and parking), e.g. to record
   * it; a result it returns replaces it (a durable run whose end could not be recorded fails).
   */
  onEnd?: (result: RunResult) => void | RunResult | PromiseLike<void | RunResult>;
  /** A durable run: the run and the runner that owns it, named by its calls' idempotency claims. */
  durable?: IdempotencyBeginOptions;
  /**
   * True when the run stopped without ending (a durable run whose store failed or whose lease was
   * lost): it stays recorded as in flight for recovery, so nothing is compensated.
   */
  interrupted?: () => boolean;
  /** Durable runs: where compensation is recorded (its start and each undo). */
  undoJournal?: UndoJournal;
  /**
   * A continued run that had begun to compensate: it is not run forward; it ends failed with
   * `error`, its undos journaled in `undone` (entries of `compensation` `undone`/`undo_failed`) kept, the rest done.
   */
  compensating?: { error: ChainErrorInfo; undone: readonly JournalEntry[]; reported?: Undone };
  /**
   * A continued run: the sub-chain steps their own failed sub-chain undid (by id, `two/save`), run again under
   * this generation of their key, so a service that keeps its answers by key does the write again.
   */
  redo?: ReadonlyMap<string, number>;
  /**
   * A sub-chain's run inside a step (run/sub-run.ts): its step ids are prefixed (`audit/find`), it
   * emits no run-level events, and it ends as an outcome of that step, not a result.
   */
  nested?: { readonly prefix: string; readonly abortWith: AbortScope };
  /**
   * A continued run: the journaled steps of its sub-chains (ids with a `/`), by the prefix of the
   * run that journaled them (`done/3` holds `done/3/complete`; `done` holds item `done/3`'s end).
   */
  priorNested?: ReadonlyMap<string, readonly JournalEntry[]>;
  /**
   * Durable runs: awaited before each call of a plain write (a write or destructive tool not
   * declared `idempotent`), to record that it started; a rejection fails the step, nothing called.
   * Reads and idempotent writes never wait for it.
   */
  beforeWrite?: (ctx: CallContext) => Promise<void>;
  /**
   * A chain with sub-chains and a gate (`keepsNested`): the sub-chain steps and units (items,
   * iterations) that finished, earlier segments' included, for the checkpoint when a gate parks the
   * run. Shared by the run and its nested runs, like `journal`.
   */
  kept?: JournalEntry[];
  /**
   * By step id (`save`, `done/3/save`): the generation of the idempotency key each step's write ran
   * under, when not the first (`key#1`, after an undo took the first back): what its undo takes back.
   * This run's steps (a nested run's own), from earlier segments and this one.
   */
  generations?: Map<string, number>;
  /** Durable runs on a store that parks (`parkWaiting`): a long sleep or a waitFor parks the run `waiting`. */
  parks?: boolean;
}

/** How a step ended other than ok: what stops the run. */
export type Stopped = Exclude<StepOutcome, { kind: 'ok' }>;
/** What a failed run undid: the ids undone and the undos that failed (`failed.compensated`, `compensationFailures`). */
export interface Undone {
  compensated: string[];
  compensationFailures?: { step: string; error: ChainErrorInfo }[];
}
/** What two failed units undid, in the order they ended (items of a `forEach`, steps failing side by side). */
export function joinUndone(a: Undone | undefined, b: Undone): Undone {
  if (a === undefined) return b;
  const failures = [...(a.compensationFailures ?? []), ...(b.compensationFailures ?? [])];
  return {
    compensated: [...a.compensated, ...b.compensated],
    ...(failures.length > 0 && { compensationFailures: failures }),
  };
}
/** How a step ended. */
export type StepOutcome =
  | { kind: 'ok'; value: unknown; skipped: boolean }
  /** `undone`: what a failed sub-chain (or `forEach` item) undid itself before it ended, in the order it did. */
  | { kind: 'failed'; error: ChainErrorInfo; undone?: Undone }
  /**
   * A gate; `at` and `tool` name a gated step inside a sub-chain (`done/3/delete`), which parks the run as one gate.
   */
  | { kind: 'gate'; prompt: string; details: unknown; at?: string; tool?: string }
  /** Declined; `at` names a declined step inside a sub-chain (`done/3/delete`), as a gate's does. */
  | { kind: 'declined'; at?: string }
  /** A durable run parks `waiting`: until `until` (a sleep), or for `signal` (a waitFor; `until`: its timeout). */
  | { kind: 'wait'; until?: number; signal?: string; at?: string };

/** Step states, one number per step in a flat array: not started, in flight, done (ok or skipped). */
export const PENDING = 0;
export const RUNNING = 1;
export const DONE = 2;

// Thousands of runs in flight stamp their steps and traces within the same few seconds: one text per
// millisecond, shared by every trace entry of that millisecond (each result keeps its texts), from a
// table indexed by the millisecond's low bits. A slot holds the last millisecond formatted there.
const ISO_SLOTS = 4096;
const isoMs = new Float64Array(ISO_SLOTS).fill(Number.NaN);
const isoTexts: string[] = new Array<string>(ISO_SLOTS).fill('');
/** `new Date(ms).toISOString()`, the same string for the same millisecond while its slot keeps it. */
export function iso(ms: number): string {
  const slot = ms & (ISO_SLOTS - 1);
  if (isoMs[slot] === ms) return isoTexts[slot]!;
  const text = new Date(ms).toISOString();
  isoMs[slot] = ms;
  isoTexts[slot] = text;
  return text;
}
/** The outcome of a step that produced `value`. */
export const ok = (value: unknown): StepOutcome => ({ kind: 'ok', value, skipped: false });
/** The message of anything thrown. */
export const describeThrown = (error: unknown): string => (error instanceof Error ? error.message : String(error));
/** The outcome of a step skipped by its `when`. */
export const SKIPPED: StepOutcome = Object.freeze({ kind: 'ok', value: undefined, skipped: true });
/** Whether `v` is a promise or any other thenable (user callbacks may return either). */
export const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as PromiseLike<unknown>).then === 'function';

/** The tools of a run's steps that were not skipped (a run without a session is its own session). */
export function toolsRun(steps: readonly TraceStep[]): string[] {
  const tools: string[] = [];
  for (const t of steps)
    if (t.tool !== undefined && t.status !== 'skipped' && !tools.includes(t.tool)) tools.push(t.tool);
  return tools;
}

/** A failure raised inside a step, already classified. */
export class StepError extends Error {
  constructor(
    readonly failure: Classified,
    readonly extra: { candidates?: unknown[]; userMessage?: string } = {},
  ) {
    super(failure.message);
  }
}
