// Chains: typed multi-step plans over tools, validated statically and compiled once into a run plan.
import type { Schema, SchemaInput, SchemaOutput } from './schema.js';
import { DefinitionError, IssueList } from '../errors/definition-error.js';
import type { ContextInputOf, ContextOf } from './infer.js';
import type { LastResult, StepResults } from './step-results.js';
import type { CheckedSteps } from './ref-check.js';
import type { Scope } from './ref.js';
import { compilePlan } from './validate.js';
import { type PlannedStep } from './step-kinds.js';
import type { ChainSpec, Precondition, Step } from './spec.js';

/**
 * A validated, compiled chain. `I`, `C`, `O` are its input, context and output types; `In` and
 * `CIn` what `run` accepts as input and context (the schemas' input side: `.default()` fields
 * optional; `CIn` includes `undefined` when the chain declares no context schema).
 */
export interface Chain<I = any, C = any, O = any, In = I, CIn = C> {
  readonly kind: 'chain';
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly keywords: readonly string[];
  readonly useCases: readonly string[];
  readonly input: Schema<I, In>;
  readonly context?: Schema<C, CIn>;
  readonly steps: readonly Step<Scope<I, C>>[];
  /** Builds the chain's output from the scope. */
  readonly output?: (scope: Scope<I, C>) => O;
  readonly timeoutMs: number;
  readonly preconditions: readonly Precondition<Scope<I, C>>[];
  /** Hash of the definition; a resume token only resumes the definition it was issued for. */
  readonly fingerprint: string;
  /** @internal The compiled run plan. */
  readonly plan: readonly PlannedStep[];
}

/** The input type of a chain (after parsing). */
export type ChainInput<T> = T extends Chain<infer I, any, any, any, any> ? I : never;
/** The context type of a chain (after parsing). */
export type ChainContext<T> = T extends Chain<any, infer C, any, any, any> ? C : never;
/** The output type of a chain. */
export type ChainOutput<T> = T extends Chain<any, any, infer O, any, any> ? O : never;
/**
 * What `run` accepts as a chain's input: the input side of its schema (`.default()` fields
 * optional, `.transform()` inputs their source type).
 *
 * @example
 * ```ts
 * const input: ChainRunInput<typeof findAndUpdate> = { match: 'milk', title: 'Oat milk' };
 * ```
 */
export type ChainRunInput<T> = T extends Chain<any, any, any, infer In, any> ? In : never;
/**
 * What `run` accepts as a chain's context; includes `undefined` (the context may be left out)
 * when the chain declares no context schema.
 *
 * @example
 * ```ts
 * const context: ChainRunContext<typeof findAndUpdate> = { userId };
 * ```
 */
export type ChainRunContext<T> = T extends Chain<any, any, any, any, infer CIn> ? CIn : never;

const DEFAULT_CHAIN_TIMEOUT_MS = 60_000;

/**
 * Defines a chain. Validates it statically and throws one {@link DefinitionError} listing every
 * problem: bad or duplicate step ids, refs to unknown or later steps, ref paths missing from the
 * source schema, incompatible types, unmapped required fields, destructive steps without `confirm`.
 *
 * @example
 * ```ts
 * const rename = defineChain({
 *   name: 'rename_task',
 *   input: z.object({ match: z.string(), title: z.string() }),
 *   context: z.object({ userId: z.uuid() }),
 *   steps: [
 *     { id: 'find', tool: listTasks, input: { user_id: ref('context', 'userId'), status: 'all' } },
 *     {
 *       id: 'target',
 *       select: { from: ref('find', 'tasks'), where: { title: { contains: ref('input', 'match') } }, expect: 'one' },
 *     },
 *     {
 *       id: 'update',
 *       tool: updateTask,
 *       input: { user_id: ref('context', 'userId'), task_id: ref('target', 'task_id'), title: ref('input', 'title') },
 *     },
 *   ],
 *   output: (s) => s.results.update,
 * });
 * ```
 */
export function defineChain<
  IS extends Schema,
  CS extends Schema | undefined = undefined,
  O = never,
  // `const`: step ids stay literal, so `output` sees `s.results.<id>`. Not intersected with any
  // check type: that would widen the ids again.
  const Steps extends readonly Step<Scope<SchemaOutput<IS>, ContextOf<CS>>>[] = readonly Step<
    Scope<SchemaOutput<IS>, ContextOf<CS>>
  >[],
>(
  // The refs' paths and `where` fields are checked against the inferred steps (define/ref-check.ts).
  spec: ChainSpec<IS, CS, O, Steps> & {
    readonly steps: CheckedSteps<
      Steps,
      SchemaOutput<IS>,
      ContextOf<CS>,
      StepResults<Steps, SchemaOutput<IS>, ContextOf<CS>>
    >;
  },
): Chain<
  SchemaOutput<IS>,
  ContextOf<CS>,
  [O] extends [never] ? LastResult<Steps, StepResults<Steps, SchemaOutput<IS>, ContextOf<CS>>> : O,
  SchemaInput<IS>,
  ContextInputOf<CS>
> {
  if (typeof spec !== 'object' || spec === null) throw new TypeError('Expected a chain spec object.');
  const issues = new IssueList();
  const nameText =
    typeof spec.name === 'string' ? spec.name : typeof spec.name === 'object' ? 'object' : String(spec.name);
  const subject = `chain '${nameText}'`;
  let compiled: ReturnType<typeof compilePlan>;
  try {
    compiled = compilePlan(spec as unknown as ChainSpec<Schema, Schema, unknown>, issues);
  } catch (error) {
    // Whatever a definition holds (throwing getters, hostile proxies, absurd nesting), the answer is a DefinitionError.
    if (error instanceof DefinitionError) throw error;
    issues.add('', `The definition could not be read: ${error instanceof Error ? error.message : 'unreadable value'}.`);
    throw new DefinitionError(subject, issues.items);
  }
  issues.throwIfAny(subject);
  const { plan, fingerprint } = compiled;
  return Object.freeze({
    kind: 'chain' as const,
    name: spec.name,
    version: spec.version ?? '1',
    description: spec.description ?? '',
    keywords: Object.freeze([...(spec.keywords ?? [])]),
    useCases: Object.freeze([...(spec.useCases ?? [])]),
    input: spec.input,
    ...(spec.context !== undefined && { context: spec.context }),
    steps: Object.freeze([...spec.steps]),
    ...(spec.output !== undefined && { output: spec.output }),
    timeoutMs: spec.timeoutMs ?? DEFAULT_CHAIN_TIMEOUT_MS,
    preconditions: Object.freeze([...(spec.preconditions ?? [])]),
    fingerprint,
    plan,
  }) as never;
}

/**
 * Type guard for chains made by {@link defineChain}.
 *
 * @example
 * ```ts
 * isChain(findAndDelete); // true
 * ```
 */
export function isChain(value: unknown): value is Chain {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Chain).kind === 'chain' &&
    Array.isArray((value as Chain).plan)
  );
}
