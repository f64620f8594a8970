// What a chain spec says: its steps (tool, select, compute), their options, and preconditions.
// Plain types: define/validate.ts checks them, define/chain.ts compiles them.
import type { Schema, SchemaOutput } from './schema.js';
import type { RetryRule } from '../errors/categories.js';
import type { ContextOf, StepResults } from './infer.js';
import type { Ref, Scope } from './ref.js';
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

/** Calls a tool. */
export interface ToolStep<S = Scope> extends StepCommon<S> {
  tool: Tool;
  /** Literals and refs, or a function of the scope returning the whole input. */
  input: InputMapping | ((scope: S) => unknown);
}

/** Picks items out of an earlier output. */
export interface SelectStep<S = Scope> extends StepCommon<S> {
  select: {
    from: Ref;
    /** Field matchers, or a predicate over each item. */
    where?: Record<string, FieldMatcher> | ((item: any, scope: S) => boolean);
    /** `'one'` fails with `ambiguous` when several match; `'first'` takes the first; `'all'` keeps every match. */
    expect: 'one' | 'first' | 'all';
    /** What the end user is told when nothing matches (the `not_found` failure's `userMessage`). */
    noMatch?: string;
  };
}

/** A pure local computation. */
export interface ComputeStep<S = Scope> extends StepCommon<S> {
  /** Computes the step's value from the scope (pure, local). */
  compute: (scope: S) => unknown;
  output?: Schema;
}

/** One step of a chain. */
export type Step<S = Scope> = ToolStep<S> | SelectStep<S> | ComputeStep<S>;

/** A check run before any tool call; `message` asks the user for what is missing. */
export interface Precondition<S = Scope> {
  /** True when the run may start. */
  check: (scope: S) => boolean;
  message: string;
}

/**
 * What `defineChain` takes. `Steps` is the steps tuple as written: `output` sees each step's
 * result typed by its id.
 */
export interface ChainSpec<
  IS extends Schema,
  CS extends Schema | undefined,
  O,
  Steps extends readonly Step<any>[] = readonly Step<Scope<SchemaOutput<IS>, ContextOf<CS>>>[],
> {
  name: string;
  version?: string;
  description?: string;
  keywords?: string[];
  useCases?: string[];
  input: IS;
  /** The trusted context (authenticated user, tenant): never from the model. */
  context?: CS;
  steps: Steps;
  /** The chain's output, from the scope with every step's result typed; default: the last step's result. */
  output?: (scope: Scope<SchemaOutput<IS>, ContextOf<CS>, StepResults<Steps, SchemaOutput<IS>, ContextOf<CS>>>) => O;
  /** Whole-chain deadline in ms (default 60 000). */
  timeoutMs?: number;
  preconditions?: Precondition<Scope<SchemaOutput<IS>, ContextOf<CS>>>[];
}
