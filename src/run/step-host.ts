// The narrow doors between the executor's parts: what the runner hands the executor, and what the
// step kinds, the gate and the result see of the run they belong to.
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { TraceStep } from '../observe/trace.js';
import type { AbortScope } from '../policies/abort.js';
import type { CallContext } from '../policies/types.js';
import type { CheckpointStore } from '../stores/types.js';
import type { Calls, CallSite } from './call-context.js';
import type { UndoUnit } from './compensate.js';
import type { Execution, StepOutcome } from './execution.js';
import type { Recorder } from './recorder.js';

/** What confirmation gates need: where checkpoints go and how tokens are signed. */
export interface Gates {
  readonly checkpoints: CheckpointStore;
  /** Signs resume tokens. */
  readonly secret: string;
  /** How long a resume token is valid. */
  readonly confirmationTtlMs: number;
}

/** What the executor needs from the runner: calls, a recorder, gates. */
export interface ExecutorParts {
  readonly calls: Calls;
  readonly recorder: Recorder;
  readonly gates: Gates;
}

/** A step in flight, as its kind fills it in: its call context once it calls, its input for full traces. */
export interface InFlight {
  ctx: CallContext | undefined;
  input: unknown;
  /** Steps that run chains (`chain`, `forEach`, `branch`, `loop`): the trace entries nested under this step's. */
  children: TraceStep[] | undefined;
  /**
   * Steps that run chains: their completed sub-chain steps with
   * `compensate`, oldest first (undone if the run fails later).
   */
  undo: UndoUnit[] | undefined;
}

/** The run a step belongs to, as the step kinds and the gate see it; it is also its steps' call site. */
export interface StepHost extends CallSite, ExecutorParts {
  readonly exec: Execution;
  /** What refs, `when`, `compute` and `output` read: the chain's input, context and results so far. */
  readonly scope: Scope;
  /** The segment's deadline (epoch ms). */
  readonly deadlineAt: number;
  /** Local async work (an async `when`, compute or `confirm`) ended by the run: deadline, cancel, close. */
  bounded<T>(work: PromiseLike<T>, deadlineMessage: string): Promise<T>;
  /**
   * A step's id as events, traces, the journal and idempotency
   * keys name it: `audit/find` inside the sub-chain step `audit`.
   */
  stepKey(step: PlannedStep): string;
  /** Aborted when the run (or segment) stops: what a sub-chain's run links its own abort to. */
  readonly abort: AbortScope;
  /** Runs a sub-chain's execution (`exec.nested` set) with this run's parts; see run/sub-run.ts. */
  nest(exec: Execution): Promise<NestedEnd>;
}

/** How a sub-chain's run ended (run/sub-run.ts): its step's outcome and its trace entries (nested under the step's). */
export interface NestedEnd {
  outcome: StepOutcome;
  trace: TraceStep[];
  /** Ended ok: its completed steps with `compensate` (nested ones included), oldest first. */
  undo?: UndoUnit[];
}
