// What a policy is: a step around one tool call, and the call's state threaded through the pipeline.
import type { Tool } from '../define/tool.js';
import type { RetryTable } from '../errors/categories.js';
import type { IdempotencyBeginOptions } from '../stores/types.js';
import type { AbortScope } from './abort.js';

/** The state of one logical call (all its attempts), threaded through the policies. */
export interface CallContext {
  readonly tool: Tool;
  readonly input: unknown;
  readonly runId: string;
  readonly traceId: string;
  readonly sessionId?: string;
  readonly chain?: string;
  readonly step?: string;
  readonly context: Readonly<Record<string, unknown>>;
  /** The key the tool sees; the idempotency policy moves it on (`key#1`) past a generation that was undone. */
  idempotencyKey?: string;
  /**
   * The key the idempotency store keeps the call under: `idempotencyKey` scoped to the tool and the
   * caller (a hash of the validated context), so the same key from another user or for another
   * tool is another call. Set whenever `idempotencyKey` is.
   */
  storeKey?: string;
  /** The generation of the key the call ran under: 0, or `n` for `key#n` after earlier ones were undone. */
  generation: number;
  /** An undo's call (set by the undo): the write it takes back, whose kept result must answer no later call. */
  undoes: UndoneWrite | undefined;
  /** The run's abort scope: aborted at the deadline, on caller cancel, or when the runner closes. */
  readonly run: AbortScope;
  /** Epoch ms after which nothing may be waited for. */
  readonly deadlineAt: number;
  /** Retry rules for this call. */
  readonly retry: Readonly<RetryTable>;
  /** Current attempt number (1-based); set by the retry policy. */
  attempt: number;
  /** Current per-attempt timeout; the retry policy doubles it after a timeout. */
  timeoutMs: number;
  /** Set by the idempotency policy when the result came from the store (or a duplicate in flight). */
  cached?: boolean;
  /** The current attempt's abort scope; set by the timeout policy. */
  attemptScope?: AbortScope;
  /**
   * True while an attempt is with the tool: from when it is handed to the invoker until the tool
   * answers in time. An abort meanwhile leaves the outcome unknown; one in a retry's backoff does not.
   */
  reached?: boolean;
  /**
   * Set by the idempotency policy on a call it claimed: the timeout policy hands it the tool's
   * answer when it comes after its attempt was settled (timed out, or cut off by the run).
   */
  lateAnswer?: ((value: unknown) => void) | undefined;
  /**
   * The durable run making the call and the runner that owns it (durable runs): its
   * idempotency claims name the owner, and a new owner takes over a claim its dead predecessor left.
   */
  readonly durable: IdempotencyBeginOptions | undefined;
}

/**
 * The write an undo takes back: the key the store keeps it under (its first generation), its TTL and
 * the generation of the key it ran under.
 */
export interface UndoneWrite {
  readonly storeKey: string;
  readonly ttlMs: number | undefined;
  readonly generation: number;
  /** The write's result as its run knows it (told from another's by value when the store stamps none). */
  readonly output: unknown;
  /** When the write's step ended (epoch ms): a result its key kept later is another call's. */
  readonly endedAt: number | undefined;
}

/** One call, or one attempt of it. */
export type Call = (ctx: CallContext) => Promise<unknown>;

/** A policy wraps the rest of the pipeline. */
export type Policy = (next: Call) => Call;
