// The parts of a step spec every kind shares (options, confirmation, mappings, field matchers).
// Below the kind files (define/kinds/*.ts) and their helpers, so none of them imports spec.ts.
import type { RetryRule } from '../errors/categories.js';
import type { Scope } from './ref.js';
import type { Tool } from './tool.js';

/** A tool-input mapping: literals, `ref(...)`s and nested objects/arrays of them. */
export type InputMapping = { [key: string]: unknown };

/** Shown to the user before a gated step runs. */
export interface ConfirmSpec<S = Scope> {
  /** The question for the user, or a function of the scope building it. */
  prompt: string | ((scope: S) => string);
  /** Extra data for the app's confirmation UI (e.g. the item about to be deleted). */
  details?: (scope: S) => unknown;
}

/** Matches one field of an item in a select step. Values may be `ref(...)`s. */
export interface FieldMatcher {
  equals?: unknown;
  /** Case-insensitive substring match on strings. */
  contains?: unknown;
  in?: unknown;
}

/** Options shared by every kind of step. */
export interface StepCommon<S = Scope> {
  /** Matches `/^[A-Za-z_][\w-]{0,63}$/`; not `input` or `context`. */
  id: string;
  /** Skip the step when this returns (or resolves to) false; an async `when` is awaited within the deadline. */
  when?: (scope: S) => boolean | Promise<boolean>;
  /** Stop before this step and ask the user; `false` to waive it on a destructive tool. */
  confirm?: ConfirmSpec<S> | false;
  /** Idempotency key for write/destructive tools (default `${runId}:${stepId}`). */
  idempotencyKey?: (scope: S) => string;
  /** Undo this step if a later step fails. */
  compensate?: {
    tool: Tool;
    /** Literals and refs, or a function of the scope. */
    input: InputMapping | ((scope: S) => unknown);
  };
  timeoutMs?: number;
  retry?: Partial<RetryRule> | false;
}
