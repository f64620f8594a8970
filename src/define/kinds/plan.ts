// What a step kind's planner is given and returns (define/step-kinds.ts registers the planners).
import type { IssueList } from '../../errors/definition-error.js';
import { isPlainObject, type Resolver } from '../mapping.js';
import type { Ref, Scope } from '../ref.js';
import type { Schema } from '../schema.js';

/** A step's output schema as far as the checks know it: `null` when unknown, `undefined` when a ref path is missing. */
export type OutputSchema = Schema | null | undefined;

/** What the plan compiler lends a planner for one chain: the issue list and its ref and mapping checks. */
export interface PlanContext {
  readonly issues: IssueList;
  /**
   * Checks a ref made in step `stepIndex` (or in its own `compensate`,
   * with `allowSelf`) and returns the schema it points at.
   */
  checkRef(r: Ref, at: string, stepIndex: number, allowSelf?: boolean): OutputSchema;
  /**
   * Checks a tool-input mapping against the tool's input schema (adding the refs it reads to `refs`)
   * and compiles it into a resolver.
   */
  mappingResolver(
    mapping: Record<string, unknown>,
    target: Schema,
    at: string,
    stepIndex: number,
    allowSelf: boolean,
    toolName: string,
    refs: Ref[],
  ): Resolver;
  /** The name of the chain being defined (a sub-chain that contains it is a cycle). */
  readonly chainName: string;
  /** Runs `fn` with `ref('item', …)` naming an element of schema `element` (`null`: unknown): a `forEach` input. */
  withItem<T>(element: Schema | null, fn: () => T): T;
}

/**
 * A chain as the step kinds that run one see it (`chain`, `forEach`, `branch`, `loop`): structural,
 * since define/chain.ts sits above the planners. Every `Chain` is one.
 */
export interface ChainLike<O = any> {
  readonly kind: 'chain';
  readonly name: string;
  readonly fingerprint: string;
  readonly input: Schema;
  readonly context?: Schema;
  /** Builds the chain's output from its scope (absent: its last step's result). */
  readonly output?: (scope: any) => O;
  /** @internal The compiled run plan (left out of the published types, as `Chain.plan` is). */
  readonly plan: readonly { readonly id: string; readonly calls?: readonly SubChainCall[] }[];
}

/** A sub-chain a step runs and how its input is built (from the scope; a `forEach` scope also holds `item`). */
export interface SubChainCall {
  readonly chain: ChainLike;
  /** Builds the sub-chain's input from the scope. */
  readonly resolveInput: (scope: Scope) => unknown;
}

/**
 * Type guard for a chain made by `defineChain` or `chain(...)`, as the planners see one.
 *
 * @example
 * ```ts
 * isChainLike(auditChain); // true
 * ```
 */
export function isChainLike(value: unknown): value is ChainLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as ChainLike).kind === 'chain' &&
    Array.isArray((value as ChainLike).plan)
  );
}

/** What a planner found for one step. */
export interface KindPlan<Fields> {
  /** The step's output schema, for refs of later steps. */
  readonly output: OutputSchema;
  /** True when a function of the scope runs for the step, so it waits for every earlier step. */
  readonly usesScope: boolean;
  /** The kind's own fields of the planned step (see `PlannedStep`). */
  readonly fields: Fields | undefined;
}

/**
 * One step kind at definition time: the static checks of its spec and its fields of the plan.
 * Options every kind shares (`when`, `confirm`, `retry`, `compensate`, …) are checked by the plan compiler.
 *
 * @example
 * ```ts
 * const computePlanner: StepPlanner<ComputeStep, undefined> = {
 *   plan: (step, at) => ({ output: null, usesScope: true, fields: undefined }),
 * };
 * ```
 */
export interface StepPlanner<Spec, Fields> {
  /**
   * Checks step `index` (at path `at`, e.g. `steps[2]`), as written by the user (any field may be
   * missing or wrong), adding every problem to `ctx.issues`; the refs the step reads go into `refs`
   * (they become its dependencies).
   */
  plan(step: Partial<Spec>, at: string, index: number, ctx: PlanContext, refs: Ref[]): KindPlan<Fields>;
}

/**
 * Checks a sub-chain and compiles its input: `chain` a chain, not one that contains the chain being
 * defined (a cycle, by name); `input` a mapping checked against the sub-chain's input schema (refs
 * added to `refs`) or a function of the scope (`usesScope`). `input` left out passes the parent's
 * input as is when `passInput` (a branch case), else is an error.
 *
 * @example
 * ```ts
 * const call = planCall(step.chain, step.input, 'steps[2]', 2, ctx, refs);
 * ```
 */
export function planCall(
  chain: unknown,
  input: unknown,
  at: string,
  i: number,
  ctx: PlanContext,
  refs: Ref[],
  passInput = false,
): { call: SubChainCall | undefined; usesScope: boolean } {
  const { issues } = ctx;
  if (!isChainLike(chain)) {
    issues.add(`${at}.chain`, 'Expected `chain` to be a chain made by defineChain() or chain(...).build().');
    return { call: undefined, usesScope: false };
  }
  const cycle = cycleThrough(chain, ctx.chainName);
  if (cycle)
    issues.add(
      `${at}.chain`,
      `chain '${ctx.chainName}' contains itself (${[ctx.chainName, ...cycle].join(' → ')}); a chain cannot run itself.`,
    );
  if (typeof input === 'function') return { call: { chain, resolveInput: input as Resolver }, usesScope: true };
  if (isPlainObject(input))
    return {
      call: {
        chain,
        resolveInput: ctx.mappingResolver(input, chain.input, `${at}.input`, i, false, `chain ${chain.name}`, refs),
      },
      usesScope: false,
    };
  if (input === undefined && passInput) return { call: { chain, resolveInput: (s) => s.input }, usesScope: false };
  issues.add(
    `${at}.input`,
    `Expected \`input\` to be an object of literals and refs for chain ${chain.name}'s input, ` +
      'or a function of the scope.',
  );
  return { call: undefined, usesScope: false };
}

/** The chains from `chain` down to one named `name` (a cycle), or undefined; each chain visited once. */
function cycleThrough(chain: ChainLike, name: string, seen = new Set<ChainLike>()): string[] | undefined {
  if (chain.name === name) return [chain.name];
  if (seen.has(chain)) return undefined;
  seen.add(chain);
  for (const step of chain.plan) {
    for (const call of step.calls ?? []) {
      const below = cycleThrough(call.chain, name, seen);
      if (below) return [chain.name, ...below];
    }
  }
  return undefined;
}
