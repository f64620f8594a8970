// What a chain spec says: its steps, their options, and preconditions. Plain types: each step
// kind's type is in define/kinds/<kind>.ts (re-exported here), define/validate.ts checks them,
// define/chain.ts compiles them.
import type { Schema, SchemaOutput } from './schema.js';
import type { ContextOf } from './infer.js';
import type { StepResults } from './step-results.js';
import type { Scope } from './ref.js';
import type { Step } from './step-kinds.js';

export type { ConfirmSpec, FieldMatcher, InputMapping, StepCommon } from './step-common.js';
export type { ToolStep } from './kinds/tool.js';
export type { SelectStep } from './kinds/select.js';
export type { ComputeStep } from './kinds/compute.js';
export type { SubChainStep } from './kinds/sub-chain.js';
export type { ForEachStep, ItemScope } from './kinds/for-each.js';
export type { BranchCase, BranchStep } from './kinds/branch.js';
export type { LoopStep } from './kinds/loop.js';
export type { SleepStep } from './kinds/sleep.js';
export type { WaitForStep } from './kinds/wait-for.js';
export type { ChainLike, SubChainCall } from './kinds/plan.js';
export type { Step } from './step-kinds.js';

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
  output?: (
    scope: Scope<SchemaOutput<IS>, ContextOf<CS>, StepResults<Steps, SchemaOutput<IS>, ContextOf<CS>>>,
  ) => OutputOf<O>;
  /** Whole-chain deadline in ms (default 60 000). */
  timeoutMs?: number;
  preconditions?: Precondition<Scope<SchemaOutput<IS>, ContextOf<CS>>>[];
}

/**
 * What `output` returns: `O`; `unknown` while `O` is not inferred yet (`never`), so a chain whose
 * refs are reported (define/ref-check.ts) does not also get a spurious error at `output`.
 */
type OutputOf<O> = [O] extends [never] ? unknown : O;
