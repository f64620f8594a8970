// The narrow doors between the executor's parts: what the runner hands the executor, and what the
// step kinds, the gate and the result see of the run they belong to.
import type { Scope } from '../define/ref.js';
import type { CallContext } from '../policies/types.js';
import type { CheckpointStore } from '../stores/types.js';
import type { Calls, CallSite } from './call-context.js';
import type { Execution } from './execution.js';
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
}
